package gitsource

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// DefaultMaxDiffBytes bounds a Diff's text when the caller passes 0: a
// page shows it, and a diff this long is read on the Git host anyway.
const DefaultMaxDiffBytes = 256 << 10

// Diff is what changed in the manifests path between two commits, as a
// unified diff with paths relative to the repository root.
type Diff struct {
	From string `json:"from,omitempty"` // "" = from nothing (the first revision)
	To   string `json:"to"`
	Path string `json:"path,omitempty"` // the manifests path; "" = repository root
	// Files is how many files changed.
	Files int `json:"files"`
	// Text is the unified diff; cut at a line boundary when TooLarge.
	Text string `json:"text"`
	// TooLarge is set when Text was cut at the size bound.
	TooLarge bool `json:"tooLarge,omitempty"`
}

// errDiffFull stops the encoder once the bound is reached.
var errDiffFull = errors.New("diff size bound reached")

// boundedWriter keeps at most max bytes, cut at the last full line.
type boundedWriter struct {
	sb   strings.Builder
	max  int
	full bool
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	if w.sb.Len()+len(p) <= w.max {
		w.sb.Write(p)
		return len(p), nil
	}
	room := p[:w.max-w.sb.Len()]
	if i := strings.LastIndexByte(string(room), '\n'); i >= 0 {
		w.sb.Write(room[:i+1])
	}
	w.full = true
	return 0, errDiffFull
}

// Diff returns the unified diff of the manifests path (Config.Path)
// between two commits already in the clone. from may be "" for the first
// revision: everything shows as added. The text is bounded by maxBytes
// (0 = DefaultMaxDiffBytes); a longer diff is cut and marked TooLarge.
func (s *Source) Diff(ctx context.Context, from, to string, maxBytes int) (Diff, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxDiffBytes
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := Diff{Path: s.path}
	fromTree, fromSHA, err := s.pathTree(from)
	if err != nil {
		return Diff{}, err
	}
	toTree, toSHA, err := s.pathTree(to)
	if err != nil {
		return Diff{}, err
	}
	d.From, d.To = fromSHA, toSHA
	changes, err := object.DiffTreeWithOptions(ctx, fromTree, toTree, nil)
	if err != nil {
		return Diff{}, s.diffError(ctx, from, to, err)
	}
	d.Files = len(changes)
	if len(changes) == 0 {
		return d, nil
	}
	patch, err := changes.PatchContext(ctx)
	if err != nil {
		return Diff{}, s.diffError(ctx, from, to, err)
	}
	prefix := ""
	if s.path != "" {
		prefix = s.path + "/"
	}
	w := &boundedWriter{max: maxBytes}
	enc := diff.NewUnifiedEncoder(w, diff.DefaultContextLines).SetSrcPrefix("a/" + prefix).SetDstPrefix("b/" + prefix)
	if err := enc.Encode(patch); err != nil && !errors.Is(err, errDiffFull) {
		return Diff{}, s.diffError(ctx, from, to, err)
	}
	d.Text, d.TooLarge = w.sb.String(), w.full
	return d, nil
}

func (s *Source) diffError(ctx context.Context, from, to string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s.suspect = true
	return s.newError(nil, fmt.Sprintf("diff %s..%s", shortOr(from, "(none)"), shortOr(to, "(none)")), err)
}

func shortOr(sha, none string) string {
	if sha == "" {
		return none
	}
	return Revision{SHA: sha}.Short()
}

// pathTree is the manifests directory's tree at sha; nil (an empty tree)
// for sha "" or when the directory does not exist at that commit, so a
// diff shows the path appearing or going. Callers hold s.mu.
func (s *Source) pathTree(sha string) (*object.Tree, string, error) {
	if sha == "" {
		return nil, "", nil
	}
	_, c, err := s.commit(sha)
	if err != nil {
		return nil, "", err
	}
	tree, err := c.Tree()
	if err != nil {
		s.suspect = true
		return nil, "", s.newError(nil, fmt.Sprintf("read tree of commit %s", c.Hash), err)
	}
	if s.path == "" {
		return tree, c.Hash.String(), nil
	}
	sub, err := tree.Tree(s.path)
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, c.Hash.String(), nil
	}
	if err != nil {
		s.suspect = true
		return nil, "", s.newError(nil, fmt.Sprintf("read %q at commit %s", s.path, c.Hash), err)
	}
	return sub, c.Hash.String(), nil
}
