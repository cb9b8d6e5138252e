package compose

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/interpolation"
	"github.com/compose-spec/compose-go/v2/tree"
	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/composeschema"
)

// Each document is validated against the compose schema (see
// manifest/internal/composeschema) as compose-go validates it: decoded,
// and interpolated with compose's type casts, which are recorded in the
// interpolator.

// validateComposeDoc checks one document against the compose schema and
// reports every failing place.
func validateComposeDoc(c *yamlpos.Collector, ix *composeIndex, f *composeFile, doc *yaml.Node, in *interpolator) {
	m, ok := interpolateComposeDoc(c, f, doc, in)
	if !ok {
		return
	}
	composeschema.Validate(c, f.display, doc, m)
}

// interpolateComposeDoc is a document as compose-go validates it:
// decoded and interpolated with compose's casts, which it records in in.
// It reports what fails and returns false then.
func interpolateComposeDoc(c *yamlpos.Collector, f *composeFile, doc *yaml.Node, in *interpolator) (map[string]any, bool) {
	raw, err := composeschema.DocValue(doc)
	if err != nil {
		c.Add(manifest.Position{File: f.display, Line: doc.Line, Column: doc.Column}, "", "%v", err)
		return nil, false
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, false // reported by the caller
	}
	if errs := in.interpolateDoc(m); len(errs) > 0 {
		for _, e := range errs {
			field, at, _ := yamlpos.NodePath(f.display, doc, e.path)
			c.Add(at, field, "%s", e.msg)
		}
		return nil, false
	}
	return m, true
}

type castError struct {
	path []string
	msg  string
}

// interpolateDoc interpolates a decoded document in place and applies
// compose-go's type casts, as compose-go's interpolation does; list items
// are matched as "[]", as compose-go's paths write them.
func (in *interpolator) interpolateDoc(m map[string]any) []castError {
	var errs []castError
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
			s, _, err := in.substitute(t)
			if err != nil {
				return t // reported with its position before
			}
			cp := composeschema.CastFor(path)
			if cp == nil {
				return s
			}
			if in.usedCasts == nil {
				in.usedCasts = map[tree.Path]interpolation.Cast{}
			}
			in.usedCasts[cp.Path] = cp.Cast
			out, err := cp.Cast(s)
			if err != nil {
				msg := strings.TrimPrefix(err.Error(), "failed to cast to expected type: ")
				var num *strconv.NumError
				if errors.As(err, &num) {
					msg = fmt.Sprintf("must be a number, got %q", num.Num)
				}
				errs = append(errs, castError{slices.Clone(loc), msg})
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
