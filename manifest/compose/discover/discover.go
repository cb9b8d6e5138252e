// Package discover finds which files make up a compose app, as docker
// compose finds them in a project directory: the files COMPOSE_FILE names,
// or the first default name plus the first override file.
package discover

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/compose/internal/interp"
	"github.com/driftless-dev/driftless/manifest/load"
)

// Layout names the compose files of an app directory, in the order
// compose loads them.
type Layout struct {
	Files    []string // the compose file, then its override file if any (or COMPOSE_FILE's)
	Shadowed []string // other compose files compose's precedence ignores
}

// Find applies compose's discovery to the app directory: the files
// COMPOSE_FILE names, when the app's environment or its .env sets it (as
// docker compose reads it there); else the first of cli.DefaultFileNames,
// plus the first of cli.DefaultOverrideFileNames. Files the ignore list
// excludes do not count. A COMPOSE_FILE that names no file of the app
// directory is a manifest.ErrorList.
func Find(fsys fs.FS, root string, ign *load.IgnoreList, opts load.Options, display func(string) string) (Layout, error) {
	if names, at, ok := composeFileVar(fsys, root, opts, display); ok {
		return namedFiles(fsys, root, names, at)
	}
	var l Layout
	present := func(name string) (bool, error) {
		p := path.Join(root, name)
		if ign.Ignored(name, false) {
			return false, nil
		}
		info, err := fs.Stat(fsys, p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return false, nil
		case err != nil:
			return false, err
		}
		return !info.IsDir(), nil
	}
	var candidates []string
	for _, n := range cli.DefaultFileNames {
		ok, err := present(n)
		if err != nil {
			return l, err
		}
		if ok {
			candidates = append(candidates, n)
		}
	}
	if len(candidates) == 0 {
		return l, nil
	}
	l.Files = []string{path.Join(root, candidates[0])}
	for _, n := range candidates[1:] {
		l.Shadowed = append(l.Shadowed, path.Join(root, n))
	}
	first := true
	for _, n := range cli.DefaultOverrideFileNames {
		ok, err := present(n)
		if err != nil {
			return l, err
		}
		switch {
		case ok && first:
			l.Files = append(l.Files, path.Join(root, n))
			first = false
		case ok:
			l.Shadowed = append(l.Shadowed, path.Join(root, n))
		}
	}
	return l, nil
}

// composeFileVar reads COMPOSE_FILE: the files it names (split at
// COMPOSE_PATH_SEPARATOR, ':' by default, as on Linux), and where it is
// set, for messages.
func composeFileVar(fsys fs.FS, root string, opts load.Options, display func(string) string) ([]string, manifest.Position, bool) {
	opts.ReportEnvRead("COMPOSE_FILE")
	opts.ReportEnvRead("COMPOSE_PATH_SEPARATOR")
	at := manifest.Position{File: "COMPOSE_FILE (the app's environment)"}
	env := opts.Environment
	if _, set := env["COMPOSE_FILE"]; !set {
		// Only a .env that names COMPOSE_FILE is parsed here: the load
		// reads it again for interpolation, and reports its problems then.
		p := path.Join(root, ".env")
		data, err := fs.ReadFile(fsys, p)
		if err != nil || !bytes.Contains(data, []byte("COMPOSE_FILE")) {
			return nil, at, false
		}
		env = interp.Environment(&yamlpos.Collector{}, fsys, root, display, opts.Environment, opts.ReportEnvRead)
		at = manifest.Position{File: display(p), Line: 1}
		for i, line := range strings.Split(string(data), "\n") {
			if k, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "export "), "="); ok && strings.TrimSpace(k) == "COMPOSE_FILE" {
				at.Line = i + 1
			}
		}
	}
	v := env["COMPOSE_FILE"]
	if strings.TrimSpace(v) == "" {
		return nil, at, false
	}
	sep := env["COMPOSE_PATH_SEPARATOR"]
	if sep == "" {
		sep = ":"
	}
	return strings.Split(v, sep), at, true
}

// namedFiles is the layout of the files COMPOSE_FILE names, in its order
// (later files override earlier ones, as with docker compose -f); no
// override file is added, as compose adds none.
func namedFiles(fsys fs.FS, root string, names []string, at manifest.Position) (Layout, error) {
	var l Layout
	var errs manifest.ErrorList
	for _, n := range names {
		n = strings.TrimSpace(n)
		p, err := manifest.CleanRepoPath(n)
		if err == nil {
			var info fs.FileInfo
			if info, err = fs.Stat(fsys, path.Join(root, p)); err == nil && info.IsDir() {
				err = fmt.Errorf("%q is a directory", n)
			}
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			errs = append(errs, &manifest.Error{Pos: at, Field: "COMPOSE_FILE", Msg: fmt.Sprintf("names %q, which this revision does not hold in the app directory: commit it, or fix the name", n)})
			continue
		case err != nil:
			errs = append(errs, &manifest.Error{Pos: at, Field: "COMPOSE_FILE", Msg: fmt.Sprintf("names %q, which is not a compose file of the app directory: %v", n, err)})
			continue
		}
		l.Files = append(l.Files, path.Join(root, p))
	}
	if len(errs) > 0 {
		return Layout{}, errs
	}
	return l, nil
}
