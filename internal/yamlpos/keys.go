package yamlpos

import (
	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/manifest"
)

// CheckKeys reports mapping keys compose cannot take: non-strings and
// duplicates.
func CheckKeys(c *Collector, file string, n *yaml.Node, field string, depth int) {
	if n == nil || depth > 64 {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			pos := manifest.Position{File: file, Line: k.Line, Column: k.Column}
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				CheckKeys(c, file, v, field, depth+1)
				continue
			}
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				c.Add(pos, field, "keys must be strings, got %s: quote the key", Describe(k))
				continue
			}
			cp := ChildPath(field, k.Value)
			if first, dup := seen[k.Value]; dup {
				c.Add(pos, cp, "duplicate key (first at line %d)", first.Line)
				continue
			}
			seen[k.Value] = k
			CheckKeys(c, file, v, cp, depth+1)
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			CheckKeys(c, file, e, IndexPath(field, i), depth+1)
		}
	}
}
