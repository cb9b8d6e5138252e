// Package copyin delivers a service's repository files (bind mounts of
// files or directories of the app's directory) into a created, not yet
// started container through the engine API, for an engine that may be on
// another host: the agent's FilesDir is not on that host, so nothing can
// be bind-mounted from it. The files become part of the container's own
// filesystem, written once before its first start; a changed file changes
// the spec hash (each bind's ContentHash is in it), so the container is
// replaced, never written again.
package copyin

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/manifest"
)

// API is the part of the Docker client a copy needs.
type API interface {
	CopyToContainer(ctx context.Context, containerID string, options client.CopyToContainerOptions) (client.CopyToContainerResult, error)
}

// Modes of the copied entries, those of the materialized trees on a local
// engine (deploy/hostfiles): read-only, executable where the repository
// file is. They are modes only, not a read-only mount: a process running
// as root in the container can still change the files.
const (
	fileMode = 0o444
	execMode = 0o555
	dirMode  = 0o555
)

// modTime is every entry's modification time: the archive depends on the
// content alone.
var modTime = time.Unix(0, 0).UTC()

// Copy writes the repository binds of spec into the created container id,
// in one request; a spec without any sends none.
func Copy(ctx context.Context, api API, id string, app *manifest.App, spec *manifest.ServiceSpec) error {
	archive, err := Archive(app, spec)
	if err != nil || archive == nil {
		return err
	}
	if _, err := api.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/", Content: bytes.NewReader(archive)}); err != nil {
		return fmt.Errorf("copy repository files into the container: %w", err)
	}
	return nil
}

// Archive is the tar, to be extracted at the container's /, of every
// repository bind of spec: a single file at its mount path, a directory
// tree under it (the mount path's own entry included). Parent directories
// the archive does not name are created by the engine (0755, root) where
// the image has none, and left as they are where it has. Binds are written
// shallowest first, so one mounted inside another's directory overlays
// it, as the mounts would. nil when spec has no repository bind.
func Archive(app *manifest.App, spec *manifest.ServiceSpec) ([]byte, error) {
	var binds []manifest.BindMount
	for _, b := range spec.Binds {
		if b.RepoPath != "" {
			binds = append(binds, b)
		}
	}
	if len(binds) == 0 {
		return nil, nil
	}
	slices.SortStableFunc(binds, func(a, b manifest.BindMount) int {
		return cmp.Or(cmp.Compare(depth(a.MountPath), depth(b.MountPath)), cmp.Compare(a.MountPath, b.MountPath))
	})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, b := range binds {
		tree := app.Content[b.ContentHash]
		if b.ContentHash == "" || tree == nil {
			return nil, fmt.Errorf("the content of repoPath %s (mounted at %s) was not loaded with the app", b.RepoPath, b.MountPath)
		}
		if err := writeBind(tw, b, tree); err != nil {
			return nil, fmt.Errorf("repoPath %s (mounted at %s): %w", b.RepoPath, b.MountPath, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// depth is how many components a mount path has.
func depth(p string) int { return strings.Count(path.Clean(p), "/") }

// writeBind adds one bind's entries.
func writeBind(tw *tar.Writer, b manifest.BindMount, tree *manifest.RepoTree) error {
	if !path.IsAbs(b.MountPath) {
		return fmt.Errorf("mount path %q is not absolute", b.MountPath)
	}
	root := strings.TrimPrefix(path.Clean(b.MountPath), "/")
	if root == "" {
		return fmt.Errorf("repository files cannot be copied onto the container's /")
	}
	if !tree.Dir {
		if len(tree.Files) != 1 {
			return fmt.Errorf("a single-file tree holds %d files", len(tree.Files))
		}
		return writeFile(tw, root, tree.Files[0])
	}
	if err := writeDir(tw, root); err != nil {
		return err
	}
	dirs := map[string]bool{}
	for _, f := range tree.Files {
		rel := path.Clean(f.Path)
		if path.IsAbs(f.Path) || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("file path %q leaves the tree", f.Path)
		}
		// The directories between the mount path and the file, once each
		// and before the file.
		var parents []string
		for d := path.Dir(rel); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			parents = append(parents, d)
		}
		slices.Reverse(parents)
		for _, d := range parents {
			if err := writeDir(tw, root+"/"+d); err != nil {
				return err
			}
		}
		if err := writeFile(tw, root+"/"+rel, f); err != nil {
			return err
		}
	}
	return nil
}

func writeDir(tw *tar.Writer, name string) error {
	return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: dirMode, ModTime: modTime})
}

func writeFile(tw *tar.Writer, name string, f manifest.RepoFile) error {
	mode := int64(fileMode)
	if f.Exec {
		mode = execMode
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(f.Data)), ModTime: modTime}); err != nil {
		return err
	}
	_, err := tw.Write(f.Data)
	return err
}
