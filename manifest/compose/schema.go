package compose

import (
	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/compose/internal/interp"
	"github.com/driftless-dev/driftless/manifest/internal/composeschema"
)

// Each document is validated against the compose schema (see
// manifest/internal/composeschema) as compose-go validates it: decoded,
// and interpolated with compose's type casts, which are recorded in the
// interpolator.

// validateComposeDoc checks one document against the compose schema and
// reports every failing place.
func validateComposeDoc(c *yamlpos.Collector, ix *composeIndex, f *composeFile, doc *yaml.Node, in *interp.Interpolator) {
	m, ok := interpolateComposeDoc(c, f, doc, in)
	if !ok {
		return
	}
	composeschema.Validate(c, f.display, doc, m)
}

// interpolateComposeDoc is a document as compose-go validates it:
// decoded and interpolated with compose's casts, which it records in in.
// It reports what fails and returns false then.
func interpolateComposeDoc(c *yamlpos.Collector, f *composeFile, doc *yaml.Node, in *interp.Interpolator) (map[string]any, bool) {
	raw, err := composeschema.DocValue(doc)
	if err != nil {
		c.Add(manifest.Position{File: f.display, Line: doc.Line, Column: doc.Column}, "", "%v", err)
		return nil, false
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, false // reported by the caller
	}
	if errs := in.InterpolateDoc(m); len(errs) > 0 {
		for _, e := range errs {
			field, at, _ := yamlpos.NodePath(f.display, doc, e.Path)
			c.Add(at, field, "%s", e.Msg)
		}
		return nil, false
	}
	return m, true
}
