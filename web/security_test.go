package web

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

const remote = "203.0.113.7:41000"

func TestWriteNeedsTokenOrLoopback(t *testing.T) {
	env := newTestEnv(t, nil) // no API token
	w := env.do(http.MethodPost, "/api/v1/apps/shop/sync", "", from(remote), header("Host", "driftless.example.com"))
	if w.Code != http.StatusForbidden || !strings.Contains(errorOf(t, w), "--api-token") {
		t.Errorf("remote write without token: status %d, %s", w.Code, w.Body)
	}
	// A forwarded header does not make a remote client local.
	w = env.do(http.MethodPost, "/api/v1/apps/shop/sync", "", from(remote), header("X-Forwarded-For", "127.0.0.1"))
	if w.Code != http.StatusForbidden {
		t.Errorf("remote write claiming X-Forwarded-For loopback: status %d", w.Code)
	}
	// DNS rebinding: loopback connection, foreign Host.
	w = env.do(http.MethodPost, "/api/v1/apps/shop/sync", "", header("Host", "evil.example:8080"))
	if w.Code != http.StatusForbidden {
		t.Errorf("loopback write with foreign Host: status %d", w.Code)
	}
	if got := env.agent.enqueuedCalls(); len(got) != 0 {
		t.Fatalf("refused writes reached the agent: %v", got)
	}
	// Loopback with a loopback Host is trusted.
	for _, host := range []string{"127.0.0.1:8080", "localhost:8080", "[::1]:8080"} {
		if w := env.do(http.MethodPost, "/api/v1/apps/shop/sync", "", header("Host", host)); w.Code != http.StatusAccepted {
			t.Errorf("loopback write with Host %s: status %d %s", host, w.Code, w.Body)
		}
	}

	env = newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken })
	for name, opts := range map[string][]reqOpt{
		"remote, no token":   {from(remote)},
		"remote, bad token":  {from(remote), bearer("guess")},
		"loopback, no token": nil,
		"token as cookie":    {from(remote), header("Cookie", sessionCookie+"="+testAPIToken)},
	} {
		w := env.do(http.MethodPost, "/api/v1/apps/shop/sync", "", opts...)
		if w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: status %d, want 401 with WWW-Authenticate", name, w.Code)
		}
	}
	w = env.do(http.MethodPost, "/api/v1/apps/shop/sync", "", from(remote), header("Host", "driftless.example.com"), bearer(testAPIToken))
	if w.Code != http.StatusAccepted {
		t.Errorf("remote write with token: status %d %s", w.Code, w.Body)
	}
	if got := env.agent.enqueuedCalls(); len(got) != 1 {
		t.Errorf("Enqueue calls %v, want exactly the authorised one", got)
	}
}

func TestAPIWriteRefusesCrossSiteBrowsers(t *testing.T) {
	env := newTestEnv(t, nil)
	for name, opts := range map[string][]reqOpt{
		"foreign Origin":      {header("Origin", "https://evil.example")},
		"cross-site fetch":    {header("Sec-Fetch-Site", "cross-site")},
		"same-site subdomain": {header("Sec-Fetch-Site", "same-site")},
	} {
		w := env.do(http.MethodPost, "/api/v1/apps/shop/sync", "", opts...)
		if w.Code != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", name, w.Code)
		}
	}
	if w := env.do(http.MethodPost, "/api/v1/apps/shop/sync", "", header("Origin", "http://127.0.0.1:8080")); w.Code != http.StatusAccepted {
		t.Errorf("same-origin fetch: status %d", w.Code)
	}
}

func TestReadAccess(t *testing.T) {
	env := newTestEnv(t, nil)
	for _, path := range []string{"/", "/api/v1/apps", "/metrics", "/events"} {
		if w := env.do(http.MethodGet, path, "", from(remote)); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "--public-read") {
			t.Errorf("remote read of %s: status %d, want 403 naming --public-read", path, w.Code)
		}
	}
	public := newTestEnv(t, func(o *Options) { o.PublicRead = true })
	if w := public.do(http.MethodGet, "/api/v1/apps", "", from(remote)); w.Code != http.StatusOK {
		t.Errorf("public read: status %d", w.Code)
	}
	// Public read does not open writes.
	if w := public.do(http.MethodPost, "/api/v1/apps/shop/sync", "", from(remote)); w.Code != http.StatusForbidden {
		t.Errorf("public read, remote write: status %d", w.Code)
	}
	// Pages shown to read-only visitors offer no actions.
	if w := public.do(http.MethodGet, "/apps/shop", "", from(remote)); strings.Contains(w.Body.String(), "Sync now") {
		t.Error("read-only visitor sees the Sync now button")
	}

	tok := newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken })
	if w := tok.do(http.MethodGet, "/api/v1/apps", "", from(remote), bearer(testAPIToken)); w.Code != http.StatusOK {
		t.Errorf("remote read with token: status %d", w.Code)
	}
	if w := tok.do(http.MethodGet, "/api/v1/apps", "", from(remote)); w.Code != http.StatusUnauthorized {
		t.Errorf("remote API read without token: status %d", w.Code)
	}
	// The login page, open to all, shows no app state.
	if w := tok.do(http.MethodGet, "/login", "", from(remote)); strings.Contains(w.Body.String(), "blog") {
		t.Error("login page shown to an anonymous remote visitor names a pinned app")
	}
	w := tok.do(http.MethodGet, "/apps/shop?x=1", "", from(remote))
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/login?next="+url.QueryEscape("/apps/shop?x=1") {
		t.Errorf("remote page without login: status %d, Location %q", w.Code, w.Header().Get("Location"))
	}
}

// formPost posts a browser form the way our pages do.
func (e *testEnv) formPost(path string, form url.Values, opts ...reqOpt) *httptest.ResponseRecorder {
	opts = append([]reqOpt{header("Content-Type", "application/x-www-form-urlencoded")}, opts...)
	return e.do(http.MethodPost, path, form.Encode(), opts...)
}

func csrfFrom(t *testing.T, page string) string {
	t.Helper()
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("page has no CSRF field")
	}
	return m[1]
}

func TestFormsNeedSameOriginAndCSRFToken(t *testing.T) {
	env := newTestEnv(t, nil)
	token := csrfFrom(t, env.do(http.MethodGet, "/apps/shop", "").Body.String())
	sameOrigin := header("Sec-Fetch-Site", "same-origin")

	for name, c := range map[string]struct {
		form url.Values
		opts []reqOpt
	}{
		"no CSRF token":    {url.Values{}, []reqOpt{sameOrigin}},
		"wrong CSRF token": {url.Values{"csrf": {strings.Repeat("0", 64)}}, []reqOpt{sameOrigin}},
		"cross-site":       {url.Values{"csrf": {token}}, []reqOpt{header("Sec-Fetch-Site", "cross-site")}},
		"foreign Origin":   {url.Values{"csrf": {token}}, []reqOpt{header("Origin", "https://evil.example")}},
		"no origin at all": {url.Values{"csrf": {token}}, nil},
		"foreign Referer":  {url.Values{"csrf": {token}}, []reqOpt{header("Referer", "https://evil.example/x")}},
	} {
		w := env.formPost("/apps/shop/sync", c.form, c.opts...)
		if w.Code != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", name, w.Code)
		}
	}
	if got := env.agent.enqueuedCalls(); len(got) != 0 {
		t.Fatalf("forged forms reached the agent: %v", got)
	}

	for name, origin := range map[string]reqOpt{
		"Sec-Fetch-Site": sameOrigin,
		"Origin":         header("Origin", "http://127.0.0.1:8080"),
		"Referer":        header("Referer", "http://127.0.0.1:8080/apps/shop"),
	} {
		w := env.formPost("/apps/shop/sync", url.Values{"csrf": {token}}, origin)
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/apps/shop" {
			t.Errorf("same-origin form by %s: status %d, Location %q", name, w.Code, w.Header().Get("Location"))
		}
		// The next page says what happened, once.
		flash := header("Cookie", strings.Split(w.Header().Get("Set-Cookie"), ";")[0])
		page := env.page("/apps/shop", flash)
		if !strings.Contains(page, "sync of shop queued") {
			t.Errorf("page after the form post does not confirm the action")
		}
		// The page swaps live-root for a fresh copy on every live update
		// (the fresh copy has no flash): the message must stand outside it.
		if msg, root := strings.Index(page, "sync of shop queued"), strings.Index(page, `id="live-root"`); root < 0 || msg > root {
			t.Errorf("the confirmation stands inside live-root (at %d, live-root at %d): a live update would drop it", msg, root)
		}
	}
	w := env.formPost("/apps/shop/selfheal", url.Values{"csrf": {token}, "enabled": {"false"}, "next": {"//evil.example/"}}, sameOrigin)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/apps/shop" {
		t.Errorf("form with off-site next: Location %q", w.Header().Get("Location"))
	}
	if got := env.agent.recorded(); len(got) != 1 || got[0] != "selfheal shop false" {
		t.Errorf("agent calls %v", got)
	}
}

func TestLoginCookieAuthorisesForms(t *testing.T) {
	env := newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken })
	remoteHost := []reqOpt{from(remote), header("Host", "ops.example.com"), header("Sec-Fetch-Site", "same-origin")}
	login := env.do(http.MethodGet, "/login", "", remoteHost...)
	token := csrfFrom(t, login.Body.String())

	w := env.formPost("/login", url.Values{"csrf": {token}, "token": {"wrong"}}, remoteHost...)
	if w.Code != http.StatusUnauthorized || w.Header().Get("Set-Cookie") != "" {
		t.Errorf("wrong token: status %d, cookie %q", w.Code, w.Header().Get("Set-Cookie"))
	}

	w = env.formPost("/login", url.Values{"csrf": {token}, "token": {testAPIToken}, "next": {"/apps/shop"}}, remoteHost...)
	cookie := w.Header().Get("Set-Cookie")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/apps/shop" {
		t.Fatalf("login: status %d, Location %q", w.Code, w.Header().Get("Location"))
	}
	for _, want := range []string{"HttpOnly", "SameSite=Strict", sessionCookie + "="} {
		if !strings.Contains(cookie, want) {
			t.Errorf("session cookie %q lacks %s", cookie, want)
		}
	}
	if strings.Contains(cookie, testAPIToken) {
		t.Error("session cookie carries the API token itself")
	}
	session := header("Cookie", strings.Split(cookie, ";")[0])

	page := env.do(http.MethodGet, "/apps/shop", "", append(remoteHost, session)...)
	if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), "Sync now") {
		t.Fatalf("logged-in page: status %d", page.Code)
	}
	w = env.formPost("/apps/shop/sync", url.Values{"csrf": {csrfFrom(t, page.Body.String())}}, append(remoteHost, session)...)
	if w.Code != http.StatusSeeOther {
		t.Errorf("logged-in form post: status %d %s", w.Code, w.Body)
	}
	// The pre-login CSRF token is bound to no session and no longer works.
	w = env.formPost("/apps/shop/sync", url.Values{"csrf": {token}}, append(remoteHost, session)...)
	if w.Code != http.StatusForbidden {
		t.Errorf("stale CSRF token: status %d", w.Code)
	}
	if got := env.agent.enqueuedCalls(); len(got) != 1 {
		t.Errorf("Enqueue calls %v", got)
	}
}

// No page, API answer or log line carries a secret.
func TestSecretsNeverShown(t *testing.T) {
	var logs bytes.Buffer
	env := newTestEnv(t, func(o *Options) {
		o.APIToken = testAPIToken
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	env.agent.apps[0].Source.URL = "https://deploy:" + testAPIToken + "@github.com/acme/shop.git"
	auth := bearer(testAPIToken)
	var out strings.Builder
	for _, path := range []string{"/", "/apps/shop", "/apps/blog", "/history", "/apps/shop/history", "/history/30", "/login",
		"/api/v1/apps", "/api/v1/apps/shop", "/api/v1/apps/shop/plan", "/api/v1/apps/shop/plan?format=text", "/api/v1/history", "/metrics", "/nope"} {
		w := env.do(http.MethodGet, path, "", auth)
		out.WriteString(w.Body.String())
		for _, vs := range w.Header() {
			out.WriteString(strings.Join(vs, " "))
		}
	}
	hc := hookCases()[0]
	body := readFixture(t, hc.fixture)
	env.deliver(hc, body, hc.signed(body, hc.secret))
	env.deliver(hc, body, hc.signed(body, "wrong"))
	env.formPost("/login", url.Values{"token": {testAPIToken}}, header("Sec-Fetch-Site", "cross-site"))

	pageText := out.String()
	// The status URL above is the agent's mistake; the page must still not
	// repeat it.
	for _, secret := range []string{testAPIToken, testGlobalSecret, testShopSecret} {
		if strings.Contains(pageText, secret) {
			t.Errorf("a response contains secret %q", secret)
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log contains secret %q", secret)
		}
	}
}
