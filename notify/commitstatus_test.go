package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/loop"
	"github.com/driftless-dev/driftless/sync/status"
)

// received is one request as a Git host would see it.
type received struct {
	Method, Path string
	Header       http.Header
	Body         map[string]string
}

func hostServer(t *testing.T, code int) (*httptest.Server, <-chan received) {
	t.Helper()
	got := make(chan received, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &body); err != nil {
			t.Errorf("body is not a JSON object of strings: %s", data)
		}
		got <- received{Method: r.Method, Path: r.URL.EscapedPath(), Header: r.Header.Clone(), Body: body}
		w.WriteHeader(code)
		io.WriteString(w, `{"message":"Bad credentials"}`)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// TestCommitStatusRequestsFollowEachHostsAPI checks each provider's
// documented endpoint, auth header and body fields.
func TestCommitStatusRequestsFollowEachHostsAPI(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		provider, repo, repoURL string
		state                   string
		wantPath                string
		wantHeader              map[string]string
		wantBody                map[string]string
	}{
		{provider: "github", repoURL: "https://github.com/acme/infra.git", state: stateSuccess,
			wantPath:   "/repos/acme/infra/statuses/" + sha,
			wantHeader: map[string]string{"Authorization": "Bearer s3cret", "Accept": "application/vnd.github+json", "X-Github-Api-Version": "2022-11-28", "Content-Type": "application/json"},
			wantBody:   map[string]string{"state": "success", "context": "driftless/web", "description": "every replica is ready", "target_url": "https://d.example/history/5"}},
		{provider: "gitlab", repoURL: "git@gitlab.com:acme/platform/infra.git", state: stateFailure,
			wantPath:   "/projects/acme%2Fplatform%2Finfra/statuses/" + sha,
			wantHeader: map[string]string{"Private-Token": "s3cret"},
			wantBody:   map[string]string{"state": "failed", "name": "driftless/web", "description": "every replica is ready", "target_url": "https://d.example/history/5"}},
		{provider: "gitea", repo: "acme/infra", repoURL: "https://git.example.com/x/y", state: statePending,
			wantPath:   "/repos/acme/infra/statuses/" + sha,
			wantHeader: map[string]string{"Authorization": "token s3cret"},
			wantBody:   map[string]string{"state": "pending", "context": "driftless/web", "description": "every replica is ready", "target_url": "https://d.example/history/5"}},
		{provider: "bitbucket", repoURL: "https://bitbucket.org/acme/infra.git", state: stateFailure,
			wantPath:   "/repositories/acme/infra/commit/" + sha + "/statuses/build",
			wantHeader: map[string]string{"Authorization": "Bearer s3cret"},
			wantBody:   map[string]string{"state": "FAILED", "key": "driftless/web", "name": "driftless/web", "description": "every replica is ready", "url": "https://d.example/history/5"}},
	}
	for _, tc := range tests {
		t.Run(tc.provider, func(t *testing.T) {
			srv, got := hostServer(t, http.StatusCreated)
			c, err := newHostClient(config.CommitStatus{Provider: tc.provider, BaseURL: srv.URL + "/", Repo: tc.repo, Token: "s3cret"}, tc.repoURL, srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			err = c.post(context.Background(), commitStatus{SHA: sha, State: tc.state, Description: "every replica is ready", TargetURL: "https://d.example/history/5", Context: "driftless/web"})
			if err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.Method != http.MethodPost || r.Path != tc.wantPath {
				t.Errorf("request %s %s, want POST %s", r.Method, r.Path, tc.wantPath)
			}
			for k, v := range tc.wantHeader {
				if r.Header.Get(k) != v {
					t.Errorf("header %s = %q, want %q", k, r.Header.Get(k), v)
				}
			}
			if len(r.Body) != len(tc.wantBody) {
				t.Errorf("body %v, want %v", r.Body, tc.wantBody)
			}
			for k, v := range tc.wantBody {
				if r.Body[k] != v {
					t.Errorf("body %s = %q, want %q", k, r.Body[k], v)
				}
			}
		})
	}
}

func TestCommitStatusErrorSaysWhatTheHostAnswered(t *testing.T) {
	srv, _ := hostServer(t, http.StatusUnauthorized)
	c, err := newHostClient(config.CommitStatus{Provider: "github", BaseURL: srv.URL, Token: "bad"}, "https://github.com/acme/infra", srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	err = c.post(context.Background(), commitStatus{SHA: "0123456789ab", State: stateSuccess, Context: "driftless/web"})
	if err == nil || !strings.Contains(err.Error(), "github commit status for 0123456: 401 Unauthorized: {\"message\":\"Bad credentials\"}") {
		t.Fatalf("error = %v", err)
	}
}

func TestHostClientConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg     config.CommitStatus
		repoURL string
		want    string
	}{
		{config.CommitStatus{Provider: "github"}, "/srv/git/infra", "commitStatus.repo: could not be derived"},
		{config.CommitStatus{Provider: "github", Repo: "infra"}, "", `commitStatus.repo: "infra" is not owner/name`},
		{config.CommitStatus{Provider: "gitea", Repo: "a/b"}, "", "commitStatus.baseURL: required for gitea"},
	} {
		if _, err := newHostClient(tc.cfg, tc.repoURL, http.DefaultClient); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v %q: error %v, want %q", tc.cfg, tc.repoURL, err, tc.want)
		}
	}
	c, err := newHostClient(config.CommitStatus{Provider: "gitea"}, "ssh://git@git.example.com:2222/acme/infra.git", http.DefaultClient)
	if err != nil || c.base != "https://git.example.com/api/v1" || c.repo != "acme/infra" {
		t.Fatalf("gitea defaults from the repo URL: %+v, %v", c, err)
	}
}

func FuzzSplitRepoURL(f *testing.F) {
	for _, s := range []string{"https://github.com/a/b.git", "git@host:a/b", "ssh://git@h:22/a/b", "", "@:", "a@b", "/local/path"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		host, path := splitRepoURL(raw)
		if strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") {
			t.Fatalf("path %q of %q keeps a slash at an end", path, raw)
		}
		if host == "" && path != "" && !strings.Contains(raw, path) {
			t.Fatalf("path %q does not come from %q", path, raw)
		}
	})
}

func TestStatusTrackerPendingThenSuccessOrFailure(t *testing.T) {
	good, bad := rev("1111111aaaa", "good"), rev("2222222bbbb", "crash")
	states := func(ss []commitStatus) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.SHA[:7]+"="+s.State)
		}
		return strings.Join(out, " ")
	}
	tr := newStatusTracker()
	steps := []struct {
		r    loop.Report
		want string
	}{
		{loop.Report{App: "web", Applying: good}, "1111111=pending"},
		{loop.Report{App: "web", Applying: good}, ""},
		{loop.Report{App: "web", Next: appStatus(drift.HealthProgressing, good), Entries: []status.HistoryEntry{{ID: 3, Kind: status.KindSync, Result: "succeeded", Revision: good}}}, ""},
		{loop.Report{App: "web", Next: appStatus(drift.HealthHealthy, good)}, "1111111=success"},
		{loop.Report{App: "web", Next: appStatus(drift.HealthHealthy, good)}, ""},
		{loop.Report{App: "web", Applying: bad}, "2222222=pending"},
		{loop.Report{App: "web", Next: appStatus(drift.HealthDegraded, good), Entries: []status.HistoryEntry{{Kind: status.KindSync, Result: "failed", Revision: bad}}}, "2222222=failure"},
		{loop.Report{App: "web", Applying: bad}, "2222222=pending"},
		{loop.Report{App: "web", Entries: []status.HistoryEntry{{Kind: status.KindRefused, Revision: rev("3333333cc", "typo"), Summary: "refused 3333333: web.yaml:3:5: replicas: must be a number"}}}, "3333333=failure"},
	}
	for i, s := range steps {
		got := tr.statuses(s.r, "https://d.example")
		if states(got) != s.want {
			t.Errorf("step %d: statuses %q, want %q", i, states(got), s.want)
		}
		for _, c := range got {
			if c.Context != "driftless/web" {
				t.Errorf("context %q, want driftless/web", c.Context)
			}
		}
	}
}
