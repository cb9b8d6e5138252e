package manifest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// RepoTree is the content of a file or directory of one revision that a
// bind mount materializes.
type RepoTree struct {
	// Dir: the mount source is a directory (Files' paths are relative to
	// it); otherwise Files holds exactly one entry with an empty Path.
	Dir   bool
	Files []RepoFile // sorted by Path
}

// RepoFile is one regular file of a RepoTree.
type RepoFile struct {
	Path string // slash-separated, relative to the tree; "" for a single file
	Exec bool   // executable bit
	Data []byte
	// Link is a symlink's target (build contexts only; Data holds it
	// too); "" for a regular file.
	Link string
}

// Hash identifies the tree's content: the SHA-256, all 64 hex characters,
// over each file's path, executable bit and data. Two revisions with the
// same content have the same hash. It names the tree's directory on the
// host, which every app shares: a prefix would let two contents made to
// collide (2^32 work at 16 characters) share one directory across apps.
func (t *RepoTree) Hash() string {
	h := sha256.New()
	var n [8]byte
	write := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	if t.Dir {
		write([]byte("dir"))
	} else {
		write([]byte("file"))
	}
	for _, f := range t.Files {
		write([]byte(f.Path))
		if f.Exec {
			write([]byte{1})
		} else {
			write([]byte{0})
		}
		write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// LegacyContentIDLen is how many hex characters of a content hash the
// service hash covers: the length content hashes had before they were
// full, so a spec hash recorded by an older version still matches and an
// upgrade recreates nothing (see HashService).
const LegacyContentIDLen = 16

// Errors of CleanRepoPath and ReadRepoTree.
var ErrLeavesRepo = errors.New("leaves the app directory")

// CleanRepoPath turns a relative bind source as written ("./conf",
// "conf/nginx.conf", ".") into a clean slash path relative to the app
// directory, refusing any path that leaves it.
func CleanRepoPath(p string) (string, error) {
	if p == "" || path.IsAbs(p) || strings.Contains(p, "\\") {
		return "", fmt.Errorf("%q is not a relative path", p)
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%q %w", p, ErrLeavesRepo)
	}
	return clean, nil
}

// ReadRepoTree reads the file or directory at p (a clean path from
// CleanRepoPath) from the revision. Hidden entries are kept (a ".htpasswd"
// is content like any other); symlinks are not in a revision's file system
// and so cannot lead out of it.
//
// What it reads counts against the revision's files and contentBytes
// limits (the default limits for an fsys that is not a revision being
// loaded); a limit hit is a *LimitError.
func ReadRepoTree(fsys fs.FS, p string) (*RepoTree, error) {
	cfs := contentFS(fsys)
	info, err := fs.Stat(fsys, p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		data, err := fs.ReadFile(cfs, p)
		if err != nil {
			return nil, err
		}
		return &RepoTree{Files: []RepoFile{{Data: data, Exec: info.Mode()&0o111 != 0}}}, nil
	}
	t := &RepoTree{Dir: true}
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
		t.Files = append(t.Files, RepoFile{Path: rel, Exec: fi.Mode()&0o111 != 0, Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(t.Files, func(a, b RepoFile) int { return strings.Compare(a.Path, b.Path) })
	return t, nil
}

// ResolveRepoBinds reads the repository content of every bind mount with a
// RepoPath from the revision (fsys, the app directory at root), records its
// ContentHash in the spec (so changed content rolls the service; the
// service's Hash is recomputed) and keeps the content in app.Content.
// Both front ends' apps go through it after parsing. Problems come back as
// an ErrorList located where the mount is declared.
func ResolveRepoBinds(fsys fs.FS, root string, app *App) error {
	var errs ErrorList
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
				ref := svc.Field(IndexPath("binds", j))
				errs = append(errs, &Error{Pos: ref.Pos, Field: ref.Field, Msg: err.Error()})
				continue
			}
			b.ContentHash = tree.Hash()
			if app.Content == nil {
				app.Content = map[string]*RepoTree{}
			}
			app.Content[b.ContentHash] = tree
			changed = true
		}
		if changed {
			svc.Hash = HashService(app.SecretKey, svc.Labels, svc.Spec)
		}
	}
	if len(errs) > 0 {
		return (&Collector{Errs: errs}).Sorted()
	}
	return nil
}

func readBindTree(fsys fs.FS, root, repoPath string) (*RepoTree, error) {
	clean, err := CleanRepoPath(repoPath)
	if err != nil {
		return nil, err
	}
	tree, err := ReadRepoTree(fsys, path.Join(root, clean))
	var limit *LimitError
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
