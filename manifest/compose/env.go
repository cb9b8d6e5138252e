package compose

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"strings"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/interpolation"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/tree"
	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// The interpolation environment of a compose app is load.Options.Environment
// (what the shell's environment is to `docker compose`) over the app
// directory's .env file, read from the revision. Nothing comes from the
// agent's own environment.

// composeEnvironment reads .env from the app directory and returns the
// interpolation environment.
func composeEnvironment(c *yamlpos.Collector, fsys fs.FS, root string, display func(string) string, given map[string]string, read func(string)) map[string]string {
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

// interpolator substitutes ${VAR} in compose values like compose does, and
// reports what compose would report, with positions.
type interpolator struct {
	env map[string]string
	// read is told every name looked up in env (load.Options.EnvRead).
	read     func(string)
	errs     *yamlpos.Collector
	warnings *yamlpos.Collector
	// usedCasts are the type casts some string value of the files is at:
	// compose-go tries every cast on every value, so it gets only these.
	usedCasts map[tree.Path]interpolation.Cast
}

func (in *interpolator) lookup(k string) (string, bool) {
	if in.read != nil {
		in.read(k)
	}
	v, ok := in.env[k]
	return v, ok
}

// substitute interpolates s without logging; missing lists the variables
// that were not set and had no default (they became "").
func (in *interpolator) substitute(s string) (out string, missing []string, err error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	out, err = template.SubstituteWithOptions(s, in.lookup, template.WithoutLogging,
		template.WithReplacementFunction(func(sub string, m template.Mapping, cfg *template.Config) (string, error) {
			v, applied, err := template.DefaultReplacementAppliedFunc(sub, m, cfg)
			if err == nil && !applied {
				missing = append(missing, strings.Trim(sub, "${}"))
			}
			return v, err
		}))
	return out, missing, err
}

// check interpolates every value of a compose document (keys are not
// interpolated, as in compose) and records errors and warnings.
func (in *interpolator) check(f *composeFile, n *yaml.Node, field string, depth int) {
	if n == nil || depth > 64 {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			in.check(f, n.Content[i+1], yamlpos.ChildPath(field, k.Value), depth+1)
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			in.check(f, e, yamlpos.IndexPath(field, i), depth+1)
		}
	case yaml.ScalarNode:
		if t := n.ShortTag(); t != "!!str" && t != "!reset" && t != "!override" {
			return
		}
		pos := manifest.Position{File: f.display, Line: n.Line, Column: n.Column}
		_, missing, err := in.substitute(n.Value)
		if err != nil {
			in.errs.Add(pos, field, "%s", interpolationMessage(err))
			return
		}
		for _, v := range missing {
			in.warnings.Add(pos, field, "variable %s is not set: it interpolates to an empty string (set it in .env or the app's environment, or write ${%s:-default})", v, v)
		}
	}
}

func interpolationMessage(err error) string {
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
