// Package composeschema checks compose files against the compose
// specification's JSON schema the way compose-go does (decoded without
// compose's custom tags, interpolated with its type casts), reporting
// every failing place at its position rather than the most specific one,
// and knows the attributes of a compose service.
package composeschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/compose-spec/compose-go/v2/interpolation"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/schema"
	"github.com/compose-spec/compose-go/v2/tree"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/schemaerr"
)

// compose-go validates against the compose specification's JSON schema and
// returns only the most specific error. To report every problem at once,
// each document is validated here against the same schema, the same way
// (interpolated, with compose's type casts), and every failing place is
// reported at its position.

var (
	composeSchemaOnce sync.Once
	composeSchema     *jsonschema.Schema
	composeSchemaErr  error
	// composeCasts are compose-go's interpolation casts (replicas: "${N}"
	// is an integer once interpolated).
	composeCasts = loader.ToOptions(&types.ConfigDetails{}, nil).Interpolate.TypeCastMapping
)

// Schema is the compose specification's JSON schema, compiled once.
func Schema() (*jsonschema.Schema, error) {
	composeSchemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema.Schema))
		if err != nil {
			composeSchemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("compose-spec.json", doc); err != nil {
			composeSchemaErr = err
			return
		}
		c.RegisterFormat(&jsonschema.Format{Name: "duration", Validate: func(v any) error {
			s, ok := v.(string)
			if !ok {
				return errors.New("expected string")
			}
			_, err := time.ParseDuration(s)
			return err
		}})
		composeSchema, composeSchemaErr = c.Compile("compose-spec.json")
	})
	return composeSchema, composeSchemaErr
}

// DocValue decodes a document as compose-go sees it: !reset removes the
// attribute, !override is the plain value.
func DocValue(doc *yaml.Node) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	restore := stripComposeTags(doc, 0)
	defer restore()
	err = doc.Decode(&v)
	return yamlpos.StringKeys(v), err
}

// stripComposeTags temporarily removes compose's custom tags, returning a
// function that puts them back.
func stripComposeTags(n *yaml.Node, depth int) func() {
	var undo []func()
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if n == nil || depth > 64 || n.Kind == yaml.AliasNode {
			return
		}
		if n.Kind == yaml.MappingNode {
			content := n.Content
			kept := make([]*yaml.Node, 0, len(content))
			for i := 0; i+1 < len(content); i += 2 {
				if content[i+1].Tag == "!reset" {
					continue
				}
				kept = append(kept, content[i], content[i+1])
			}
			if len(kept) != len(content) {
				n.Content = kept
				undo = append(undo, func() { n.Content = content })
			}
		}
		if n.Tag == "!reset" || n.Tag == "!override" {
			tag := n.Tag
			n.Tag = ""
			undo = append(undo, func() { n.Tag = tag })
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	walk(n, depth)
	return func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
}

// Validate checks one document, decoded and interpolated as m, against
// the compose schema and reports every failing place; display names the
// file in the positions.
func Validate(c *yamlpos.Collector, display string, doc *yaml.Node, m map[string]any) {
	sch, err := Schema()
	if err != nil {
		c.Add(manifest.Position{File: display, Line: 1}, "", "internal error: compose schema: %v", err)
		return
	}
	b, err := json.Marshal(m)
	var inst any
	if err == nil {
		err = json.Unmarshal(b, &inst)
	}
	if err != nil {
		c.Add(manifest.Position{File: display, Line: doc.Line, Column: doc.Column}, "", "cannot check against the compose schema: %v", err)
		return
	}
	err = sch.Validate(inst)
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return
	}
	for _, e := range unmasked(sch, b, schemaerr.Leaves(verr)) {
		reportError(c, display, doc, e)
	}
}

// unmasked drops the unknown-field errors a sibling's failure causes. A
// service is allOf container_spec and workload_spec with
// unevaluatedProperties: false, and a subschema that fails evaluates none
// of its properties: `environment:` left empty (null) made image, networks
// and volumes beside it "unknown". Each such error is kept only if it
// remains once the failing siblings are removed from the mapping (b is the
// checked instance as JSON).
func unmasked(sch *jsonschema.Schema, b []byte, leaves []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	failing := map[string][]string{} // parent location -> sibling keys failing otherwise
	for _, e := range leaves {
		if _, ok := e.ErrorKind.(*kind.FalseSchema); ok {
			continue
		}
		for n := 1; n <= len(e.InstanceLocation); n++ {
			loc := e.InstanceLocation
			parent := strings.Join(loc[:n-1], "\x00")
			if !slices.Contains(failing[parent], loc[n-1]) {
				failing[parent] = append(failing[parent], loc[n-1])
			}
		}
	}
	still := map[string]map[string]bool{} // parent location -> keys unknown without the failing siblings
	var out []*jsonschema.ValidationError
	for _, e := range leaves {
		loc := e.InstanceLocation
		if _, ok := e.ErrorKind.(*kind.FalseSchema); !ok || len(loc) == 0 {
			out = append(out, e)
			continue
		}
		parent := strings.Join(loc[:len(loc)-1], "\x00")
		if len(failing[parent]) == 0 {
			out = append(out, e)
			continue
		}
		if _, done := still[parent]; !done {
			still[parent] = unknownWithout(sch, b, loc[:len(loc)-1], failing[parent])
		}
		if keys := still[parent]; keys == nil || keys[loc[len(loc)-1]] {
			out = append(out, e)
		}
	}
	return out
}

// unknownWithout validates the instance with the keys drop removed from
// the mapping at parent, and returns the keys of that mapping still
// refused as unknown; nil (keep every error) where that cannot be done.
func unknownWithout(sch *jsonschema.Schema, b []byte, parent []string, drop []string) map[string]bool {
	var inst any
	if err := json.Unmarshal(b, &inst); err != nil {
		return nil
	}
	m, ok := at(inst, parent).(map[string]any)
	if !ok {
		return nil
	}
	for _, k := range drop {
		delete(m, k)
	}
	out := map[string]bool{}
	var verr *jsonschema.ValidationError
	if !errors.As(sch.Validate(inst), &verr) {
		return out
	}
	for _, e := range schemaerr.Leaves(verr) {
		loc := e.InstanceLocation
		if _, ok := e.ErrorKind.(*kind.FalseSchema); ok && len(loc) == len(parent)+1 && slices.Equal(loc[:len(parent)], parent) {
			out[loc[len(parent)]] = true
		}
	}
	return out
}

// at is the value at a JSON instance location, or nil.
func at(v any, loc []string) any {
	for _, k := range loc {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// Cast is one of compose-go's interpolation casts, split once.
type Cast struct {
	Path  tree.Path
	parts []string
	Cast  interpolation.Cast
}

var composeCastPatterns = func() []Cast {
	var out []Cast
	for p, c := range composeCasts {
		out = append(out, Cast{p, strings.Split(string(p), "."), c})
	}
	return out
}()

// CastFor is the cast compose-go applies at path (list items as "[]"),
// or nil.
func CastFor(path []string) *Cast {
	for i := range composeCastPatterns {
		p := &composeCastPatterns[i]
		if len(p.parts) != len(path) {
			continue
		}
		ok := true
		for i, part := range p.parts {
			if part != tree.PathMatchAll && part != path[i] {
				ok = false
				break
			}
		}
		if ok {
			return p
		}
	}
	return nil
}

func reportError(c *yamlpos.Collector, display string, doc *yaml.Node, e *jsonschema.ValidationError) {
	field, at, n := yamlpos.NodePath(display, doc, e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			pos := at
			if kn, _ := yamlpos.Child(n, p); kn != nil {
				pos = manifest.Position{File: display, Line: kn.Line, Column: kn.Column}
			}
			c.Add(pos, yamlpos.ChildPath(field, p), "%s", unknownField(e.InstanceLocation, p))
		}
	case *kind.FalseSchema:
		// additionalProperties: false fails each extra property.
		loc := e.InstanceLocation
		if len(loc) == 0 {
			c.Add(at, field, "is not allowed")
			return
		}
		_, _, parent := yamlpos.NodePath(display, doc, loc[:len(loc)-1])
		if kn, _ := yamlpos.Child(parent, loc[len(loc)-1]); kn != nil {
			at = manifest.Position{File: display, Line: kn.Line, Column: kn.Column}
		}
		c.Add(at, field, "%s", unknownField(loc[:len(loc)-1], loc[len(loc)-1]))
	case *kind.Type:
		msg := schemaerr.Message(k)
		if k.Got == "null" {
			// environment: with only comments under it is null, which
			// compose refuses too.
			msg += ": the key has no value (only comments under it?): remove the key, or give it one"
		}
		c.Add(at, field, "%s", msg)
	default:
		c.Add(at, field, "%s", schemaerr.Message(e.ErrorKind))
	}
}

// unknownField says an attribute is not part of compose, with a
// suggestion for a service attribute's typo.
func unknownField(parent []string, key string) string {
	msg := "unknown field: not part of the compose specification"
	if len(parent) == 2 && parent[0] == "services" {
		if instead := legacyServiceField(key); instead != "" {
			return msg + " (" + instead + ")"
		}
		if s := yamlpos.Suggest(key, serviceFieldNames()); s != "" && s != key {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
	}
	return msg
}

// legacyServiceField says what to write instead of a service attribute
// of compose file format 1 that the compose specification dropped (or of
// replicas, often written at the wrong level); "" for any other key.
func legacyServiceField(key string) string {
	switch key {
	case "replicas":
		return "use deploy.replicas or scale"
	case "log_driver":
		return "a compose file format 1 attribute: use logging.driver"
	case "log_opt":
		return "a compose file format 1 attribute: use logging.options"
	case "net":
		return "a compose file format 1 attribute: use network_mode"
	}
	return ""
}

// serviceFieldNames are the attributes of a compose service. Only error
// messages need them, so they are not cached.
func serviceFieldNames() []string {
	var names []string
	for _, f := range ServiceFields() {
		names = append(names, f.Name)
	}
	return names
}

// ServiceField is one attribute of types.ServiceConfig, with the Go
// field that holds it.
type ServiceField struct {
	Name  string // the yaml key
	Index []int  // for reflect.Value.FieldByIndex
	Type  reflect.Type
}

// ServiceFields lists the attributes of a compose service from
// compose-go's types (embedded specs flattened).
func ServiceFields() []ServiceField {
	var out []ServiceField
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			index := append(slices.Clone(prefix), i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if f.Anonymous && strings.Contains(opts, "inline") {
				walk(f.Type, index)
				continue
			}
			if name == "-" || name == "" || strings.HasPrefix(name, "#") {
				continue
			}
			out = append(out, ServiceField{Name: name, Index: index, Type: f.Type})
		}
	}
	walk(reflect.TypeOf(types.ServiceConfig{}), nil)
	return out
}
