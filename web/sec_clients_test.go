package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The tests in this file cover who counts as whom: a request a proxy on
// this host forwarded is not trusted loopback, container logs need the
// token, and the stream and failure limits are per client.

const (
	logsAPI  = "/api/v1/apps/shop/logs?container=shop-web-1"
	logsPage = "/apps/shop/logs/shop-web-1"
)

func proxyHeaders() map[string]reqOpt {
	return map[string]reqOpt{
		"Forwarded":             header("Forwarded", "for=198.51.100.4;proto=https"),
		"X-Forwarded-For":       header("X-Forwarded-For", "198.51.100.4"),
		"X-Real-IP":             header("X-Real-IP", "198.51.100.4"),
		"empty X-Forwarded-For": header("X-Forwarded-For", ""),
		"loopback claimed":      header("X-Forwarded-For", "127.0.0.1"),
	}
}

func TestProxiedLoopbackIsNotTrusted(t *testing.T) {
	for name, proxy := range proxyHeaders() {
		// No token: a workstation, where loopback may read and write.
		env := newTestEnv(t, func(o *Options) { o.Logs = &fakeLogs{} })
		// (Not /events: admitted, it would stream until the test times out.)
		for _, target := range []string{"/api/v1/apps", "/", logsAPI, logsPage} {
			if w := env.do(http.MethodGet, target, "", proxy); w.Code != http.StatusForbidden {
				t.Errorf("%s: proxied read of %s without a token configured: status %d, want 403", name, target, w.Code)
			}
		}
		if w := env.do(http.MethodPost, "/api/v1/apps/shop/sync", "", proxy); w.Code != http.StatusForbidden {
			t.Errorf("%s: proxied write: status %d, want 403", name, w.Code)
		}
		if w := env.do(http.MethodGet, "/readyz", "", proxy); w.Body.String() != "ready" {
			t.Errorf("%s: /readyz: %q", name, w.Body)
		}
		if got := env.agent.enqueuedCalls(); len(got) != 0 {
			t.Errorf("%s: a proxied write reached the agent: %v", name, got)
		}
		// The same requests without the header are the workstation's own.
		if w := env.do(http.MethodPost, "/api/v1/apps/shop/sync", ""); w.Code != http.StatusAccepted {
			t.Errorf("%s: loopback write without a proxy header: status %d", name, w.Code)
		}

		// With a token, a proxied client needs it like anyone else.
		tok := newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken })
		if w := tok.do(http.MethodGet, "/api/v1/apps", "", proxy); w.Code != http.StatusUnauthorized {
			t.Errorf("%s: proxied read, token configured: status %d, want 401", name, w.Code)
		}
		if w := tok.do(http.MethodGet, "/api/v1/apps", "", proxy, bearer(testAPIToken)); w.Code != http.StatusOK {
			t.Errorf("%s: proxied read with the token: status %d", name, w.Code)
		}
	}
}

// logsVisit is one visitor's request for logs and the logs API's answer
// it should get; the page answers the same, or redirects to /login for 401.
type logsVisit struct {
	name string
	opts []reqOpt
	api  int
}

// check requests the logs API, its follow stream and the logs page, and
// reports whether the visitor was allowed.
func (v logsVisit) check(t *testing.T, env *testEnv, where string) bool {
	t.Helper()
	w := env.do(http.MethodGet, logsAPI, "", v.opts...)
	allowed := v.api == http.StatusOK
	if w.Code != v.api || strings.Contains(w.Body.String(), "line 0") != allowed {
		t.Errorf("%s: logs API status %d, want %d: %s", where, w.Code, v.api, w.Body)
	}
	switch msg := ""; v.api {
	case http.StatusUnauthorized:
		if msg = errorOf(t, w); !strings.Contains(msg, "Bearer") {
			t.Errorf("%s: refusal %q does not say to send the token", where, msg)
		}
	case http.StatusForbidden:
		if msg = errorOf(t, w); !strings.Contains(msg, "--api-token-file") {
			t.Errorf("%s: refusal %q does not name --api-token-file", where, msg)
		}
	}
	// Following is the same endpoint: refused before any stream.
	if f := env.do(http.MethodGet, logsAPI+"&follow=1", "", v.opts...); !allowed && (f.Code != v.api || f.Header().Get("Content-Type") == "text/event-stream") {
		t.Errorf("%s: follow: status %d, content type %q", where, f.Code, f.Header().Get("Content-Type"))
	}
	wantPage, location := v.api, ""
	if v.api == http.StatusUnauthorized {
		wantPage, location = http.StatusSeeOther, "/login?next="+url.QueryEscape(logsPage)
	}
	p := env.do(http.MethodGet, logsPage, "", v.opts...)
	if p.Code != wantPage || strings.Contains(p.Body.String(), "line 0") != allowed || p.Header().Get("Location") != location {
		t.Errorf("%s: logs page status %d, Location %q; want %d, %q", where, p.Code, p.Header().Get("Location"), wantPage, location)
	}
	return allowed
}

func TestLogsNeedTheToken(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   func(*Options)
		visits []logsVisit
	}{
		{"token, public read", func(o *Options) { o.APIToken = testAPIToken; o.PublicRead = true }, []logsVisit{
			{"remote", []reqOpt{from(remote)}, http.StatusUnauthorized},
			{"trusted loopback", nil, http.StatusUnauthorized},
			{"remote, bearer", []reqOpt{from(remote), bearer(testAPIToken)}, http.StatusOK},
		}},
		{"token", func(o *Options) { o.APIToken = testAPIToken }, []logsVisit{
			{"trusted loopback", nil, http.StatusUnauthorized},
			{"loopback, bearer", []reqOpt{bearer(testAPIToken)}, http.StatusOK},
			{"remote, wrong bearer", []reqOpt{from(remote), bearer("guess")}, http.StatusUnauthorized},
		}},
		{"no token", nil, []logsVisit{
			{"trusted loopback", nil, http.StatusOK},
			{"proxied loopback", []reqOpt{header("X-Forwarded-For", "198.51.100.4")}, http.StatusForbidden},
		}},
		{"no token, public read", func(o *Options) { o.PublicRead = true; o.InsecureNoToken = true; o.Listen = "0.0.0.0:8080" }, []logsVisit{
			{"remote", []reqOpt{from(remote)}, http.StatusForbidden},
			{"trusted loopback", nil, http.StatusOK},
		}},
		{"no token, loopback distrusted", func(o *Options) { o.DistrustLoopback = true; o.PublicRead = true }, []logsVisit{
			{"loopback", nil, http.StatusForbidden},
		}},
	} {
		logs := &fakeLogs{}
		env := newTestEnv(t, func(o *Options) {
			if c.opts != nil {
				c.opts(o)
			}
			o.Logs = logs
		})
		allowed := 0
		for _, v := range c.visits {
			if v.check(t, env, c.name+", "+v.name) {
				allowed += 3 // the API, its follow stream and the page
			}
		}
		if len(logs.streamed) != allowed {
			t.Errorf("%s: the engine was asked for logs %d times, want %d (only for allowed visitors): %v", c.name, len(logs.streamed), allowed, logs.streamed)
		}
	}

	// A login session counts as the token, from loopback and elsewhere;
	// the app page stays readable without one.
	env := newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken; o.PublicRead = true; o.Logs = &fakeLogs{} })
	for _, addr := range []string{remote, "127.0.0.1:50000"} {
		cookie := env.loginCookie(addr)
		logsVisit{"login session from " + addr, []reqOpt{from(addr), cookie}, http.StatusOK}.check(t, env, "token, public read")
	}
	if w := env.do(http.MethodGet, "/apps/shop", "", from(remote)); w.Code != http.StatusOK {
		t.Errorf("app page with --public-read: status %d", w.Code)
	}
	// What a reader who may see the app is told about its logs.
	w := env.do(http.MethodGet, logsAPI, "", from(remote))
	if msg := errorOf(t, w); w.Code != http.StatusUnauthorized || !strings.Contains(msg, "container logs need the API token, also with --public-read and from loopback") {
		t.Errorf("logs API with --public-read, no token: %d %q", w.Code, msg)
	}
}

func TestClientOf(t *testing.T) {
	for _, c := range []struct {
		remote  string
		headers map[string][]string
		want    string
	}{
		{"203.0.113.7:41000", nil, "203.0.113.7"},
		{"[2001:db8::1]:41000", nil, "2001:db8::/64"},
		{"[2001:db8::ffff:1]:1", nil, "2001:db8::/64"},
		{"[2001:db8:0:1::1]:1", nil, "2001:db8:0:1::/64"},
		{"[::ffff:192.0.2.1]:1", nil, "192.0.2.1"},
		{"127.0.0.1:50000", nil, "127.0.0.1"},
		// A remote client's forwarding headers are its own words.
		{"203.0.113.7:41000", map[string][]string{"X-Forwarded-For": {"198.51.100.1"}}, "203.0.113.7"},
		// A local proxy's: the hop it appended (the last), not the ones the
		// client wrote before it.
		{"127.0.0.1:50000", map[string][]string{"X-Forwarded-For": {"192.0.2.66, 198.51.100.1"}}, "proxied 198.51.100.1"},
		{"127.0.0.1:50000", map[string][]string{"X-Forwarded-For": {"192.0.2.66", "198.51.100.1, "}}, "proxied 198.51.100.1"},
		{"[::1]:50000", map[string][]string{"X-Forwarded-For": {"2001:db8::5"}}, "proxied 2001:db8::/64"},
		{"127.0.0.1:50000", map[string][]string{"X-Forwarded-For": {"198.51.100.1:8443"}}, "proxied 198.51.100.1"},
		{"127.0.0.1:50000", map[string][]string{"X-Forwarded-For": {"[2001:db8::5]:8443"}}, "proxied 2001:db8::/64"},
		{"127.0.0.1:50000", map[string][]string{"Forwarded": {`for=192.0.2.60;proto=http, For="[2001:db8:cafe::17]:4711"`}}, "proxied 2001:db8:cafe::/64"},
		{"127.0.0.1:50000", map[string][]string{"X-Real-Ip": {"198.51.100.2"}}, "proxied 198.51.100.2"},
		{"127.0.0.1:50000", map[string][]string{"X-Forwarded-For": {"198.51.100.1"}, "X-Real-Ip": {"192.0.2.9"}}, "proxied 198.51.100.1"},
		// Nothing usable: the proxy's own address.
		{"127.0.0.1:50000", map[string][]string{"X-Forwarded-For": {"unknown"}}, "127.0.0.1"},
		{"127.0.0.1:50000", map[string][]string{"Forwarded": {"for=_hidden"}}, "127.0.0.1"},
		{"127.0.0.1:50000", map[string][]string{"Forwarded": {"proto=https"}}, "127.0.0.1"},
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = c.remote
		for k, vs := range c.headers {
			for _, v := range vs {
				r.Header.Add(k, v)
			}
		}
		if got := clientOf(r); got != c.want {
			t.Errorf("clientOf(%s, %v) = %q, want %q", c.remote, c.headers, got, c.want)
		}
	}
}

func TestStreamSlots(t *testing.T) {
	s := newStreamSlots(5, 2)
	take := func(client string, want streamRefusal) func() {
		t.Helper()
		release, got := s.acquire(client)
		if got != want {
			t.Fatalf("acquire(%s) = %d, want %d", client, got, want)
		}
		return release
	}
	a1 := take("a", streamAdmitted)
	take("a", streamAdmitted)
	take("a", streamClientFull) // one client's share
	take("b", streamAdmitted)
	take("b", streamAdmitted)
	take("c", streamAdmitted)
	take("d", streamAllFull) // the ceiling, though d has none
	a1()
	a1() // a second release frees nothing more
	if all, ofA := s.count("a"); all != 4 || ofA != 1 {
		t.Errorf("after one release: %d open, %d of a; want 4 and 1", all, ofA)
	}
	take("d", streamAdmitted)
	take("a", streamAllFull)

	// The share never exceeds the ceiling.
	if small := newStreamSlots(2, 8); small.perClient != 2 {
		t.Errorf("per-client share %d with a ceiling of 2", small.perClient)
	}
}

// openStreams is how many live streams the server holds open.
func (e *testEnv) openStreams() int {
	all, _ := e.srv.streams.count("")
	return all
}

// TestEventStreamsPerClient: through a proxy on this host (the real
// server sees every connection from 127.0.0.1), one client gets its
// share of streams, the next client still gets one, and the ceiling
// holds for all.
func TestEventStreamsPerClient(t *testing.T) {
	env := newTestEnv(t, func(o *Options) { o.MaxEventStreams = 3; o.MaxEventStreamsPerClient = 2; o.PublicRead = true })
	addr := serveReal(t, env.srv)
	open := func(client string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/events", nil)
		req.Header.Set("X-Forwarded-For", client)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode == http.StatusOK {
			return resp.StatusCode, resp.Header.Get("Retry-After")
		}
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After") + " " + string(body)
	}
	for i := range 2 {
		if code, _ := open("198.51.100.1"); code != http.StatusOK {
			t.Fatalf("stream %d of the first client: status %d", i+1, code)
		}
	}
	code, body := open("198.51.100.1")
	if code != http.StatusTooManyRequests || !strings.HasPrefix(body, "30 ") || !strings.Contains(body, "at most 2 per client") {
		t.Errorf("third stream of one client: %d %s; want 429, Retry-After 30, naming the share", code, body)
	}
	if code, _ := open("2001:db8::1"); code != http.StatusOK {
		t.Errorf("another client's first stream: status %d", code)
	}
	code, body = open("203.0.113.50")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "at most 3") {
		t.Errorf("a stream over the ceiling: %d %s; want 503", code, body)
	}
	if n := env.openStreams(); n != 3 {
		t.Errorf("%d streams open, want 3", n)
	}
}

// TestFailuresCountPerClient: one client's wrong tokens lock out neither
// its IPv4 neighbour, nor another /64, nor — behind a proxy on this host —
// the proxy's other clients.
func TestFailuresCountPerClient(t *testing.T) {
	clock := newFakeClock()
	env := newTestEnv(t, func(o *Options) { o.APIToken = testAPIToken; o.Now = clock.Now })
	for _, c := range []struct {
		name            string
		attacker, other []reqOpt
	}{
		{"IPv4 /32", []reqOpt{from("198.51.100.7:1")}, []reqOpt{from("198.51.100.8:1")}},
		{"IPv6 /64", []reqOpt{from("[2001:db8:1::1]:1")}, []reqOpt{from("[2001:db8:1:1::1]:1")}},
		{"behind a proxy", []reqOpt{header("X-Forwarded-For", "192.0.2.10")}, []reqOpt{header("X-Forwarded-For", "192.0.2.11")}},
		{"behind a proxy, Forwarded", []reqOpt{header("Forwarded", "for=192.0.2.20")}, []reqOpt{header("Forwarded", `for="[2001:db8:2::1]"`)}},
		{"behind a proxy vs direct", []reqOpt{from("127.0.0.1:1"), header("X-Forwarded-For", "192.0.2.30")}, []reqOpt{from("192.0.2.30:1")}},
	} {
		for i := range DefaultMaxAuthFailures {
			if w := env.do(http.MethodGet, "/api/v1/apps", "", append(c.attacker, bearer(fmt.Sprint("guess-", i)))...); w.Code != http.StatusUnauthorized {
				t.Fatalf("%s: wrong token %d: status %d", c.name, i+1, w.Code)
			}
		}
		if w := env.do(http.MethodGet, "/api/v1/apps", "", append(c.attacker, bearer(testAPIToken))...); w.Code != http.StatusTooManyRequests {
			t.Errorf("%s: the guessing client after %d failures: status %d, want 429", c.name, DefaultMaxAuthFailures, w.Code)
		}
		if w := env.do(http.MethodGet, "/api/v1/apps", "", append(c.other, bearer(testAPIToken))...); w.Code != http.StatusOK {
			t.Errorf("%s: another client with the token: status %d, want 200", c.name, w.Code)
		}
		opts := append(c.other, header("Sec-Fetch-Site", "same-origin"))
		csrf := csrfFrom(t, env.do(http.MethodGet, "/login", "", opts...).Body.String())
		if w := env.formPost("/login", url.Values{"csrf": {csrf}, "token": {testAPIToken}}, opts...); w.Code != http.StatusSeeOther {
			t.Errorf("%s: another client's login: status %d, want 303", c.name, w.Code)
		}
	}
}
