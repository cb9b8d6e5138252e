package sources

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"gopkg.in/yaml.v3"
)

// composeFiles are the names docker compose looks for in a directory.
var composeFiles = []string{"compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml"}

// discoverDirs makes an app of every directory that matches a glob, is not
// excluded, and holds a compose file or a driftless manifest.
func discoverDirs(fsys fs.FS, globs, exclude []string) ([]App, error) {
	dirs, err := matchDirs(fsys, globs)
	if err != nil {
		return nil, err
	}
	var apps []App
	var errs []error
	byName := map[string]string{} // app name -> directory that made it
	for _, dir := range dirs {
		if excluded(exclude, dir) {
			continue
		}
		ok, err := holdsApp(fsys, dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue // a matching directory with nothing to deploy, such as apps/README
		}
		name := AppName(dir)
		if name == "" {
			errs = append(errs, fmt.Errorf("%s: the directory name leaves no usable app name (it needs a letter or digit): rename it or exclude it", dir))
			continue
		}
		if other, dup := byName[name]; dup {
			errs = append(errs, fmt.Errorf("%s and %s both make app %s: rename one or exclude it", other, dir, name))
			continue
		}
		byName[name] = dir
		apps = append(apps, App{Name: name, Path: dir, At: dir})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return apps, nil
}

// matchDirs lists, sorted and without repeats, the non-hidden directories
// that match one of globs. Each glob is walked only as deep as it has
// segments, and only into directories its leading segments match, so a
// large repository costs what the globs name, not its size.
func matchDirs(fsys fs.FS, globs []string) ([]string, error) {
	seen := map[string]bool{}
	for _, glob := range globs {
		segs := strings.Split(glob, "/")
		level := []string{"."}
		for depth := range segs {
			prefix := strings.Join(segs[:depth+1], "/")
			var next []string
			for _, dir := range level {
				subs, err := subdirs(fsys, dir)
				if err != nil {
					return nil, err
				}
				for _, sub := range subs {
					// path.Match's '*' does not cross '/', so matching the
					// whole prefix is matching segment by segment.
					if ok, _ := path.Match(prefix, sub); ok {
						next = append(next, sub)
					}
				}
			}
			level = next
		}
		for _, dir := range level {
			seen[dir] = true
		}
	}
	dirs := make([]string, 0, len(seen))
	for dir := range seen {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	return dirs, nil
}

// subdirs lists the non-hidden directories directly in dir, as paths from
// the root. Hidden ones (.git, .github) hold tooling, never apps.
func subdirs(fsys fs.FS, dir string) ([]string, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, path.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// excluded says whether dir or a directory above it matches one of the
// Exclude globs: excluding "stacks/legacy" also keeps "stacks/legacy/prod"
// from being an app, as excluding a directory reads.
func excluded(exclude []string, dir string) bool {
	for p := dir; p != "." && p != "/"; p = path.Dir(p) {
		if matchesAny(exclude, p) {
			return true
		}
	}
	return false
}

// matchesAny says whether p matches one of globs. Validate has checked the
// globs, so a match error cannot happen here.
func matchesAny(globs []string, p string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, p); ok {
			return true
		}
	}
	return false
}

// holdsApp says whether dir holds a compose file or a driftless manifest.
func holdsApp(fsys fs.FS, dir string) (bool, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return false, fmt.Errorf("%s: %w", dir, err)
	}
	var candidates []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		for _, c := range composeFiles {
			if name == c {
				return true, nil
			}
		}
		if !strings.HasPrefix(name, ".") && (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
			candidates = append(candidates, path.Join(dir, name))
		}
	}
	for _, file := range candidates {
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			return false, fmt.Errorf("%s: %w", file, err)
		}
		if isManifest(data) {
			return true, nil
		}
	}
	return false, nil
}

// isManifest says whether a document of data is a mapping with a kind: key.
// A file that does not parse is not a manifest here: the app loader reports
// YAML errors with their positions once the app exists, and a broken file
// beside a compose file must not hide it.
func isManifest(data []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := yamlpos.DecodeNode(dec, &doc); err != nil {
			return false // io.EOF or a syntax error
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		m := doc.Content[0]
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == "kind" {
				return true
			}
		}
	}
}
