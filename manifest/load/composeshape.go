package load

import "gopkg.in/yaml.v3"

// ComposeShaped tells a document with compose's top-level services: and
// none of a native manifest's header (apiVersion, kind, metadata, spec).
// root is the document's top-level node.
func ComposeShaped(root *yaml.Node) bool {
	if root == nil || root.Kind != yaml.MappingNode {
		return false
	}
	services := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "services":
			services = true
		case "apiVersion", "kind", "metadata", "spec":
			return false
		}
	}
	return services
}
