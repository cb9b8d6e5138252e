package testenv

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// CountingProxy sits between a process and the Docker engine's socket and
// counts the API requests that pass, so a test can say how many calls a
// command made (the engine itself keeps no such count). Point the process
// at it with DOCKER_HOST=proxy.Host().
type CountingProxy struct {
	socket string
	srv    *http.Server

	mu    sync.Mutex
	calls []string // "GET /v1.41/containers/json?all=1", in arrival order
}

// StartCountingProxy listens on a fresh unix socket and forwards every
// request to the engine at DOCKER_HOST (default /var/run/docker.sock).
func StartCountingProxy(t testing.TB) *CountingProxy {
	t.Helper()
	target := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		if !strings.HasPrefix(h, "unix://") {
			t.Fatalf("counting proxy: DOCKER_HOST %q is not a unix socket", h)
		}
		target = strings.TrimPrefix(h, "unix://")
	}
	// A short directory: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "dlproxy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &CountingProxy{socket: filepath.Join(dir, "docker.sock")}
	ln, err := net.Listen("unix", p.socket)
	if err != nil {
		t.Fatalf("counting proxy: %v", err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker"
		},
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", target)
		}},
		FlushInterval: -1, // event and log streams pass through as they come
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.calls = append(p.calls, r.Method+" "+r.URL.RequestURI())
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	t.Cleanup(func() { p.srv.Close() })
	return p
}

// Host is the DOCKER_HOST value that reaches the engine through the proxy.
func (p *CountingProxy) Host() string { return "unix://" + p.socket }

// Reset forgets the calls counted so far.
func (p *CountingProxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = nil
}

// Calls are the requests counted since the last Reset, in order.
func (p *CountingProxy) Calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// versionRE and objectRE match what varies in an API path: the version
// prefix, and object IDs or names after a collection.
var (
	versionRE = regexp.MustCompile(`^/v[0-9.]+/`)
	objectRE  = regexp.MustCompile(`^/(containers|networks|volumes|images|distribution)/[^/]+(/|$)`)
)

// Summary counts the calls by kind ("GET /containers/{id}/json": 50), with
// the API version and object names taken out.
func (p *CountingProxy) Summary() map[string]int {
	out := map[string]int{}
	for _, c := range p.Calls() {
		method, path, _ := strings.Cut(c, " ")
		path, _, _ = strings.Cut(path, "?")
		path = versionRE.ReplaceAllString(path, "/")
		if !strings.HasSuffix(path, "/json") || strings.Count(path, "/") > 2 {
			path = objectRE.ReplaceAllString(path, "/$1/{id}$2")
		}
		out[method+" "+path]++
	}
	return out
}

// FormatCalls renders a summary in a stable order: "12 calls: 1 GET /_ping, …".
func FormatCalls(s map[string]int) string {
	total := 0
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		total += s[k]
		parts = append(parts, fmt.Sprintf("%d %s", s[k], k))
	}
	return fmt.Sprintf("%d calls: %s", total, strings.Join(parts, ", "))
}
