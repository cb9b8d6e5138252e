package web

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSecWebPerClientCaps: against the real binary, one client address
// can hold 8 live-update streams and no more while another still gets
// one, and one client's wrong tokens lock out neither another address nor
// another client of a reverse proxy on the same host (each named by the
// X-Forwarded-For hop the proxy appended).
func TestSecWebPerClientCaps(t *testing.T) {
	t.Parallel()
	_, source := webRepo(t)
	client := &http.Client{Timeout: 10 * time.Second}
	env := append(withoutEnv("DRIFTLESS_API_TOKEN"), "DRIFTLESS_API_TOKEN="+webToken)
	a := startWebAgent(t, env, "http", client, "0.0.0.0:"+freeWildcardPort(t), source...)

	type caller struct {
		name, base string
		headers    map[string]string
	}
	proxied := func(name, ip string) caller {
		return caller{name, a.base, map[string]string{"X-Forwarded-For": "192.0.2.77, " + ip}}
	}
	clients := []caller{proxied("proxied client A", "198.51.100.31"), proxied("proxied client B", "198.51.100.32")}
	if ip := nonLoopbackIP(t); ip != "" {
		clients = append(clients, caller{"network client", "http://" + net.JoinHostPort(ip, a.port), nil}, caller{"loopback client", a.base, nil})
	} else {
		t.Log("no non-loopback address on this machine: checks of a direct network client skipped")
	}

	// open starts a stream and returns its status and, when refused, the
	// answer; the stream stays open until the test ends.
	open := func(c caller) (int, string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+webToken)
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{}).Do(req)
		if err != nil {
			t.Fatalf("%s: open a stream: %v", c.name, err)
		}
		if resp.StatusCode == http.StatusOK {
			t.Cleanup(func() { resp.Body.Close() })
			return resp.StatusCode, ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After") + " " + string(body)
	}
	for i, c := range clients {
		if i%2 == 1 {
			// Every other client only checks it was left a stream.
			if code, body := open(c); code != http.StatusOK {
				t.Errorf("%s, after another client used its share: %d %s", c.name, code, body)
			}
			continue
		}
		for n := range 8 {
			if code, body := open(c); code != http.StatusOK {
				t.Fatalf("%s: stream %d: %d %s", c.name, n+1, code, body)
			}
		}
		code, body := open(c)
		t.Logf("%s, ninth stream: %d %s", c.name, code, body)
		if code != http.StatusTooManyRequests || !strings.HasPrefix(body, "30 ") || !strings.Contains(body, "at most 8 per client") {
			t.Errorf("%s: ninth stream: %d %s; want 429, Retry-After 30, naming the share of 8", c.name, code, body)
		}
	}

	// Wrong tokens: five lock out the guessing client, and only it.
	for i, c := range clients {
		if i%2 == 1 {
			if code, body, _ := webRequest(t, client, c.base+"/api/v1/apps", mergeHeaders(c.headers, bearerHeader(webToken))); code != http.StatusOK {
				t.Errorf("%s with the token, after another client's wrong ones: %d %.200s", c.name, code, body)
			}
			continue
		}
		for n := range 5 {
			if code, _, _ := webRequest(t, client, c.base+"/api/v1/apps", mergeHeaders(c.headers, bearerHeader("guess"))); code != http.StatusUnauthorized {
				t.Fatalf("%s: wrong token %d: %d", c.name, n+1, code)
			}
		}
		code, body, h := webRequest(t, client, c.base+"/api/v1/apps", mergeHeaders(c.headers, bearerHeader(webToken)))
		if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
			t.Errorf("%s: the right token after 5 wrong ones: %d %.200s; want 429 with Retry-After", c.name, code, body)
		}
	}
}

func mergeHeaders(hs ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, h := range hs {
		for k, v := range h {
			out[k] = v
		}
	}
	return out
}
