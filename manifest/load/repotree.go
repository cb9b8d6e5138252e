package load

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// ReadRepoTree reads the file or directory at p (a clean path from
// CleanRepoPath) from the revision. Hidden entries are kept (a ".htpasswd"
// is content like any other); symlinks are not in a revision's file system
// and so cannot lead out of it.
//
// What it reads counts against the revision's files and contentBytes
// limits (the default limits for an fsys that is not a revision being
// loaded); a limit hit is a *LimitError.
func ReadRepoTree(fsys fs.FS, p string) (*manifest.RepoTree, error) {
	cfs := policy.ContentFS(fsys)
	info, err := fs.Stat(fsys, p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		data, err := fs.ReadFile(cfs, p)
		if err != nil {
			return nil, err
		}
		return &manifest.RepoTree{Files: []manifest.RepoFile{{Data: data, Exec: info.Mode()&0o111 != 0}}}, nil
	}
	t := &manifest.RepoTree{Dir: true}
	err = fs.WalkDir(fsys, p, func(fp string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		data, err := fs.ReadFile(cfs, fp)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(fp, p+"/")
		if p == "." {
			rel = fp
		}
		t.Files = append(t.Files, manifest.RepoFile{Path: rel, Exec: fi.Mode()&0o111 != 0, Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(t.Files, func(a, b manifest.RepoFile) int { return strings.Compare(a.Path, b.Path) })
	return t, nil
}

// ResolveRepoBinds reads the repository content of every bind mount with a
// RepoPath from the revision (fsys, the app directory at root), records its
// ContentHash in the spec (so changed content rolls the service; the
// service's Hash is recomputed) and keeps the content in app.Content.
// Both front ends' apps go through it after parsing. Problems come back as
// an ErrorList located where the mount is declared.
func ResolveRepoBinds(fsys fs.FS, root string, app *manifest.App) error {
	var errs manifest.ErrorList
	for i := range app.Services {
		svc := &app.Services[i]
		changed := false
		for j := range svc.Spec.Binds {
			b := &svc.Spec.Binds[j]
			if b.RepoPath == "" {
				continue
			}
			tree, err := readBindTree(fsys, root, b.RepoPath)
			if err != nil {
				ref := svc.Field(yamlpos.IndexPath("binds", j))
				errs = append(errs, &manifest.Error{Pos: ref.Pos, Field: ref.Field, Msg: err.Error()})
				continue
			}
			b.ContentHash = tree.Hash()
			if app.Content == nil {
				app.Content = map[string]*manifest.RepoTree{}
			}
			app.Content[b.ContentHash] = tree
			changed = true
		}
		if changed {
			svc.Hash = manifest.HashService(app.SecretKey, svc.Labels, svc.Spec)
		}
	}
	if len(errs) > 0 {
		return (&yamlpos.Collector{Errs: errs}).Sorted()
	}
	return nil
}

func readBindTree(fsys fs.FS, root, repoPath string) (*manifest.RepoTree, error) {
	clean, err := manifest.CleanRepoPath(repoPath)
	if err != nil {
		return nil, err
	}
	tree, err := ReadRepoTree(fsys, path.Join(root, clean))
	var limit *policy.LimitError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("repoPath %s does not exist in this revision", clean)
	case errors.As(err, &limit):
		return nil, fmt.Errorf("repoPath %s: %s; mount config files, not data (use a volume)", clean, limit.AsError().Msg)
	case err != nil:
		return nil, fmt.Errorf("reading repoPath %s: %v", clean, err)
	}
	return tree, nil
}
