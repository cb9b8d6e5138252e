// Package interp is compose's ${VAR} interpolation as driftless checks a
// compose app: the interpolation environment (the app's environment over
// the .env file of the revision), substitution with compose-go's rules,
// and the errors and warnings compose would give, with their positions.
package interp

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/interpolation"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/tree"
	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/composeschema"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// The interpolation environment of a compose app is load.Options.Environment
// (what the shell's environment is to `docker compose`) over the app
// directory's .env file, read from the revision. Nothing comes from the
// agent's own environment.

// Environment reads .env from the app directory root of fsys and returns
// the interpolation environment: given over the file's values. read is told
// every name looked up.
func Environment(c *yamlpos.Collector, fsys fs.FS, root string, display func(string) string, given map[string]string, read func(string)) map[string]string {
	env := maps.Clone(given)
	if env == nil {
		env = map[string]string{}
	}
	p := path.Join(root, ".env")
	data, err := fs.ReadFile(fsys, p)
	if err != nil {
		var limit *policy.LimitError
		switch {
		case errors.As(err, &limit):
			c.Errs = append(c.Errs, limit.AsError())
		case !errors.Is(err, fs.ErrNotExist):
			c.Add(manifest.Position{File: display(p), Line: 1}, "", "cannot read: %v", err)
		}
		return env
	}
	fromFile := map[string]string{}
	err = dotenv.ParseWithFormat(bytes.NewReader(data), ".env", fromFile, func(k string) (string, bool) {
		read(k)
		if v, ok := given[k]; ok {
			return v, true
		}
		v, ok := fromFile[k]
		return v, ok
	}, "")
	if err != nil {
		c.Add(load.DotenvErrorPos(display(p), err), "", "%s", load.DotenvMessage(err))
		return env
	}
	for k, v := range fromFile {
		read(k)
		if _, set := env[k]; !set {
			env[k] = v
		}
	}
	return env
}

// Interpolator substitutes ${VAR} in compose values like compose does, and
// reports what compose would report, with positions.
type Interpolator struct {
	Env map[string]string
	// read is told every name looked up in env (load.Options.EnvRead).
	Read     func(string)
	Errs     *yamlpos.Collector
	Warnings *yamlpos.Collector
	// UsedCasts are the type casts some string value of the files is at:
	// compose-go tries every cast on every value, so it gets only these.
	UsedCasts map[tree.Path]interpolation.Cast
}

// Lookup is the value of k in the environment, as compose-go looks it up.
func (in *Interpolator) Lookup(k string) (string, bool) {
	if in.Read != nil {
		in.Read(k)
	}
	v, ok := in.Env[k]
	return v, ok
}

// Substitute interpolates s without logging; missing lists the variables
// that were not set and had no default (they became "").
func (in *Interpolator) Substitute(s string) (out string, missing []string, err error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	out, err = template.SubstituteWithOptions(s, in.Lookup, template.WithoutLogging,
		template.WithReplacementFunction(func(sub string, m template.Mapping, cfg *template.Config) (string, error) {
			v, applied, err := template.DefaultReplacementAppliedFunc(sub, m, cfg)
			if err == nil && !applied {
				missing = append(missing, strings.Trim(sub, "${}"))
			}
			return v, err
		}))
	return out, missing, err
}

// Check interpolates every value of a compose document (file display) (keys are not
// interpolated, as in compose) and records errors and warnings.
func (in *Interpolator) Check(display string, n *yaml.Node, field string, depth int) {
	if n == nil || depth > 64 {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			in.Check(display, n.Content[i+1], yamlpos.ChildPath(field, k.Value), depth+1)
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			in.Check(display, e, yamlpos.IndexPath(field, i), depth+1)
		}
	case yaml.ScalarNode:
		if t := n.ShortTag(); t != "!!str" && t != "!reset" && t != "!override" {
			return
		}
		pos := manifest.Position{File: display, Line: n.Line, Column: n.Column}
		_, missing, err := in.Substitute(n.Value)
		if err != nil {
			in.Errs.Add(pos, field, "%s", Message(err))
			return
		}
		for _, v := range missing {
			in.Warnings.Add(pos, field, "variable %s is not set: it interpolates to an empty string (set it in .env or the app's environment, or write ${%s:-default})", v, v)
		}
	}
}

// Message is what a user reads for an interpolation error.
func Message(err error) string {
	var req *template.MissingRequiredError
	var inv *template.InvalidTemplateError
	switch {
	case errors.As(err, &req):
		if req.Reason != "" {
			return fmt.Sprintf("required variable %s is not set: %s", req.Variable, req.Reason)
		}
		return fmt.Sprintf("required variable %s is not set", req.Variable)
	case errors.As(err, &inv):
		return fmt.Sprintf("invalid interpolation %q: write a literal $ as $$", inv.Template)
	}
	return err.Error()
}

// InterpolateValues interpolates the strings of an extension value.
func (in *Interpolator) InterpolateValues(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = in.InterpolateValues(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = in.InterpolateValues(e)
		}
		return out
	case string:
		s, _, err := in.Substitute(t)
		if err != nil {
			return t
		}
		return s
	}
	return v
}

// CastError is a value that does not cast to the type compose expects
// there; Path is where, by key and list index.
type CastError struct {
	Path []string
	Msg  string
}

// InterpolateDoc interpolates a decoded document in place and applies
// compose-go's type casts, as compose-go's interpolation does; list items
// are matched as "[]", as compose-go's paths write them.
func (in *Interpolator) InterpolateDoc(m map[string]any) []CastError {
	var errs []CastError
	var walk func(v any, path []string, loc []string) any
	walk = func(v any, path, loc []string) any {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				t[k] = walk(e, append(path, k), append(loc, k))
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e, append(path, tree.PathMatchList), append(loc, strconv.Itoa(i)))
			}
		case string:
			s, _, err := in.Substitute(t)
			if err != nil {
				return t // reported with its position before
			}
			cp := composeschema.CastFor(path)
			if cp == nil {
				return s
			}
			if in.UsedCasts == nil {
				in.UsedCasts = map[tree.Path]interpolation.Cast{}
			}
			in.UsedCasts[cp.Path] = cp.Cast
			out, err := cp.Cast(s)
			if err != nil {
				msg := strings.TrimPrefix(err.Error(), "failed to cast to expected type: ")
				var num *strconv.NumError
				if errors.As(err, &num) {
					msg = fmt.Sprintf("must be a number, got %q", num.Num)
				}
				errs = append(errs, CastError{slices.Clone(loc), msg})
				return t
			}
			return out
		}
		return v
	}
	for k, v := range m {
		m[k] = walk(v, []string{k}, []string{k})
	}
	return errs
}
