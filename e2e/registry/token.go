package registry

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TokenFront puts a Registry behind bearer-token auth, as Docker Hub,
// GitLab or Harbor put theirs: a plain-HTTP front on loopback that wants
// a token, and a token server that trades the registry's user and
// password for one (without credentials it gives an anonymous token that
// may pull nothing). The token server is on the front's own origin, or
// on another address. The front forwards what a good token may do to the
// Registry with the Registry's credentials. Images are pulled through it
// as TokenFront.Host/repo:tag.
type TokenFront struct {
	// Host is "127.0.0.1:PORT", as in image names.
	Host string
	// Realm is the token server's URL, as the challenge names it.
	Realm string

	mu       sync.Mutex
	tokens   map[string]bool // issued token → may pull
	requests []TokenRequest
}

// TokenRequest is one request the token server had.
type TokenRequest struct {
	UserAgent   string
	Credentials bool // it carried an Authorization header
}

// StartTokenFront starts a token front to r, stopped when the test ends.
// tokenIP "" serves the token server on the front's own origin (/token);
// an address ("127.0.0.2") serves it there, on another host.
func (r *Registry) StartTokenFront(t testing.TB, tokenIP string) *TokenFront {
	t.Helper()
	f := &TokenFront{tokens: map[string]bool{}}
	target := &url.URL{Scheme: "http", Host: r.Host}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = r.Host
		pr.Out.SetBasicAuth(r.User, r.Password)
	}}
	front := serve(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if tokenIP == "" && req.URL.Path == "/token" {
			f.token(w, req, r)
			return
		}
		if !f.mayPull(req.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+f.Realm+`",service="driftless-e2e"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	f.Host = front
	removeImagesAtEnd(t, front)
	f.Realm = "http://" + front + "/token"
	if tokenIP != "" {
		f.Realm = "http://" + serve(t, tokenIP, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			f.token(w, req, r)
		})) + "/token"
	}
	return f
}

func serve(t testing.TB, ip string, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

func (f *TokenFront) token(w http.ResponseWriter, req *http.Request, r *Registry) {
	user, pass, ok := req.BasicAuth()
	has := req.Header.Get("Authorization") != ""
	f.mu.Lock()
	f.requests = append(f.requests, TokenRequest{UserAgent: req.UserAgent(), Credentials: has})
	f.mu.Unlock()
	if has && (!ok || user != r.User || pass != r.Password) {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	tok := hex.EncodeToString(b)
	f.mu.Lock()
	f.tokens[tok] = has
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"token": tok, "access_token": tok, "expires_in": 300})
}

func (f *TokenFront) mayPull(authorization string) bool {
	tok, ok := strings.CutPrefix(authorization, "Bearer ")
	f.mu.Lock()
	defer f.mu.Unlock()
	return ok && f.tokens[tok]
}

// Requests are the token server's requests so far.
func (f *TokenFront) Requests() []TokenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]TokenRequest(nil), f.requests...)
}
