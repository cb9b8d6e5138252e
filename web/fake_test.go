package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/loop"
	"github.com/driftless-dev/driftless/sync/status"
)

// fakeAgent implements Agent in memory and records what web asked of it.
type fakeAgent struct {
	mu       sync.Mutex
	apps     []status.AppStatus
	history  []status.HistoryEntry // newest first
	enqueued []string              // "app/trigger"
	calls    []string
	notReady error
	engines  map[string]error // EngineReady answers, by engine name
	subs     []chan status.Event
	pinErr   error
	series   map[string][]status.ServiceSeries // by app
}

var errUnknownApp = errors.New("unknown app")

func (f *fakeAgent) Apps() []status.AppStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.apps)
}

func (f *fakeAgent) App(name string) (status.AppStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.apps {
		if a.Name == name {
			return a, true
		}
	}
	return status.AppStatus{}, false
}

func (f *fakeAgent) History(q status.HistoryQuery) ([]status.HistoryEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	var out []status.HistoryEntry
	for _, e := range f.history {
		if q.App != "" && e.App != q.App {
			continue
		}
		if len(q.Kinds) > 0 && !slices.Contains(q.Kinds, e.Kind) {
			continue
		}
		if q.Before != 0 && e.ID >= q.Before {
			continue
		}
		out = append(out, e)
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

func (f *fakeAgent) Series(app string, since time.Time) []status.ServiceSeries {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.series[app])
}

func (f *fakeAgent) Entry(id uint64) (status.HistoryEntry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.history {
		if e.ID == id {
			return e, true
		}
	}
	return status.HistoryEntry{}, false
}

func (f *fakeAgent) known(app string) error {
	if _, ok := f.App(app); !ok {
		return errUnknownApp
	}
	return nil
}

func (f *fakeAgent) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeAgent) Enqueue(app, trigger string) error {
	if err := f.known(app); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enqueued = append(f.enqueued, app+"/"+trigger)
	return nil
}

func (f *fakeAgent) SetSuspended(app string, suspended bool) error {
	if err := f.known(app); err != nil {
		return err
	}
	f.record(fmt.Sprintf("suspend %s %v", app, suspended))
	return nil
}

func (f *fakeAgent) SetSelfHeal(app string, on bool) error {
	if err := f.known(app); err != nil {
		return err
	}
	f.record(fmt.Sprintf("selfheal %s %v", app, on))
	return nil
}

func (f *fakeAgent) Pin(_ context.Context, app, sha string) error {
	if err := f.known(app); err != nil {
		return err
	}
	if f.pinErr != nil {
		return f.pinErr
	}
	f.record("pin " + app + " " + sha)
	return nil
}

func (f *fakeAgent) Unpin(app string) error {
	if err := f.known(app); err != nil {
		return err
	}
	f.record("unpin " + app)
	return nil
}

func (f *fakeAgent) Unquarantine(app string) error {
	if err := f.known(app); err != nil {
		return err
	}
	f.record("unquarantine " + app)
	return nil
}

func (f *fakeAgent) Subscribe() (<-chan status.Event, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan status.Event, 16)
	f.subs = append(f.subs, ch)
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.subs = slices.DeleteFunc(f.subs, func(c chan status.Event) bool { return c == ch })
	}
}

func (f *fakeAgent) publish(ev status.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs {
		ch <- ev
	}
}

func (f *fakeAgent) subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

func (f *fakeAgent) Ready() error { return f.notReady }

func (f *fakeAgent) EngineReady(name string) error {
	if err, ok := f.engines[name]; ok {
		return err
	}
	return fmt.Errorf("%w %q", loop.ErrUnknownEngine, name)
}

func (f *fakeAgent) enqueuedCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.enqueued)
}

func (f *fakeAgent) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Secrets used by the fixtures; tests assert they never appear in output.
const (
	testAPIToken      = "tok-3c1f9b2a7e"
	testGlobalSecret  = "global-hook-secret-91af"
	testShopSecret    = "shop-hook-secret-5d2e"
	testSecretEnvHash = "sha256:4be1"
)

var fixedTime = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func rev(sha, subject string) *gitsource.Revision {
	return &gitsource.Revision{SHA: sha, Author: "Ada Lovelace", Email: "ada@example.com", Time: fixedTime, Subject: subject}
}

// newFakeAgent returns two apps: shop (out of sync, with drift, a refused
// revision and a flapping field) and blog (synced, pinned).
func newFakeAgent() *fakeAgent {
	shop := status.AppStatus{
		Name:   "shop",
		Source: status.SourceStatus{URL: "https://github.com/acme/shop.git", Ref: "main", Path: "deploy", LastFetch: fixedTime},
		Sync:   drift.SyncOutOfSync, Health: drift.HealthDegraded,
		Message:  "web-2 was removed outside Git; self-heal will recreate it",
		SelfHeal: true,
		Fetched:  rev("a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", "Bump web to nginx 1.27"),
		Applied:  rev("0f1e2d3c4b5a69788796a5b4c3d2e1f001234567", "Add worker service"),
		Services: []status.ServiceStatus{{
			Name: "web", Image: "nginx:1.27", Desired: 3, Running: 2, Ready: 2, Health: drift.HealthDegraded,
			Containers: []status.ContainerStatus{
				{Name: "shop-web-1", ID: "c1", Slot: 1, State: "running", Status: "Up 3 minutes", Ready: true, Image: "nginx:1.27", Revision: "0f1e2d3c", Created: fixedTime},
				{Name: "shop-web-3", ID: "c3", Slot: 3, State: "exited", Status: "Exited (1) 2 seconds ago", ReadyReason: "exit code 1", RestartCount: 4, Image: "nginx:1.27", Revision: "0f1e2d3c", Created: fixedTime},
			},
		}},
		Volumes: []status.VolumeStatus{
			{Name: "shop-data", Driver: "local", Resource: "data"},
			{Name: "shop-web-1-anon-dc8f97c32d81", Driver: "local", Service: "web", Slot: 1, Target: "/var/lib/postgresql/data"},
		},
		Drift: &drift.Plan{App: "shop", Revision: "0f1e2d3c4b5a69788796a5b4c3d2e1f001234567", Changes: []drift.Change{
			{Action: drift.ActionCreate, Kind: drift.KindContainer, Name: "shop-web-2", Service: "web", Slot: 2, Cause: drift.CauseDrift, Reason: "removed outside Git"},
			{Action: drift.ActionReplace, Kind: drift.KindContainer, Name: "shop-web-1", Service: "web", Slot: 1, Cause: drift.CauseDrift, Reason: "changed outside Git",
				Fields: []drift.FieldChange{{Path: "env.DB_PASSWORD", Before: testSecretEnvHash, After: "(secret)"}, {Path: "env.LOG_LEVEL", Before: "debug", After: "info"}}},
		}},
		Errors:   []status.Condition{{Kind: "validation", Message: "revision a1b2c3d refused", Since: fixedTime}},
		Refused:  &status.Refusal{Revision: *rev("a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", "Bump web to nginx 1.27"), Reason: "manifests are invalid", Errors: []string{"deploy/web.yaml:12:5: replicas: must be a number"}},
		Flapping: []status.Flap{{Container: "shop-web-1", Field: "env.LOG_LEVEL", Count: 5, Since: fixedTime}},
		LastPass: fixedTime, LastSuccess: fixedTime,
	}
	blog := status.AppStatus{
		Name:   "blog",
		Source: status.SourceStatus{URL: "https://gitlab.com/acme/blog.git", Ref: "release"},
		Sync:   drift.SyncSynced, Health: drift.HealthHealthy,
		Pinned:  rev("99aa88bb77cc66dd55ee44ff3300112233445566", "Known good"),
		Applied: rev("99aa88bb77cc66dd55ee44ff3300112233445566", "Known good"),
		Drift:   &drift.Plan{App: "blog", Revision: "99aa88bb77cc66dd55ee44ff3300112233445566"},
	}
	f := &fakeAgent{apps: []status.AppStatus{shop, blog}}
	// 30 entries, newest first, alternating kinds.
	kinds := []status.HistoryKind{status.KindSync, status.KindRepair, status.KindRefused}
	for id := uint64(30); id >= 1; id-- {
		e := status.HistoryEntry{ID: id, Time: fixedTime.Add(time.Duration(id) * time.Minute), App: "shop", Kind: kinds[id%3], Trigger: "poll",
			Summary: fmt.Sprintf("entry %d", id), Result: "succeeded"}
		if id%2 == 0 {
			e.App = "blog"
		}
		if e.Kind == status.KindSync {
			e.Revision = rev(fmt.Sprintf("%040d", id), fmt.Sprintf("commit %d", id))
			e.Plan = &drift.Plan{App: e.App, Revision: e.Revision.SHA, Changes: []drift.Change{{Action: drift.ActionCreate, Kind: drift.KindContainer, Name: e.App + "-web-1", Cause: drift.CauseGit, Reason: "new service"}}}
			e.Outcomes = []drift.Outcome{{Change: e.Plan.Changes[0], Result: "done", Duration: time.Second}}
			if id == 30 {
				e.Outcomes[0].Warnings = []string{"Weight discarded."}
			}
		}
		switch {
		case e.Kind == status.KindRefused:
			e.Result = "refused"
		case id == 24:
			e.Result = "failed"
		}
		if id == 30 {
			e.Revision = &gitsource.Revision{SHA: "7777777777777777777777777777777777777777", Subject: `Revert "Bump web"`, Revert: true, Reverts: "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", Time: fixedTime}
		}
		f.history = append(f.history, e)
	}
	return f
}

func testSources() []AppSource {
	return []AppSource{
		{Name: "shop", Repo: "https://github.com/acme/shop.git", Branch: "main", WebhookSecret: testShopSecret},
		{Name: "shop-staging", Repo: "git@github.com:acme/shop.git", Branch: "staging"},
		{Name: "blog", Repo: "https://gitlab.com/acme/blog.git", Branch: "release"},
		{Name: "wiki", Repo: "https://gitea.example.com/acme/wiki.git", Branch: "main"},
		{Name: "docs", Repo: "https://bitbucket.org/acme/docs.git", Branch: "main"},
	}
}

type testEnv struct {
	t     *testing.T
	agent *fakeAgent
	srv   *Server
	h     http.Handler
	reg   *prometheus.Registry
}

func newTestEnv(t *testing.T, mod func(*Options)) *testEnv {
	t.Helper()
	agent := newFakeAgent()
	// Make the webhook-only apps known to the agent too.
	for _, n := range []string{"shop-staging", "wiki", "docs"} {
		agent.apps = append(agent.apps, status.AppStatus{Name: n, Sync: drift.SyncSynced, Health: drift.HealthHealthy})
	}
	reg := prometheus.NewRegistry()
	opts := Options{Agent: agent, WebhookSecret: testGlobalSecret, Sources: testSources, Registry: reg, MaxBodyBytes: 64 << 10}
	if mod != nil {
		mod(&opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{t: t, agent: agent, srv: s, h: s.Handler(), reg: reg}
}

// req builds a request from loopback (Host 127.0.0.1) unless remote is set.
type reqOpt func(*http.Request)

func from(addr string) reqOpt { return func(r *http.Request) { r.RemoteAddr = addr } }
func header(k, v string) reqOpt {
	return func(r *http.Request) {
		if k == "Host" {
			r.Host = v
			return
		}
		r.Header.Set(k, v)
	}
}
func bearer(tok string) reqOpt { return header("Authorization", "Bearer "+tok) }

func (e *testEnv) do(method, target, body string, opts ...reqOpt) *httptest.ResponseRecorder {
	e.t.Helper()
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.RemoteAddr = "127.0.0.1:50000"
	r.Host = "127.0.0.1:8080"
	if body != "" && method == http.MethodPost && r.Header.Get("Content-Type") == "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(r)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}
