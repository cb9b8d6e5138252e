package gitsource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

const (
	remoteName = "origin"
	// markerFile marks Dir as ours, so that we only ever wipe a directory we
	// created. Git ignores unknown files in a bare repository.
	markerFile = "driftless-clone"
	// Local refs live in their own namespace so that switching the tracked
	// ref never confuses one ref's history with another's.
	trackedHEAD  = plumbing.ReferenceName("refs/driftless/HEAD")
	allRefsSpecs = "+refs/heads/*:refs/driftless/all/heads/*"
	allTagsSpecs = "+refs/tags/*:refs/driftless/all/tags/*"
)

// openRepo returns the clone in cfg.Dir, creating it, or recreating it
// when it is corrupt or points at another URL. Callers hold s.mu.
func (s *Source) openRepo() (*git.Repository, error) {
	if s.repo != nil {
		return s.repo, nil
	}
	dir := s.cfg.Dir
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0):
		return s.initRepo()
	case err != nil:
		return nil, fmt.Errorf("gitsource: clone directory %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, markerFile)); err != nil {
		return nil, fmt.Errorf("gitsource: clone directory %s is not empty and was not created by driftless; empty it or choose another directory", dir)
	}
	repo, err := git.PlainOpen(dir)
	if err == nil {
		var remote *git.Remote
		if remote, err = repo.Remote(remoteName); err == nil {
			if urls := remote.Config().URLs; len(urls) == 1 && urls[0] == s.url {
				s.repo = repo
				return repo, nil
			}
			s.log.Info("git repository URL changed; re-cloning", "dir", dir, "url", s.url)
		}
	}
	if err != nil {
		s.log.Warn("git clone unreadable; re-cloning", "dir", dir, "error", s.scrub(err.Error()))
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return nil, fmt.Errorf("gitsource: cannot clear clone directory %s: %w", dir, err)
		}
	}
	return s.initRepo()
}

// initRepo creates an empty bare repository with the remote configured.
// Init + fetch (rather than clone) means an interrupted first fetch leaves
// a usable repository that the next fetch simply completes.
func (s *Source) initRepo() (*git.Repository, error) {
	dir := s.cfg.Dir
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("gitsource: create clone directory: %w", err)
	}
	// Marker first: a crash after it leaves a directory we may wipe.
	if err := os.WriteFile(filepath.Join(dir, markerFile), []byte("managed by driftless; safe to delete\n"), 0o640); err != nil {
		return nil, fmt.Errorf("gitsource: create clone directory: %w", err)
	}
	repo, err := git.PlainInit(dir, true)
	if err != nil {
		return nil, fmt.Errorf("gitsource: init clone in %s: %w", dir, err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{s.url}}); err != nil {
		return nil, fmt.Errorf("gitsource: init clone in %s: %w", dir, err)
	}
	s.repo = repo
	return repo, nil
}

// Fetch fetches only the tracked ref and reports its head. When nothing
// changed it costs one ref advertisement round trip; it never checks out
// or parses anything. A fixed commit that is already present costs no
// network at all.
func (s *Source) Fetch(ctx context.Context) (FetchResult, error) {
	timeout := s.cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	s.mu.Lock()
	defer s.mu.Unlock()
	repo, err := s.openRepo()
	if err != nil {
		return FetchResult{}, err
	}
	head, err := s.fetchHead(ctx, repo)
	if err != nil && ctx.Err() == nil && s.suspect {
		// The clone could not read what it holds (a truncated pack, a
		// missing object): it holds nothing that Git does not, so delete
		// it and clone again. Only a failure to read the clone counts: an
		// error the network could explain never deletes it, since the
		// clone is what keeps the last good revision readable while the
		// server is away.
		s.log.Warn("git clone looks corrupt; deleting it and cloning again", "dir", s.cfg.Dir, "error", err)
		if repo, err = s.reclone(); err != nil {
			return FetchResult{}, err
		}
		head, err = s.fetchHead(ctx, repo)
	}
	if err != nil {
		return FetchResult{}, err
	}
	s.suspect = false
	return s.result(repo, head), nil
}

func (s *Source) fetchHead(ctx context.Context, repo *git.Repository) (*object.Commit, error) {
	if s.cfg.Commit != "" {
		return s.fetchCommit(ctx, repo)
	}
	return s.fetchRef(ctx, repo)
}

// reclone empties the clone directory and starts a new clone. Callers
// hold s.mu.
func (s *Source) reclone() (*git.Repository, error) {
	s.repo, s.last, s.suspect = nil, "", false
	entries, err := os.ReadDir(s.cfg.Dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("gitsource: clone directory %s: %w", s.cfg.Dir, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(s.cfg.Dir, e.Name())); err != nil {
			return nil, fmt.Errorf("gitsource: cannot clear clone directory %s: %w", s.cfg.Dir, err)
		}
	}
	return s.initRepo()
}

// fetchRef fetches the tracked branch/tag/HEAD into its local ref and
// returns the commit it points to. s.last is updated by result.
func (s *Source) fetchRef(ctx context.Context, repo *git.Repository) (*object.Commit, error) {
	local := s.localRef()
	if s.last == "" {
		// After a restart the previous head is whatever the clone holds.
		if ref, err := repo.Reference(local, true); err == nil {
			if c, err := peelToCommit(repo, ref.Hash()); err == nil {
				s.last = c.Hash.String()
			}
		}
	}

	srcs := []string{s.remoteRef()}
	if s.cfg.Branch == "" && s.cfg.Tag == "" {
		// The remote may not advertise HEAD (e.g. it points at an unborn
		// branch); then fall back to "main".
		srcs = append(srcs, plumbing.NewBranchReferenceName(defaultBranch).String())
	}
	var err error
	for _, src := range srcs {
		spec := config.RefSpec(fmt.Sprintf("+%s:%s", src, local))
		err = repo.FetchContext(ctx, &git.FetchOptions{
			RemoteName: remoteName,
			RefSpecs:   []config.RefSpec{spec},
			Auth:       s.auth,
			Tags:       git.NoTags,
			Force:      true,
		})
		if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
			err = nil
			break
		}
		if !errors.Is(err, git.NoMatchingRefSpecError{}) {
			break
		}
	}
	if err != nil {
		s.suspectEmptyRef(err)
		return nil, s.fetchError(err)
	}
	ref, err := repo.Reference(local, true)
	if err != nil {
		s.suspectEmptyRef(err)
		return nil, s.newError(ErrRefNotFound, fmt.Sprintf("fetch %s from %s", s.refName(), s.url), err)
	}
	c, err := peelToCommit(repo, ref.Hash())
	if err != nil && !errors.Is(err, errNotCommit) && !errors.Is(err, plumbing.ErrInvalidType) {
		// The fetch succeeded, so the remote has the commit: the clone
		// cannot read it.
		s.suspect = true
		return nil, s.newError(nil, fmt.Sprintf("read %s of %s from the local clone", s.refName(), s.url), err)
	}
	if err != nil {
		return nil, s.newError(ErrRefNotFound, fmt.Sprintf("fetch %s from %s: it does not point at a commit", s.refName(), s.url), err)
	}
	return c, nil
}

// suspectEmptyRef marks the clone suspect when err is a ref file left
// empty: the agent was killed while Git wrote it, and only the clone, not
// the network, can be at fault, so the next Fetch clones again.
func (s *Source) suspectEmptyRef(err error) {
	if errors.Is(err, dotgit.ErrEmptyRefFile) {
		s.suspect = true
	}
}

// fetchCommit makes sure the fixed commit is present. Servers do not
// generally allow fetching an arbitrary SHA, so fetch all branches and tags
// once and look for it there.
func (s *Source) fetchCommit(ctx context.Context, repo *git.Repository) (*object.Commit, error) {
	if c, err := resolveCommit(repo, s.cfg.Commit); err == nil {
		return c, nil
	}
	err := repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: remoteName,
		RefSpecs:   []config.RefSpec{allRefsSpecs, allTagsSpecs},
		Auth:       s.auth,
		Tags:       git.NoTags,
		Force:      true,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil, s.fetchError(err)
	}
	c, err := resolveCommit(repo, s.cfg.Commit)
	if err != nil {
		return nil, s.newError(ErrRefNotFound, fmt.Sprintf("%s is not on any branch or tag of %s", s.refName(), s.url), err)
	}
	return c, nil
}

func (s *Source) fetchError(err error) error {
	kind := classify(err)
	what := fmt.Sprintf("fetch %s from %s", s.refName(), s.url)
	return s.newError(kind, what, err)
}

// result computes Changed/ForcePushed against the previous head.
func (s *Source) result(repo *git.Repository, head *object.Commit) FetchResult {
	res := FetchResult{Revision: revisionOf(head), Previous: s.last}
	res.Changed = !s.fetched || s.last != res.Revision.SHA
	if s.last != "" && s.last != res.Revision.SHA && s.cfg.Commit == "" {
		prev, err := repo.CommitObject(plumbing.NewHash(s.last))
		if err != nil {
			s.log.Debug("previous git head not in clone; cannot check for force-push", "sha", s.last)
		} else if ok, err := descends(context.Background(), head, prev.Hash); err == nil && !ok {
			res.ForcePushed = true
		}
	}
	if res.Changed {
		s.log.Info("git source has a new revision", "source", s.Describe(), "sha", res.Revision.Short(),
			"subject", res.Revision.Subject, "force_pushed", res.ForcePushed)
	}
	s.last = res.Revision.SHA
	s.fetched = true
	return res
}

// localRef is where the tracked ref is stored in the clone.
func (s *Source) localRef() plumbing.ReferenceName {
	switch {
	case s.cfg.Branch != "":
		return plumbing.ReferenceName("refs/driftless/heads/" + s.cfg.Branch)
	case s.cfg.Tag != "":
		return plumbing.ReferenceName("refs/driftless/tags/" + s.cfg.Tag)
	}
	return trackedHEAD
}

func (s *Source) remoteRef() string {
	switch {
	case s.cfg.Branch != "":
		return plumbing.NewBranchReferenceName(s.cfg.Branch).String()
	case s.cfg.Tag != "":
		return plumbing.NewTagReferenceName(s.cfg.Tag).String()
	}
	return "HEAD"
}

// IsAncestor reports whether the commit ancestor is descendant itself or
// one of its ancestors: whether moving from ancestor to descendant is a
// fast-forward. Both are looked up in the clone's object store, so a
// commit a force-push made unreachable from every ref still counts, as
// long as the clone holds it (driftless never prunes a clone). A commit
// the clone does not hold (a fresh clone after a force-push, a typo) is
// an error wrapping ErrCommitNotFound: the caller cannot tell, and should
// say so.
func (s *Source) IsAncestor(ctx context.Context, ancestor, descendant string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, a, err := s.commit(ancestor)
	if err != nil {
		return false, err
	}
	_, d, err := s.commit(descendant)
	if err != nil {
		return false, err
	}
	ok, err := descends(ctx, d, a.Hash)
	if err != nil && ctx.Err() == nil {
		// A parent the clone should hold cannot be read.
		s.suspect = true
		return false, s.newError(nil, fmt.Sprintf("walk the history of %s in the local clone", d.Hash.String()[:7]), err)
	}
	return ok, err
}

// descends walks the history of from, breadth first, looking for want.
// Breadth first finds a recent ancestor (the usual fast-forward) after a
// few commits; only a rewritten history is walked to its roots.
func descends(ctx context.Context, from *object.Commit, want plumbing.Hash) (bool, error) {
	seen := map[plumbing.Hash]bool{from.Hash: true}
	queue := []*object.Commit{from}
	for n := 0; len(queue) > 0; n++ {
		c := queue[0]
		queue = queue[1:]
		if c.Hash == want {
			return true, nil
		}
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		err := c.Parents().ForEach(func(p *object.Commit) error {
			if !seen[p.Hash] {
				seen[p.Hash] = true
				queue = append(queue, p)
			}
			return nil
		})
		if err != nil {
			return false, err
		}
	}
	return false, nil
}
