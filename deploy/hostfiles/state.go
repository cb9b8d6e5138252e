package hostfiles

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/driftless-dev/driftless/manifest"
)

// State directories (manifest.BindMount.StatePath) are the apps' data on
// the host: StateDir/<app>/<path>. driftless creates one before the first
// container that mounts it and never writes, empties, replaces or removes
// it afterwards (not even when the app is pruned): backing it up, and
// deleting it, are the user's.

// StateRoot is where the state directories of the apps of the data
// directory dataDir live.
func StateRoot(dataDir string) string { return filepath.Join(dataDir, "state") }

// DefaultStateDir is the state root of the default data directory, beside
// DefaultFilesDir.
func DefaultStateDir() string { return StateRoot(filepath.Dir(DefaultFilesDir())) }

// StatePath is the host path a state bind mounts: pure, it only names it.
func StatePath(stateDir, app string, b manifest.BindMount) (string, error) {
	if stateDir == "" {
		return "", errors.New("no state directory for state binds (deploy.Options.StateDir)")
	}
	if !manifest.ValidName(app) {
		return "", fmt.Errorf("invalid app name %q", app)
	}
	if _, err := manifest.CleanStatePath(b.StatePath); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	return filepath.FromSlash(manifest.StateHostPath(filepath.ToSlash(stateDir), app, b.StatePath)), nil
}

// ensureStateDirs creates the service's state directories that do not
// exist yet.
func (s *Store) ensureStateDirs(app *manifest.App, svc *manifest.Service) error {
	if s.Remote {
		return nil // a remote engine: state directories are volumes there
	}
	for _, b := range svc.Spec.Binds {
		if b.StatePath == "" {
			continue
		}
		if err := EnsureStateDir(s.StateDir, app.Name, b.StatePath); err != nil {
			return fmt.Errorf("service %s: %w", svc.Name, err)
		}
	}
	return nil
}

// EnsureStateDir creates an app's state directory (0755, as Docker
// creates a missing bind source) and the directories above it, one by
// one from the app's state directory down, without following a symlink
// that leads out of it: a container that mounts ./data can make
// ./data/sub a link to /etc, and a mount of ./data/sub would then be the
// host's /etc. What exists is left as it is.
func EnsureStateDir(stateDir, app, statePath string) error {
	host, err := StatePath(stateDir, app, manifest.BindMount{StatePath: statePath})
	if err != nil {
		return err
	}
	appDir := filepath.Join(stateDir, app)
	if err := os.MkdirAll(appDir, 0o755); err != nil {
		return fmt.Errorf("create the app's state directory: %w", err)
	}
	root, err := filepath.EvalSymlinks(appDir)
	if err != nil {
		return fmt.Errorf("state directory of app %s: %w", app, err)
	}
	cur := root
	for _, name := range strings.Split(filepath.FromSlash(statePath), string(filepath.Separator)) {
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(next, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("create state directory ./%s: %w", statePath, err)
			}
			cur = next
			continue
		case err != nil:
			return fmt.Errorf("state directory ./%s: %w", statePath, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			landed, err := filepath.EvalSymlinks(next)
			if err != nil {
				return fmt.Errorf("state directory ./%s: %s is a symlink that does not resolve (%v): remove it", statePath, next, err)
			}
			if landed != root && !strings.HasPrefix(landed, root+string(filepath.Separator)) {
				return fmt.Errorf("state directory ./%s (%s): %s is a symlink to %s, outside the app's state directory %s; driftless does not follow it: remove the symlink", statePath, host, next, landed, appDir)
			}
			next = landed
		}
		if fi, err := os.Stat(next); err != nil || !fi.IsDir() {
			return fmt.Errorf("state directory ./%s (%s): %s is not a directory: move it away", statePath, host, next)
		}
		cur = next
	}
	return nil
}
