package web

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestNetworkListenNeedsTokenOrOverride(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "[::]:8080", "192.0.2.10:8080", "driftless.example:8080"} {
		_, err := New(Options{Agent: newFakeAgent(), Listen: addr})
		if !errors.Is(err, ErrNoToken) {
			t.Errorf("listen %s without a token: err %v, want ErrNoToken", addr, err)
			continue
		}
		for _, want := range []string{addr, "--api-token-file", "DRIFTLESS_API_TOKEN", "apiTokenFile", "apiTokenEnv", "--insecure-no-token"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("listen %s: error %q does not mention %s", addr, err, want)
			}
		}
	}
	for _, addr := range []string{"127.0.0.1:8080", "localhost:8080", "[::1]:8080", "127.0.0.2:9000"} {
		if _, err := New(Options{Agent: newFakeAgent(), Listen: addr}); err != nil {
			t.Errorf("loopback listen %s without a token refused: %v", addr, err)
		}
	}
	if _, err := New(Options{Agent: newFakeAgent(), Listen: "0.0.0.0:8080", APIToken: testAPIToken}); err != nil {
		t.Errorf("network listen with a token refused: %v", err)
	}

	// The override starts, and every page says how exposed the agent is.
	env := newTestEnv(t, func(o *Options) { o.Listen = "0.0.0.0:8080"; o.InsecureNoToken = true })
	for _, path := range []string{"/", "/login"} {
		assertContains(t, path, env.page(path), "Insecure", "without an API token", "0.0.0.0:8080")
	}
	secure := newTestEnv(t, func(o *Options) { o.Listen = "0.0.0.0:8080"; o.APIToken = testAPIToken })
	if page := secure.page("/login"); strings.Contains(page, "Insecure") {
		t.Error("a page of an agent with a token carries the insecure warning")
	}
}

func TestDistrustedLoopbackNeedsToken(t *testing.T) {
	env := newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken; o.DistrustLoopback = true })
	if w := env.do(http.MethodPost, "/api/v1/apps/shop/sync", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("loopback write without token: status %d, want 401", w.Code)
	}
	if w := env.do(http.MethodGet, "/api/v1/apps", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("loopback API read without token: status %d, want 401", w.Code)
	}
	if w := env.do(http.MethodGet, "/apps/shop", ""); w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), "/login") {
		t.Errorf("loopback page without login: status %d, Location %q", w.Code, w.Header().Get("Location"))
	}
	if w := env.do(http.MethodPost, "/api/v1/apps/shop/sync", "", bearer(testAPIToken)); w.Code != http.StatusAccepted {
		t.Errorf("loopback write with token: status %d %s", w.Code, w.Body)
	}
	if got := env.agent.enqueuedCalls(); len(got) != 1 {
		t.Errorf("Enqueue calls %v, want only the one with the token", got)
	}

	// Without a token nobody can write, and the answer says what to set.
	none := newTestEnv(t, func(o *Options) { o.DistrustLoopback = true })
	w := none.do(http.MethodPost, "/api/v1/apps/shop/sync", "")
	if w.Code != http.StatusUnauthorized || !strings.Contains(errorOf(t, w), "DRIFTLESS_API_TOKEN") {
		t.Errorf("loopback write, no token configured: status %d %s", w.Code, w.Body)
	}
}

func TestReadyzDetailsOnlyForReaders(t *testing.T) {
	notReady := func(env *testEnv) *testEnv {
		env.agent.notReady = errors.New("app shop: no successful pass yet: manifest web.yaml:3: unknown field")
		return env
	}
	for name, c := range map[string]struct {
		env    *testEnv
		opts   []reqOpt
		detail bool
	}{
		"remote, no token":           {notReady(newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken })), []reqOpt{from(remote)}, false},
		"remote, token":              {notReady(newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken })), []reqOpt{from(remote), bearer(testAPIToken)}, true},
		"remote, public read":        {notReady(newTestEnv(t, func(o *Options) { o.PublicRead = true })), []reqOpt{from(remote)}, true},
		"trusted loopback":           {notReady(newTestEnv(t, nil)), nil, true},
		"distrusted loopback":        {notReady(newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken; o.DistrustLoopback = true })), nil, false},
		"distrusted loopback, token": {notReady(newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken; o.DistrustLoopback = true })), []reqOpt{bearer(testAPIToken)}, true},
	} {
		w := c.env.do(http.MethodGet, "/readyz", "", c.opts...)
		body := w.Body.String()
		if w.Code != http.StatusServiceUnavailable {
			t.Errorf("%s: status %d, want 503", name, w.Code)
		}
		if c.detail && !strings.Contains(body, "web.yaml:3") {
			t.Errorf("%s: %q lacks the reason", name, body)
		}
		if !c.detail && body != "not-ready" {
			t.Errorf("%s: %q, want exactly not-ready", name, body)
		}
	}
	env := newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken })
	if w := env.do(http.MethodGet, "/readyz", "", from(remote)); w.Code != http.StatusOK || w.Body.String() != "ready" {
		t.Errorf("ready agent: %d %q", w.Code, w.Body)
	}
}

func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"/apps/shop":                            "/apps/shop",
		"/apps/shop/history?kind=sync%2Crepair": "/apps/shop/history?kind=sync%2Crepair",
		"/":                                     "/",
		"":                                      "/",
		"/\t/evil.example":                      "/",
		"/\n/evil.example":                      "/",
		"/\r/evil.example":                      "/",
		"/%09/evil.example":                     "/",
		"%09/evil.example":                      "/",
		"/%0a/evil.example":                     "/",
		"//evil.example":                        "/",
		"///evil.example":                       "/",
		"/%2F/evil.example":                     "/",
		"/%2f%2fevil.example":                   "/",
		`/\evil.example`:                        "/",
		`\\evil.example`:                        "/",
		"/%5Cevil.example":                      "/",
		"https://evil.example":                  "/",
		"http:/evil.example":                    "/",
		"javascript:alert(1)":                   "/",
		"evil.example":                          "/",
		"/apps/\x7f":                            "/",
		"/apps/\u2028":                          "/apps/\u2028", // not a control character: a path
		"/%zz":                                  "/",
	} {
		if got := localPath(in, "/"); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// A browser resolves whatever localPath accepts to a URL on this site.
func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"/apps/shop", "/\t/evil.example", "//evil", `/\evil`, "https://evil", "/%09/x", "/a?b=c#d"} {
		f.Add(s)
	}
	base, _ := url.Parse("https://driftless.example/apps/shop")
	f.Fuzz(func(t *testing.T, p string) {
		got := localPath(p, "/")
		if got == "/" {
			return
		}
		if got != p {
			t.Fatalf("localPath(%q) = %q: neither the input nor the fallback", p, got)
		}
		// Browsers strip tabs and newlines and read \ as / before resolving.
		browser := strings.NewReplacer("\t", "", "\n", "", "\r", "", `\`, "/").Replace(got)
		u, err := url.Parse(browser)
		if err != nil {
			return
		}
		if r := base.ResolveReference(u); r.Host != base.Host || r.Scheme != base.Scheme {
			t.Fatalf("localPath accepted %q, which leads to %s", p, r)
		}
	})
}

func TestLoginNextStaysOnSite(t *testing.T) {
	env := newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken })
	csrf := csrfFrom(t, env.page("/login"))
	for _, next := range []string{"/\t/evil.example", "//evil.example", `/\evil.example`, "https://evil.example", "/%09/evil.example"} {
		w := env.formPost("/login", url.Values{"csrf": {csrf}, "token": {testAPIToken}, "next": {next}}, header("Sec-Fetch-Site", "same-origin"))
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/" {
			t.Errorf("login with next %q: status %d, Location %q, want /", next, w.Code, w.Header().Get("Location"))
		}
	}
}

// loginCookie logs in from addr and returns the session cookie header.
func (e *testEnv) loginCookie(addr string) reqOpt {
	e.t.Helper()
	opts := []reqOpt{from(addr), header("Sec-Fetch-Site", "same-origin")}
	csrf := csrfFrom(e.t, e.do(http.MethodGet, "/login", "", opts...).Body.String())
	w := e.formPost("/login", url.Values{"csrf": {csrf}, "token": {testAPIToken}}, opts...)
	if w.Code != http.StatusSeeOther {
		e.t.Fatalf("login: status %d %s", w.Code, w.Body)
	}
	return header("Cookie", strings.Split(w.Header().Get("Set-Cookie"), ";")[0])
}

func TestSessionsExpireAndLogoutEndsThem(t *testing.T) {
	clock := newFakeClock()
	env := newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken; o.Now = clock.Now })
	loggedIn := func(cookie reqOpt) bool {
		w := env.do(http.MethodGet, "/api/v1/apps", "", from(remote), cookie)
		return w.Code == http.StatusOK
	}

	// Idle: an hour without a request ends the session.
	s := env.loginCookie(remote)
	clock.Advance(DefaultSessionIdle - time.Second)
	if !loggedIn(s) {
		t.Fatal("session ended before the idle timeout")
	}
	clock.Advance(DefaultSessionIdle - time.Second) // idle timer restarted by the request
	if !loggedIn(s) {
		t.Fatal("a used session ended by the idle timeout")
	}
	clock.Advance(DefaultSessionIdle)
	if loggedIn(s) {
		t.Error("session still valid after an hour idle")
	}

	// Absolute: a session in constant use ends after its lifetime.
	s = env.loginCookie(remote)
	for used := time.Duration(0); used < DefaultSessionLifetime-30*time.Minute; used += 30 * time.Minute {
		clock.Advance(30 * time.Minute)
		if !loggedIn(s) {
			t.Fatalf("session in use ended after %s", used+30*time.Minute)
		}
	}
	clock.Advance(30 * time.Minute)
	if loggedIn(s) {
		t.Errorf("session still valid %s after login", DefaultSessionLifetime)
	}

	// Logout ends the session on the server: the old cookie no longer works.
	s = env.loginCookie(remote)
	page := env.do(http.MethodGet, "/", "", from(remote), s, header("Host", "127.0.0.1:8080"))
	w := env.formPost("/logout", url.Values{"csrf": {csrfFrom(t, page.Body.String())}}, from(remote), s, header("Sec-Fetch-Site", "same-origin"))
	if w.Code != http.StatusSeeOther {
		t.Fatalf("logout: status %d", w.Code)
	}
	if loggedIn(s) {
		t.Error("the session cookie still works after logout")
	}
	if w := env.do(http.MethodPost, "/api/v1/apps/shop/sync", "", from(remote), s); w.Code != http.StatusUnauthorized {
		t.Errorf("write with a logged-out cookie: status %d", w.Code)
	}
}

func TestFailedCredentialsAreRateLimited(t *testing.T) {
	clock := newFakeClock()
	env := newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken; o.Now = clock.Now })
	opts := []reqOpt{from(remote), header("Sec-Fetch-Site", "same-origin")}
	csrf := csrfFrom(t, env.do(http.MethodGet, "/login", "", opts...).Body.String())
	login := func(tok string) *http.Response {
		return env.formPost("/login", url.Values{"csrf": {csrf}, "token": {tok}}, opts...).Result()
	}
	for i := range DefaultMaxAuthFailures {
		if r := login(fmt.Sprintf("guess-%d", i)); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong login %d: status %d", i+1, r.StatusCode)
		}
		clock.Advance(time.Second)
	}
	r := login(testAPIToken)
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "55" || len(r.Cookies()) != 0 {
		t.Fatalf("login after %d failures: status %d, Retry-After %q, cookies %v; want 429, 55, none", DefaultMaxAuthFailures, r.StatusCode, r.Header.Get("Retry-After"), r.Cookies())
	}
	// The bearer token is checked against the same count.
	if w := env.do(http.MethodGet, "/api/v1/apps", "", from(remote), bearer(testAPIToken)); w.Code != http.StatusTooManyRequests {
		t.Errorf("bearer from a blocked address: status %d", w.Code)
	}
	// Another address is not affected.
	if w := env.do(http.MethodGet, "/api/v1/apps", "", from("198.51.100.9:1234"), bearer(testAPIToken)); w.Code != http.StatusOK {
		t.Errorf("bearer from another address: status %d", w.Code)
	}
	clock.Advance(55 * time.Second)
	if r := login(testAPIToken); r.StatusCode != http.StatusSeeOther {
		t.Errorf("login once the window passed: status %d", r.StatusCode)
	}

	// Wrong bearer tokens count on their own.
	other := from("198.51.100.20:999")
	for i := range DefaultMaxAuthFailures {
		if w := env.do(http.MethodPost, "/api/v1/apps/shop/sync", "", other, bearer("guess")); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong bearer %d: status %d", i+1, w.Code)
		}
	}
	w := env.do(http.MethodPost, "/api/v1/apps/shop/sync", "", other, bearer(testAPIToken))
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "60" {
		t.Errorf("bearer after failures: status %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	// IPv6 clients are counted per /64.
	for i := range DefaultMaxAuthFailures {
		env.do(http.MethodGet, "/api/v1/apps", "", from(fmt.Sprintf("[2001:db8::%x]:1", i+1)), bearer("guess"))
	}
	if w := env.do(http.MethodGet, "/api/v1/apps", "", from("[2001:db8::ff]:1"), bearer(testAPIToken)); w.Code != http.StatusTooManyRequests {
		t.Errorf("bearer from the same /64 after failures from its neighbours: status %d", w.Code)
	}

	// Wrongly signed webhooks too.
	hc := hookCases()[0]
	body := readFixture(t, hc.fixture)
	for i := range DefaultMaxAuthFailures {
		if code, _ := env.deliver(hc, body, hc.signed(body, "wrong")); code != http.StatusUnauthorized {
			t.Fatalf("wrongly signed hook %d: status %d", i+1, code)
		}
	}
	if code, _ := env.deliver(hc, body, hc.signed(body, hc.secret)); code != http.StatusTooManyRequests {
		t.Errorf("hook after failures: status %d, want 429", code)
	}
	if got := env.agent.enqueuedCalls(); len(got) != 0 {
		t.Errorf("refused requests reached the agent: %v", got)
	}
}

func TestNoStoreOnAnswers(t *testing.T) {
	env := newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken })
	for _, path := range []string{"/api/v1/apps", "/api/v1/apps/shop", "/", "/apps/shop", "/login", "/metrics", "/readyz"} {
		if w := env.do(http.MethodGet, path, "", bearer(testAPIToken)); w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", path, w.Header().Get("Cache-Control"))
		}
	}
	if w := env.do(http.MethodPost, "/api/v1/apps/shop/sync", "", bearer(testAPIToken)); w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("API write: Cache-Control %q", w.Header().Get("Cache-Control"))
	}
	if w := env.do(http.MethodGet, "/static/app.css", ""); !strings.HasPrefix(w.Header().Get("Cache-Control"), "public") {
		t.Errorf("static asset: Cache-Control %q", w.Header().Get("Cache-Control"))
	}
}

// serveReal serves s on a loopback listener until the test ends and
// returns its address.
func serveReal(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// slowRequest sends a request whose body never finishes and returns the
// status line the server answers with, or "closed".
func slowRequest(t *testing.T, addr, method, path, contentType string, extra ...string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A guard so a broken server fails the test instead of hanging it.
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\nContent-Length: 1000\r\n%s\r\n{", method, path, contentType, strings.Join(extra, ""))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s %s: no answer to a stalled body", method, path)
		}
		return "closed"
	}
	return strings.TrimSpace(line)
}

func TestStalledBodyGets408(t *testing.T) {
	s, err := New(Options{Agent: newFakeAgent(), APIToken: testAPIToken, WebhookSecret: testGlobalSecret, Sources: testSources,
		BodyTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveReal(t, s)
	for _, c := range []struct{ method, path, ctype, extra string }{
		{"POST", "/hooks/github", "application/json", "X-GitHub-Event: push\r\nX-Hub-Signature-256: sha256=00\r\n"},
		{"POST", "/hooks/generic", "application/json", ""},
		{"POST", "/api/v1/apps/shop/pin", "application/json", "Authorization: Bearer " + testAPIToken + "\r\n"},
		{"POST", "/login", "application/x-www-form-urlencoded", "Sec-Fetch-Site: same-origin\r\n"},
		// Refused before the body is read: the server still must not wait
		// for it forever.
		{"POST", "/api/v1/apps/shop/sync", "application/json", "Authorization: Bearer wrong\r\n"},
	} {
		got := slowRequest(t, addr, c.method, c.path, c.ctype, c.extra)
		want := "HTTP/1.1 408 Request Timeout"
		if strings.Contains(c.extra, "wrong") {
			want = "HTTP/1.1 401 Unauthorized"
		}
		t.Logf("%s %s: %s", c.method, c.path, got)
		if got != want && got != "closed" {
			t.Errorf("%s %s with a stalled body: %q, want %q or a closed connection", c.method, c.path, got, want)
		}
	}
}

func TestEventStreamsAreCapped(t *testing.T) {
	env := newTestEnv(t, func(o *Options) { o.MaxEventStreams = 2 })
	addr := serveReal(t, env.srv)
	open := func() (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/events", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, func() { cancel(); resp.Body.Close() }
	}
	var closers []context.CancelFunc
	for range 2 {
		resp, stop := open()
		closers = append(closers, stop)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream within the cap: status %d", resp.StatusCode)
		}
	}
	resp, stop := open()
	body, _ := io.ReadAll(resp.Body)
	stop()
	// One client holds every slot: it is told its own share is used up
	// (TestEventStreamsPerClient covers the ceiling for many clients).
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "at most 2") {
		t.Fatalf("stream over the cap: status %d, Retry-After %q, %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	// Closing a stream makes room for another.
	closers[0]()
	for deadline := time.Now().Add(10 * time.Second); env.openStreams() >= 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a closed stream still counts against the cap")
		}
	}
	resp, stop = open()
	defer stop()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("stream after one closed: status %d", resp.StatusCode)
	}
	closers[1]()
}

func TestConnectionCap(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newLimitListener(inner, 1)
	defer ln.Close()
	c1, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	s1, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if len(ln.sem) != 1 {
		t.Fatalf("one accepted connection holds %d slots", len(ln.sem))
	}
	c2, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	accepted := make(chan net.Conn)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	// The second is accepted only once the first closes (closing twice
	// frees one slot).
	s1.Close()
	s1.Close()
	s2, ok := <-accepted
	if !ok {
		t.Fatal("second connection never accepted")
	}
	s2.Close()
	if len(ln.sem) != 0 {
		t.Errorf("%d slots held after both closed", len(ln.sem))
	}
}

// writeSelfSigned writes a certificate for 127.0.0.1 and its key.
func writeSelfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "driftless test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestTLS(t *testing.T) {
	certFile, keyFile, pool := writeSelfSigned(t, t.TempDir())
	if _, err := New(Options{Agent: newFakeAgent(), TLSCertFile: certFile}); err == nil || !strings.Contains(err.Error(), "--tls-key") {
		t.Errorf("certificate without key: %v", err)
	}
	if _, err := New(Options{Agent: newFakeAgent(), TLSCertFile: keyFile, TLSKeyFile: keyFile}); err == nil || !strings.Contains(err.Error(), "--tls-cert") {
		t.Errorf("key given as certificate: %v", err)
	}
	s, err := New(Options{Agent: newFakeAgent(), APIToken: testAPIToken, TLSCertFile: certFile, TLSKeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	if s.Scheme() != "https" {
		t.Errorf("Scheme() = %q", s.Scheme())
	}
	addr := serveReal(t, s)
	client := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Get("https://" + addr + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	csrf := csrfFrom(t, string(page))
	req, _ := http.NewRequest(http.MethodPost, "https://"+addr+"/login", strings.NewReader(url.Values{"csrf": {csrf}, "token": {testAPIToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("login over TLS: status %d, cookies %v", resp.StatusCode, cookies)
	}
	if c := cookies[0]; !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("session cookie over TLS: Secure %v HttpOnly %v SameSite %v", c.Secure, c.HttpOnly, c.SameSite)
	}
	// Plain HTTP on the TLS port gets no page (Go's server answers 400).
	if resp, err := http.Get("http://" + addr + "/login"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("the login page is served over plain HTTP on the TLS port")
		}
	}
}
