package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/loop"
	"github.com/driftless-dev/driftless/sync/status"
)

// Commit status states, in driftless's words; each host has its own.
const (
	statePending = "pending"
	stateSuccess = "success"
	stateFailure = "failure"
)

// commitStatus is one status to post on a commit.
type commitStatus struct {
	SHA         string
	State       string // statePending, stateSuccess, stateFailure
	Description string
	TargetURL   string
	Context     string // driftless/APP
}

// hostClient posts commit statuses to one Git host's API.
type hostClient struct {
	provider string
	base     string // API root, no trailing slash
	repo     string // owner/name, or a GitLab project path or ID
	token    string
	http     *http.Client
}

// defaultBases are the public hosts' API roots; Gitea and Forgejo are
// self-hosted, so theirs comes from the repository URL.
var defaultBases = map[string]string{
	"github":    "https://api.github.com",
	"gitlab":    "https://gitlab.com/api/v4",
	"bitbucket": "https://api.bitbucket.org/2.0",
}

func newHostClient(cfg config.CommitStatus, repoURL string, hc *http.Client) (*hostClient, error) {
	host, path := splitRepoURL(repoURL)
	c := &hostClient{provider: cfg.Provider, base: strings.TrimRight(cfg.BaseURL, "/"), repo: strings.Trim(cfg.Repo, "/"), token: cfg.Token, http: hc}
	if c.repo == "" {
		c.repo = path
	}
	if c.repo == "" {
		return nil, errors.New("commitStatus.repo: could not be derived from the app's repo URL; set it (owner/name)")
	}
	if c.base == "" {
		c.base = defaultBases[cfg.Provider]
		if cfg.Provider == "gitea" && host != "" {
			c.base = "https://" + host + "/api/v1"
		}
	}
	if c.base == "" {
		return nil, fmt.Errorf("commitStatus.baseURL: required for %s (like https://git.example.com/api/v1)", cfg.Provider)
	}
	if c.provider != "gitlab" && strings.Count(c.repo, "/") != 1 {
		return nil, fmt.Errorf("commitStatus.repo: %q is not owner/name", c.repo)
	}
	return c, nil
}

// splitRepoURL returns the host and the owner/name path of a Git URL:
// https://host/owner/name.git, ssh://git@host/owner/name, git@host:owner/name.
func splitRepoURL(raw string) (host, path string) {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Hostname(), strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git")
	}
	if at := strings.Index(raw, "@"); at >= 0 {
		if colon := strings.Index(raw[at:], ":"); colon > 0 {
			return raw[at+1 : at+colon], strings.TrimSuffix(strings.Trim(raw[at+colon+1:], "/"), ".git")
		}
	}
	return "", ""
}

// request builds the provider's documented call.
func (c *hostClient) request(ctx context.Context, s commitStatus) (*http.Request, error) {
	var (
		endpoint string
		body     any
	)
	desc := truncate(s.Description, 140) // GitHub refuses longer descriptions
	switch c.provider {
	case "github", "gitea":
		endpoint = fmt.Sprintf("%s/repos/%s/statuses/%s", c.base, c.repo, url.PathEscape(s.SHA))
		body = map[string]string{"state": s.State, "target_url": s.TargetURL, "description": desc, "context": s.Context}
	case "gitlab":
		state := map[string]string{statePending: "pending", stateSuccess: "success", stateFailure: "failed"}[s.State]
		endpoint = fmt.Sprintf("%s/projects/%s/statuses/%s", c.base, url.PathEscape(c.repo), url.PathEscape(s.SHA))
		body = map[string]string{"state": state, "name": s.Context, "target_url": s.TargetURL, "description": desc}
	case "bitbucket":
		state := map[string]string{statePending: "INPROGRESS", stateSuccess: "SUCCESSFUL", stateFailure: "FAILED"}[s.State]
		endpoint = fmt.Sprintf("%s/repositories/%s/commit/%s/statuses/build", c.base, c.repo, url.PathEscape(s.SHA))
		body = map[string]string{"key": truncate(s.Context, 40), "state": state, "name": s.Context, "url": s.TargetURL, "description": desc}
	default:
		return nil, fmt.Errorf("commit status provider %q is not supported", c.provider)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "driftless")
	switch c.provider {
	case "github":
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
		req.Header.Set("Authorization", "Bearer "+c.token)
	case "gitea":
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Authorization", "token "+c.token)
	case "gitlab":
		req.Header.Set("PRIVATE-TOKEN", c.token)
	case "bitbucket":
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// post sends one status. An answer other than 2xx is an error with the
// host's own words, so the log says what to fix (a token without the
// right scope, a wrong repo).
func (c *hostClient) post(ctx context.Context, s commitStatus) error {
	req, err := c.request(ctx, s)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s commit status: %w", c.provider, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s commit status for %s: %s: %s", c.provider, drift.ShortRevision(s.SHA), resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// statusTracker turns an app's reports into commit statuses: pending when
// a rollout starts, success once every replica of the revision is ready,
// failure when it is refused or its rollout fails. Each state is posted
// once in a row. It does no I/O.
type statusTracker struct {
	awaiting map[string]applied   // app → revision applied but not yet healthy
	last     map[string][2]string // app → SHA and state posted last
}

func newStatusTracker() *statusTracker {
	return &statusTracker{awaiting: map[string]applied{}, last: map[string][2]string{}}
}

// applied is a revision whose sync succeeded, and its history entry.
type applied struct {
	sha   string
	entry uint64
}

// targetURL is where a commit status links to: a preview's own URL, where
// the commit can be seen running, or else the history entry (or app) on
// the dashboard; "" with neither.
func targetURL(r loop.Report, externalURL string, entry uint64) string {
	if p := r.Next.Preview; p != nil && p.URL != "" {
		return p.URL
	}
	return entryLink(externalURL, Event{App: r.App, EntryID: entry})
}

func (t *statusTracker) statuses(r loop.Report, externalURL string) []commitStatus {
	var out []commitStatus
	add := func(sha, state, desc string, entry uint64) {
		// Saying the same twice in a row adds nothing; keeping only the
		// last one per app keeps the memory bounded.
		if sha == "" || t.last[r.App] == [2]string{sha, state} {
			return
		}
		t.last[r.App] = [2]string{sha, state}
		out = append(out, commitStatus{SHA: sha, State: state, Description: desc, Context: "driftless/" + r.App,
			TargetURL: targetURL(r, externalURL, entry)})
	}
	if r.Applying != nil {
		add(r.Applying.SHA, statePending, "rolling out", 0)
		return out
	}
	for _, e := range r.Entries {
		if e.Revision == nil {
			continue
		}
		switch {
		case e.Kind == status.KindRefused, e.Kind == status.KindRollback && e.Result == "quarantined":
			delete(t.awaiting, r.App)
			add(e.Revision.SHA, stateFailure, e.Summary, e.ID)
		case e.Kind == status.KindSync && (e.Result == "failed" || e.Result == "partial"):
			delete(t.awaiting, r.App)
			add(e.Revision.SHA, stateFailure, e.Summary, e.ID)
		case e.Kind == status.KindSync && e.Result == "succeeded":
			t.awaiting[r.App] = applied{sha: e.Revision.SHA, entry: e.ID}
		}
	}
	w, ok := t.awaiting[r.App]
	if !ok || r.Next.Applied == nil || r.Next.Applied.SHA != w.sha {
		return out
	}
	switch r.Next.Health {
	case drift.HealthHealthy:
		delete(t.awaiting, r.App)
		add(w.sha, stateSuccess, "every replica is ready", w.entry)
	case drift.HealthDegraded:
		delete(t.awaiting, r.App)
		add(w.sha, stateFailure, "Degraded: "+r.Next.Message, w.entry)
	}
	return out
}
