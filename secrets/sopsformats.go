package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"gopkg.in/ini.v1"
)

// Format is how sops reads and prints a file, chosen by its name.
type Format string

// The formats sops knows.
const (
	FormatYAML   Format = "yaml"
	FormatJSON   Format = "json"
	FormatDotenv Format = "dotenv"
	FormatINI    Format = "ini"
	FormatBinary Format = "binary"
)

// FormatOf is the SOPS format of a file by its name, as `sops` chooses
// it: .yaml/.yml, .json, .env, .ini, anything else binary.
func FormatOf(name string) Format {
	switch {
	case strings.HasSuffix(name, ".yaml"), strings.HasSuffix(name, ".yml"):
		return FormatYAML
	case strings.HasSuffix(name, ".json"):
		return FormatJSON
	case strings.HasSuffix(name, ".env"):
		return FormatDotenv
	case strings.HasSuffix(name, ".ini"):
		return FormatINI
	}
	return FormatBinary
}

// loadEncrypted reads an encrypted file of format f: its data, and its
// metadata. Any error means it is not (readable as) a SOPS file.
func loadEncrypted(f Format, data []byte) (*sopsFile, error) {
	var (
		branches []branch
		err      error
		flat     = flattenNone
		escape   bool
	)
	switch f {
	case FormatYAML:
		branches, err = loadYAML(data)
	case FormatDotenv:
		branches, err = loadDotenv(data)
		flat = flattenFull
	case FormatINI:
		branches, err = loadINI(data)
		flat, escape = flattenBelowTop, true
	default: // JSON, and binary files, whose encrypted form is JSON
		branches, err = loadJSON(data)
	}
	if err != nil {
		return nil, err
	}
	branches, meta, err := extractMetadata(branches, flat, escape)
	if err != nil {
		return nil, err
	}
	return &sopsFile{format: f, branches: branches, meta: meta}, nil
}

// emitPlain prints decrypted data as `sops --decrypt` does.
func emitPlain(f Format, branches []branch) ([]byte, error) {
	switch f {
	case FormatYAML:
		return emitYAML(branches)
	case FormatJSON:
		return emitJSON(branches)
	case FormatDotenv:
		return emitDotenv(branches)
	case FormatINI:
		return emitINI(branches)
	}
	return emitBinary(branches)
}

// --- YAML, as sops's YAML store reads and writes it (comments kept)

func appendComments(text string, inline bool, add func(comment)) {
	if text == "" {
		return
	}
	for _, line := range strings.Split(text, "\n") {
		if line != "" {
			add(comment{Value: line[1:], Inline: inline})
		}
	}
}

func commentsToList(text string, inline bool, l []any) []any {
	appendComments(text, inline, func(c comment) { l = append(l, c) })
	return l
}

func commentsToMap(text string, inline bool, b branch) branch {
	appendComments(text, inline, func(c comment) { b = append(b, item{Key: c}) })
	return b
}

func yamlValue(n *yaml.Node, commentsHandled bool) (any, error) {
	switch n.Kind {
	case yaml.SequenceNode:
		var l []any
		if !commentsHandled {
			l = commentsToList(n.HeadComment, false, l)
			l = commentsToList(n.LineComment, false, l)
		}
		for _, e := range n.Content {
			l = commentsToList(e.HeadComment, false, l)
			l = commentsToList(e.LineComment, true, l)
			v, err := yamlValue(e, true)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
			l = commentsToList(e.FootComment, false, l)
		}
		if !commentsHandled {
			l = commentsToList(n.FootComment, false, l)
		}
		return l, nil
	case yaml.MappingNode:
		return yamlBranch(n, branch{}, commentsHandled)
	case yaml.ScalarNode:
		var v any
		_ = n.Decode(&v) // as sops: a scalar that does not decode is null
		return v, nil
	case yaml.AliasNode:
		return yamlValue(n.Alias, false)
	}
	return nil, nil
}

func yamlBranch(n *yaml.Node, b branch, commentsHandled bool) (branch, error) {
	var err error
	if !commentsHandled {
		b = commentsToMap(n.HeadComment, false, b)
		b = commentsToMap(n.LineComment, false, b)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if b, err = yamlBranch(c, b, false); err != nil {
				return nil, err
			}
		}
	case yaml.SequenceNode:
		return nil, errors.New("YAML documents that are sequences are not supported")
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			b = commentsToMap(k.HeadComment, false, b)
			b = commentsToMap(k.LineComment, false, b)
			scalar := v.Kind == yaml.ScalarNode || v.Kind == yaml.AliasNode
			if scalar {
				b = commentsToMap(v.HeadComment, false, b)
				b = commentsToMap(v.LineComment, true, b)
			}
			var key any
			_ = k.Decode(&key)
			val, err := yamlValue(v, scalar)
			if err != nil {
				return nil, err
			}
			b = append(b, item{Key: key, Value: val, line: k.Line})
			if scalar {
				b = commentsToMap(v.FootComment, false, b)
			}
			b = commentsToMap(k.FootComment, false, b)
		}
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" { // an empty document
			return b, nil
		}
		return nil, errors.New("YAML documents that are values are not supported")
	case yaml.AliasNode:
		if b, err = yamlBranch(n.Alias, b, false); err != nil {
			return nil, err
		}
	}
	if !commentsHandled {
		b = commentsToMap(n.FootComment, false, b)
	}
	return b, nil
}

func loadYAML(in []byte) ([]branch, error) {
	if len(in) > 0 {
		// sops decodes the first document into a map first, for the
		// decoder's check of duplicate keys.
		if err := yaml.NewDecoder(bytes.NewReader(in)).Decode(make(map[string]any)); err != nil {
			return nil, err
		}
	}
	var out []branch
	d := yaml.NewDecoder(bytes.NewReader(in))
	for {
		var doc yaml.Node
		err := d.Decode(&doc)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := yamlBranch(&doc, branch{}, false)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
}

func joinComments(cs []string) string { return "#" + strings.Join(cs, "\n#") }

func headComments(n *yaml.Node, cs []string) []string {
	if len(cs) > 0 {
		if n.HeadComment != "" {
			n.HeadComment = joinComments(cs) + "\n" + n.HeadComment
		} else {
			n.HeadComment = joinComments(cs)
		}
	}
	return nil
}

func footComments(n *yaml.Node, cs []string) []string { return addComments(&n.FootComment, cs) }

func lineComments(n *yaml.Node, cs []string) []string { return addComments(&n.LineComment, cs) }

// addComments adds cs after the comment already in *field.
func addComments(field *string, cs []string) []string {
	if len(cs) > 0 {
		if *field != "" {
			*field += "\n" + joinComments(cs)
		} else {
			*field = joinComments(cs)
		}
	}
	return nil
}

func yamlNode(v any) *yaml.Node {
	switch v := v.(type) {
	case branch:
		n := &yaml.Node{Kind: yaml.MappingNode}
		yamlMapping(v, n)
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		yamlSequence(v, n)
		return n
	}
	n := &yaml.Node{}
	_ = n.Encode(v)
	return n
}

// pendingComments are the comments met in a sequence or mapping before
// its next element, which they attach to.
type pendingComments struct {
	head, inline []string
	started      bool // an element was placed
}

// take keeps v when it is a comment, and says so.
func (p *pendingComments) take(v any) bool {
	c, ok := v.(comment)
	if !ok {
		return false
	}
	if c.Inline {
		p.inline = append(p.inline, c.Value)
	} else {
		p.head = append(p.head, c.Value)
	}
	return true
}

// place puts the pending comments on the next element of collection n:
// head comments on head (those before the first element on n itself),
// inline ones on line.
func (p *pendingComments) place(n, head, line *yaml.Node) {
	if !p.started {
		p.head = headComments(n, p.head)
		p.started = true
	}
	p.head = headComments(head, p.head)
	p.inline = lineComments(line, p.inline)
}

// finish puts the comments after the last element: on n when it has none,
// else as the foot comment of last.
func (p *pendingComments) finish(n, last *yaml.Node) {
	rest := append(p.head, p.inline...)
	if len(rest) == 0 {
		return
	}
	if !p.started {
		headComments(n, rest)
	} else {
		footComments(last, rest)
	}
}

func yamlSequence(l []any, n *yaml.Node) {
	var pc pendingComments
	for _, e := range l {
		if pc.take(e) {
			continue
		}
		en := yamlNode(e)
		pc.place(n, en, en)
		n.Content = append(n.Content, en)
	}
	var last *yaml.Node
	if len(n.Content) > 0 {
		last = n.Content[len(n.Content)-1]
	}
	pc.finish(n, last)
}

func yamlMapping(b branch, n *yaml.Node) {
	var pc pendingComments
	for _, it := range b {
		if pc.take(it.Key) {
			continue
		}
		kn := &yaml.Node{}
		_ = kn.Encode(it.Key)
		vn := yamlNode(it.Value)
		pc.place(n, kn, vn)
		n.Content = append(n.Content, kn, vn)
	}
	var last *yaml.Node
	if len(n.Content) > 1 {
		last = n.Content[len(n.Content)-2]
	}
	pc.finish(n, last)
}

func emitYAML(branches []branch) ([]byte, error) {
	var buf bytes.Buffer
	e := yaml.NewEncoder(&buf)
	e.SetIndent(4)
	for _, b := range branches {
		m := &yaml.Node{Kind: yaml.MappingNode}
		yamlMapping(b, m)
		if err := e.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{m}}); err != nil {
			return nil, fmt.Errorf("print YAML: %w", err)
		}
	}
	_ = e.Close()
	return buf.Bytes(), nil
}

// --- JSON, read token by token to keep the order of keys

var errEndOfObject = errors.New("end of object")

func jsonScalar(t json.Token) (any, error) {
	n, ok := t.(json.Number)
	if !ok {
		return t, nil
	}
	if i, err := n.Int64(); err == nil {
		return int(i), nil
	}
	return n.Float64()
}

// jsonReader reads a JSON file token by token; in is the file, for the
// line numbers of keys.
type jsonReader struct {
	dec *json.Decoder
	in  []byte
}

// line is the line the decoder has read up to.
func (r *jsonReader) line() int {
	off := min(int(r.dec.InputOffset()), len(r.in))
	return 1 + bytes.Count(r.in[:off], []byte("\n"))
}

func (r *jsonReader) list() ([]any, error) {
	var l []any
	for {
		t, err := r.dec.Token()
		if err != nil {
			return l, err
		}
		d, isDelim := t.(json.Delim)
		switch {
		case isDelim && d == ']':
			return l, nil
		case isDelim && d == '{':
			b, err := r.object()
			if err != nil {
				return l, err
			}
			l = append(l, b)
		case isDelim && d == '[':
			sub, err := r.list()
			if err != nil {
				return l, err
			}
			l = append(l, sub)
		default:
			v, err := jsonScalar(t)
			if err != nil {
				return l, err
			}
			l = append(l, v)
		}
	}
}

func (r *jsonReader) item() (item, error) {
	var it item
	k, err := r.dec.Token()
	if err != nil && err != io.EOF {
		return it, err
	}
	if s, ok := k.(string); ok {
		it.Key, it.line = s, r.line()
	} else if d, ok := k.(json.Delim); ok && d == '}' {
		return it, errEndOfObject
	} else {
		return it, fmt.Errorf("expected a JSON object key, got %v of type %T", k, k)
	}
	t, err := r.dec.Token()
	if err != nil {
		return it, err
	}
	if d, ok := t.(json.Delim); ok {
		switch d {
		case '[':
			it.Value, err = r.list()
		case '{':
			it.Value, err = r.object()
		}
		return it, err
	}
	it.Value, err = jsonScalar(t)
	return it, err
}

func (r *jsonReader) object() (branch, error) {
	var b branch
	for {
		it, err := r.item()
		if err == io.EOF || err == errEndOfObject {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		b = append(b, it)
	}
}

func loadJSON(in []byte) ([]branch, error) {
	r := &jsonReader{dec: json.NewDecoder(bytes.NewReader(in)), in: in}
	r.dec.UseNumber() // integers beyond 2^53 stay exact
	t, err := r.dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	b, err := r.object()
	if err != nil {
		return nil, err
	}
	return []branch{b}, nil
}

func jsonEncode(v any) ([]byte, error) {
	switch v := v.(type) {
	case branch:
		var out bytes.Buffer
		out.WriteByte('{')
		first := true
		for _, it := range v {
			if _, ok := it.Key.(comment); ok {
				continue
			}
			if !first {
				out.WriteByte(',')
			}
			val, err := jsonEncode(it.Value)
			if err != nil {
				return nil, err
			}
			k, ok := it.Key.(string)
			if !ok {
				return nil, fmt.Errorf("a JSON key of type %T", it.Key)
			}
			kb, err := json.Marshal(k)
			if err != nil {
				return nil, err
			}
			out.Write(kb)
			out.WriteString(": ")
			out.Write(val)
			first = false
		}
		out.WriteByte('}')
		return out.Bytes(), nil
	case []any:
		var out bytes.Buffer
		out.WriteByte('[')
		first := true
		for _, e := range v {
			if _, ok := e.(comment); ok {
				continue
			}
			if !first {
				out.WriteByte(',')
			}
			b, err := jsonEncode(e)
			if err != nil {
				return nil, err
			}
			out.Write(b)
			first = false
		}
		out.WriteByte(']')
		return out.Bytes(), nil
	}
	return json.Marshal(v)
}

func emitJSON(branches []branch) ([]byte, error) {
	if len(branches) == 0 {
		return nil, errors.New("no JSON object to print")
	}
	raw, err := jsonEncode(branches[0])
	if err != nil {
		return nil, fmt.Errorf("print JSON: %w", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "\t"); err != nil {
		return nil, fmt.Errorf("print JSON: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// emitBinary is a binary file's content: the "data" value.
func emitBinary(branches []branch) ([]byte, error) {
	if len(branches) != 1 {
		return nil, errors.New("a binary file must have exactly one tree branch")
	}
	for _, it := range branches[0] {
		if it.Key == "data" {
			s, ok := it.Value.(string)
			if !ok {
				return nil, errors.New("the 'data' value of a binary file is not a string")
			}
			return []byte(s), nil
		}
	}
	return nil, errors.New("no binary data found in the file")
}

// --- dotenv: KEY=VALUE lines, '#' comments, "\n" escaped

func loadDotenv(in []byte) ([]branch, error) {
	var b branch
	for n, line := range bytes.Split(in, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if line[0] == '#' {
			b = append(b, item{Key: comment{Value: string(line[1:])}, line: n + 1})
			continue
		}
		i := bytes.IndexByte(line, '=')
		if i < 0 {
			return nil, errors.New("a dotenv line without '='")
		}
		b = append(b, item{Key: string(line[:i]), Value: strings.ReplaceAll(string(line[i+1:]), "\\n", "\n"), line: n + 1})
	}
	return []branch{b}, nil
}

func isComplex(v any) bool {
	switch v.(type) {
	case branch, []any:
		return true
	}
	return false
}

// scalarString is a non-string scalar as sops prints it in dotenv and
// INI files.
func scalarString(v any) string {
	switch v := v.(type) {
	case float64:
		s := strconv.FormatFloat(v, 'G', -1, 64)
		if !strings.ContainsAny(s, ".E") {
			s = strconv.FormatFloat(v, 'f', 1, 64)
		}
		return s
	case bool:
		return strconv.FormatBool(v)
	case time.Time:
		return v.Format(time.RFC3339)
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprintf("%v", v)
}

func emitDotenv(branches []branch) ([]byte, error) {
	if len(branches) == 0 {
		return nil, errors.New("no dotenv data to print")
	}
	var buf bytes.Buffer
	for _, it := range branches[0] {
		if isComplex(it.Value) {
			return nil, fmt.Errorf("cannot use complex value in dotenv file; offending key %v", it.Key)
		}
		if c, ok := it.Key.(comment); ok {
			fmt.Fprintf(&buf, "#%s\n", c.Value)
			continue
		}
		v, ok := it.Value.(string)
		if ok {
			v = strings.ReplaceAll(v, "\n", "\\n")
		} else {
			v = scalarString(it.Value)
		}
		fmt.Fprintf(&buf, "%v=%s\n", it.Key, v)
	}
	return buf.Bytes(), nil
}

// --- INI: sections of keys, with gopkg.in/ini.v1 as sops uses it

func stripCommentChar(c string) string {
	switch {
	case strings.HasPrefix(c, ";"):
		return strings.TrimLeft(c, "; ")
	case strings.HasPrefix(c, "#"):
		return strings.TrimLeft(c, "# ")
	}
	return c
}

func loadINI(in []byte) ([]branch, error) {
	f, err := ini.LoadSources(ini.LoadOptions{AllowNonUniqueSections: true}, in)
	if err != nil {
		return nil, err
	}
	var b branch
	for _, s := range f.Sections() {
		var items branch
		if s.Comment != "" {
			items = append(items, item{Key: comment{Value: stripCommentChar(s.Comment)}})
		}
		for _, k := range s.Keys() {
			items = append(items, item{Key: k.Name(), Value: k.Value()})
			if k.Comment != "" {
				items = append(items, item{Key: comment{Value: stripCommentChar(k.Comment)}})
			}
		}
		b = append(b, item{Key: s.Name(), Value: items})
	}
	return []branch{b}, nil
}

func emitINI(branches []branch) ([]byte, error) {
	f := ini.Empty(ini.LoadOptions{AllowNonUniqueSections: true})
	f.DeleteSection(ini.DefaultSection)
	for _, b := range branches {
		for _, it := range b {
			if _, ok := it.Key.(comment); ok {
				continue
			}
			name, _ := it.Key.(string)
			s, err := f.NewSection(name)
			if err != nil {
				return nil, fmt.Errorf("print INI section %s: %w", name, err)
			}
			keys, ok := it.Value.(branch)
			if !ok {
				return nil, errors.New("print INI: section values should always be mappings")
			}
			first := 0
			if len(keys) > 0 {
				if c, ok := keys[0].Key.(comment); ok {
					s.Comment = c.Value
					first = 1
				}
			}
			var last *ini.Key
			for _, kv := range keys[first:] {
				if c, ok := kv.Key.(comment); ok {
					if last != nil {
						last.Comment = c.Value
					}
					continue
				}
				kn, _ := kv.Key.(string)
				if last, err = s.NewKey(kn, scalarString(kv.Value)); err != nil {
					return nil, fmt.Errorf("print INI key: %w", err)
				}
			}
		}
	}
	var buf bytes.Buffer
	_, _ = f.WriteTo(&buf)
	return buf.Bytes(), nil
}
