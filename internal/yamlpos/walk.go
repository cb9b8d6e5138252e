package yamlpos

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/manifest"
)

// Quantity is a resource amount written as a string or a number
// ("512Mi", 1073741824, "0.5", 0.5). The walker passes its text through.
type Quantity string

// Duration is a time span written as a string in Go/compose notation
// ("10s", "1m30s", "500ms"). The walker passes its text through.
type Duration string

// Scalar is a value written as a string or an integer (a stop signal as
// "SIGTERM" or 15, a group as "audio" or 1000, a sysctl value, a tmpfs
// mode). The walker passes its text through.
type Scalar string

// Ignored marks a field whose content is not checked: the spec of a
// document whose kind is unknown (the kind error says enough).
type Ignored struct{}

// DocCtx is one YAML document: where it starts and where each of its field
// paths is, so errors found after decoding still point at a line.
type DocCtx struct {
	File  string
	Start manifest.Position
	Pos   map[string]manifest.Position
	// Failed holds the paths the walker reported, so validation does not
	// add "is required" for a field that is present but malformed.
	Failed map[string]bool
}

// At returns the position of path, or of its nearest ancestor that exists
// (a missing field is reported where its parent is).
func (d *DocCtx) At(path string) manifest.Position {
	for {
		if p, ok := d.Pos[path]; ok {
			return p
		}
		if path == "" {
			return d.Start
		}
		path = ParentPath(path)
	}
}

func ParentPath(p string) string {
	if strings.HasSuffix(p, `"]`) {
		if i := strings.LastIndex(p, `["`); i >= 0 {
			return p[:i]
		}
	}
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndex(p, "["); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndex(p, "."); i >= 0 {
		return p[:i]
	}
	return ""
}

var PlainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

func ChildPath(parent, key string) string {
	if !PlainKey.MatchString(key) {
		return parent + "[" + strconv.Quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func IndexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// Walker checks a yaml.v3 node tree against a raw type: unknown fields,
// duplicate keys and wrong types, each with its position. It records the
// position of every field path it sees and builds a JSON-able value of the
// parts that are well-formed, for the strict decode.
type Walker struct {
	Doc  *DocCtx
	Errs *Collector
	Bad  bool
}

var (
	quantityType = reflect.TypeOf(Quantity(""))
	durationType = reflect.TypeOf(Duration(""))
	scalarType   = reflect.TypeOf(Scalar(""))
	ignoredType  = reflect.TypeOf(Ignored{})
)

func (w *Walker) fail(n *yaml.Node, field, format string, args ...any) {
	w.Bad = true
	w.Doc.Failed[field] = true
	w.Errs.Add(w.nodePos(n), field, format, args...)
}

func (w *Walker) nodePos(n *yaml.Node) manifest.Position {
	return manifest.Position{File: w.Doc.File, Line: n.Line, Column: n.Column}
}

// Walk returns the JSON-able value of n, or ok=false when n is null (the
// caller decides whether null is allowed) or malformed (already reported).
func (w *Walker) Walk(n *yaml.Node, t reflect.Type, path string) (v any, ok bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == ignoredType {
		return nil, false
	}
	if n.Kind == yaml.AliasNode {
		w.fail(n, path, "YAML aliases are not supported: write the value out")
		return nil, false
	}
	tag := n.ShortTag()
	if n.Kind == yaml.ScalarNode && tag == "!!null" {
		return nil, false
	}
	if !strings.HasPrefix(tag, "!!") {
		w.fail(n, path, "unsupported YAML tag %s", tag)
		return nil, false
	}
	if t == quantityType {
		if n.Kind == yaml.ScalarNode && (tag == "!!str" || tag == "!!int" || tag == "!!float") {
			return n.Value, true
		}
		w.fail(n, path, "must be a quantity such as 512Mi or \"0.5\", got %s", Describe(n))
		return nil, false
	}
	switch {
	case t == durationType, t == scalarType:
		return w.walkText(n, t, path, tag)
	case t.Kind() == reflect.Struct:
		return w.walkStruct(n, t, path)
	case t.Kind() == reflect.Map:
		return w.walkMap(n, t, path)
	case t.Kind() == reflect.Slice:
		return w.walkSlice(n, t, path)
	case t.Kind() == reflect.String, t.Kind() == reflect.Int, t.Kind() == reflect.Bool:
		return w.walkScalar(n, t.Kind(), path, tag)
	}
	// Only reachable if a raw type grows a field kind the walker lacks.
	w.fail(n, path, "internal error: unsupported schema type %s", t)
	return nil, false
}

// walkText passes through the text of a duration or a string-or-integer
// scalar.
func (w *Walker) walkText(n *yaml.Node, t reflect.Type, path, tag string) (any, bool) {
	if t == durationType {
		if n.Kind == yaml.ScalarNode && tag == "!!str" {
			return n.Value, true
		}
		w.fail(n, path, "must be a duration such as 10s, 1m30s or 500ms, got %s", Describe(n))
		return nil, false
	}
	if n.Kind == yaml.ScalarNode && (tag == "!!str" || tag == "!!int") {
		return n.Value, true
	}
	w.fail(n, path, "must be a string or an integer, got %s", Describe(n))
	return nil, false
}

// walkScalar checks a string, integer or boolean.
func (w *Walker) walkScalar(n *yaml.Node, kind reflect.Kind, path, tag string) (any, bool) {
	switch kind {
	case reflect.String:
		if n.Kind == yaml.ScalarNode && tag == "!!str" {
			return n.Value, true
		}
		if n.Kind == yaml.ScalarNode {
			w.fail(n, path, "must be a string, got %s: quote the value", Describe(n))
		} else {
			w.fail(n, path, "must be a string, got %s", Describe(n))
		}
		return nil, false
	case reflect.Int:
		if n.Kind == yaml.ScalarNode && tag == "!!int" {
			i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, strconv.IntSize)
			if err != nil {
				w.fail(n, path, "integer out of range")
				return nil, false
			}
			return i, true
		}
		w.fail(n, path, "must be an integer, got %s", Describe(n))
		return nil, false
	}
	if n.Kind == yaml.ScalarNode && tag == "!!bool" {
		if b, err := strconv.ParseBool(strings.ToLower(n.Value)); err == nil {
			return b, true
		}
	}
	w.fail(n, path, "must be true or false, got %s", Describe(n))
	return nil, false
}

// mappingKey checks a mapping key and returns its text.
func (w *Walker) mappingKey(k *yaml.Node, parent string) (string, bool) {
	switch {
	case k.Kind == yaml.AliasNode:
		w.fail(k, parent, "YAML aliases are not supported: write the key out")
	case k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge":
		w.fail(k, parent, "YAML merge keys (<<) are not supported: write the fields out")
	case k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str":
		w.fail(k, parent, "keys must be strings, got %s", Describe(k))
	default:
		return k.Value, true
	}
	return "", false
}

// pairs checks that n is a mapping without duplicate keys and calls fn for
// each well-formed pair.
func (w *Walker) pairs(n *yaml.Node, path, want string, fn func(key string, k, v *yaml.Node)) bool {
	if n.Kind != yaml.MappingNode {
		if path == "" {
			w.fail(n, path, "a document must be a mapping with apiVersion, kind, metadata and spec, got %s", Describe(n))
		} else {
			w.fail(n, path, "must be %s, got %s", want, Describe(n))
		}
		return false
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key, ok := w.mappingKey(k, path)
		if !ok {
			continue
		}
		if first, dup := seen[key]; dup {
			w.fail(k, ChildPath(path, key), "duplicate key (first at line %d)", first.Line)
			continue
		}
		seen[key] = k
		fn(key, k, v)
	}
	return true
}

// record remembers where path is: scalars at their value, collections and
// nulls at their key (the line a user looks for).
func (w *Walker) record(path string, k, v *yaml.Node) {
	at := v
	if k != nil && (IsNull(v) || v.Kind != yaml.ScalarNode && v.Kind != yaml.AliasNode) {
		at = k
	}
	w.Doc.Pos[path] = w.nodePos(at)
}

func (w *Walker) walkStruct(n *yaml.Node, t reflect.Type, path string) (any, bool) {
	fields := map[string]reflect.Type{}
	var names []string
	structFields(t, fields, &names)
	out := map[string]any{}
	ok := w.pairs(n, path, "a mapping", func(key string, k, v *yaml.Node) {
		cp := ChildPath(path, key)
		ft, known := fields[key]
		if !known {
			msg := "unknown field"
			if s := Suggest(key, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			w.fail(k, cp, "%s", msg)
			return
		}
		w.record(cp, k, v)
		if val, present := w.Walk(v, ft, cp); present {
			out[key] = val
		}
	})
	return out, ok
}

// structFields indexes t's fields by their json name; an embedded struct
// without a json name contributes its own fields, as encoding/json reads
// it (a Job's spec is a service's spec and a few fields more).
func structFields(t reflect.Type, fields map[string]reflect.Type, names *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			structFields(f.Type, fields, names)
			continue
		}
		fields[name] = f.Type
		*names = append(*names, name)
	}
}

func (w *Walker) walkMap(n *yaml.Node, t reflect.Type, path string) (any, bool) {
	out := map[string]any{}
	ok := w.pairs(n, path, "a mapping", func(key string, k, v *yaml.Node) {
		cp := ChildPath(path, key)
		w.record(cp, k, v)
		if IsNull(v) {
			w.fail(k, cp, "must be %s, got null: write \"\" for an empty value", want(t.Elem()))
			return
		}
		if val, present := w.Walk(v, t.Elem(), cp); present {
			out[key] = val
		}
	})
	return out, ok
}

func (w *Walker) walkSlice(n *yaml.Node, t reflect.Type, path string) (any, bool) {
	if n.Kind != yaml.SequenceNode {
		w.fail(n, path, "must be a list, got %s", Describe(n))
		return nil, false
	}
	out := make([]any, 0, len(n.Content))
	for i, item := range n.Content {
		ip := IndexPath(path, i)
		w.record(ip, nil, item)
		if IsNull(item) {
			w.fail(item, ip, "must be %s, got null", want(t.Elem()))
		}
		// A malformed item stays as a null placeholder so the indices of
		// the items after it, and so their positions, do not shift.
		val, _ := w.Walk(item, t.Elem(), ip)
		out = append(out, val)
	}
	return out, true
}

// RelatedToFailure reports whether field is, contains or lies within a
// path the walker reported: validation errors there would only echo it.
func (d *DocCtx) RelatedToFailure(field string) bool {
	for f := range d.Failed {
		if within(f, field) || within(field, f) {
			return true
		}
	}
	return false
}

// within reports whether path p is ancestor-or-self of q.
func within(p, q string) bool {
	if p == "" || p == q {
		return true
	}
	return strings.HasPrefix(q, p) && (q[len(p)] == '.' || q[len(p)] == '[')
}

func IsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// Describe names what a node is, for "must be X, got Y".
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.ShortTag() {
	case "!!str":
		return "a string"
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "null"
	}
	return "a value tagged " + n.ShortTag()
}

// want names what a type expects, for "must be X".
func want(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == quantityType:
		return "a quantity"
	case t == durationType:
		return "a duration"
	case t == scalarType:
		return "a string or an integer"
	case t.Kind() == reflect.Struct, t.Kind() == reflect.Map:
		return "a mapping"
	case t.Kind() == reflect.Slice:
		return "a list"
	case t.Kind() == reflect.Int:
		return "an integer"
	case t.Kind() == reflect.Bool:
		return "true or false"
	}
	return "a string"
}

// Suggest returns the known field closest to an unknown one, if it is
// close enough to be a typo.
func Suggest(key string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if strings.EqualFold(n, key) {
			return n
		}
		if d := editDistance(strings.ToLower(key), strings.ToLower(n)); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
