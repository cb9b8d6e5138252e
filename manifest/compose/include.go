package compose

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"path"
	"strings"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/interpolation"
	"github.com/compose-spec/compose-go/v2/tree"
	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/compose/internal/interp"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// include: [services/db.yaml] adds the services, networks and volumes of
// other compose files of the app. As for extends.file, the front end reads
// those files from the revision before compose-go runs, checks them (inside
// the app directory, present, no cycles) with positions, and stages them
// with the compose files for compose-go, which loads them as docker compose
// does: relative paths of an included file resolve against its project
// directory (by default its own directory), its project directory's .env
// (or its env_file) adds to the environment it is interpolated with, and a
// service it declares that the including file declares too is merged, the
// including file's fields winning.

// includeEntry is one entry of include:, interpolated.
type includeEntry struct {
	field      string // include[i]
	paths      []includeValue
	projectDir *includeValue
	envFiles   []includeValue
}

// includeValue is a path as written, interpolated, with its position.
type includeValue struct {
	field string
	value string
	pos   manifest.Position
}

// resolveIncludes reads and checks every file the compose files include,
// recursively, recording them in ix.included.
func (l *composeLoad) resolveIncludes() {
	for _, f := range l.ix.files {
		l.includesOf(f, path.Dir(l.relPath(f.path)), []string{f.path}, l.in)
	}
}

// inFor is the interpolator of f: an included file's environment has its
// include's env files too.
func (l *composeLoad) inFor(f *composeFile) *interp.Interpolator {
	if in, ok := l.ix.interp[f]; ok {
		return in
	}
	return l.in
}

// includesOf follows the include: of f, whose relative paths resolve
// against dir (relative to the app directory) and which in interpolates;
// chain is the include chain down to f, by path, for cycles.
func (l *composeLoad) includesOf(f *composeFile, dir string, chain []string, in *interp.Interpolator) {
	for _, d := range f.nonEmptyDocs() {
		k, v := yamlpos.Child(d, "include")
		if k == nil || yamlpos.IsNull(yamlpos.Deref(v)) {
			continue
		}
		v = yamlpos.Deref(v)
		if v.Kind != yaml.SequenceNode {
			l.errs.Add(yamlpos.NodePos(f.display, k, v), "include", "must be a list of files (or of mappings with path:)")
			continue
		}
		for i, e := range v.Content {
			entry, ok := l.includeEntry(f, yamlpos.IndexPath("include", i), yamlpos.Deref(e), in)
			if ok {
				l.include(f, dir, entry, chain, in)
			}
		}
	}
}

// includeEntry reads one entry of include: (a path, or path:,
// project_directory:, env_file:); false when it is malformed (reported).
func (l *composeLoad) includeEntry(f *composeFile, field string, e *yaml.Node, in *interp.Interpolator) (includeEntry, bool) {
	entry := includeEntry{field: field}
	ok := true
	switch {
	case e == nil:
		return entry, false
	case e.Kind == yaml.ScalarNode:
		entry.paths, ok = l.includeValues(f, field, e, in)
	case e.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(e.Content); i += 2 {
			key, val := e.Content[i].Value, yamlpos.Deref(e.Content[i+1])
			sub := yamlpos.ChildPath(field, key)
			var good bool
			switch key {
			case "path":
				entry.paths, good = l.includeValues(f, sub, val, in)
			case "env_file":
				entry.envFiles, good = l.includeValues(f, sub, val, in)
			case "project_directory":
				var vals []includeValue
				if vals, good = l.includeValues(f, sub, val, in); good && len(vals) == 1 && val.Kind == yaml.ScalarNode {
					entry.projectDir = &vals[0]
				} else if good && len(vals) > 0 {
					l.errs.Add(yamlpos.NodePos(f.display, nil, val), sub, "must be a directory (a string)")
					good = false
				}
			default:
				// compose ignores them (include: is gone when it checks
				// the schema); a typo would go unnoticed.
				if !strings.HasPrefix(key, "x-") {
					l.warnings.Add(yamlpos.NodePos(f.display, e.Content[i], e.Content[i]), sub, "unknown field, ignored as docker compose ignores it: an include takes path, project_directory and env_file")
				}
				good = true
			}
			ok = ok && good
		}
		if ok && len(entry.paths) == 0 {
			l.errs.Add(yamlpos.NodePos(f.display, nil, e), field, "names no file: write path: with a compose file of the app")
			return entry, false
		}
	default:
		l.errs.Add(yamlpos.NodePos(f.display, nil, e), field, "must be a file (a string) or a mapping with path:")
		return entry, false
	}
	return entry, ok
}

// includeValues reads a string or a list of strings, interpolated.
func (l *composeLoad) includeValues(f *composeFile, field string, n *yaml.Node, in *interp.Interpolator) ([]includeValue, bool) {
	var nodes []*yaml.Node
	var fields []string
	switch {
	case n == nil || yamlpos.IsNull(n):
		return nil, true
	case n.Kind == yaml.ScalarNode:
		nodes, fields = []*yaml.Node{n}, []string{field}
	case n.Kind == yaml.SequenceNode:
		for i, e := range n.Content {
			nodes, fields = append(nodes, yamlpos.Deref(e)), append(fields, yamlpos.IndexPath(field, i))
		}
	default:
		l.errs.Add(yamlpos.NodePos(f.display, nil, n), field, "must be a path or a list of paths")
		return nil, false
	}
	var out []includeValue
	for i, e := range nodes {
		if e == nil || e.Kind != yaml.ScalarNode {
			l.errs.Add(yamlpos.NodePos(f.display, nil, n), fields[i], "must be a path (a string)")
			return nil, false
		}
		s, _, err := in.Substitute(e.Value)
		if err != nil {
			return nil, false // reported by the interpolation check
		}
		out = append(out, includeValue{field: fields[i], value: s, pos: manifest.Position{File: f.display, Line: e.Line, Column: e.Column}})
	}
	return out, true
}

// appPath resolves v against dir (relative to the app directory) and
// checks that it stays inside the app directory; what says what v is, for
// the messages.
func (l *composeLoad) appPath(dir string, v includeValue, what string) (string, bool) {
	if path.IsAbs(v.value) || strings.HasPrefix(v.value, "~") || strings.Contains(v.value, "\\") {
		l.errs.Add(v.pos, v.field, "%q is outside the app directory: %s is a path of the app's directory in the repository, relative to %s", v.value, what, displayDir(dir))
		return "", false
	}
	rel := path.Join(dir, v.value)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		l.errs.Add(v.pos, v.field, "%q leaves the app directory: %s is a path of the app's directory in the repository", v.value, what)
		return "", false
	}
	return rel, true
}

func displayDir(dir string) string {
	if dir == "." {
		return "the app directory"
	}
	return dir + "/"
}

// include reads the files of one include entry of f (whose paths resolve
// against dir, interpolated by in), then follows their own includes.
func (l *composeLoad) include(f *composeFile, dir string, e includeEntry, chain []string, in *interp.Interpolator) {
	var paths []string
	for _, v := range e.paths {
		rel, ok := l.appPath(dir, v, "an included file")
		if !ok {
			return
		}
		p := path.Join(l.root, rel)
		for i, c := range chain {
			if c == p {
				cycle := make([]string, 0, len(chain)-i+1)
				for _, c := range chain[i:] {
					cycle = append(cycle, l.display(c))
				}
				l.errs.Add(v.pos, v.field, "include cycle: %s -> %s: remove one of these includes",
					strings.Join(cycle, " -> "), l.display(p))
				return
			}
		}
		paths = append(paths, p)
	}
	// compose: the first file's directory is the project directory,
	// unless project_directory names another (relative to the including
	// file's).
	projectDir := path.Dir(l.relPath(paths[0]))
	if e.projectDir != nil {
		var ok bool
		if projectDir, ok = l.appPath(dir, *e.projectDir, "project_directory"); !ok {
			return
		}
	}
	env, ok := l.includeEnv(dir, projectDir, e, in)
	if !ok {
		return
	}
	// compose-go resolves the included files' paths against the project
	// directory only if it exists.
	l.ix.stagedExtra[path.Join(l.root, projectDir)] = nil
	child := &interp.Interpolator{Env: env, Read: in.Read, Errs: in.Errs, Warnings: in.Warnings}
	var files []*composeFile
	for i, v := range e.paths {
		inc, ok := l.includedFile(v, f.display, paths[i], child)
		if !ok {
			return
		}
		files = append(files, inc)
	}
	for _, inc := range files {
		if l.ix.includeSeen[inc.path] {
			continue // a diamond: its includes were followed already
		}
		l.ix.includeSeen[inc.path] = true
		l.includesOf(inc, projectDir, append(chain[:len(chain):len(chain)], inc.path), l.inFor(inc))
	}
}

// includeEnv reads the env files of an include: its env_file (relative
// to the including file's directory dir), or else the project directory's
// .env when the revision has one. As compose-go does, they add to the
// environment of the including file (in), whose values win, and they are
// staged for compose-go.
func (l *composeLoad) includeEnv(dir, projectDir string, e includeEntry, in *interp.Interpolator) (map[string]string, bool) {
	env := maps.Clone(in.Env)
	if env == nil {
		env = map[string]string{}
	}
	fromFiles := map[string]string{}
	add := func(p string, data []byte) bool {
		l.ix.stagedExtra[p] = data
		err := dotenv.ParseWithFormat(bytes.NewReader(data), p, fromFiles, func(k string) (string, bool) {
			if v, ok := in.Env[k]; ok {
				return v, true
			}
			v, ok := fromFiles[k]
			return v, ok
		}, "")
		if err != nil {
			l.errs.Add(load.DotenvErrorPos(l.display(p), err), "", "%s", load.DotenvMessage(err))
			return false
		}
		return true
	}
	if len(e.envFiles) == 0 {
		p := path.Join(l.root, projectDir, ".env")
		if data, err := fs.ReadFile(l.fsys, p); err == nil && !add(p, data) {
			return nil, false
		}
	}
	for _, v := range e.envFiles {
		if v.value == "/dev/null" {
			continue
		}
		rel, ok := l.appPath(dir, v, "env_file")
		if !ok {
			return nil, false
		}
		p := path.Join(l.root, rel)
		data, err := fs.ReadFile(l.fsys, p)
		var limit *policy.LimitError
		switch {
		case errors.As(err, &limit):
			l.errs.Errs = append(l.errs.Errs, limit.AsError())
			return nil, false
		case err != nil:
			l.errs.Add(v.pos, v.field, "%q cannot be read: %v: commit it, or correct the path (relative to %s)", v.value, errors.Unwrap(err), displayDir(dir))
			return nil, false
		}
		if !add(p, data) {
			return nil, false
		}
	}
	for k, v := range fromFiles {
		if _, set := env[k]; !set {
			env[k] = v
		}
	}
	return env, true
}

// includedFile reads an included file once per load, interpolated by in.
func (l *composeLoad) includedFile(v includeValue, from, p string, in *interp.Interpolator) (*composeFile, bool) {
	for _, inc := range l.ix.included {
		if inc.path == p {
			return inc, true
		}
	}
	for _, mf := range l.ix.files {
		if mf.path == p {
			l.errs.Add(v.pos, v.field, "%q is a compose file of the app already: include another file", v.value)
			return nil, false
		}
	}
	inc, ok := l.readAppCompose(v.pos, v.field, v.value, from, p, in)
	if !ok {
		return nil, false
	}
	l.ix.included = append(l.ix.included, inc)
	l.ix.interp[inc] = in
	return inc, true
}

// unstage rewrites the paths compose-go resolved in included files (it
// resolves them against the project directory, in the staging directory
// dir) back to paths relative to the app directory, as the paths of the
// compose files themselves stay.
func unstage(p *types.Project, dir string) {
	fix := func(s *string) {
		if rest, ok := strings.CutPrefix(*s, dir+"/"); ok {
			*s = "./" + rest
		} else if *s == dir {
			*s = "."
		}
	}
	for _, services := range []types.Services{p.Services, p.DisabledServices} {
		for name, s := range services {
			if s.Build != nil {
				fix(&s.Build.Context)
				fix(&s.Build.Dockerfile)
			}
			for i := range s.EnvFiles {
				fix(&s.EnvFiles[i].Path)
			}
			for i := range s.Volumes {
				fix(&s.Volumes[i].Source)
			}
			for i := range s.LabelFiles {
				fix(&s.LabelFiles[i])
			}
			services[name] = s
		}
	}
	for name, c := range p.Secrets {
		fix(&c.File)
		p.Secrets[name] = c
	}
	for name, c := range p.Configs {
		fix(&c.File)
		p.Configs[name] = c
	}
}

// usedCasts are the casts in found, and those the interpolators of the
// included files found.
func (ix *composeIndex) usedCasts(in *interp.Interpolator) map[tree.Path]interpolation.Cast {
	casts := in.UsedCasts
	cloned := false
	for _, fin := range ix.interp {
		if len(fin.UsedCasts) == 0 {
			continue
		}
		if !cloned {
			casts, cloned = maps.Clone(in.UsedCasts), true
			if casts == nil {
				casts = map[tree.Path]interpolation.Cast{}
			}
		}
		maps.Copy(casts, fin.UsedCasts)
	}
	return casts
}
