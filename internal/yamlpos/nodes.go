package yamlpos

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/manifest"
)

// The helpers below find a field path in a yaml.v3 node tree as a YAML
// decoder would see it: through aliases and merge keys (<<). They know
// nothing of any front end's format.

// PathPart is one step of a field path: a mapping key or a list index.
type PathPart struct {
	Key   string
	Index int // -1 for a key
}

// SplitPath parses a field path as ChildPath and IndexPath write it:
// `a.b[2]["odd.key"].c`.
func SplitPath(p string) []PathPart {
	var parts []PathPart
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
				return append(parts, PathPart{Key: p, Index: -1})
			}
			k, _ := strconv.Unquote(p[1 : end+1])
			parts = append(parts, PathPart{Key: k, Index: -1})
			p = p[end+2:]
		case strings.HasPrefix(p, "["):
			end := strings.IndexByte(p, ']')
			i, err := strconv.Atoi(p[1:max(end, 1)])
			if end < 0 || err != nil {
				return append(parts, PathPart{Key: p, Index: -1})
			}
			parts = append(parts, PathPart{Index: i})
			p = p[end+1:]
		case strings.HasPrefix(p, "."):
			p = p[1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			parts = append(parts, PathPart{Key: p[:end], Index: -1})
			p = p[end:]
		}
	}
	return parts
}

func validQuoted(s string) bool {
	_, err := strconv.Unquote(s)
	return err == nil
}

// Deref follows YAML aliases.
func Deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// Child returns the key and value nodes of key in mapping n, looking through
// merge keys (<<) as YAML does.
func Child(n *yaml.Node, key string) (k, v *yaml.Node) {
	return childDepth(n, key, 0)
}

func childDepth(n *yaml.Node, key string, depth int) (k, v *yaml.Node) {
	n = Deref(n)
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
		m = Deref(m)
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

// WalkPath finds path under root: the key node (nil for list items) and the
// value node. ok is false when some part is missing.
func WalkPath(root *yaml.Node, parts []PathPart) (k, v *yaml.Node, ok bool) {
	v = root
	for _, p := range parts {
		v = Deref(v)
		if v == nil {
			return nil, nil, false
		}
		if p.Index >= 0 {
			if v.Kind != yaml.SequenceNode || p.Index >= len(v.Content) {
				return nil, nil, false
			}
			k, v = nil, v.Content[p.Index]
			continue
		}
		k, v = Child(v, p.Key)
		if k == nil {
			return nil, nil, false
		}
	}
	return k, v, true
}

// Resolved returns a copy of n with aliases replaced by what they name and
// merge keys (<<) applied, as a YAML decoder would see it; nodes keep the
// positions where they are written (an alias's content where its anchor
// is).
func Resolved(n *yaml.Node, depth int) *yaml.Node {
	n = Deref(n)
	if n == nil || depth > 32 {
		return n
	}
	out := *n
	out.Anchor = ""
	switch n.Kind {
	case yaml.SequenceNode:
		out.Content = make([]*yaml.Node, len(n.Content))
		for i, c := range n.Content {
			out.Content[i] = Resolved(c, depth+1)
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
				out.Content = append(out.Content, k, Resolved(v, depth+1))
				continue
			}
			sources := []*yaml.Node{Deref(v)}
			if s := Deref(v); s != nil && s.Kind == yaml.SequenceNode {
				sources = s.Content
			}
			for _, src := range sources {
				r := Resolved(src, depth+1)
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

// NodePos is where a field whose key and value nodes are k and v is written:
// a scalar at its value, a collection or a null at its key.
func NodePos(file string, k, v *yaml.Node) manifest.Position {
	at := v
	if k != nil && v != nil && (IsNull(v) || v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode) {
		at = k
	}
	if at == nil {
		at = k
	}
	return manifest.Position{File: file, Line: at.Line, Column: at.Column}
}

// NodePath turns instance location parts into a field path as driftless
// writes it, and the position of the deepest node that exists.
func NodePath(file string, doc *yaml.Node, parts []string) (string, manifest.Position, *yaml.Node) {
	field := ""
	n := doc
	at := manifest.Position{File: file, Line: doc.Line, Column: doc.Column}
	for _, p := range parts {
		n = Deref(n)
		switch {
		case n != nil && n.Kind == yaml.SequenceNode:
			i := -1
			fmt.Sscan(p, &i)
			field = IndexPath(field, i)
			if i >= 0 && i < len(n.Content) {
				n = n.Content[i]
				at = manifest.Position{File: file, Line: n.Line, Column: n.Column}
			} else {
				n = nil
			}
		default:
			field = ChildPath(field, p)
			k, v := Child(n, p)
			if k == nil {
				n = nil
				continue
			}
			at = NodePos(file, k, v)
			n = v
		}
	}
	return field, at, n
}
