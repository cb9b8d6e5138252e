package registry

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
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

		c := NewClient(certs, secure)
		if _, err := c.HeadDigest(context.Background(), image, good); !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), "certificate") {
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
			d, err := c.HeadDigest(context.Background(), image, good)
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
		if _, err := c.HeadDigest(context.Background(), host+"/shop/web:other", good); !errors.As(err, &pe) || pe.Kind != PullNotFound {
			t.Errorf("bearer=%v: unknown tag: %v, want not found", bearer, err)
		}
		wrong := NewClient(certs, secure)
		if _, err := wrong.HeadDigest(context.Background(), image, registry.AuthConfig{Username: "deployer", Password: "nope"}); !errors.As(err, &pe) || pe.Kind != PullAuth {
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

// tokenServer gives "good" for deployer/pw, "anon" to a request without
// credentials, and a 401 otherwise; it records whether each request
// carried credentials.
type tokenServer struct {
	mu       sync.Mutex
	requests []string // "credentials" or "anonymous"
}

func (ts *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u, p, ok := r.BasicAuth()
	ts.mu.Lock()
	if r.Header.Get("Authorization") != "" {
		ts.requests = append(ts.requests, "credentials")
	} else {
		ts.requests = append(ts.requests, "anonymous")
	}
	ts.mu.Unlock()
	switch {
	case r.Header.Get("Authorization") == "":
		_, _ = w.Write([]byte(`{"token":"anon"}`))
	case ok && u == "deployer" && p == "pw":
		_, _ = w.Write([]byte(`{"token":"good"}`))
	default:
		w.WriteHeader(http.StatusUnauthorized)
	}
}

func (ts *tokenServer) seen() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.requests...)
}

// bearerRegistry answers manifest HEADs given the "good" token (or "anon"
// when public), and challenges with realm otherwise; its own /token is
// own's.
type bearerRegistry struct {
	realm  string
	public bool
	own    *tokenServer
}

func (b *bearerRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/token" && b.own != nil {
		b.own.ServeHTTP(w, r)
		return
	}
	switch auth := r.Header.Get("Authorization"); {
	case auth == "Bearer good", auth == "Bearer anon" && b.public:
		w.Header().Set("Docker-Content-Digest", fakeDigest)
	default:
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+b.realm+`",service="fake"`)
		w.WriteHeader(http.StatusUnauthorized)
	}
}

// loopbackNames dials every name on 127.0.0.1 at the port asked, so tests
// can give servers names of one domain or of others.
func loopbackNames(ctx context.Context, network, addr string) (net.Conn, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
}

func port(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// TestRegistryTokenPerCredential: a bearer token is kept per credential
// identity. Once an app with the right password has a token, an app with
// a wrong one, or none, is refused rather than answered with it; the
// right one keeps its token (no new token request).
func TestRegistryTokenPerCredential(t *testing.T) {
	ts := &tokenServer{}
	reg := &bearerRegistry{own: ts}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	reg.realm = srv.URL + "/token"
	host := strings.TrimPrefix(srv.URL, "http://")
	c := NewClient(t.TempDir(), func(context.Context, string) bool { return true })
	image := host + "/shop/web:stable"
	good := registry.AuthConfig{Username: "deployer", Password: "pw"}
	ctx := context.Background()
	if d, err := c.HeadDigest(ctx, image, good); err != nil || d != fakeDigest {
		t.Fatalf("right password: %q %v", d, err)
	}
	var pe *PullError
	for name, ac := range map[string]registry.AuthConfig{
		"wrong password": {Username: "deployer", Password: "nope"},
		"other user":     {Username: "intruder", Password: "pw"},
		"anonymous":      {},
	} {
		if d, err := c.HeadDigest(ctx, image, ac); !errors.As(err, &pe) || pe.Kind != PullAuth {
			t.Errorf("%s after the right password's token: %q %v, want an authentication failure", name, d, err)
		}
	}
	before := len(ts.seen())
	if d, err := c.HeadDigest(ctx, image, good); err != nil || d != fakeDigest {
		t.Fatalf("right password again: %q %v", d, err)
	}
	if n := len(ts.seen()) - before; n != 0 {
		t.Errorf("the right password's cached token was not reused: %d new token requests", n)
	}
	if a, b := CredentialIdentity(host, good), CredentialIdentity(host, registry.AuthConfig{Username: "deployer", Password: "pw2"}); a == b || strings.Contains(a, "pw") {
		t.Errorf("identities %q and %q: must differ by secret and not hold it", a, b)
	}
}

// TestRegistryRealmCredentials: credentials go to a token server on the
// registry's own origin or domain only, and never over plain HTTP for a
// TLS registry; elsewhere the token is asked for anonymously (as Docker
// does without credentials), which answers for a public image, and a
// private one is an authentication failure that says why.
func TestRegistryRealmCredentials(t *testing.T) {
	ts := &tokenServer{}
	tokens := httptest.NewServer(ts)
	defer tokens.Close()
	tp := port(t, tokens.URL)
	good := registry.AuthConfig{Username: "deployer", Password: "pw"}
	cases := []struct {
		name      string
		tls       bool
		regName   string // "" for the server's 127.0.0.1:port
		realm     string // %s is the token server's port
		public    bool
		wantCreds bool
		wantWhy   string // in the failure, "" for success
	}{
		{name: "same domain", regName: "registry.example.com", realm: "http://auth.example.com:%s/token", wantCreds: true},
		{name: "another port of the same address", realm: "http://127.0.0.1:%s/token", wantWhy: "on another host than the registry 127.0.0.1:"},
		{name: "another domain", regName: "registry.example.com", realm: "http://tokens.example.org:%s/token", wantWhy: "on another host"},
		{name: "another domain, public image", regName: "registry.example.com", realm: "http://tokens.example.org:%s/token", public: true},
		{name: "plain HTTP for a TLS registry", tls: true, regName: "example.com", realm: "http://auth.example.com:%s/token", wantWhy: "plain HTTP"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := &bearerRegistry{realm: fmt.Sprintf(tc.realm, tp), public: tc.public}
			var srv *httptest.Server
			if tc.tls {
				srv = httptest.NewTLSServer(reg)
			} else {
				srv = httptest.NewServer(reg)
			}
			defer srv.Close()
			host := srv.Listener.Addr().String()
			if tc.regName != "" {
				host = net.JoinHostPort(tc.regName, port(t, srv.URL))
			}
			certs := t.TempDir()
			if tc.tls {
				if err := os.MkdirAll(filepath.Join(certs, host), 0o755); err != nil {
					t.Fatal(err)
				}
				ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
				if err := os.WriteFile(filepath.Join(certs, host, "ca.crt"), ca, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c := NewClient(certs, func(context.Context, string) bool { return !tc.tls })
			c.dial = loopbackNames
			before := len(ts.seen())
			d, err := c.HeadDigest(context.Background(), host+"/shop/web:stable", good)
			seen := ts.seen()[before:]
			if len(seen) != 1 || (seen[0] == "credentials") != tc.wantCreds {
				t.Errorf("the token server saw %v, want one request, with credentials: %v", seen, tc.wantCreds)
			}
			var pe *PullError
			switch {
			case tc.wantWhy == "" && (err != nil || d != fakeDigest):
				t.Errorf("got %q %v, want the digest", d, err)
			case tc.wantWhy != "" && (!errors.As(err, &pe) || pe.Kind != PullAuth || !strings.Contains(err.Error(), tc.wantWhy) || !strings.Contains(err.Error(), "no credentials were sent to the token server")):
				t.Errorf("got %q %v, want an authentication failure saying %q", d, err, tc.wantWhy)
			}
		})
	}
}

// TestCredentialsWithheld: where registry credentials may go.
func TestCredentialsWithheld(t *testing.T) {
	for _, tc := range []struct {
		scheme, reg, realm string
		ok                 bool
	}{
		{"https", "registry-1.docker.io", "https://auth.docker.io/token", true},
		{"https", "registry.gitlab.com", "https://gitlab.com/jwt/auth", true},
		{"https", "ghcr.io", "https://ghcr.io/token", true},
		{"https", "reg.example.com", "https://reg.example.com:443/token", true},
		{"https", "reg.example.com:5000", "https://reg.example.com:5000/token", true},
		{"http", "127.0.0.1:5000", "http://127.0.0.1:5000/token", true},
		{"https", "reg.example.com", "http://reg.example.com/token", false},
		{"https", "reg.example.com", "https://evil.example.org/token", false},
		{"https", "a.github.io", "https://b.github.io/token", false}, // a public suffix of its own
		{"https", "reg.example.co.uk", "https://evil.co.uk/token", false},
		{"https", "10.0.0.5:5000", "https://10.0.0.5:5001/token", false},
		{"https", "10.0.0.5:5000", "https://10.0.0.6:5000/token", false},
		{"https", "localhost:5000", "https://localhost:5001/token", false},
		{"https", "reg.example.com", "ftp://reg.example.com/token", false},
	} {
		u, err := url.Parse(tc.realm)
		if err != nil {
			t.Fatal(err)
		}
		if why := credentialsWithheld(tc.scheme, tc.reg, u); (why == "") != tc.ok {
			t.Errorf("registry %s://%s, realm %s: withheld %q, want allowed %v", tc.scheme, tc.reg, tc.realm, why, tc.ok)
		}
	}
}

// TestRegistryRedirectDropsCredentials: a registry that redirects a
// manifest HEAD to another port of its address, or down to plain HTTP,
// does not take the credentials along.
func TestRegistryRedirectDropsCredentials(t *testing.T) {
	var mu sync.Mutex
	var got []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Docker-Content-Digest", fakeDigest)
	}))
	defer target.Close()
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer reg.Close()
	c := NewClient(t.TempDir(), func(context.Context, string) bool { return true })
	host := strings.TrimPrefix(reg.URL, "http://")
	if d, err := c.HeadDigest(context.Background(), host+"/shop/web:stable", registry.AuthConfig{Username: "deployer", Password: "pw"}); err != nil || d != fakeDigest {
		t.Fatalf("got %q %v", d, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "" {
		t.Errorf("the redirect target saw Authorization %q, want none", got)
	}
}
