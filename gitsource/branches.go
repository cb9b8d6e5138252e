package gitsource

import (
	"context"
	"sort"

	"github.com/go-git/go-git/v5"
)

// Branch is one branch of the remote and the commit it points at.
type Branch struct {
	Name string // without refs/heads/
	SHA  string
}

// Branches lists the remote's branches in one round trip (an ls-remote),
// sorted by name: what a source's branches: generator turns into previews.
// It fetches no objects.
func (s *Source) Branches(ctx context.Context) ([]Branch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, err := s.openRepo()
	if err != nil {
		return nil, err
	}
	remote, err := repo.Remote(remoteName)
	if err != nil {
		return nil, s.newError(nil, "read the remote of the clone", err)
	}
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: s.auth})
	if err != nil {
		return nil, s.fetchError(err)
	}
	var out []Branch
	for _, r := range refs {
		if r.Name().IsBranch() && !r.Hash().IsZero() {
			out = append(out, Branch{Name: r.Name().Short(), SHA: r.Hash().String()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
