package compose

import (
	"errors"
	"io/fs"
	"path"
	"strings"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// mapRelativeBind maps a relative bind source: a file or directory the
// revision holds is mounted read-only by its content, as before; one it
// does not hold is the app's state directory, which compose would create
// under the project directory and driftless keeps under its data
// directory (<data>/state/<app>/<path>).
func (sm *serviceMap) mapRelativeBind(attr, src string, b *manifest.BindMount) bool {
	p, err := manifest.CleanRepoPath(src)
	if err != nil {
		if errors.Is(err, manifest.ErrLeavesRepo) {
			sm.refuse(attr, "bind source %q leaves the app directory: a relative source is a file of the app directory or, when the revision does not hold it, a directory of the app's state, and stays inside; mount other places by their absolute path (policy hostPaths)", src)
		} else {
			sm.refuse(attr, "bind source %v", err)
		}
		return false
	}
	tree, err := load.ReadRepoTree(sm.m.fsys, path.Join(sm.m.root, p))
	if errors.Is(err, fs.ErrNotExist) {
		return sm.mapStateBind(attr, p, b)
	}
	p, tree, ok := sm.repoTreeRead(attr, src, "bind source", p, tree, err)
	if !ok {
		return false
	}
	b.RepoPath, b.ContentHash = p, tree.Hash()
	b.CreateHostPath = false
	if b.SELinux == "Z" {
		// The copy is content-addressed and shared by every replica
		// (and service) that mounts the same content: a private label
		// would lock the others out.
		sm.warn(attr, "Z on a file of the repository is applied as z: driftless mounts one shared, read-only copy of it")
		b.SELinux = "z"
	}
	return true
}

// mapStateBind makes b a state directory. Its content is data: only the
// path enters the spec, so what the app writes there rolls nothing.
func (sm *serviceMap) mapStateBind(attr, p string, b *manifest.BindMount) bool {
	sp, err := manifest.CleanStatePath(p)
	if err != nil {
		sm.refuse(attr, "bind source %v", err)
		return false
	}
	b.StatePath = sp
	// The deploy side creates it before the container, with checks of
	// its own; Docker must not create it elsewhere.
	b.CreateHostPath = false
	return true
}

// homePath resolves ~ and ~/x against the app's homeDir; the result is a
// host path like any other (policy hostPaths).
func (sm *serviceMap) homePath(attr, src string) (string, bool) {
	rest := src[1:]
	if rest != "" && rest[0] != '/' {
		user, _, _ := strings.Cut(rest, "/")
		sm.refuse(attr, "%q: another user's home directory (~%s) is not supported; write ~/... for the app's homeDir, or the absolute path", src, user)
		return "", false
	}
	home := sm.m.opts.Policy.HomeDir
	if home == "" {
		sm.refuse(attr, "%q is in a home directory, and this app has none: set `homeDir: /home/USER` for the app in driftless.yaml (or `--home-dir /home/USER`); the path it leads to then needs `hostPaths` like any host path", src)
		return "", false
	}
	return path.Join(home, rest), true
}
