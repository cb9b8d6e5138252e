package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"slices"
	"strings"
)

// State directories are where an app keeps data on the host without a
// Docker volume: compose's `./data:/data` when the revision holds no
// ./data. Each lives at <state root>/<app>/<StatePath>; the state root is
// <data>/state, beside the materialized repository files.

// CleanStatePath cleans a state directory's path as written ("./data/",
// "volumes/db/data") to the form the spec holds ("data"); a path that
// leaves the app's state directory is ErrLeavesRepo's error, and "." (the
// state directory itself) is refused like an absolute path.
func CleanStatePath(p string) (string, error) {
	clean, err := CleanRepoPath(p)
	if err != nil {
		return "", err
	}
	if clean == "." {
		return "", errNotStatePath(p)
	}
	return clean, nil
}

type errNotStatePath string

func (e errNotStatePath) Error() string {
	return "\"" + string(e) + "\" names the app's whole state directory: name a directory inside it"
}

// StateHostPath is where a state directory of app lives on the host,
// under root (<data>/state). It is pure: it names the path only.
func StateHostPath(root, app, statePath string) string {
	return path.Join(root, app, statePath)
}

// StateVolumeName is the Docker volume that holds a state directory of
// app on an engine that may be on another host, where the agent's state
// directory is not: readable ("shop-state-volumes.db.data") and, by a
// digest of the path, distinct for paths that read alike.
func StateVolumeName(app, statePath string) string {
	sum := sha256.Sum256([]byte(statePath))
	return app + "-state-" + strings.ReplaceAll(statePath, "/", ".") + "-" + hex.EncodeToString(sum[:4])
}

// StateDir is one state directory of an app and the mounts that use it.
type StateDir struct {
	Path   string       `json:"path"` // StatePath, e.g. "volumes/db/data"
	Mounts []StateMount `json:"mounts"`
}

// StateMount is where a service mounts a state directory.
type StateMount struct {
	Service   string `json:"service"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// StateDirs lists the app's state directories by path, each with the
// services that mount it, in service order.
func (a *App) StateDirs() []StateDir {
	var out []StateDir
	for i := range a.Services {
		svc := &a.Services[i]
		for _, b := range svc.Spec.Binds {
			if b.StatePath == "" {
				continue
			}
			j := slices.IndexFunc(out, func(d StateDir) bool { return d.Path == b.StatePath })
			if j < 0 {
				out = append(out, StateDir{Path: b.StatePath})
				j = len(out) - 1
			}
			out[j].Mounts = append(out[j].Mounts, StateMount{Service: svc.Name, MountPath: b.MountPath, ReadOnly: b.ReadOnly})
		}
	}
	slices.SortFunc(out, func(x, y StateDir) int { return strings.Compare(x.Path, y.Path) })
	return out
}
