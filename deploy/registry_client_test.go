package deploy

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/moby/moby/api/types/registry"
)

// fakeRegistry answers manifest HEADs for shop/web:stable behind basic or
// bearer auth, counting requests.
type fakeRegistry struct {
	mu     sync.Mutex
	heads  int
	tokens int
	bearer bool
	srv    *httptest.Server
}

const fakeDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/token" {
		f.tokens++
		if u, p, ok := r.BasicAuth(); !ok || u != "deployer" || p != "pw" || r.URL.Query().Get("scope") != "repository:shop/web:pull" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"token":"tok","expires_in":300}`))
		return
	}
	if r.Method != http.MethodHead {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	f.heads++
	ok := false
	if f.bearer {
		ok = r.Header.Get("Authorization") == "Bearer tok"
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+f.srv.URL+`/token",service="fake, registry"`)
		}
	} else {
		u, p, has := r.BasicAuth()
		ok = has && u == "deployer" && p == "pw"
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="fake"`)
		}
	}
	switch {
	case !ok:
		w.WriteHeader(http.StatusUnauthorized)
	case r.URL.Path != "/v2/shop/web/manifests/stable":
		w.WriteHeader(http.StatusNotFound)
	case !strings.Contains(r.Header.Get("Accept"), "application/vnd.oci.image.index.v1+json"):
		w.WriteHeader(http.StatusNotAcceptable)
	default:
		w.Header().Set("Docker-Content-Digest", fakeDigest)
	}
}

func (f *fakeRegistry) counts() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.heads, f.tokens
}

// TestRegistryClientOneHeadPerCheck: after the first check has learned
// the auth scheme (and, for bearer, a token), each check is one HEAD; the
// CA comes from certs.d/HOST/ca.crt; without it the check is left to the
// engine; a wrong password and an unknown tag are the registry's answers.
func TestRegistryClientOneHeadPerCheck(t *testing.T) {
	for _, bearer := range []bool{false, true} {
		f := &fakeRegistry{bearer: bearer}
		f.srv = httptest.NewTLSServer(f)
		defer f.srv.Close()
		host := strings.TrimPrefix(f.srv.URL, "https://")
		certs := t.TempDir()
		secure := func(context.Context, string) bool { return false }
		image := host + "/shop/web:stable"
		good := registry.AuthConfig{Username: "deployer", Password: "pw"}

		c := newRegistryClient(certs, secure)
		if _, err := c.headDigest(context.Background(), image, good); !errors.Is(err, errNoAnswer) || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("bearer=%v: without the CA: %v, want a certificate error left to the engine", bearer, err)
		}
		if err := os.MkdirAll(filepath.Join(certs, host), 0o755); err != nil {
			t.Fatal(err)
		}
		ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
		if err := os.WriteFile(filepath.Join(certs, host, "ca.crt"), ca, 0o644); err != nil {
			t.Fatal(err)
		}
		h0, _ := f.counts()
		for i := range 4 {
			d, err := c.headDigest(context.Background(), image, good)
			if err != nil || d != fakeDigest {
				t.Fatalf("bearer=%v: check %d: %q %v", bearer, i, d, err)
			}
		}
		heads, tokens := f.counts()
		// The first check: a 401 that teaches the scheme, then the answer.
		if heads-h0 != 5 || (bearer && tokens != 1) || (!bearer && tokens != 0) {
			t.Errorf("bearer=%v: 4 checks made %d HEADs and %d token requests, want 5 (one per check after the first's challenge) and %d", bearer, heads-h0, tokens, map[bool]int{true: 1}[bearer])
		}

		var pe *PullError
		if _, err := c.headDigest(context.Background(), host+"/shop/web:other", good); !errors.As(err, &pe) || pe.Kind != PullNotFound {
			t.Errorf("bearer=%v: unknown tag: %v, want not found", bearer, err)
		}
		wrong := newRegistryClient(certs, secure)
		if _, err := wrong.headDigest(context.Background(), image, registry.AuthConfig{Username: "deployer", Password: "nope"}); !errors.As(err, &pe) || pe.Kind != PullAuth {
			t.Errorf("bearer=%v: wrong password: %v, want an auth failure", bearer, err)
		}
	}
}

func TestParseChallenge(t *testing.T) {
	kind, p := parseChallenge(`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a/b:pull,push"`)
	if kind != "bearer" || p["realm"] != "https://auth.docker.io/token" || p["service"] != "registry.docker.io" || p["scope"] != "repository:a/b:pull,push" {
		t.Errorf("got %q %v", kind, p)
	}
	if kind, p := parseChallenge(`Basic realm=plain`); kind != "basic" || p["realm"] != "plain" {
		t.Errorf("got %q %v", kind, p)
	}
	if kind, _ := parseChallenge(``); kind != "" {
		t.Errorf("empty challenge: %q", kind)
	}
}

// FuzzParseChallenge: any header parses without panicking, and a
// parameter it reports came from the header.
func FuzzParseChallenge(f *testing.F) {
	f.Add(`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a/b:pull"`)
	f.Add(`Basic realm=x`)
	f.Add(`Bearer realm="unterminated`)
	f.Add(`Bearer ,,=,"=`)
	f.Fuzz(func(t *testing.T, h string) {
		_, params := parseChallenge(h)
		for _, v := range params {
			if !strings.Contains(h, v) {
				t.Fatalf("%q: value %q not in the header", h, v)
			}
		}
	})
}
