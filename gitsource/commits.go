package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"
	"testing/fstest"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// MaxFilesBytes caps what Files reads into memory at once (files up to
// lazyBlobBytes each), so that a Path pointing at a huge tree fails clearly
// instead of exhausting memory.
const MaxFilesBytes = 64 << 20

// revertLine is git revert's standard message; abbreviated SHAs are
// accepted because people edit these messages by hand.
var revertLine = regexp.MustCompile(`(?m)This reverts commit ([0-9a-fA-F]{7,40})\b`)

func revisionOf(c *object.Commit) Revision {
	subject, _, _ := strings.Cut(strings.TrimLeft(c.Message, "\n"), "\n")
	r := Revision{
		SHA:     c.Hash.String(),
		Author:  c.Author.Name,
		Email:   c.Author.Email,
		Time:    c.Committer.When,
		Subject: strings.TrimSpace(subject),
	}
	if m := revertLine.FindStringSubmatch(c.Message); m != nil {
		r.Revert = true
		r.Reverts = strings.ToLower(m[1])
	}
	return r
}

// peelToCommit follows annotated tags down to their commit.
func peelToCommit(repo *git.Repository, h plumbing.Hash) (*object.Commit, error) {
	for range 10 { // tags of tags are legal but never deep
		tag, err := repo.TagObject(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return repo.CommitObject(h)
		}
		if err != nil {
			return nil, err
		}
		if tag.TargetType != plumbing.CommitObject && tag.TargetType != plumbing.TagObject {
			return nil, fmt.Errorf("tag %s points at a %s: %w", tag.Name, tag.TargetType, errNotCommit)
		}
		h = tag.Target
	}
	return nil, fmt.Errorf("tag chain too deep: %w", errNotCommit)
}

// errNotCommit: a ref leads to something that is not a commit, which is
// the repository's doing, not a damaged clone's.
var errNotCommit = errors.New("not a commit")

// resolveCommit finds a commit by full or abbreviated SHA.
func resolveCommit(repo *git.Repository, sha string) (*object.Commit, error) {
	sha = strings.ToLower(strings.TrimSpace(sha))
	if !hexSHA.MatchString(sha) {
		return nil, fmt.Errorf("%q is not a commit SHA", sha)
	}
	if len(sha) == 40 {
		return repo.CommitObject(plumbing.NewHash(sha))
	}
	iter, err := repo.CommitObjects()
	if err != nil {
		return nil, err
	}
	defer iter.Close()
	var found *object.Commit
	err = iter.ForEach(func(c *object.Commit) error {
		if !strings.HasPrefix(c.Hash.String(), sha) {
			return nil
		}
		if found != nil {
			return fmt.Errorf("abbreviated SHA %s is ambiguous; use more digits", sha)
		}
		found = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, plumbing.ErrObjectNotFound
	}
	return found, nil
}

// commit resolves sha in the clone. Callers hold s.mu.
func (s *Source) commit(sha string) (*git.Repository, *object.Commit, error) {
	repo, err := s.openRepo()
	if err != nil {
		return nil, nil, err
	}
	c, err := resolveCommit(repo, sha)
	if err != nil {
		return nil, nil, s.newError(ErrCommitNotFound, fmt.Sprintf("commit %s of %s", sha, s.url), err)
	}
	return repo, c, nil
}

// Revision returns the metadata of a commit already in the clone.
func (s *Source) Revision(ctx context.Context, sha string) (Revision, error) {
	if err := ctx.Err(); err != nil {
		return Revision{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, c, err := s.commit(sha)
	if err != nil {
		return Revision{}, err
	}
	return revisionOf(c), nil
}

// Files returns the manifests directory (Config.Path) at sha, read from
// the object store into memory: no worktree, so it is consistent and the
// result stays valid while later fetches run. Symlinks and submodules are
// skipped: they cannot be resolved without a checkout.
func (s *Source) Files(ctx context.Context, sha string) (fs.FS, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, c, err := s.commit(sha)
	if err != nil {
		return nil, err
	}
	tree, err := c.Tree()
	if err != nil {
		s.suspect = true
		return nil, s.newError(nil, fmt.Sprintf("read tree of commit %s", c.Hash), err)
	}
	if s.path != "" {
		tree, err = tree.Tree(s.path)
		if err != nil {
			return nil, s.newError(ErrPathMissing, "", fmt.Errorf("directory %q does not exist at commit %s of %s", s.path, c.Hash, s.url))
		}
	}

	files := &treeFS{MapFS: fstest.MapFS{}, large: map[string]largeBlob{}}
	total := 0
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.suspect = true
			return nil, s.newError(nil, fmt.Sprintf("read %q at commit %s", s.path, c.Hash), err)
		}
		switch entry.Mode {
		case filemode.Regular, filemode.Executable, filemode.Deprecated:
		case filemode.Dir:
			files.MapFS[name] = &fstest.MapFile{Mode: fs.ModeDir | 0o755, ModTime: c.Committer.When}
			continue
		default:
			s.log.Debug("skipping non-regular file in manifests", "path", name, "mode", entry.Mode.String())
			continue
		}
		mode := fs.FileMode(0o644)
		if entry.Mode == filemode.Executable {
			mode = 0o755 // kept: a bind-mounted script must stay runnable
		}
		blob, err := repo.BlobObject(entry.Hash)
		if err != nil {
			s.suspect = true
			return nil, s.newError(nil, fmt.Sprintf("read %q at commit %s", name, c.Hash), err)
		}
		if blob.Size > lazyBlobBytes {
			// Listed now, read when (if) the loader's limits let it.
			files.MapFS[name] = &fstest.MapFile{Mode: mode, ModTime: c.Committer.When}
			files.large[name] = largeBlob{size: blob.Size, mode: mode, modTime: c.Committer.When, read: s.blobReader(entry.Hash)}
			continue
		}
		total += int(blob.Size)
		if total > MaxFilesBytes {
			return nil, s.newError(nil, fmt.Sprintf("manifests path %q at commit %s holds more than %d MiB; point the path at the manifests directory", s.path, c.Hash.String()[:7], MaxFilesBytes>>20), nil)
		}
		data, err := readBlob(blob)
		if err != nil {
			s.suspect = true
			return nil, s.newError(nil, fmt.Sprintf("read %q at commit %s", name, c.Hash), err)
		}
		files.MapFS[name] = &fstest.MapFile{Data: data, Mode: mode, ModTime: c.Committer.When}
	}
	return files, nil
}

// Log returns the last n commits of the tracked ref, newest first (by
// committer time, like git log).
func (s *Source) Log(ctx context.Context, n int) ([]Revision, error) {
	if n <= 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, err := s.openRepo()
	if err != nil {
		return nil, err
	}
	var head *object.Commit
	if s.cfg.Commit != "" {
		head, err = resolveCommit(repo, s.cfg.Commit)
	} else {
		var ref *plumbing.Reference
		if ref, err = repo.Reference(s.localRef(), true); err == nil {
			head, err = peelToCommit(repo, ref.Hash())
		}
	}
	if err != nil {
		return nil, s.newError(ErrRefNotFound, fmt.Sprintf("log of %s: not fetched yet", s.refName()), nil)
	}
	iter, err := repo.Log(&git.LogOptions{From: head.Hash, Order: git.LogOrderCommitterTime})
	if err != nil {
		return nil, s.newError(nil, fmt.Sprintf("log of %s", s.refName()), err)
	}
	defer iter.Close()
	out := make([]Revision, 0, n)
	err = iter.ForEach(func(c *object.Commit) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		out = append(out, revisionOf(c))
		if len(out) == n {
			return storer.ErrStop
		}
		return nil
	})
	if err != nil {
		return nil, s.newError(nil, fmt.Sprintf("log of %s", s.refName()), err)
	}
	return out, nil
}

// blobReader reads a blob later, under the Source's lock: go-git's storage
// is not safe for concurrent use. Objects are immutable, so a fetch in
// between does not change what it reads.
func (s *Source) blobReader(h plumbing.Hash) func() ([]byte, error) {
	return func() ([]byte, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.repo == nil {
			return nil, errors.New("the clone is closed")
		}
		blob, err := s.repo.BlobObject(h)
		if err != nil {
			return nil, err
		}
		return readBlob(blob)
	}
}

// readBlob reads a blob into a buffer of exactly its size: io.ReadAll's
// doubling would hold up to twice a large file at once.
func readBlob(b *object.Blob) ([]byte, error) {
	r, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data := make([]byte, b.Size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	return data, nil
}
