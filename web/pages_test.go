package web

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/driftless-dev/driftless/sync/status"
)

func (e *testEnv) page(path string, opts ...reqOpt) string {
	e.t.Helper()
	w := e.do(http.MethodGet, path, "", opts...)
	if w.Code != http.StatusOK {
		e.t.Fatalf("GET %s: status %d\n%s", path, w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		e.t.Fatalf("GET %s: content type %s", path, ct)
	}
	return w.Body.String()
}

func assertContains(t *testing.T, where, body string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(body, want) {
			t.Errorf("%s lacks %q", where, want)
		}
	}
}

func TestOverviewPage(t *testing.T) {
	env := newTestEnv(t, nil)
	body := env.page("/")
	assertContains(t, "overview", body,
		">shop</a>", ">blog</a>",
		">OutOfSync<", ">Degraded<", ">Synced<", ">Healthy<",
		"2/3",                                           // ready/desired replicas summed
		"0f1e2d3", "Add worker service", "Ada Lovelace", // running revision
		"branch head <code>a1b2c3d</code> not applied",
		"web-2 was removed outside Git; self-heal will recreate it",
		"pinned 99aa88b",
		// The pin banner names the app and offers Unpin.
		`is rolled back to <code>99aa88b</code>`, `action="/apps/blog/unpin"`, ">Unpin<",
	)
}

func TestAppPage(t *testing.T) {
	env := newTestEnv(t, nil)
	body := env.page("/apps/shop")
	assertContains(t, "app page", body,
		// services and containers
		"shop-web-1", "shop-web-3", "Exited (1) 2 seconds ago", "exit code 1", ">4<", "nginx:1.27",
		// drift, field level
		"shop-web-2", "removed outside Git", "env.LOG_LEVEL", ">debug<", ">info<",
		// refused revision with file:line
		"deploy/web.yaml:12:5: replicas: must be a number", "manifests are invalid",
		// conditions and flapping
		">validation<", "revision a1b2c3d refused", "env.LOG_LEVEL", "5×",
		// volumes, anonymous ones with their slot and target
		"shop-data", "volume <b>data</b>", "shop-web-1-anon-dc8f97c32d81", "anonymous volume of <b>web</b> slot 1", "<code>/var/lib/postgresql/data</code>",
		// actions
		">Sync now<", ">Suspend<", "Self-heal: on", `action="/apps/shop/pin"`, "Roll back here",
	)
	// The running revision is not offered as a rollback target.
	if strings.Contains(body, `name="revision" value="0f1e2d3c4b5a69788796a5b4c3d2e1f001234567"`) {
		t.Error("app page offers to roll back to the running revision")
	}
	w := env.do(http.MethodGet, "/apps/nope", "")
	if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "not configured") {
		t.Errorf("unknown app page: status %d", w.Code)
	}
}

// A revert links to the sync of the commit it reverts.
func TestRevertLinksToRevertedRevision(t *testing.T) {
	env := newTestEnv(t, nil)
	body := env.page("/history?limit=10")
	assertContains(t, "history", body, `href="/revisions/a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"`)

	w := env.do(http.MethodGet, "/revisions/"+strings.Repeat("0", 38)+"27", "")
	if w.Code != http.StatusFound || w.Header().Get("Location") != "/history/27" {
		t.Errorf("known revision: status %d, location %q", w.Code, w.Header().Get("Location"))
	}
	w = env.do(http.MethodGet, "/revisions/a1b2c3d", "")
	if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "kept history") {
		t.Errorf("revision not in history: status %d", w.Code)
	}
	w = env.do(http.MethodGet, "/revisions/not-a-sha", "")
	if w.Code != http.StatusBadRequest {
		t.Errorf("bad revision: status %d", w.Code)
	}
}

func TestHistoryPages(t *testing.T) {
	env := newTestEnv(t, nil)
	body := env.page("/history?limit=10")
	assertContains(t, "history", body, "entry 30", "revert of <code>a1b2c3d</code>", "older →", `href="/history?before=21&amp;limit=10"`)
	if strings.Contains(body, "entry 1<") {
		t.Error("first page shows the oldest entry")
	}

	body = env.page("/apps/shop/history?kind=refused")
	assertContains(t, "filtered history", body, "entry 29", "chip on")
	for _, other := range []string{"entry 27<", "entry 28<", `class="badge warn">repair<`} {
		if strings.Contains(body, other) {
			t.Errorf("refused-only shop history shows %q", other)
		}
	}

	w := env.do(http.MethodGet, "/history?kind=nonsense", "")
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "unknown history kind") {
		t.Errorf("bad kind filter: status %d", w.Code)
	}

	body = env.page("/history/30")
	assertContains(t, "entry page", body, "Applied plan", "blog-web-1", "Outcome per change", ">done<", "the engine warned: Weight discarded.", "Roll back to this revision",
		`class="badge info" href="/revisions/`) // a revert is a normal sync, not a warning

	// A failed sync is not a revision to roll back to.
	body = env.page("/history/24")
	assertContains(t, "failed sync entry", body, `class="badge bad">failed<`)
	if strings.Contains(body, "Roll back to this revision") {
		t.Error("a failed sync's entry offers to roll back to its revision")
	}
	// A refused entry says so once.
	if body = env.page("/history/29"); strings.Count(body, ">refused<") != 1 {
		t.Errorf("refused entry shows %d refused badges", strings.Count(body, ">refused<"))
	}
}

func TestLiveEventsStream(t *testing.T) {
	env := newTestEnv(t, nil)
	ts := httptest.NewServer(env.h)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/events", nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	// The handler subscribes before it sends the retry hint, so once the
	// hint arrives a published event must reach us.
	for lines.Scan() && !strings.HasPrefix(lines.Text(), "retry:") {
	}
	env.agent.publish(status.Event{App: "shop", Kind: "status"})
	var got []string
	for lines.Scan() {
		if lines.Text() == "" {
			if len(got) > 0 {
				break
			}
			continue
		}
		got = append(got, lines.Text())
	}
	if len(got) != 2 || got[0] != "event: status" || got[1] != `data: {"app":"shop","kind":"status"}` {
		t.Errorf("event = %q", got)
	}
	cancel()
	resp.Body.Close()
	ts.Close() // waits for the handler to return
	if n := env.agent.subscribers(); n != 0 {
		t.Errorf("%d subscriptions left after the client went away", n)
	}
}

func TestStaticAssetsAndUnknownPaths(t *testing.T) {
	env := newTestEnv(t, nil)
	for _, path := range []string{"/static/app.css", "/static/app.js", "/static/favicon.svg"} {
		if w := env.do(http.MethodGet, path, ""); w.Code != http.StatusOK || w.Body.Len() == 0 {
			t.Errorf("%s: status %d", path, w.Code)
		}
	}
	if w := env.do(http.MethodGet, "/api/v1/nothing", ""); w.Code != http.StatusNotFound || !strings.Contains(errorOf(t, w), "no such endpoint") {
		t.Errorf("unknown API path: %d %s", w.Code, w.Body)
	}
	if w := env.do(http.MethodGet, "/nothing", ""); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "Page not found") {
		t.Errorf("unknown page: %d", w.Code)
	}
	// Pages forbid inline script and framing.
	w := env.do(http.MethodGet, "/", "")
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP = %q", csp)
	}
}

func TestPanicBecomes500(t *testing.T) {
	env := newTestEnv(t, nil)
	env.srv.engine.GET("/boom", func(*gin.Context) { panic("kaboom") })
	w := env.do(http.MethodGet, "/boom", "")
	if w.Code != http.StatusInternalServerError || strings.Contains(w.Body.String(), "kaboom") {
		t.Errorf("panic: status %d, body %s", w.Code, w.Body)
	}
}

// An app on a named engine shows it on the overview and in the API; an
// app on the agent's own engine shows no badge.
func TestOverviewShowsNamedEngine(t *testing.T) {
	env := newTestEnv(t, nil)
	for i := range env.agent.apps {
		if env.agent.apps[i].Name == "wiki" {
			env.agent.apps[i].Engine = "edge"
		}
	}
	body := env.page("/")
	assertContains(t, "overview", body, `title="Runs on engine edge">engine edge</span>`)
	if n := strings.Count(body, `title="Runs on engine`); n != 1 {
		t.Errorf("%d engine badges, want 1 (only wiki is on a named engine)", n)
	}
	w := env.do(http.MethodGet, "/api/v1/apps", "")
	if !strings.Contains(w.Body.String(), `"engine":"edge"`) || strings.Count(w.Body.String(), `"engine"`) != 1 {
		t.Errorf("GET /api/v1/apps: %s\nwant wiki's engine, and no engine key on the others", w.Body.String())
	}
	// The engines line: each engine with its apps; edge unreachable once
	// wiki's last pass found it not answering.
	assertContains(t, "overview", body, `<a href="/?engine=edge"><strong>edge</strong></a> 1 app</p>`)
	if strings.Contains(body, ">unreachable</span>") {
		t.Error("an engine shown unreachable while its apps found it answering")
	}
	for i := range env.agent.apps {
		if env.agent.apps[i].Name == "wiki" {
			env.agent.apps[i].Errors = append(env.agent.apps[i].Errors, status.Condition{Kind: "engine", Message: "Docker engine unreachable at tcp://edge:2376"})
		}
	}
	assertContains(t, "overview", env.page("/"), `<strong>edge</strong></a> 1 app <span class="badge bad" title="1 of its apps found it not answering">unreachable</span>`)

	// An engine's page: its apps only, the engines line still whole.
	edge := env.page("/?engine=edge")
	assertContains(t, "edge's page", edge, `href="/apps/wiki"`)
	assertContains(t, "edge's page", edge, `showing the apps on <strong>edge</strong>`)
	assertContains(t, "edge's page", edge, `<a href="/?engine=local"><strong>local</strong></a>`)
	if strings.Contains(edge, `href="/apps/shop"`) {
		t.Error("edge's page lists shop, which runs on the local engine")
	}
	local := env.page("/?engine=local")
	if !strings.Contains(local, `href="/apps/shop"`) || strings.Contains(local, `href="/apps/wiki"`) {
		t.Error("the local engine's page does not list exactly the apps on the local engine")
	}
	assertContains(t, "wiki's page", env.page("/apps/wiki"), `<a class="badge info" href="/?engine=edge" title="Runs on engine edge">engine edge</a>`)
	if strings.Contains(env.page("/apps/shop"), "Runs on engine") {
		t.Error("shop's page names an engine; it runs on the local one")
	}
	if w := env.do(http.MethodGet, "/?engine=nope", ""); w.Code != http.StatusNotFound {
		t.Errorf("/?engine=nope: HTTP %d, want 404", w.Code)
	}
}
