// Package hostfiles owns the files driftless writes on the host for
// replicas to bind-mount: repository content trees, written once per
// content hash and read-only, and decrypted secret files on a tmpfs. It
// names their paths (pure, for the create call) and writes and removes
// them; the Docker applier holds one Store and asks it before a replica is
// created, so file handling and its lock live apart from the engine.
package hostfiles

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

// Repository bind mounts are never a mutable checkout: each content tree
// (manifest.RepoTree, by its full content hash) is written once, read-only,
// to FilesDir/<hash>/, and every replica of every revision with the same
// content mounts that directory read-only. A directory tree is the
// directory itself; a single file is FilesDir/<hash>/file (a fixed name, so
// the content hash alone names it whatever the mount path). Directories
// named by a 16-character hash are an older version's: containers created
// then keep mounting them, and RemoveUnusedFiles removes them once none
// does.

// Store writes and removes the host files of one engine's replicas.
type Store struct {
	// FilesDir holds the materialized repository trees (see
	// DefaultFilesDir); SecretsDir the secret files (see
	// DefaultSecretsDir).
	FilesDir   string
	SecretsDir string
	// StateDir holds the apps' state directories (see StateRoot).
	StateDir string
	Log      *slog.Logger
	// Mounts lists, in one call, the host sources of every mount of every
	// container of driftless, running or not: what must not be removed.
	Mounts func(ctx context.Context) ([]string, error)
	// Remote: the engine may be on another host, where these directories
	// are not. Repository files are not written under FilesDir nor secret
	// files under SecretsDir (they are copied into each container through
	// the engine API), and state directories are not made under StateDir
	// (they are volumes there).
	Remote bool

	// mu serializes writing and removing materialized trees and secret
	// files.
	mu sync.Mutex
	// secretsReady: SecretsDir was checked to be a root-only tmpfs
	// (guarded by mu).
	secretsReady bool
}

// singleFileName is the name of a single-file tree inside its directory.
const singleFileName = "file"

// tmpPrefix marks a tree being written; it never takes part in a mount.
const TmpPrefix = ".tmp-"

// DefaultFilesDir is where repository files are materialized when Options
// leave FilesDir empty: files/ in driftless's data directory
// ($DRIFTLESS_DATA, $XDG_DATA_HOME/driftless or ~/.local/share/driftless,
// as the CLI's --data default).
func DefaultFilesDir() string {
	data := os.Getenv("DRIFTLESS_DATA")
	switch {
	case data != "":
	case os.Getenv("XDG_DATA_HOME") != "":
		data = filepath.Join(os.Getenv("XDG_DATA_HOME"), "driftless")
	default:
		home, err := os.UserHomeDir()
		if err != nil {
			return filepath.Join(".driftless", "files")
		}
		data = filepath.Join(home, ".local", "share", "driftless")
	}
	return filepath.Join(data, "files")
}

// materializedPath is the host path a repository bind mounts: pure, it only
// names the path materialize writes.
func MaterializedPath(app *manifest.App, filesDir string, b manifest.BindMount) (string, error) {
	tree := app.Content[b.ContentHash]
	if b.ContentHash == "" || tree == nil {
		return "", fmt.Errorf("the content of repoPath %s (mounted at %s) was not loaded with the app", b.RepoPath, b.MountPath)
	}
	if filesDir == "" {
		return "", errors.New("no files directory for repository bind mounts (deploy.Options.FilesDir)")
	}
	dir := filepath.Join(filesDir, b.ContentHash)
	if !tree.Dir {
		return filepath.Join(dir, singleFileName), nil
	}
	return dir, nil
}

// materializeService writes the content of the service's repository binds
// and its secret files that are not yet on disk (neither with Remote).
func (s *Store) MaterializeService(app *manifest.App, svc *manifest.Service) error {
	if err := s.WriteSecrets(app, svc); err != nil {
		return err
	}
	if err := s.ensureStateDirs(app, svc); err != nil {
		return err
	}
	for _, b := range svc.Spec.Binds {
		if b.RepoPath == "" || s.Remote {
			continue
		}
		tree := app.Content[b.ContentHash]
		if tree == nil {
			return fmt.Errorf("service %s: the content of repoPath %s was not loaded with the app", svc.Name, b.RepoPath)
		}
		if err := s.materialize(b.ContentHash, tree); err != nil {
			return fmt.Errorf("service %s: repoPath %s: %w", svc.Name, b.RepoPath, err)
		}
	}
	return nil
}

// materialize writes tree to FilesDir/<hash>/ once: into a temporary
// directory beside it, synced and made read-only, then renamed into place,
// so a directory under its final name is always complete. An existing one
// is reused only if it holds exactly the tree (read back and compared, not
// trusted by its name): anything else under that name, changed on the host
// or left by an older version, is replaced by a fresh copy.
func (s *Store) materialize(hash string, tree *manifest.RepoTree) error {
	if s.FilesDir == "" {
		return errors.New("no files directory for repository bind mounts (deploy.Options.FilesDir)")
	}
	if !isContentHash(hash) {
		return fmt.Errorf("invalid content hash %q: want the 64 hex characters of a SHA-256", hash)
	}
	if got := tree.Hash(); got != hash {
		return fmt.Errorf("content hash %s does not match its content (%s)", hash, got)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	final := filepath.Join(s.FilesDir, hash)
	_, statErr := os.Lstat(final)
	exists := statErr == nil
	if exists {
		why := treeDiffers(final, tree)
		if why == "" {
			// Reused: a fresh time keeps RemoveUnusedFiles's minAge from
			// taking it before the replica that needs it is created.
			now := time.Now()
			_ = os.Chtimes(final, now, now)
			return nil
		}
		s.Log.Warn("materialized repository files do not match their content hash; writing them again", "dir", final, "why", why)
	}
	if err := os.MkdirAll(s.FilesDir, 0o755); err != nil {
		return fmt.Errorf("create files directory: %w", err)
	}
	tmp, err := os.MkdirTemp(s.FilesDir, TmpPrefix+hash+"-")
	if err != nil {
		return fmt.Errorf("materialize %s: %w", hash, err)
	}
	if err := writeTree(tmp, tree); err != nil {
		_ = RemoveTree(tmp)
		return fmt.Errorf("materialize %s: %w", hash, err)
	}
	if exists {
		// rename cannot replace a non-empty directory: the mismatching
		// one moves aside first (under tmpPrefix, which nothing mounts by
		// name) and is removed, so its content is served no longer: a
		// container that still mounts it sees its files again only once
		// restarted onto the fresh copy.
		stale := filepath.Join(s.FilesDir, TmpPrefix+"stale-"+filepath.Base(tmp)[len(TmpPrefix):])
		if err := os.Rename(final, stale); err != nil && !errors.Is(err, fs.ErrNotExist) {
			_ = RemoveTree(tmp)
			return fmt.Errorf("materialize %s: move the mismatching copy aside: %w", hash, err)
		}
		defer func() { _ = RemoveTree(stale) }()
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = RemoveTree(tmp)
		if treeDiffers(final, tree) == "" {
			return nil // another process put the same content there
		}
		return fmt.Errorf("materialize %s: %w", hash, err)
	}
	return syncDir(s.FilesDir)
}

// isContentHash reports whether h is a full content hash (RepoTree.Hash):
// 64 lower-case hex characters, so it is also a safe directory name.
func isContentHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// treeDiffers reads the materialized copy at root back and compares it with
// tree: the same regular files with the same data and executable bit, and
// nothing else (no other file, link or directory). It returns why it
// differs, or "" if it holds exactly the tree. Links are not followed.
func treeDiffers(root string, tree *manifest.RepoTree) string {
	fi, err := os.Lstat(root)
	if err != nil {
		return err.Error()
	}
	if !fi.IsDir() {
		return "not a directory"
	}
	want := map[string]manifest.RepoFile{}
	dirs := map[string]bool{".": true}
	for _, f := range tree.Files {
		rel := f.Path
		if !tree.Dir {
			rel = singleFileName
		}
		want[rel] = f
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	seen := 0
	why := ""
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if !dirs[rel] {
				why = "unexpected directory " + rel
				return fs.SkipAll
			}
			return nil
		}
		if why = fileDiffers(p, rel, d, want); why != "" {
			return fs.SkipAll
		}
		seen++
		return nil
	})
	switch {
	case err != nil:
		return err.Error()
	case why != "":
		return why
	case seen != len(want):
		return fmt.Sprintf("%d of %d files present", seen, len(want))
	}
	return ""
}

// fileDiffers compares one entry of a materialized copy with the file the
// tree has at rel; "" if they match.
func fileDiffers(p, rel string, d fs.DirEntry, want map[string]manifest.RepoFile) string {
	f, ok := want[rel]
	if !ok {
		return "unexpected entry " + rel
	}
	if !d.Type().IsRegular() {
		return rel + " is not a regular file"
	}
	info, err := d.Info()
	if err != nil {
		return err.Error()
	}
	if info.Size() != int64(len(f.Data)) {
		return rel + " has other content"
	}
	if exec := info.Mode()&0o111 != 0; exec != f.Exec {
		return rel + " has another executable bit"
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return err.Error()
	}
	if !bytes.Equal(data, f.Data) {
		return rel + " has other content"
	}
	return ""
}

// writeTree writes the files, fsyncs them, and makes files 0444 (0555 when
// executable) and directories 0555, deepest first (a read-only directory
// cannot be changed below any more).
func writeTree(root string, tree *manifest.RepoTree) error {
	for _, f := range tree.Files {
		rel := f.Path
		if !tree.Dir {
			rel = singleFileName
		}
		if !filepath.IsLocal(filepath.FromSlash(rel)) {
			return fmt.Errorf("file path %q leaves the tree", f.Path)
		}
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := writeFileSync(p, f.Data); err != nil {
			return err
		}
		mode := os.FileMode(0o444)
		if f.Exec {
			mode = 0o555
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
	}
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	slices.SortFunc(dirs, func(a, b string) int {
		return cmp.Compare(strings.Count(b, string(filepath.Separator)), strings.Count(a, string(filepath.Separator)))
	})
	for _, d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o555); err != nil {
			return err
		}
	}
	return nil
}

func writeFileSync(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// removeTree removes a materialized (read-only) tree: its directories are
// made writable first.
func RemoveTree(root string) error {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(root)
}

// RemoveUnusedFiles deletes the materialized repository trees that no
// container of driftless (running or not) mounts any more, and leftovers of
// interrupted writes, once they are older than minAge: a tree written for a
// replica that is still being created is younger than that. It returns the
// removed directories' names (content hashes).
func (s *Store) RemoveUnusedFiles(ctx context.Context, minAge time.Duration) ([]string, error) {
	secrets, err := s.RemoveUnusedSecrets(ctx, "", minAge)
	if err != nil {
		return nil, fmt.Errorf("remove unused secret files: %w", err)
	}
	if len(secrets) > 0 {
		s.Log.Info("removed secret files no container mounts", "count", len(secrets))
	}
	if s.FilesDir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(s.FilesDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list files directory: %w", err)
	}
	used, err := s.mountedFiles(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var removed []string
	for _, ent := range entries {
		info, err := ent.Info()
		if err != nil || !ent.IsDir() || used[ent.Name()] || time.Since(info.ModTime()) < minAge {
			continue
		}
		if err := RemoveTree(filepath.Join(s.FilesDir, ent.Name())); err != nil {
			return removed, fmt.Errorf("remove %s: %w", ent.Name(), err)
		}
		removed = append(removed, ent.Name())
	}
	return removed, nil
}

// mountedFiles lists, in one call, the tree names under FilesDir that a
// container of driftless mounts.
func (s *Store) mountedFiles(ctx context.Context) (map[string]bool, error) {
	mounts, err := s.Mounts(ctx)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	prefix := filepath.Clean(s.FilesDir) + string(filepath.Separator)
	for _, src := range mounts {
		if rest, ok := strings.CutPrefix(filepath.Clean(src), prefix); ok {
			used[strings.SplitN(rest, string(filepath.Separator), 2)[0]] = true
		}
	}
	return used, nil
}
