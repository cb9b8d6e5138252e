package compose

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/yamlpos"
)

// compose-go keeps no positions. The compose front end parses the same
// files with yaml.v3 and finds a field's line and column by its path, in the
// file that declared it: an override file wins over the base file, as its
// value does.

// composeFile is one compose file of the app, in load order.
type composeFile struct {
	path    string       // in the fs.FS
	display string       // as printed in messages
	data    []byte       // content as read
	docs    []*yaml.Node // the root mapping of each document; nil entries for empty ones
}

// composeIndex locates compose paths ("services.web.ports[0]") in the files.
type composeIndex struct {
	files []*composeFile
}

// pathPart is one step of a field path: a mapping key or a list index.
type pathPart struct {
	key   string
	index int // -1 for a key
}

// splitPath parses a field path as childPath and indexPath write it:
// `a.b[2]["odd.key"].c`.
func splitPath(p string) []pathPart {
	var parts []pathPart
	for p != "" {
		switch {
		case strings.HasPrefix(p, `["`):
			end := strings.Index(p, `"]`)
			for end >= 0 && !validQuoted(p[1:end+1]) {
				next := strings.Index(p[end+2:], `"]`)
				if next < 0 {
					end = -1
					break
				}
				end += 2 + next
			}
			if end < 0 {
				return append(parts, pathPart{key: p, index: -1})
			}
			k, _ := strconv.Unquote(p[1 : end+1])
			parts = append(parts, pathPart{key: k, index: -1})
			p = p[end+2:]
		case strings.HasPrefix(p, "["):
			end := strings.IndexByte(p, ']')
			i, err := strconv.Atoi(p[1:max(end, 1)])
			if end < 0 || err != nil {
				return append(parts, pathPart{key: p, index: -1})
			}
			parts = append(parts, pathPart{index: i})
			p = p[end+1:]
		case strings.HasPrefix(p, "."):
			p = p[1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			parts = append(parts, pathPart{key: p[:end], index: -1})
			p = p[end:]
		}
	}
	return parts
}

func validQuoted(s string) bool {
	_, err := strconv.Unquote(s)
	return err == nil
}

// deref follows YAML aliases.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// child returns the key and value nodes of key in mapping n, looking through
// merge keys (<<) as YAML does.
func child(n *yaml.Node, key string) (k, v *yaml.Node) {
	return childDepth(n, key, 0)
}

func childDepth(n *yaml.Node, key string, depth int) (k, v *yaml.Node) {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode || depth > 8 {
		return nil, nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn := n.Content[i]
		if kn.Kind == yaml.ScalarNode && kn.Value == key && kn.ShortTag() != "!!merge" {
			k, v = kn, n.Content[i+1]
		}
		if kn.ShortTag() == "!!merge" {
			merges = append(merges, n.Content[i+1])
		}
	}
	if k != nil {
		return k, v
	}
	for _, m := range merges {
		m = deref(m)
		if m != nil && m.Kind == yaml.SequenceNode {
			for _, e := range m.Content {
				if k, v := childDepth(e, key, depth+1); k != nil {
					return k, v
				}
			}
			continue
		}
		if k, v := childDepth(m, key, depth+1); k != nil {
			return k, v
		}
	}
	return nil, nil
}

// walkPath finds path under root: the key node (nil for list items) and the
// value node. ok is false when some part is missing.
func walkPath(root *yaml.Node, parts []pathPart) (k, v *yaml.Node, ok bool) {
	v = root
	for _, p := range parts {
		v = deref(v)
		if v == nil {
			return nil, nil, false
		}
		if p.index >= 0 {
			if v.Kind != yaml.SequenceNode || p.index >= len(v.Content) {
				return nil, nil, false
			}
			k, v = nil, v.Content[p.index]
			continue
		}
		k, v = child(v, p.key)
		if k == nil {
			return nil, nil, false
		}
	}
	return k, v, true
}

// find returns the file and nodes of path in the last file (and document)
// that declares it.
func (ix *composeIndex) find(path string) (*composeFile, *yaml.Node, *yaml.Node, bool) {
	parts := splitPath(path)
	for i := len(ix.files) - 1; i >= 0; i-- {
		f := ix.files[i]
		for j := len(f.docs) - 1; j >= 0; j-- {
			if f.docs[j] == nil {
				continue
			}
			if k, v, ok := walkPath(f.docs[j], parts); ok {
				return f, k, v, true
			}
		}
	}
	return nil, nil, nil, false
}

// declared reports whether some file writes path.
func (ix *composeIndex) declared(path string) bool {
	_, _, _, ok := ix.find(path)
	return ok
}

// at is where path is written: a scalar at its value, a collection at its
// key. A path no file writes is reported where its nearest written ancestor
// is, and a path without any at the start of the main file.
func (ix *composeIndex) at(path string) manifest.Position {
	for p := path; ; p = yamlpos.ParentPath(p) {
		if f, k, v, ok := ix.find(p); ok {
			return nodePos(f, k, v)
		}
		if p == "" {
			break
		}
	}
	if len(ix.files) == 0 {
		return manifest.Position{}
	}
	return manifest.Position{File: ix.files[0].display, Line: 1, Column: 1}
}

// keyAt is where the key of path is written (for unknown fields and for
// whole objects).
func (ix *composeIndex) keyAt(path string) manifest.Position {
	if f, k, v, ok := ix.find(path); ok && k != nil {
		return nodePos(f, k, k)
	} else if ok {
		return nodePos(f, nil, v)
	}
	return ix.at(path)
}

// firstKeyAt is where path's key is first written (the base file): where a
// service is declared.
func (ix *composeIndex) firstKeyAt(path string) manifest.Position {
	parts := splitPath(path)
	for _, f := range ix.files {
		for _, d := range f.docs {
			if d == nil {
				continue
			}
			if k, v, ok := walkPath(d, parts); ok {
				if k != nil {
					v = k
				}
				return manifest.Position{File: f.display, Line: v.Line, Column: v.Column}
			}
		}
	}
	return ix.keyAt(path)
}

// item locates the i-th entry of a list that compose merges by appending
// (base entries first, then each override's). When the files' entries do
// not add up to a list that long (compose dropped a duplicate), the list
// itself is reported.
func (ix *composeIndex) item(list string, i int) manifest.Position {
	parts := splitPath(list)
	n := 0
	for _, f := range ix.files {
		for _, d := range f.docs {
			if d == nil {
				continue
			}
			_, v, ok := walkPath(d, parts)
			v = deref(v)
			if !ok || v == nil || v.Kind != yaml.SequenceNode {
				continue
			}
			if i-n < len(v.Content) {
				e := v.Content[i-n]
				return manifest.Position{File: f.display, Line: e.Line, Column: e.Column}
			}
			n += len(v.Content)
		}
	}
	return ix.at(list)
}

// itemNodes returns every entry of a list in merge order with its file.
func (ix *composeIndex) itemNodes(list string) []fileNode {
	parts := splitPath(list)
	var out []fileNode
	for _, f := range ix.files {
		for _, d := range f.docs {
			if d == nil {
				continue
			}
			_, v, ok := walkPath(d, parts)
			v = deref(v)
			if !ok || v == nil || v.Kind != yaml.SequenceNode {
				continue
			}
			for _, e := range v.Content {
				out = append(out, fileNode{f, deref(e)})
			}
		}
	}
	return out
}

type fileNode struct {
	file *composeFile
	node *yaml.Node
}

func (fn fileNode) pos() manifest.Position {
	return manifest.Position{File: fn.file.display, Line: fn.node.Line, Column: fn.node.Column}
}

func nodePos(f *composeFile, k, v *yaml.Node) manifest.Position {
	at := v
	if k != nil && v != nil && (yamlpos.IsNull(v) || v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode) {
		at = k
	}
	if at == nil {
		at = k
	}
	return manifest.Position{File: f.display, Line: at.Line, Column: at.Column}
}

// resolved returns a copy of n with aliases replaced by what they name and
// merge keys (<<) applied, as a YAML decoder would see it; nodes keep the
// positions where they are written (an alias's content where its anchor
// is).
func resolved(n *yaml.Node, depth int) *yaml.Node {
	n = deref(n)
	if n == nil || depth > 32 {
		return n
	}
	out := *n
	out.Anchor = ""
	switch n.Kind {
	case yaml.SequenceNode:
		out.Content = make([]*yaml.Node, len(n.Content))
		for i, c := range n.Content {
			out.Content[i] = resolved(c, depth+1)
		}
	case yaml.MappingNode:
		out.Content = nil
		explicit := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].ShortTag() != "!!merge" {
				explicit[n.Content[i].Value] = true
			}
		}
		var merged []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.ShortTag() != "!!merge" {
				out.Content = append(out.Content, k, resolved(v, depth+1))
				continue
			}
			sources := []*yaml.Node{deref(v)}
			if s := deref(v); s != nil && s.Kind == yaml.SequenceNode {
				sources = s.Content
			}
			for _, src := range sources {
				r := resolved(src, depth+1)
				if r == nil || r.Kind != yaml.MappingNode {
					continue
				}
				for j := 0; j+1 < len(r.Content); j += 2 {
					if !explicit[r.Content[j].Value] {
						explicit[r.Content[j].Value] = true
						merged = append(merged, r.Content[j], r.Content[j+1])
					}
				}
			}
		}
		out.Content = append(out.Content, merged...)
	}
	return &out
}
