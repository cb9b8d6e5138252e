package web

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/status"
)

// Repo is what web reads from an app's clone. *gitsource.Source
// satisfies it.
type Repo interface {
	Diff(ctx context.Context, from, to string, maxBytes int) (gitsource.Diff, error)
	Files(ctx context.Context, sha string) (fs.FS, error)
}

// diffTimeout bounds computing one diff for a page or the API.
const diffTimeout = 15 * time.Second

// diffLine is one line of a rendered diff; Class picks its colour.
type diffLine struct {
	Class string // file, hunk, add, del, ctx
	Text  string
}

// diffView is a diff as the pages show it.
type diffView struct {
	gitsource.Diff
	Lines []diffLine
	Error string // why there is no diff; "" when there is one
}

// classifyDiff splits unified diff text into classed lines.
func classifyDiff(text string) []diffLine {
	if text == "" {
		return nil
	}
	var out []diffLine
	for l := range strings.SplitSeq(strings.TrimSuffix(text, "\n"), "\n") {
		class := "ctx"
		switch {
		case strings.HasPrefix(l, "diff --git"), strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "+++ "),
			strings.HasPrefix(l, "new file mode"), strings.HasPrefix(l, "deleted file mode"), strings.HasPrefix(l, "index "),
			strings.HasPrefix(l, "rename "), strings.HasPrefix(l, "similarity "), strings.HasPrefix(l, "Binary files "):
			class = "file"
		case strings.HasPrefix(l, "@@"):
			class = "hunk"
		case strings.HasPrefix(l, "encrypted file changed ("):
			class = "note"
		case strings.HasPrefix(l, "+"):
			class = "add"
		case strings.HasPrefix(l, "-"):
			class = "del"
		}
		out = append(out, diffLine{Class: class, Text: l})
	}
	return out
}

// redactedDiff computes the diff of app between two revisions with the
// secretEnv values of both revisions' manifests redacted.
func (s *Server) redactedDiff(ctx context.Context, app, from, to string) (gitsource.Diff, error) {
	// A diff between two commits never changes; the live app page asks
	// for the same one after every pass.
	key := app + "\x00" + from + "\x00" + to
	if d, ok := s.diffs.get(key); ok {
		return d, nil
	}
	d, err := s.computeDiff(ctx, app, from, to)
	if err == nil {
		s.diffs.put(key, d)
	}
	return d, err
}

// diffCache keeps the last few redacted diffs.
type diffCache struct {
	mu    sync.Mutex
	items map[string]gitsource.Diff
	order []string
}

const diffCacheSize = 32

func (c *diffCache) get(key string) (gitsource.Diff, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.items[key]
	return d, ok
}

func (c *diffCache) put(key string, d gitsource.Diff) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.items = map[string]gitsource.Diff{}
	}
	if _, ok := c.items[key]; ok {
		return
	}
	if len(c.order) >= diffCacheSize {
		delete(c.items, c.order[0])
		c.order = c.order[1:]
	}
	c.items[key] = d
	c.order = append(c.order, key)
}

func (s *Server) computeDiff(ctx context.Context, app, from, to string) (gitsource.Diff, error) {
	if s.opts.Repos == nil {
		return gitsource.Diff{}, errNoRepos
	}
	repo := s.opts.Repos(app)
	if repo == nil {
		return gitsource.Diff{}, errNoRepos
	}
	ctx, cancel := context.WithTimeout(ctx, diffTimeout)
	defer cancel()
	// The clone is locked while the loop fetches (a first clone can take
	// minutes), and the lock does not watch ctx: wait for the diff in the
	// background and give up on the page's deadline instead.
	type result struct {
		d   gitsource.Diff
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := s.diffAndRedact(ctx, repo, from, to)
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		return r.d, r.err
	case <-ctx.Done():
		return gitsource.Diff{}, fmt.Errorf("the repository is busy (a fetch is running?): %w; reload in a moment", ctx.Err())
	}
}

func (s *Server) diffAndRedact(ctx context.Context, repo Repo, from, to string) (gitsource.Diff, error) {
	d, err := repo.Diff(ctx, from, to, 0)
	if err != nil {
		return gitsource.Diff{}, err
	}
	var trees []fs.FS
	for _, sha := range []string{from, to} {
		if sha == "" {
			continue
		}
		t, err := repo.Files(ctx, sha)
		if err != nil && !errors.Is(err, gitsource.ErrPathMissing) {
			// Without the manifests nothing says which values are
			// secret: show no diff rather than one that may leak.
			return gitsource.Diff{}, fmt.Errorf("reading the manifests at %s to redact secrets: %w", shortSHA(sha), err)
		}
		trees = append(trees, t)
	}
	d.Text = scanSecrets(trees...).diff(collapseEncrypted(d.Text, d.Path, trees))
	return d, nil
}

var errNoRepos = errors.New("this agent does not serve diffs (no repositories attached to the web server)")

// previousApplied is the revision app ran before entry e: the newest
// older successful sync of another revision. "" when the kept history has
// none (the first revision, or trimmed history).
func (s *Server) previousApplied(e status.HistoryEntry) string {
	q := status.HistoryQuery{App: e.App, Kinds: []status.HistoryKind{status.KindSync}, Before: e.ID, Limit: 100}
	for range 20 {
		entries, err := s.opts.Agent.History(q)
		if err != nil {
			return ""
		}
		for _, p := range entries {
			if p.Revision != nil && p.Revision.SHA != e.Revision.SHA && p.Result == "succeeded" {
				return p.Revision.SHA
			}
		}
		if len(entries) < q.Limit {
			return ""
		}
		q.Before = entries[len(entries)-1].ID
	}
	return ""
}

// entryDiff is what the sync in entry e changed in Git; nil for entries
// that applied no revision.
func (s *Server) entryDiff(ctx context.Context, e status.HistoryEntry) *diffView {
	if e.Kind != status.KindSync || e.Revision == nil || s.opts.Repos == nil {
		return nil
	}
	from := s.previousApplied(e)
	d, err := s.redactedDiff(ctx, e.App, from, e.Revision.SHA)
	if err != nil {
		return &diffView{Diff: gitsource.Diff{From: from, To: e.Revision.SHA}, Error: scrubCredentials(err.Error())}
	}
	return &diffView{Diff: d, Lines: classifyDiff(d.Text)}
}

// appliedEntry is the newest sync that applied the running revision.
func (s *Server) appliedEntry(st status.AppStatus) (status.HistoryEntry, bool) {
	if st.Applied == nil {
		return status.HistoryEntry{}, false
	}
	entries, err := s.opts.Agent.History(status.HistoryQuery{App: st.Name, Kinds: []status.HistoryKind{status.KindSync}, Limit: 100})
	if err != nil {
		return status.HistoryEntry{}, false
	}
	for _, e := range entries {
		if e.Revision != nil && e.Revision.SHA == st.Applied.SHA {
			return e, true
		}
	}
	return status.HistoryEntry{}, false
}

// appliedDiff is what the running revision changed.
func (s *Server) appliedDiff(ctx context.Context, st status.AppStatus) *diffView {
	if e, ok := s.appliedEntry(st); ok {
		return s.entryDiff(ctx, e)
	}
	return nil
}

// apiDiff serves GET /api/v1/apps/:app/diff?from=SHA&to=SHA. to defaults
// to the running revision, from to the revision before it.
func (s *Server) apiDiff(c *gin.Context) {
	st, ok := s.appOr404(c)
	if !ok {
		return
	}
	from, to := c.Query("from"), c.Query("to")
	for _, v := range []struct{ name, sha string }{{"from", from}, {"to", to}} {
		if v.sha != "" && !shaPattern.MatchString(v.sha) {
			jsonError(c, http.StatusBadRequest, fmt.Sprintf("%s must be a commit SHA (4 to 64 hex digits), not %q", v.name, v.sha))
			return
		}
	}
	if to == "" {
		if st.Applied == nil {
			jsonError(c, http.StatusNotFound, fmt.Sprintf("app %q runs no revision yet; pass ?to=SHA", st.Name))
			return
		}
		to = st.Applied.SHA
		if e, ok := s.appliedEntry(st); ok && from == "" {
			from = s.previousApplied(e)
		}
	}
	d, err := s.redactedDiff(c.Request.Context(), st.Name, from, to)
	switch {
	case errors.Is(err, errNoRepos):
		jsonError(c, http.StatusNotImplemented, err.Error())
		return
	case errors.Is(err, gitsource.ErrCommitNotFound):
		jsonError(c, http.StatusNotFound, scrubCredentials(err.Error())+"; only commits the agent has fetched can be compared")
		return
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		c.Header("Retry-After", "10")
		jsonError(c, http.StatusServiceUnavailable, scrubCredentials(err.Error()))
		return
	case err != nil:
		jsonError(c, http.StatusInternalServerError, "computing the diff failed: "+scrubCredentials(err.Error()))
		return
	}
	c.JSON(http.StatusOK, d)
}
