// Package copyin delivers a service's repository files (bind mounts of
// files or directories of the app's directory) and its secret files
// (decrypted SOPS values, manifest.SecretRef) into a created, not yet
// started container through the engine API, for an engine that may be on
// another host: the agent's FilesDir and SecretsDir are not on that host,
// so nothing can be bind-mounted from them. The files become part of the
// container's own filesystem (its writable layer on the engine's host:
// readable by anyone with access to that engine, gone with the
// container), written once before its first start; a changed file or a
// rotated secret changes the spec hash (each bind's ContentHash and each
// secret's Digest are in it), so the container is replaced, never written
// again.
package copyin

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
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

// Copy writes the repository binds and the secret files of spec into the
// created container id, in one request; a spec without any sends none.
// Its errors name files and secrets, never a secret's value.
func Copy(ctx context.Context, api API, id string, app *manifest.App, spec *manifest.ServiceSpec) error {
	archive, err := Archive(app, spec)
	if err != nil || archive == nil {
		return err
	}
	if _, err := api.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/", Content: bytes.NewReader(archive)}); err != nil {
		what := "repository files"
		if len(spec.Secrets) > 0 {
			what = "repository and secret files"
		}
		return fmt.Errorf("copy %s into the container: %w", what, err)
	}
	return nil
}

// Archive is the tar, to be extracted at the container's /, of every
// repository bind of spec: a single file at its mount path, a directory
// tree under it (the mount path's own entry included); then every secret
// file at its target, with its owner and mode. Parent directories the
// archive does not name are created by the engine (0755, root) where the
// image has none, and left as they are where it has. Binds are written
// shallowest first, so one mounted inside another's directory overlays
// it, as the mounts would; secrets last, so one inside a bound directory
// overlays it too. nil when spec has neither.
func Archive(app *manifest.App, spec *manifest.ServiceSpec) ([]byte, error) {
	var binds []manifest.BindMount
	for _, b := range spec.Binds {
		if b.RepoPath != "" {
			binds = append(binds, b)
		}
	}
	if len(binds) == 0 && len(spec.Secrets) == 0 {
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
	for _, ref := range spec.Secrets {
		if err := writeSecret(tw, app, ref); err != nil {
			return nil, fmt.Errorf("secret %s (at %s): %w", ref.Name, ref.Target, err)
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

// writeSecret adds one secret file at its target, owned by its UID and
// GID (root where one is not declared: the agent's user, which owns it on
// a local engine, means nothing on another host) with its mode (0444,
// compose's, where none is declared). Errors never carry the value.
func writeSecret(tw *tar.Writer, app *manifest.App, ref manifest.SecretRef) error {
	if !path.IsAbs(ref.Target) {
		return fmt.Errorf("target %q is not absolute", ref.Target)
	}
	name := strings.TrimPrefix(path.Clean(ref.Target), "/")
	if name == "" {
		return fmt.Errorf("a secret cannot be copied onto the container's /")
	}
	var data []byte
	var ok bool
	if app != nil && ref.Digest != "" {
		data, ok = app.SecretData[ref.Digest]
	}
	if !ok {
		return fmt.Errorf("its value was not decrypted with the app")
	}
	uid, err := owner("uid", ref.UID)
	if err != nil {
		return err
	}
	gid, err := owner("gid", ref.GID)
	if err != nil {
		return err
	}
	mode := int64(ref.Mode) & 0o7777
	if mode == 0 {
		mode = fileMode
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Uid: uid, Gid: gid, Size: int64(len(data)), ModTime: modTime}); err != nil {
		return err
	}
	_, err = tw.Write(data)
	return err
}

// owner is a secret's numeric uid or gid, 0 when not declared.
func owner(field, v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q is not a number", field, v)
	}
	return n, nil
}
