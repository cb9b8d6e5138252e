package registry

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proxy is a plain-HTTP reverse proxy on loopback in front of a
// Registry: it counts the requests the engine makes (by kind, see Kind)
// and can slow blob downloads so that a pull takes visible time. Images
// are pulled through it as Proxy.Host/repo:tag.
type Proxy struct {
	Host string

	mu     sync.Mutex
	counts map[string]int
	rate   int64 // blob bytes per second; 0 = as fast as it goes
}

// StartProxy starts a proxy to r, stopped when the test ends.
func (r *Registry) StartProxy(t testing.TB) *Proxy {
	t.Helper()
	p := &Proxy{counts: map[string]int{}}
	target := &url.URL{Scheme: "http", Host: r.Host}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if r.tls != nil {
		target.Scheme = "https"
		transport.TLSClientConfig = &tls.Config{RootCAs: r.tls.pool}
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = r.Host
		},
		Transport: transport,
		ModifyResponse: func(resp *http.Response) error {
			if rate := p.blobRate(); rate > 0 && Kind(resp.Request.Method, resp.Request.URL.Path) == "GET blob" {
				resp.Body = &slowBody{r: resp.Body, rate: rate, ctx: resp.Request.Context()}
			}
			return nil
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Host = ln.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p.mu.Lock()
		p.counts[Kind(req.Method, req.URL.Path)]++
		p.mu.Unlock()
		rp.ServeHTTP(w, req)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	removeImagesAtEnd(t, p.Host)
	return p
}

// Kind names a registry request: "GET /v2/" (the ping), "HEAD manifest",
// "GET manifest", "GET blob", or "METHOD other".
func Kind(method, path string) string {
	switch {
	case path == "/v2/" || path == "/v2":
		return method + " /v2/"
	case strings.Contains(path, "/manifests/"):
		return method + " manifest"
	case strings.Contains(path, "/blobs/"):
		return method + " blob"
	}
	return method + " other"
}

// Counts are the requests seen so far by Kind; Reset starts again.
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

func (p *Proxy) Reset() {
	p.mu.Lock()
	p.counts = map[string]int{}
	p.mu.Unlock()
}

// SlowBlobs limits each blob download to bytesPerSecond (0: no limit).
func (p *Proxy) SlowBlobs(bytesPerSecond int64) {
	p.mu.Lock()
	p.rate = bytesPerSecond
	p.mu.Unlock()
}

func (p *Proxy) blobRate() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rate
}

// slowBody hands out at most rate bytes per second.
type slowBody struct {
	r    io.ReadCloser
	rate int64
	ctx  context.Context
}

func (s *slowBody) Read(b []byte) (int, error) {
	chunk := s.rate / 10
	if chunk < 1 {
		chunk = 1
	}
	if int64(len(b)) > chunk {
		b = b[:chunk]
	}
	n, err := s.r.Read(b)
	select {
	case <-time.After(time.Duration(int64(n) * int64(time.Second) / s.rate)):
	case <-s.ctx.Done():
		return n, s.ctx.Err()
	}
	return n, err
}

func (s *slowBody) Close() error { return s.r.Close() }
