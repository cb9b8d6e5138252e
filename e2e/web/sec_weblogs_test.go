package web

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// The tests in this file check, against the real binary, that container
// logs need the API token even where app state is open to read
// (--public-read, trusted loopback), and that a request a proxy on the
// same host forwarded is not trusted as loopback.

// logsRig is one deployed app whose one replica logs a marker (the
// workload logs its MESSAGE at start), followed by an agent with an API
// token and --public-read, listening on every address.
type logsRig struct {
	app, ctr, marker string
	agent            *webAgent
	remote           string // the agent on this machine's network address; "" without one
}

func startLogsRig(t *testing.T) *logsRig {
	t.Helper()
	image := testenv.WorkloadImage(t, "v1")
	r := &logsRig{app: testenv.UniqueApp(t)}
	r.marker = "logs-are-private-" + r.app
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	path := "apps/" + r.app
	repo.WriteFile(path+"/web.yaml", testenv.ServiceManifest(image, 1, map[string]string{"MESSAGE": r.marker}))
	sha := repo.Commit("deploy web")

	client := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	env := append(withoutEnv("DRIFTLESS_API_TOKEN"), "DRIFTLESS_API_TOKEN="+webToken)
	r.agent = startWebAgent(t, env, "http", client, "0.0.0.0:"+freeWildcardPort(t),
		"run", "--repo", repo.URL(server.URL), "--branch", "main", "--path", path, "--app", r.app,
		"--interval", "1s", "--allow-insecure-transport", "--public-read")
	if ip := nonLoopbackIP(t); ip != "" {
		r.remote = "http://" + net.JoinHostPort(ip, r.agent.port)
	}

	converged := testenv.ConvergedTo(sha, 1, image)
	deadline := time.Now().Add(90 * time.Second)
	for {
		code, body := webGet(t, client, r.agent.base+"/api/v1/apps/"+r.app, webToken)
		var st status.AppStatus
		if code == http.StatusOK && json.Unmarshal([]byte(body), &st) == nil && converged(st) {
			r.ctr = st.Services[0].Containers[0].Name
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("app %s did not converge: %d %.500s", r.app, code, body)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// webRequest is one GET with extra headers; it returns the status, the
// body (at most what arrives within a second for a stream) and the
// response's headers.
func webRequest(t *testing.T, client *http.Client, target string, headers map[string]string) (int, string, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	defer resp.Body.Close()
	var body []byte
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		// A follow stream stays open: read until the marker or a pause.
		body = readStreamFor(resp.Body, 5*time.Second)
	} else {
		body, _ = io.ReadAll(resp.Body)
	}
	return resp.StatusCode, string(body), resp.Header
}

// readStreamFor reads a stream for up to d.
func readStreamFor(r io.Reader, d time.Duration) []byte {
	out := make(chan []byte, 1)
	buf := &testenv.LockedBuffer{}
	go func() { _, _ = io.Copy(buf, r); out <- nil }()
	select {
	case <-out:
	case <-time.After(d):
	}
	return []byte(buf.String())
}

func bearerHeader(tok string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + tok}
}

// TestSecWebLogsNeedToken: with an API token and --public-read, a network
// client and a loopback client without the token read the app's status
// but not its logs (API, follow stream, page: 401 or a redirect to the
// login page, and no line of the log); with the token, or a login
// session, they do.
func TestSecWebLogsNeedToken(t *testing.T) {
	t.Parallel()
	r := startLogsRig(t)
	a := r.agent
	logsAPI := "/api/v1/apps/" + r.app + "/logs?container=" + r.ctr + "&tail=50"
	logsPage := "/apps/" + r.app + "/logs/" + r.ctr

	clients := map[string]string{"loopback": a.base}
	if r.remote != "" {
		clients["network"] = r.remote
	} else {
		t.Log("no non-loopback address on this machine: network client checks skipped")
	}
	for who, base := range clients {
		for name, headers := range map[string]map[string]string{"": nil, ", proxied": {"X-Forwarded-For": "198.51.100.23"}} {
			where := who + name
			if code, body, _ := webRequest(t, a.http, base+"/api/v1/apps/"+r.app, headers); code != http.StatusOK || !strings.Contains(body, r.ctr) {
				t.Errorf("%s: app status with --public-read: %d %.200s", where, code, body)
			}
			code, body, _ := webRequest(t, a.http, base+logsAPI, headers)
			t.Logf("%s, logs API without the token: %d %s", where, code, strings.TrimSpace(body))
			if code != http.StatusUnauthorized || strings.Contains(body, r.marker) || !strings.Contains(body, "container logs need the API token, also with --public-read and from loopback") {
				t.Errorf("%s: logs API without the token: %d %.300s", where, code, body)
			}
			code, body, h := webRequest(t, a.http, base+logsAPI+"&follow=1", headers)
			if code != http.StatusUnauthorized || h.Get("Content-Type") == "text/event-stream" || strings.Contains(body, r.marker) {
				t.Errorf("%s: logs stream without the token: %d %s %.300s", where, code, h.Get("Content-Type"), body)
			}
			code, body, h = webRequest(t, a.http, base+logsPage, headers)
			if code != http.StatusSeeOther || h.Get("Location") != "/login?next="+url.QueryEscape(logsPage) || strings.Contains(body, r.marker) {
				t.Errorf("%s: logs page without the token: %d Location %q", where, code, h.Get("Location"))
			}
		}

		// The token opens them: the API, the follow stream.
		code, body, _ := webRequest(t, a.http, base+logsAPI, bearerHeader(webToken))
		if code != http.StatusOK || !strings.Contains(body, r.marker) {
			t.Errorf("%s: logs API with the token: %d %.300s", who, code, body)
		}
		code, body, h := webRequest(t, a.http, base+logsAPI+"&follow=1", bearerHeader(webToken))
		if code != http.StatusOK || h.Get("Content-Type") != "text/event-stream" || !strings.Contains(body, r.marker) {
			t.Errorf("%s: logs stream with the token: %d %s %.300s", who, code, h.Get("Content-Type"), body)
		}

		// So does a login session, for the page.
		cookie := loginSession(t, a.http, base)
		code, body, _ = webRequest(t, a.http, base+logsPage, map[string]string{"Cookie": cookie})
		if code != http.StatusOK || !strings.Contains(body, r.marker) {
			t.Errorf("%s: logs page with a login session: %d", who, code)
		}
	}
}

// loginSession logs in at base/login with the token and returns the
// session cookie as a Cookie header value.
func loginSession(t *testing.T, client *http.Client, base string) string {
	t.Helper()
	_, page, _ := webRequest(t, client, base+"/login", nil)
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("login page has no CSRF field:\n%s", page)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(url.Values{"csrf": {m[1]}, "token": {webToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("login at %s: %d, cookies %v", base, resp.StatusCode, resp.Cookies())
	}
	c := resp.Cookies()[0]
	return c.Name + "=" + c.Value
}

// TestSecWebProxiedLoopbackNotTrusted: without a token, loopback may read
// and write (a workstation); the same request carrying Forwarded,
// X-Forwarded-For or X-Real-IP — a reverse proxy's, on the same host —
// may do neither, nor read logs or /readyz's reason.
func TestSecWebProxiedLoopbackNotTrusted(t *testing.T) {
	t.Parallel()
	app, source := webRepo(t)
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	a := startWebAgent(t, withoutEnv("DRIFTLESS_API_TOKEN"), "http", client, testenv.FreeAddr(t), source...)

	// The failed fetch gives /readyz a reason to show or hide.
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := webGet(t, client, a.base+"/readyz", "")
		if code == http.StatusServiceUnavailable && strings.Contains(body, app) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz from loopback never gave the reason: %d %q", code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	post := func(headers map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, a.base+"/api/v1/apps/"+app+"/sync", nil)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	for name, h := range map[string]map[string]string{
		"X-Forwarded-For": {"X-Forwarded-For": "203.0.113.9"},
		"Forwarded":       {"Forwarded": "for=203.0.113.9;proto=https"},
		"X-Real-IP":       {"X-Real-IP": "203.0.113.9"},
		"claims loopback": {"X-Forwarded-For": "127.0.0.1"},
	} {
		for _, path := range []string{"/api/v1/apps", "/", "/api/v1/apps/" + app + "/logs?container=" + app + "-web-1"} {
			if code, body, _ := webRequest(t, client, a.base+path, h); code != http.StatusForbidden || strings.Contains(body, app) {
				t.Errorf("%s: GET %s: %d %.200s; want 403 and no app state", name, path, code, body)
			}
		}
		code, body := post(h)
		if code != http.StatusForbidden || !strings.Contains(body, "--api-token-file") {
			t.Errorf("%s: sync: %d %s; want 403 naming --api-token-file", name, code, body)
		}
		if code, body, _ := webRequest(t, client, a.base+"/readyz", h); code != http.StatusServiceUnavailable || body != "not-ready" {
			t.Errorf("%s: /readyz: %d %q; want not-ready without the reason", name, code, body)
		}
	}
	if code, body, _ := webRequest(t, client, a.base+"/api/v1/apps", nil); code != http.StatusOK || !strings.Contains(body, app) {
		t.Errorf("loopback read without a proxy header: %d %.200s", code, body)
	}
	if code, body := post(nil); code != http.StatusAccepted {
		t.Errorf("loopback write without a proxy header: %d %s", code, body)
	}
}

// TestSecWebLogsPageInBrowser: in headless Chromium, from trusted loopback
// with --public-read, a container's logs page sends the browser to the
// login page (no log line shown); after logging in with the token it comes
// back to the logs page, which follows the container's log live.
func TestSecWebLogsPageInBrowser(t *testing.T) {
	t.Parallel()
	chrome := testenv.ChromiumPath(t)
	r := startLogsRig(t)
	b := testenv.StartBrowser(t, chrome)
	page := "/apps/" + r.app + "/logs/" + r.ctr

	b.Run("open the logs page", chromedp.Navigate(r.agent.base+page))
	b.WaitText("the login page", `location.pathname + " " + document.title`, 10*time.Second,
		func(s string) bool { return strings.HasPrefix(s, "/login ") })
	if text := b.Text(`document.body.innerText`); strings.Contains(text, r.marker) {
		t.Fatalf("the login page shows the log:\n%s", text)
	}
	if next := b.Text(`document.querySelector('input[name="next"]').value`); next != page {
		t.Errorf("the login form returns to %q, want %q", next, page)
	}
	b.Screenshot(testenv.ArtifactDir(t) + "/sec-logs-login.png")

	b.Run("log in", chromedp.SendKeys(`input[name="token"]`, webToken), chromedp.Click(`//button[normalize-space()="Log in"]`))
	b.WaitText("the logs page again", `location.pathname`, 10*time.Second, func(s string) bool { return s == page })
	b.WaitText("the logs page to follow", `(document.getElementById("logstate") || {}).textContent || ""`, 10*time.Second,
		func(s string) bool { return s == "following" })
	b.WaitText("the log's start line", `document.getElementById("logs").textContent`, 10*time.Second,
		func(s string) bool { return strings.Contains(s, "workload serving") && strings.Contains(s, r.marker) })
	b.Screenshot(testenv.ArtifactDir(t) + "/sec-logs-after-login.png")
	b.RequireNoPageErrors()
}
