package compose

import (
	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/compose/internal/interp"
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
	// extended are the other files extends.file names, by path in the
	// fs.FS (nil for one that could not be read); fileExtends is whether
	// any extends names a file.
	extended    map[string]*composeFile
	fileExtends bool
	// bases maps a service's mapping to the service it extends.
	bases map[*yaml.Node]extendsTarget
	// included are the files include names (recursively), in the order
	// they are read; includeSeen those whose includes were followed;
	// stagedExtra the other files compose-go reads for them (env files),
	// by path in the fs.FS, and (nil) the directories it must find.
	included    []*composeFile
	includeSeen map[string]bool
	stagedExtra map[string][]byte
	// interp interpolates an included file with its include's env files.
	interp map[*composeFile]*interp.Interpolator
}

// layerFiles are the files that can declare a field: the included files
// (what the including file declares too is merged over theirs), then the
// compose files.
func (ix *composeIndex) layerFiles() []*composeFile {
	if len(ix.included) == 0 {
		return ix.files
	}
	return append(append([]*composeFile(nil), ix.included...), ix.files...)
}

// roots are where the fields of path can be written, from the lowest
// precedence to the highest, with the rest of the path to walk from each.
// A field of a service is looked up in the service's layers (see
// serviceLayers); anything else in each document of each file.
func (ix *composeIndex) roots(parts []yamlpos.PathPart) ([]fileNode, []yamlpos.PathPart) {
	if len(ix.bases) > 0 && len(parts) > 2 && parts[0].Index < 0 && parts[0].Key == "services" && parts[1].Index < 0 {
		return ix.serviceLayers(parts[1].Key), parts[2:]
	}
	var out []fileNode
	for _, f := range ix.layerFiles() {
		for _, d := range f.docs {
			if d != nil {
				out = append(out, fileNode{f, d})
			}
		}
	}
	return out, parts
}

// serviceLayers are the mappings that make up a service, as compose
// merges them: in each document of each compose file that declares it,
// the service it extends (recursively, in whatever file), then the
// declaration itself.
func (ix *composeIndex) serviceLayers(name string) []fileNode {
	var out []fileNode
	for _, f := range ix.layerFiles() {
		for _, d := range f.docs {
			if d == nil {
				continue
			}
			if _, v, ok := yamlpos.WalkPath(d, []yamlpos.PathPart{{Key: "services", Index: -1}, {Key: name, Index: -1}}); ok {
				out = ix.appendLayers(out, fileNode{f, yamlpos.Deref(v)}, 0)
			}
		}
	}
	return out
}

func (ix *composeIndex) appendLayers(out []fileNode, fn fileNode, depth int) []fileNode {
	// Cycles are refused before mapping; the depth only bounds the walk.
	if t, ok := ix.bases[fn.node]; ok && depth < 32 {
		for _, n := range t.nodes {
			out = ix.appendLayers(out, fileNode{t.file, n}, depth+1)
		}
	}
	return append(out, fn)
}

// find returns the file and nodes of path in the last file (and document)
// that declares it.
func (ix *composeIndex) find(path string) (*composeFile, *yaml.Node, *yaml.Node, bool) {
	roots, rest := ix.roots(yamlpos.SplitPath(path))
	if len(ix.bases) > 0 && len(rest) >= 2 && rest[0].Index < 0 && rest[1].Index >= 0 && !replacedLists[rest[0].Key] {
		// An entry of a list a service inherits: compose appends the
		// extending service's entries to its base's.
		if item, ok := appendedItem(roots, rest[:1], rest[1].Index); ok {
			if len(rest) == 2 {
				return item.file, nil, item.node, true
			}
			k, v, ok := yamlpos.WalkPath(item.node, rest[2:])
			return item.file, k, v, ok
		}
	}
	for i := len(roots) - 1; i >= 0; i-- {
		if k, v, ok := yamlpos.WalkPath(roots[i].node, rest); ok {
			return roots[i].file, k, v, true
		}
	}
	return nil, nil, nil, false
}

// replacedLists are the lists of a service that compose replaces, rather
// than appends to, when a service extends another.
var replacedLists = map[string]bool{"command": true, "entrypoint": true}

// appendedItem is the i-th entry of the list at rest under roots, counting
// each root's entries after the ones before it.
func appendedItem(roots []fileNode, rest []yamlpos.PathPart, i int) (fileNode, bool) {
	n := 0
	for _, r := range roots {
		_, v, ok := yamlpos.WalkPath(r.node, rest)
		v = yamlpos.Deref(v)
		if !ok || v == nil || v.Kind != yaml.SequenceNode {
			continue
		}
		if i-n < len(v.Content) {
			return fileNode{r.file, v.Content[i-n]}, true
		}
		n += len(v.Content)
	}
	return fileNode{}, false
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
			return yamlpos.NodePos(f.display, k, v)
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
		return yamlpos.NodePos(f.display, k, k)
	} else if ok {
		return yamlpos.NodePos(f.display, nil, v)
	}
	return ix.at(path)
}

// firstKeyAt is where path's key is first written (the base file): where a
// service is declared.
func (ix *composeIndex) firstKeyAt(path string) manifest.Position {
	parts := yamlpos.SplitPath(path)
	for _, f := range ix.layerFiles() {
		for _, d := range f.docs {
			if d == nil {
				continue
			}
			if k, v, ok := yamlpos.WalkPath(d, parts); ok {
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
	roots, rest := ix.roots(yamlpos.SplitPath(list))
	if e, ok := appendedItem(roots, rest, i); ok {
		return manifest.Position{File: e.file.display, Line: e.node.Line, Column: e.node.Column}
	}
	return ix.at(list)
}

// itemNodes returns every entry of a list in merge order with its file.
func (ix *composeIndex) itemNodes(list string) []fileNode {
	roots, rest := ix.roots(yamlpos.SplitPath(list))
	var out []fileNode
	for _, r := range roots {
		_, v, ok := yamlpos.WalkPath(r.node, rest)
		v = yamlpos.Deref(v)
		if !ok || v == nil || v.Kind != yaml.SequenceNode {
			continue
		}
		for _, e := range v.Content {
			out = append(out, fileNode{r.file, yamlpos.Deref(e)})
		}
	}
	return out
}

// sources are the nodes that write path, from the lowest precedence to
// the highest.
func (ix *composeIndex) sources(path string) []fileNode {
	roots, rest := ix.roots(yamlpos.SplitPath(path))
	var out []fileNode
	for _, r := range roots {
		if _, v, ok := yamlpos.WalkPath(r.node, rest); ok {
			out = append(out, fileNode{r.file, v})
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
