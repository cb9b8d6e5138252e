package appdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/compose"
	"github.com/driftless-dev/driftless/manifest/compose/discover"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/native"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// Load reads every *.yaml and *.yml file under root in fsys (recursively, in
// lexical order; hidden files and directories are skipped) and returns the
// app they declare, normalized.
//
// Manifest problems come back as an ErrorList holding every error of the
// revision, sorted by file, line and column; positions name files by their
// path in fsys. A missing root or an unreadable file is a plain error
// (wrapping the fs error). A root without documents yields an empty App.
func Load(fsys fs.FS, root string, app string) (*manifest.App, error) {
	return LoadWith(fsys, root, app, load.Options{})
}

// LoadWith is Load with the app's options.
func LoadWith(fsys fs.FS, root string, app string, opts load.Options) (*manifest.App, error) {
	return loadBounded(fsys, root, app, opts, func(p string) string { return p })
}

// LoadDir is Load over the directory dir of the local file system. Positions
// name files as dir joined with their path below it, e.g.
// "examples/shop/web.yaml", so they can be opened as printed.
func LoadDir(dir string, app string) (*manifest.App, error) {
	return LoadDirWith(dir, app, load.Options{})
}

// LoadDirWith is LoadDir with the app's options.
func LoadDirWith(dir string, app string, opts load.Options) (*manifest.App, error) {
	if dir == "" {
		dir = "."
	}
	return LoadDirFSWith(os.DirFS(dir), dir, app, opts)
}

// LoadDirFSWith is LoadDirWith reading the directory dir through fsys,
// which must be os.DirFS(dir) or a view of it (one that records what the
// load read, say): positions still name files below dir.
func LoadDirFSWith(fsys fs.FS, dir string, app string, opts load.Options) (*manifest.App, error) {
	if dir == "" {
		dir = "."
	}
	display := func(p string) string {
		switch {
		case dir == ".":
			return p
		case p == ".":
			return dir
		case strings.HasSuffix(dir, "/"):
			return dir + p
		}
		return dir + "/" + p
	}
	return loadBounded(fsys, ".", app, opts, display)
}

// loadBounded checks the app name and options and bounds the reads of fsys.
func loadBounded(fsys fs.FS, root, app string, opts load.Options, display func(string) string) (*manifest.App, error) {
	if !manifest.ValidName(app) {
		return nil, fmt.Errorf("invalid app name %q: %s", app, manifest.NameRule)
	}
	if err := opts.Limits.Validate(); err != nil {
		return nil, err
	}
	// Every read of the revision goes through its budget; a limit hit on
	// the way refuses the revision like a manifest error.
	fsys = policy.NewBudgetFS(fsys, opts.Limits, display)
	a, err := loadFormat(fsys, root, app, opts, display)
	return a, policy.LimitErrors(err)
}

// loadFormat dispatches to the app directory's front end: a compose file
// makes it a compose app, anything else is read as driftless manifests.
func loadFormat(fsys fs.FS, root, app string, opts load.Options, display func(string) string) (*manifest.App, error) {
	ign, err := load.ReadIgnoreList(fsys, root, display)
	if err != nil {
		return nil, err
	}
	layout, err := discover.Find(fsys, root, ign, opts, display)
	var list manifest.ErrorList
	switch {
	case errors.As(err, &list):
		return nil, list
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", display(root), err)
	}
	var a *manifest.App
	if len(layout.Files) > 0 {
		a, err = compose.Load(fsys, root, app, layout, ign, opts, display)
	} else {
		a, err = native.Load(fsys, root, app, ign, opts, display)
	}
	if err != nil {
		return nil, err
	}
	if opts.Target == manifest.TargetSwarm {
		if len(a.Jobs) > 0 {
			j := a.Jobs[0]
			return nil, manifest.ErrorList{{Pos: j.Source, Field: j.Name, Msg: "jobs run on one engine, not on a Swarm target: remove the job or set target: engine"}}
		}
		policy.RepoFilesAsConfigs(a)
		if errs := policy.CheckSwarm(a); len(errs) > 0 {
			return nil, (&yamlpos.Collector{Errs: errs}).Sorted()
		}
	}
	if opts.RemoteEngine != "" {
		if errs := policy.CheckRemoteEngine(a, opts.RemoteEngine); len(errs) > 0 {
			return nil, (&yamlpos.Collector{Errs: errs}).Sorted()
		}
	}
	// The front ends hash without the key; only keyed hashes leave.
	a.Rehash(opts.SecretKey)
	return a, nil
}
