package compose

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

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/schemaerr"
	"github.com/driftless-dev/driftless/manifest/internal/yamlpos"
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

func compiledComposeSchema() (*jsonschema.Schema, error) {
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

// docValue decodes a document as compose-go sees it: !reset removes the
// attribute, !override is the plain value.
func docValue(doc *yaml.Node) (v any, err error) {
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

// validateComposeDoc checks one document against the compose schema and
// reports every failing place.
func validateComposeDoc(c *yamlpos.Collector, ix *composeIndex, f *composeFile, doc *yaml.Node, in *interpolator) {
	m, ok := interpolateComposeDoc(c, f, doc, in)
	if !ok {
		return
	}
	sch, err := compiledComposeSchema()
	if err != nil {
		c.Add(manifest.Position{File: f.display, Line: 1}, "", "internal error: compose schema: %v", err)
		return
	}
	b, err := json.Marshal(m)
	var inst any
	if err == nil {
		err = json.Unmarshal(b, &inst)
	}
	if err != nil {
		c.Add(manifest.Position{File: f.display, Line: doc.Line, Column: doc.Column}, "", "cannot check against the compose schema: %v", err)
		return
	}
	err = sch.Validate(inst)
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return
	}
	for _, e := range schemaerr.Leaves(verr) {
		reportSchemaError(c, f, doc, e)
	}
}

// interpolateComposeDoc is a document as compose-go validates it:
// decoded and interpolated with compose's casts, which it records in in.
// It reports what fails and returns false then.
func interpolateComposeDoc(c *yamlpos.Collector, f *composeFile, doc *yaml.Node, in *interpolator) (map[string]any, bool) {
	raw, err := docValue(doc)
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

// castPattern is one of compose-go's interpolation casts, split once.
type castPattern struct {
	path  tree.Path
	parts []string
	cast  interpolation.Cast
}

var composeCastPatterns = func() []castPattern {
	var out []castPattern
	for p, c := range composeCasts {
		out = append(out, castPattern{p, strings.Split(string(p), "."), c})
	}
	return out
}()

func castFor(path []string) *castPattern {
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
			cp := castFor(path)
			if cp == nil {
				return s
			}
			if in.usedCasts == nil {
				in.usedCasts = map[tree.Path]interpolation.Cast{}
			}
			in.usedCasts[cp.path] = cp.cast
			out, err := cp.cast(s)
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

func reportSchemaError(c *yamlpos.Collector, f *composeFile, doc *yaml.Node, e *jsonschema.ValidationError) {
	field, at, n := yamlpos.NodePath(f.display, doc, e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			pos := at
			if kn, _ := yamlpos.Child(n, p); kn != nil {
				pos = manifest.Position{File: f.display, Line: kn.Line, Column: kn.Column}
			}
			c.Add(pos, yamlpos.ChildPath(field, p), "%s", unknownComposeField(e.InstanceLocation, p))
		}
	case *kind.FalseSchema:
		// additionalProperties: false fails each extra property.
		loc := e.InstanceLocation
		if len(loc) == 0 {
			c.Add(at, field, "is not allowed")
			return
		}
		_, _, parent := yamlpos.NodePath(f.display, doc, loc[:len(loc)-1])
		if kn, _ := yamlpos.Child(parent, loc[len(loc)-1]); kn != nil {
			at = manifest.Position{File: f.display, Line: kn.Line, Column: kn.Column}
		}
		c.Add(at, field, "%s", unknownComposeField(loc[:len(loc)-1], loc[len(loc)-1]))
	default:
		c.Add(at, field, "%s", schemaerr.Message(e.ErrorKind))
	}
}

// unknownComposeField says an attribute is not part of compose, with a
// suggestion for a service attribute's typo.
func unknownComposeField(parent []string, key string) string {
	msg := "unknown field: not part of the compose specification"
	if len(parent) == 2 && parent[0] == "services" {
		if key == "replicas" {
			return msg + " (use deploy.replicas or scale)"
		}
		if s := yamlpos.Suggest(key, serviceFieldNames()); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
	}
	return msg
}

// serviceFieldNames are the attributes of a compose service. Only error
// messages need them, so they are not cached.
func serviceFieldNames() []string {
	var names []string
	for _, f := range composeServiceFields() {
		names = append(names, f.name)
	}
	return names
}

// composeServiceField is one attribute of types.ServiceConfig, with the Go
// field that holds it.
type composeServiceField struct {
	name  string // the yaml key
	index []int  // for reflect.Value.FieldByIndex
	typ   reflect.Type
}

// composeServiceFields lists the attributes of a compose service from
// compose-go's types (embedded specs flattened).
func composeServiceFields() []composeServiceField {
	var out []composeServiceField
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
			out = append(out, composeServiceField{name: name, index: index, typ: f.Type})
		}
	}
	walk(reflect.TypeOf(types.ServiceConfig{}), nil)
	return out
}
