package gitsource_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/gitsource"
)

// requestLog records the requests a proxy in front of a smart HTTP Git
// server passes on.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.reqs
	l.reqs = nil
	return out
}

// A poll of a ref that has not moved costs one round trip to the Git
// server (the ref advertisement), with no upload-pack negotiation: a
// pass that finds nothing new is cheap for the server too.
func TestUnchangedRefIsOneRoundTrip(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	repo.WriteFile("web.yaml", "v1")
	repo.Commit("v1")
	backend, err := url.Parse(gitserver.StartHTTP(t, base, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	var log requestLog
	proxy := httputil.NewSingleHostReverseProxy(backend)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.mu.Lock()
		log.reqs = append(log.reqs, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		log.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	s := newSource(t, gitsource.Config{URL: repo.URL(srv.URL), Branch: "main"})
	fetch(t, s)
	if got := log.take(); len(got) < 2 {
		t.Fatalf("first fetch made requests %q, want the advertisement and a pack", got)
	}
	for range 3 {
		if res := fetch(t, s); res.Changed {
			t.Fatalf("unchanged branch reported as changed")
		}
		want := []string{"GET /app.git/info/refs?service=git-upload-pack"}
		if got := log.take(); !slices.Equal(got, want) {
			t.Fatalf("poll of an unchanged ref made requests %q, want %q", got, want)
		}
	}
	repo.WriteFile("web.yaml", "v2")
	repo.Commit("v2")
	if res := fetch(t, s); !res.Changed {
		t.Fatalf("new commit not seen")
	}
	if got := log.take(); len(got) != 2 {
		t.Errorf("fetch of a new commit made requests %q, want the advertisement and one upload-pack", got)
	}
}

// Over git:// the same poll is one connection on which the client sends
// its request, reads the advertisement and hangs up: no "want" line, so no
// negotiation and no pack.
func TestUnchangedRefIsOneRoundTripOverGitDaemon(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	repo.WriteFile("web.yaml", "v1")
	repo.Commit("v1")
	daemon := strings.TrimPrefix(gitserver.StartDaemon(t, base), "git://")
	p := startRecordingProxy(t, daemon)

	s := newSource(t, gitsource.Config{URL: repo.URL("git://" + p.addr), Branch: "main"})
	fetch(t, s)
	if sent := p.take(); len(sent) != 1 || !strings.Contains(sent[0], "want ") {
		t.Fatalf("first fetch sent %q, want one connection asking for the head", sent)
	}
	for range 3 {
		fetch(t, s)
		sent := p.take()
		if len(sent) != 1 || strings.Contains(sent[0], "want ") {
			t.Fatalf("poll of an unchanged ref sent %q on %d connection(s), want one connection without a want", sent, len(sent))
		}
	}
}

// recordingProxy forwards TCP connections to a backend and keeps what
// each client sent.
type recordingProxy struct {
	addr string
	mu   sync.Mutex
	sent []*bytes.Buffer
	wg   sync.WaitGroup
}

func startRecordingProxy(t *testing.T, backend string) *recordingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &recordingProxy{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", backend)
			if err != nil {
				c.Close()
				continue
			}
			var buf bytes.Buffer
			p.mu.Lock()
			p.sent = append(p.sent, &buf)
			p.wg.Add(1)
			p.mu.Unlock()
			go func() { io.Copy(c, b); c.Close() }()
			go func() {
				defer p.wg.Done()
				io.Copy(io.MultiWriter(b, &buf), c)
				b.Close()
			}()
		}
	}()
	return p
}

// take waits for the connections so far to end and returns what each
// client sent.
func (p *recordingProxy) take() []string {
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, b := range p.sent {
		out = append(out, b.String())
	}
	p.sent = nil
	return out
}
