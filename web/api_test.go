package web

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/status"
)

func decodeJSON[T any](t *testing.T, w *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("answer is not the expected JSON: %v\n%s", err, w.Body.String())
	}
	return v
}

func errorOf(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	return decodeJSON[struct {
		Error string `json:"error"`
	}](t, w).Error
}

func TestAPIAppsAndDetail(t *testing.T) {
	env := newTestEnv(t, nil)
	w := env.do(http.MethodGet, "/api/v1/apps", "")
	if w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	apps := decodeJSON[[]status.AppStatus](t, w)
	var names []string
	for _, a := range apps {
		names = append(names, a.Name)
	}
	if !slices.Contains(names, "shop") || !slices.Contains(names, "blog") {
		t.Errorf("apps = %v", names)
	}

	w = env.do(http.MethodGet, "/api/v1/apps/shop", "")
	st := decodeJSON[status.AppStatus](t, w)
	if w.Code != http.StatusOK || st.Name != "shop" || st.Sync != drift.SyncOutOfSync || st.Refused == nil {
		t.Errorf("detail: status %d, %+v", w.Code, st)
	}

	w = env.do(http.MethodGet, "/api/v1/apps/shop/services", "")
	svcs := decodeJSON[[]status.ServiceStatus](t, w)
	if len(svcs) != 1 || svcs[0].Name != "web" || len(svcs[0].Containers) != 2 {
		t.Errorf("services = %+v", svcs)
	}

	for _, path := range []string{"/api/v1/apps/nope", "/api/v1/apps/nope/services", "/api/v1/apps/nope/plan", "/api/v1/apps/nope/history"} {
		w = env.do(http.MethodGet, path, "")
		if w.Code != http.StatusNotFound || !strings.Contains(errorOf(t, w), `app "nope" is not configured; configured apps: shop, blog`) {
			t.Errorf("%s: status %d, body %s", path, w.Code, w.Body)
		}
	}
}

func TestAPIPlan(t *testing.T) {
	env := newTestEnv(t, nil)
	w := env.do(http.MethodGet, "/api/v1/apps/shop/plan", "")
	p := decodeJSON[drift.Plan](t, w)
	if w.Code != http.StatusOK || len(p.Changes) != 2 || p.Changes[1].Fields[1].After != "info" {
		t.Errorf("plan: status %d, %+v", w.Code, p)
	}

	w = env.do(http.MethodGet, "/api/v1/apps/shop/plan?format=text", "")
	text := w.Body.String()
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("text plan: status %d, type %s", w.Code, w.Header().Get("Content-Type"))
	}
	for _, want := range []string{"shop-web-2", "shop-web-1", "env.LOG_LEVEL", "debug", "info"} {
		if !strings.Contains(text, want) {
			t.Errorf("text plan lacks %q:\n%s", want, text)
		}
	}

	w = env.do(http.MethodGet, "/api/v1/apps/blog/plan?format=text", "")
	if !strings.Contains(w.Body.String(), "No changes") {
		t.Errorf("empty plan text = %q", w.Body.String())
	}

	w = env.do(http.MethodGet, "/api/v1/apps/shop/plan?format=yaml", "")
	if w.Code != http.StatusBadRequest || !strings.Contains(errorOf(t, w), "json or text") {
		t.Errorf("bad format: status %d, %s", w.Code, w.Body)
	}

	w = env.do(http.MethodGet, "/api/v1/apps/wiki/plan", "")
	if w.Code != http.StatusNotFound || !strings.Contains(errorOf(t, w), "no plan yet") {
		t.Errorf("unobserved app: status %d, %s", w.Code, w.Body)
	}
}

func TestAPIHistoryPagination(t *testing.T) {
	env := newTestEnv(t, nil)
	var ids []uint64
	next := uint64(0)
	pages := 0
	for {
		path := "/api/v1/apps/shop/history?limit=4"
		if next != 0 {
			path += "&before=" + jsonNumber(next)
		}
		w := env.do(http.MethodGet, path, "")
		if w.Code != http.StatusOK {
			t.Fatalf("%s: status %d %s", path, w.Code, w.Body)
		}
		page := decodeJSON[HistoryPage](t, w)
		pages++
		for _, e := range page.Entries {
			if e.App != "shop" {
				t.Errorf("entry %d of app %s in shop's history", e.ID, e.App)
			}
			ids = append(ids, e.ID)
		}
		if page.Next == 0 {
			break
		}
		next = page.Next
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
	}
	// shop has the 15 odd ids; 4 per page is 4 pages and no empty page.
	if len(ids) != 15 || pages != 4 {
		t.Errorf("got %d entries in %d pages, want 15 in 4", len(ids), pages)
	}
	if !slices.IsSortedFunc(ids, func(a, b uint64) int { return int(b) - int(a) }) || slices.Compact(slices.Clone(ids))[14] != ids[14] {
		t.Errorf("ids not newest first or duplicated: %v", ids)
	}
}

func jsonNumber(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestAPIHistoryFilterAndErrors(t *testing.T) {
	env := newTestEnv(t, nil)
	w := env.do(http.MethodGet, "/api/v1/history?kind=refused,repair&limit=500", "")
	page := decodeJSON[HistoryPage](t, w)
	if len(page.Entries) != 20 || page.Next != 0 {
		t.Errorf("refused+repair: %d entries, next %d; want 20, 0", len(page.Entries), page.Next)
	}
	apps := map[string]bool{}
	for _, e := range page.Entries {
		apps[e.App] = true
		if e.Kind != status.KindRefused && e.Kind != status.KindRepair {
			t.Errorf("entry %d has kind %s", e.ID, e.Kind)
		}
	}
	if len(apps) != 2 {
		t.Errorf("all-apps history covers %v", apps)
	}

	w = env.do(http.MethodGet, "/api/v1/history/30", "")
	e := decodeJSON[status.HistoryEntry](t, w)
	if w.Code != http.StatusOK || e.Revision == nil || !e.Revision.Revert {
		t.Errorf("entry 30: status %d, %+v", w.Code, e)
	}

	for path, want := range map[string]string{
		"/api/v1/history?kind=deploy":    "unknown history kind \"deploy\"; kinds are sync, repair",
		"/api/v1/history?limit=0":        "limit must be an integer from 1 to 500",
		"/api/v1/history?limit=many":     "limit must be an integer",
		"/api/v1/history?before=-3":      "before must be a history entry id",
		"/api/v1/history/abc":            "history entry id must be a positive integer",
		"/api/v1/apps/shop/history?kind": "",
	} {
		w := env.do(http.MethodGet, path, "")
		if want == "" {
			if w.Code != http.StatusOK {
				t.Errorf("%s: status %d", path, w.Code)
			}
			continue
		}
		if w.Code != http.StatusBadRequest || !strings.Contains(errorOf(t, w), want) {
			t.Errorf("%s: status %d, %s; want 400 %q", path, w.Code, w.Body, want)
		}
	}
	w = env.do(http.MethodGet, "/api/v1/history/999", "")
	if w.Code != http.StatusNotFound {
		t.Errorf("missing entry: status %d", w.Code)
	}
}

func TestAPIActions(t *testing.T) {
	env := newTestEnv(t, nil)
	type call struct{ path, body string }
	for _, c := range []struct {
		call
		code int
		rec  string
	}{
		{call{"/api/v1/apps/shop/suspend", ""}, 200, "suspend shop true"},
		{call{"/api/v1/apps/shop/resume", ""}, 200, "suspend shop false"},
		{call{"/api/v1/apps/shop/selfheal", `{"enabled": false}`}, 200, "selfheal shop false"},
		{call{"/api/v1/apps/shop/selfheal", `{"enabled": true}`}, 200, "selfheal shop true"},
		{call{"/api/v1/apps/shop/pin", `{"revision": "0f1e2d3"}`}, 200, "pin shop 0f1e2d3"},
		{call{"/api/v1/apps/blog/unpin", ""}, 200, "unpin blog"},
	} {
		w := env.do(http.MethodPost, c.path, c.body)
		if w.Code != c.code {
			t.Errorf("%s: status %d, %s", c.path, w.Code, w.Body)
		}
		if got := env.agent.recorded(); len(got) == 0 || got[len(got)-1] != c.rec {
			t.Errorf("%s: agent calls %v, want last %q", c.path, got, c.rec)
		}
	}

	w := env.do(http.MethodPost, "/api/v1/apps/shop/sync", "")
	if w.Code != http.StatusAccepted || !slices.Equal(env.agent.enqueuedCalls(), []string{"shop/manual"}) { // a person's sync: applies drift even with self-heal off
		t.Errorf("sync: status %d, enqueued %v", w.Code, env.agent.enqueuedCalls())
	}

	before := len(env.agent.recorded())
	for _, c := range []struct{ path, body, want string }{
		{"/api/v1/apps/shop/selfheal", "", `{"enabled": true}`},
		{"/api/v1/apps/shop/selfheal", `{"enabled": "yes"}`, "not valid JSON"},
		{"/api/v1/apps/shop/selfheal", `{"on": true}`, `unknown field "on"`},
		{"/api/v1/apps/shop/pin", `{}`, `{"revision": "<commit sha>"}`},
		{"/api/v1/apps/shop/pin", `{"revision": "main; rm -rf /"}`, "must be a commit SHA"},
		{"/api/v1/apps/shop/pin", `{"revision":`, "not valid JSON"},
	} {
		w := env.do(http.MethodPost, c.path, c.body)
		if w.Code != http.StatusBadRequest || !strings.Contains(errorOf(t, w), c.want) {
			t.Errorf("%s %s: status %d, %s; want 400 %q", c.path, c.body, w.Code, w.Body, c.want)
		}
	}
	if got := env.agent.recorded(); len(got) != before {
		t.Errorf("bad requests reached the agent: %v", got[before:])
	}

	w = env.do(http.MethodPost, "/api/v1/apps/nope/sync", "")
	if w.Code != http.StatusNotFound {
		t.Errorf("unknown app sync: status %d", w.Code)
	}

	env.agent.pinErr = errors.New("revision 0f1e2d3 is not in the history of main")
	w = env.do(http.MethodPost, "/api/v1/apps/shop/pin", `{"revision": "0f1e2d3"}`)
	if w.Code != http.StatusConflict || !strings.Contains(errorOf(t, w), "not in the history of main") {
		t.Errorf("refused pin: status %d, %s", w.Code, w.Body)
	}
}

func TestHealthAndReady(t *testing.T) {
	env := newTestEnv(t, nil)
	if w := env.do(http.MethodGet, "/healthz", "", from("10.0.0.9:1")); w.Code != 200 || w.Body.String() != "ok" {
		t.Errorf("healthz: %d %q", w.Code, w.Body)
	}
	if w := env.do(http.MethodGet, "/readyz", ""); w.Code != 200 {
		t.Errorf("readyz: %d", w.Code)
	}
	env.agent.notReady = errors.New("docker engine unreachable: dial unix /var/run/docker.sock: connect: permission denied")
	if w := env.do(http.MethodGet, "/readyz", ""); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "permission denied") {
		t.Errorf("readyz while not ready: %d %q", w.Code, w.Body)
	}

	// One engine at a time: its own answer, whatever the agent's.
	env.agent.engines = map[string]error{"edge": nil, "cabin": errors.New("docker engine unreachable: dial tcp 10.0.0.7:2376: i/o timeout")}
	if w := env.do(http.MethodGet, "/readyz?engine=edge", ""); w.Code != 200 || w.Body.String() != "ready" {
		t.Errorf("readyz?engine=edge: %d %q, want ready while the agent is not", w.Code, w.Body)
	}
	if w := env.do(http.MethodGet, "/readyz?engine=cabin", ""); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "i/o timeout") {
		t.Errorf("readyz?engine=cabin: %d %q, want 503 with the engine's error", w.Code, w.Body)
	}
	if w := env.do(http.MethodGet, "/readyz?engine=nope", ""); w.Code != http.StatusNotFound {
		t.Errorf("readyz?engine=nope: %d %q, want 404", w.Code, w.Body)
	}
}

func TestClient(t *testing.T) {
	env := newTestEnv(t, nil)
	ts := httptest.NewServer(env.h)
	defer ts.Close()
	c := &Client{BaseURL: ts.URL, HTTP: ts.Client()}
	ctx := context.Background()

	apps, err := c.Apps(ctx)
	if err != nil || len(apps) != 5 {
		t.Fatalf("Apps: %v, %d apps", err, len(apps))
	}
	if st, err := c.App(ctx, "shop"); err != nil || st.Health != drift.HealthDegraded {
		t.Errorf("App: %v, %+v", err, st)
	}
	page, err := c.History(ctx, "shop", []string{"sync"}, 0, 2)
	if err != nil || len(page.Entries) != 2 || page.Next == 0 || page.Entries[0].Kind != status.KindSync {
		t.Errorf("History: %v, %+v", err, page)
	}
	if text, err := c.PlanText(ctx, "shop"); err != nil || !strings.Contains(text, "shop-web-2") {
		t.Errorf("PlanText: %v, %q", err, text)
	}
	if err := c.Sync(ctx, "shop"); err != nil {
		t.Errorf("Sync: %v", err)
	}
	if err := c.SetSelfHeal(ctx, "shop", false); err != nil {
		t.Errorf("SetSelfHeal: %v", err)
	}
	if err := c.Pin(ctx, "shop", "0f1e2d3"); err != nil {
		t.Errorf("Pin: %v", err)
	}
	for _, f := range []func() error{
		func() error { return c.Suspend(ctx, "shop") }, func() error { return c.Resume(ctx, "shop") },
		func() error { return c.Unpin(ctx, "blog") },
	} {
		if err := f(); err != nil {
			t.Error(err)
		}
	}
	if got := env.agent.recorded(); !slices.Equal(got, []string{"selfheal shop false", "pin shop 0f1e2d3", "suspend shop true", "suspend shop false", "unpin blog"}) {
		t.Errorf("agent calls %v", got)
	}

	err = c.Sync(ctx, "nope")
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || !strings.Contains(err.Error(), `app "nope" is not configured`) {
		t.Errorf("Sync of unknown app: %v", err)
	}
	err = c.Pin(ctx, "shop", "HEAD~1")
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(err.Error(), "must be a commit SHA") {
		t.Errorf("Pin with bad revision: %v", err)
	}
}

func TestListenAndServe(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	env := newTestEnv(t, func(o *Options) { o.Listen = busy.Addr().String() })
	if err := env.srv.ListenAndServe(context.Background()); err == nil || !strings.Contains(err.Error(), "--listen") {
		t.Errorf("listening on a busy port: %v", err)
	}

	env = newTestEnv(t, func(o *Options) { o.Listen = "127.0.0.1:0" })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := env.srv.ListenAndServe(ctx); err != nil {
		t.Errorf("shutdown on a cancelled context: %v", err)
	}
}
