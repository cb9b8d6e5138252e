package compose

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/compose/internal/interp"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// extends: {file: common.yaml, service: base} names a service of another
// file of the app. Before compose-go runs, the front end reads those files
// from the revision, checks every extends chain (files inside the app
// directory, services that exist, no cycles) with positions, and records
// which service each one extends, so that a field a service inherits is
// located in the file that writes it (composeIndex.serviceLayers).

// extendsTarget is the service an extends names: its file and its
// mappings there (an extended file may declare it in more than one
// document; compose merges them).
type extendsTarget struct {
	file  *composeFile
	name  string
	nodes []*yaml.Node
}

// extendsResolver walks the extends chains of an app.
type extendsResolver struct {
	l *composeLoad
	// state is false while a service is on the chain being walked, true
	// once its chain is known.
	state map[*yaml.Node]bool
	chain []string // "web (compose.yaml)", for the cycle message
}

// resolveExtends checks and records every extends of the compose files.
func (l *composeLoad) resolveExtends() {
	r := &extendsResolver{l: l, state: map[*yaml.Node]bool{}}
	for _, f := range l.ix.layerFiles() {
		for _, d := range f.docs {
			// compose applies extends within each document of a compose
			// file, and across the documents of an extended one.
			r.services(f, []*yaml.Node{d})
		}
	}
}

func (r *extendsResolver) services(f *composeFile, docs []*yaml.Node) {
	for _, d := range docs {
		_, services := yamlpos.Child(d, "services")
		services = yamlpos.Deref(services)
		if services == nil || services.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(services.Content); i += 2 {
			r.visit(f, docs, services.Content[i].Value, yamlpos.Deref(services.Content[i+1]))
		}
	}
}

// visit follows the extends of service name (node svc, in docs of f).
func (r *extendsResolver) visit(f *composeFile, docs []*yaml.Node, name string, svc *yaml.Node) {
	if svc == nil || svc.Kind != yaml.MappingNode {
		return
	}
	if _, seen := r.state[svc]; seen {
		return
	}
	r.state[svc] = false
	r.chain = append(r.chain, fmt.Sprintf("%s (%s)", name, f.display))
	defer func() {
		r.state[svc] = true
		r.chain = r.chain[:len(r.chain)-1]
	}()
	ref, ok := r.reference(f, name, svc)
	if !ok {
		return
	}
	target, ok := r.target(f, docs, name, ref)
	if !ok {
		return
	}
	r.l.ix.bases[svc] = target
	base := target.nodes[len(target.nodes)-1]
	if done, seen := r.state[base]; seen && !done {
		r.l.errs.Add(ref.servicePos, ref.field+".service", "extends cycle: %s -> %s (%s): remove one of these extends",
			strings.Join(r.chain, " -> "), target.name, target.file.display)
		return
	}
	baseDocs := target.file.nonEmptyDocs()
	if target.file == f {
		baseDocs = docs
	}
	r.visit(target.file, baseDocs, target.name, base)
}

// extendsRef is an extends as written, interpolated.
type extendsRef struct {
	field      string // services.NAME.extends
	service    string
	servicePos manifest.Position
	file       string // "" for a service of the same file
	fileNode   *yaml.Node
}

// reference reads the extends of svc; false when it has none or it is
// malformed (which the schema check reports).
func (r *extendsResolver) reference(f *composeFile, name string, svc *yaml.Node) (extendsRef, bool) {
	_, ext := yamlpos.Child(svc, "extends")
	ext = yamlpos.Deref(ext)
	ref := extendsRef{field: yamlpos.ChildPath("services", name) + ".extends"}
	var serviceNode *yaml.Node
	switch {
	case ext == nil:
		return ref, false
	case ext.Kind == yaml.ScalarNode:
		serviceNode = ext
	case ext.Kind == yaml.MappingNode:
		_, serviceNode = yamlpos.Child(ext, "service")
		_, ref.fileNode = yamlpos.Child(ext, "file")
	default:
		return ref, false
	}
	serviceNode = yamlpos.Deref(serviceNode)
	if serviceNode == nil || serviceNode.Kind != yaml.ScalarNode {
		return ref, false
	}
	var err error
	// Interpolation errors are reported by the interpolation check.
	if ref.service, _, err = r.l.in.Substitute(serviceNode.Value); err != nil {
		return ref, false
	}
	ref.servicePos = manifest.Position{File: f.display, Line: serviceNode.Line, Column: serviceNode.Column}
	if fn := yamlpos.Deref(ref.fileNode); fn != nil && fn.Kind == yaml.ScalarNode && !yamlpos.IsNull(fn) {
		ref.fileNode = fn
		if ref.file, _, err = r.l.in.Substitute(fn.Value); err != nil {
			return ref, false
		}
	}
	return ref, true
}

// target finds the service ref names, reading its file if it is another.
func (r *extendsResolver) target(f *composeFile, docs []*yaml.Node, name string, ref extendsRef) (extendsTarget, bool) {
	tf, tdocs := f, docs
	if ref.file != "" {
		var ok bool
		if tf, ok = r.l.extendedFile(f, ref); !ok {
			return extendsTarget{}, false
		}
		tdocs = tf.nonEmptyDocs()
	}
	var nodes []*yaml.Node
	for _, d := range tdocs {
		if _, v, ok := yamlpos.WalkPath(d, []yamlpos.PathPart{{Key: "services", Index: -1}, {Key: ref.service, Index: -1}}); ok {
			nodes = append(nodes, yamlpos.Deref(v))
		}
	}
	if len(nodes) == 0 {
		where := "this file"
		if tf != f {
			where = tf.display
		}
		r.l.errs.Add(ref.servicePos, ref.field+".service", "service %s extends %q, which %s does not declare: name a service of %s",
			name, ref.service, where, where)
		return extendsTarget{}, false
	}
	return extendsTarget{file: tf, name: ref.service, nodes: nodes}, true
}

// extendedFile reads and checks the file ref names, relative to the file
// f that names it (as compose resolves it), once per load.
func (l *composeLoad) extendedFile(f *composeFile, ref extendsRef) (*composeFile, bool) {
	pos := manifest.Position{File: f.display, Line: ref.fileNode.Line, Column: ref.fileNode.Column}
	field := ref.field + ".file"
	if path.IsAbs(ref.file) || strings.HasPrefix(ref.file, "~") || strings.Contains(ref.file, "\\") {
		l.errs.Add(pos, field, "%q is outside the app directory: extends.file names a file of the app's directory in the repository, relative to %s", ref.file, f.display)
		return nil, false
	}
	rel := path.Join(path.Dir(l.relPath(f.path)), ref.file)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		l.errs.Add(pos, field, "%q leaves the app directory: extends.file names a file of the app's directory in the repository", ref.file)
		return nil, false
	}
	p := path.Join(l.root, rel)
	l.ix.fileExtends = true
	for _, mf := range l.ix.layerFiles() {
		if mf.path == p {
			return mf, true
		}
	}
	if ef, ok := l.ix.extended[p]; ok {
		return ef, ef != nil
	}
	l.ix.extended[p] = nil // read once, even when it fails
	ef, ok := l.readAppCompose(pos, field, ref.file, f.display, p, l.in)
	if !ok {
		return nil, false
	}
	l.ix.extended[p] = ef
	return ef, true
}

// readAppCompose reads, parses and checks (keys, interpolation) the
// compose file p of the app, which name (as written at pos, relative to
// from) designates.
func (l *composeLoad) readAppCompose(pos manifest.Position, field, name, from, p string, in *interp.Interpolator) (*composeFile, bool) {
	data, err := fs.ReadFile(l.fsys, p)
	var limit *policy.LimitError
	switch {
	case errors.As(err, &limit):
		l.errs.Errs = append(l.errs.Errs, limit.AsError())
		return nil, false
	case errors.Is(err, fs.ErrNotExist):
		l.errs.Add(pos, field, "%q does not exist in the repository: commit it, or correct the path (relative to %s)", name, from)
		return nil, false
	case err != nil:
		if info, serr := fs.Stat(l.fsys, p); serr == nil && info.IsDir() {
			l.errs.Add(pos, field, "%q is a directory: name a compose file", name)
			return nil, false
		}
		l.errs.Add(pos, field, "cannot read %q: %v", name, err)
		return nil, false
	}
	n := len(l.errs.Errs)
	ef := parseComposeFile(l.errs, p, l.display(p), data, policy.BudgetOf(l.fsys))
	if len(l.errs.Errs) > n {
		return nil, false
	}
	for _, d := range ef.nonEmptyDocs() {
		yamlpos.CheckKeys(l.errs, ef.display, d, "", 0)
		in.Check(ef.display, d, "", 0)
	}
	return ef, len(l.errs.Errs) == n
}

// relPath is p (a path of the fs.FS) relative to the app directory.
func (l *composeLoad) relPath(p string) string {
	if l.root == "." || l.root == "" {
		return p
	}
	return strings.TrimPrefix(p, l.root+"/")
}

// extendedFiles are the files extends.file names, other than the compose
// files, in a stable order.
func (ix *composeIndex) extendedFiles() []*composeFile {
	var out []*composeFile
	for _, f := range ix.extended {
		if f != nil {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b *composeFile) int { return strings.Compare(a.path, b.path) })
	return out
}

func (f *composeFile) nonEmptyDocs() []*yaml.Node {
	var out []*yaml.Node
	for _, d := range f.docs {
		if d != nil {
			out = append(out, d)
		}
	}
	return out
}

// stageExtended writes the compose files and the extended files into a new
// private directory, at their paths relative to the app directory, and
// returns it. compose-go reads an extended file by path (os.ReadFile) and
// offers no way to give it the content: the staged copies are the
// revision's content, and all that compose-go can reach, since every
// extends.file was checked to name one of these files before it runs.
func stageExtended(ix *composeIndex, rel func(string) string) (string, error) {
	dir, err := os.MkdirTemp("", "driftless-extends-")
	if err != nil {
		return "", fmt.Errorf("staging the files extends and include name: %w", err)
	}
	files := map[string][]byte{}
	for _, f := range slices.Concat(ix.layerFiles(), ix.extendedFiles()) {
		files[f.path] = f.data
	}
	for p, data := range ix.stagedExtra {
		files[p] = data
	}
	for fp, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel(fp)))
		if data == nil {
			// A directory compose-go must find (an include's
			// project_directory).
			p = filepath.Join(p, "x")
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("staging the files extends and include name: %w", err)
		}
		if data == nil {
			continue
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("staging the files extends and include name: %w", err)
		}
	}
	return dir, nil
}

// joinField appends a field path relative to base.
func joinField(base, rel string) string {
	if rel == "" || strings.HasPrefix(rel, "[") {
		return base + rel
	}
	return base + "." + rel
}
