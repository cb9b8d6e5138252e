package registry

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"

	"golang.org/x/net/publicsuffix"
)

// A tag check asks the registry for the tag's digest with one HEAD of the
// manifest, as `docker buildx imagetools inspect` or crane do. The engine's
// GET /distribution/{image}/json costs four requests (a ping, a HEAD, the
// manifest and the config blob), so driftless asks the registry itself and
// keeps what it learns: the scheme, the auth scheme, bearer tokens until
// they expire. It trusts registries as the engine does: the system roots
// plus /etc/docker/certs.d/HOST[:PORT]/ (*.crt CAs, *.cert/*.key client
// certificates), read again when the directory changes; registries in the
// engine's insecure ranges are not verified and may answer over HTTP.

// DefaultCertsDir is where the engine, and driftless, find a registry's CA.
const DefaultCertsDir = "/etc/docker/certs.d"

// manifestTypes are the media types a HEAD accepts: the tag's own
// descriptor (an index for a multi-platform image), as the engine asks.
var manifestTypes = []string{
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.docker.distribution.manifest.v2+json",
}

// errNoAnswer: the registry could not be asked here (no digest header, an
// auth scheme we do not speak, no route from the agent): ask the engine.
var ErrNoAnswer = errors.New("no direct answer from the registry")

type Client struct {
	certsDir string
	// insecure says whether the engine lets host go unverified or over
	// HTTP.
	insecure func(ctx context.Context, host string) bool
	// dial replaces the network's dial when set: tests resolve registry
	// names to loopback with it.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu      sync.Mutex
	clients map[string]*hostClient
	// tokens are bearer tokens by registry, scope and credential
	// identity: one app's token never answers another app's check.
	tokens map[tokenKey]bearerToken
	// pullable are credential identity + image digest pairs the registry
	// let pull (see pullaccess.go).
	pullable map[string]bool
}

// tokenKey names a cached bearer token. identity is credentialIdentity's:
// the registry, the username and a hash of the secret.
type tokenKey struct{ host, scope, identity string }

type hostClient struct {
	http   *http.Client
	stamp  string // the certs directory's state when http was made
	scheme string // "https", or "http" once an insecure registry answered so
	basic  bool   // the registry asked for basic auth: send it up front
}

type bearerToken struct {
	token   string
	expires time.Time
}

func NewClient(certsDir string, insecure func(context.Context, string) bool) *Client {
	return &Client{certsDir: certsDir, insecure: insecure, clients: map[string]*hostClient{}, tokens: map[tokenKey]bearerToken{}, pullable: map[string]bool{}}
}

func (c *Client) MayPull(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pullable[key]
}

func (c *Client) RememberPull(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pullable[key] = true
}

// credentialIdentity names the credentials ac holds for host without
// holding the secret: the registry, the username, and a hash of the
// password and tokens. Anonymous is an identity of its own.
func CredentialIdentity(host string, ac registry.AuthConfig) string {
	if !hasCredentials(ac) {
		return normalizeRegistry(host) + "\x00anonymous"
	}
	h := sha256.New()
	for _, s := range []string{ac.Password, ac.RegistryToken, ac.IdentityToken} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return normalizeRegistry(host) + "\x00user " + ac.Username + "\x00" + hex.EncodeToString(h.Sum(nil)[:16])
}

func hasCredentials(ac registry.AuthConfig) bool {
	return ac.Username != "" || ac.Password != "" || ac.RegistryToken != "" || ac.IdentityToken != ""
}

// apiHost is where a registry host's API answers: Docker Hub's is
// registry-1.docker.io.
func apiHost(host string) string {
	if host == dockerHubHost {
		return "registry-1.docker.io"
	}
	return host
}

// headDigest returns the digest the image's tag (or digest) names now, or
// a *PullError for an answer from the registry (auth, not found), or an
// error wrapping errNoAnswer when the engine should be asked instead.
func (c *Client) HeadDigest(ctx context.Context, image string, ac registry.AuthConfig) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", fmt.Errorf("invalid image reference %q: %w", image, err)
	}
	var ref string
	if d, ok := named.(reference.Digested); ok {
		ref = d.Digest().String()
	} else if tagged, ok := reference.TagNameOnly(named).(reference.NamedTagged); ok {
		ref = tagged.Tag()
	} else {
		return "", fmt.Errorf("%w: %s names no tag", ErrNoAnswer, image)
	}
	host := reference.Domain(named)
	repo := reference.Path(named)
	hc, err := c.client(ctx, host)
	if err != nil {
		return "", err
	}
	key := tokenKey{host: apiHost(host), scope: "repository:" + repo + ":pull", identity: CredentialIdentity(host, ac)}
	withheld := "" // why the token server got no credentials, if it did not
	for attempt := 0; attempt < 2; attempt++ {
		resp, err := c.head(ctx, hc, host, repo, ref, key, ac)
		if err != nil {
			return "", err
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			d := resp.Header.Get("Docker-Content-Digest")
			if d == "" {
				return "", fmt.Errorf("%w: %s answered without Docker-Content-Digest", ErrNoAnswer, host)
			}
			return d, nil
		case http.StatusUnauthorized:
			if attempt > 0 {
				return "", authFailure(image, host, resp.Status, withheld)
			}
			var retry bool
			retry, withheld, err = c.learn(ctx, hc, host, key, resp.Header.Get("WWW-Authenticate"), ac)
			if err != nil {
				return "", err
			}
			if !retry {
				return "", authFailure(image, host, resp.Status, withheld)
			}
		case http.StatusForbidden:
			return "", &PullError{Image: image, Registry: host, Kind: PullAuth, Err: fmt.Errorf("HEAD manifest: %s", resp.Status)}
		case http.StatusNotFound:
			return "", &PullError{Image: image, Registry: host, Kind: PullNotFound, Err: fmt.Errorf("HEAD manifest: %s (manifest unknown)", resp.Status)}
		default:
			return "", fmt.Errorf("%w: HEAD manifest: %s", ErrNoAnswer, resp.Status)
		}
	}
	return "", fmt.Errorf("%w: %s", ErrNoAnswer, host)
}

// authFailure is the registry's refusal, saying why when the credentials
// were withheld from its token server.
func authFailure(image, host, status, withheld string) error {
	err := fmt.Errorf("HEAD manifest: %s", status)
	if withheld != "" {
		err = fmt.Errorf("HEAD manifest: %s: %s", status, withheld)
	}
	return &PullError{Image: image, Registry: host, Kind: PullAuth, Err: err}
}

// head sends the HEAD with what is known of the registry's auth, falling
// back to plain HTTP once for an insecure registry.
func (c *Client) head(ctx context.Context, hc *hostClient, host, repo, ref string, key tokenKey, ac registry.AuthConfig) (*http.Response, error) {
	c.mu.Lock()
	scheme := hc.scheme
	c.mu.Unlock()
	do := func(scheme string) (*http.Response, error) {
		u := url.URL{Scheme: scheme, Host: apiHost(host), Path: "/v2/" + repo + "/manifests/" + ref}
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, u.String(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", strings.Join(manifestTypes, ", "))
		req.Header.Set("User-Agent", userAgent)
		c.authorize(req, hc, key, ac)
		return hc.http.Do(req)
	}
	resp, err := do(scheme)
	if err != nil && scheme == "https" && c.insecure(ctx, host) {
		if r2, err2 := do("http"); err2 == nil {
			c.mu.Lock()
			hc.scheme = "http"
			c.mu.Unlock()
			return r2, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoAnswer, err)
	}
	return resp, nil
}

// userAgent names driftless's own registry requests, apart from the
// engine's.
const userAgent = "driftless"

func (c *Client) authorize(req *http.Request, hc *hostClient, key tokenKey, ac registry.AuthConfig) {
	c.mu.Lock()
	tok, ok := c.tokens[key]
	basic := hc.basic
	c.mu.Unlock()
	switch {
	case ok && time.Now().Before(tok.expires):
		req.Header.Set("Authorization", "Bearer "+tok.token)
	case ac.RegistryToken != "":
		req.Header.Set("Authorization", "Bearer "+ac.RegistryToken)
	case basic && ac.Username != "":
		req.SetBasicAuth(ac.Username, ac.Password)
	}
}

// learn reads a 401's challenge: Basic is sent up front from now on; a
// Bearer realm gives a token for the scope, kept under the credentials'
// identity until it expires. It says whether a retry can succeed and why
// the credentials were withheld from the token server (if they were), or
// returns an errNoAnswer for the engine to take over.
func (c *Client) learn(ctx context.Context, hc *hostClient, host string, key tokenKey, challenge string, ac registry.AuthConfig) (bool, string, error) {
	kind, params := parseChallenge(challenge)
	switch kind {
	case "basic":
		c.mu.Lock()
		hc.basic = true
		c.mu.Unlock()
		return ac.Username != "", "", nil
	case "bearer":
		if params["realm"] == "" {
			return false, "", nil
		}
		if ac.IdentityToken != "" {
			return false, "", fmt.Errorf("%w: an OAuth identity token is exchanged by the engine", ErrNoAnswer)
		}
		realm, err := url.Parse(params["realm"])
		if err != nil {
			return false, "", nil
		}
		c.mu.Lock()
		regScheme := hc.scheme
		c.mu.Unlock()
		send, withheld := ac, ""
		if why := credentialsWithheld(regScheme, apiHost(host), realm); why != "" && hasCredentials(ac) {
			// As Docker does without credentials: ask for an anonymous
			// token, which is enough for a public image.
			send = registry.AuthConfig{}
			withheld = fmt.Sprintf("no credentials were sent to the token server %s, because %s (driftless sends registry credentials only to the registry's own host or domain, and over HTTPS to a TLS registry)", redactURL(realm), why)
		}
		tok, err := c.fetchToken(ctx, hc, realm, params["service"], key.scope, send)
		if err != nil {
			return false, withheld, nil
		}
		c.storeToken(key, tok)
		return true, withheld, nil
	}
	return false, "", nil
}

// storeToken caches tok, dropping expired tokens on the way so the cache
// does not grow with credentials that are gone.
func (c *Client) storeToken(key tokenKey, tok bearerToken) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, t := range c.tokens {
		if now.After(t.expires) {
			delete(c.tokens, k)
		}
	}
	c.tokens[key] = tok
}

// credentialsWithheld says why registry credentials may not go to u, or
// "" when they may. They go to the registry's own origin (host and port),
// or to a host name of the registry's own domain (its eTLD+1 in the public
// suffix list: Docker Hub's auth.docker.io, GitLab's gitlab.example.com
// for registry.example.com), and never over plain HTTP when the registry
// is spoken to over TLS. An address or a single-label name matches only
// itself, port included. regScheme is how the registry answers,
// regHost its API host[:port].
func credentialsWithheld(regScheme, regHost string, u *url.URL) string {
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && regScheme == "http":
	case u.Scheme == "http":
		return "it is plain HTTP and the registry is spoken to over TLS"
	default:
		return fmt.Sprintf("its scheme %q is not HTTPS", u.Scheme)
	}
	if canonicalAddr(regHost, regScheme) == canonicalAddr(u.Host, u.Scheme) {
		return ""
	}
	if sameSite(hostOnly(regHost), u.Hostname()) {
		return ""
	}
	return "it is on another host than the registry " + regHost
}

// canonicalAddr is host:port with the scheme's default port filled in.
func canonicalAddr(hostport, scheme string) string {
	h, p, err := net.SplitHostPort(hostport)
	if err != nil {
		h, p = strings.Trim(hostport, "[]"), map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return net.JoinHostPort(strings.ToLower(h), p)
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// sameSite: both are DNS names under one registrable domain.
func sameSite(a, b string) bool {
	if _, err := netip.ParseAddr(a); err == nil {
		return false
	}
	if _, err := netip.ParseAddr(b); err == nil {
		return false
	}
	da, err1 := publicsuffix.EffectiveTLDPlusOne(strings.ToLower(strings.TrimSuffix(a, ".")))
	db, err2 := publicsuffix.EffectiveTLDPlusOne(strings.ToLower(strings.TrimSuffix(b, ".")))
	return err1 == nil && err2 == nil && da == db
}

// redactURL is u without its query, which may carry anything.
func redactURL(u *url.URL) string {
	v := *u
	v.RawQuery, v.User = "", nil
	return v.String()
}

func (c *Client) fetchToken(ctx context.Context, hc *hostClient, realm *url.URL, service, scope string, ac registry.AuthConfig) (bearerToken, error) {
	u := *realm
	q := u.Query()
	if service != "" {
		q.Set("service", service)
	}
	q.Set("scope", scope)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return bearerToken{}, err
	}
	req.Header.Set("User-Agent", userAgent)
	if ac.Username != "" {
		req.SetBasicAuth(ac.Username, ac.Password)
	}
	resp, err := hc.http.Do(req)
	if err != nil {
		return bearerToken{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return bearerToken{}, fmt.Errorf("token: %s", resp.Status)
	}
	var body struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return bearerToken{}, err
	}
	tok := body.Token
	if tok == "" {
		tok = body.AccessToken
	}
	if tok == "" {
		return bearerToken{}, errors.New("token: empty")
	}
	// 60 s is the default lifetime of the token spec; a little early is
	// safer than a 401.
	life := time.Duration(max(body.ExpiresIn, 60)) * time.Second
	return bearerToken{token: tok, expires: time.Now().Add(life - 10*time.Second)}, nil
}

// parseChallenge reads `Bearer realm="…",service="…"` or `Basic realm=…`.
func parseChallenge(h string) (string, map[string]string) {
	kind, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	params := map[string]string{}
	for rest != "" {
		var part string
		// Values are quoted and may hold commas.
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		k = strings.ToLower(strings.TrimSpace(strings.TrimLeft(k, ", ")))
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, `"`) {
			end := strings.Index(v[1:], `"`)
			if end < 0 {
				break
			}
			part, rest = v[1:end+1], v[end+2:]
		} else {
			part, rest, _ = strings.Cut(v, ",")
		}
		params[k] = part
	}
	return strings.ToLower(kind), params
}

// client is host's HTTP client, made again when its certs directory
// changed (the engine reads it at each pull; so does this).
func (c *Client) client(ctx context.Context, host string) (*hostClient, error) {
	dir := filepath.Join(c.certsDir, host)
	stamp := dirStamp(dir)
	c.mu.Lock()
	hc := c.clients[host]
	c.mu.Unlock()
	if hc != nil && hc.stamp == stamp {
		return hc, nil
	}
	cfg, err := tlsConfigFor(dir, c.insecure(ctx, host))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoAnswer, err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	if c.dial != nil {
		tr.DialContext = c.dial
	}
	hc = &hostClient{http: &http.Client{Transport: tr, Timeout: 30 * time.Second, CheckRedirect: keepCredentialsHome}, stamp: stamp, scheme: "https"}
	c.mu.Lock()
	c.clients[host] = hc
	c.mu.Unlock()
	return hc, nil
}

// keepCredentialsHome follows a redirect (as the default policy does, up
// to 10) but drops the Authorization header where credentialsWithheld
// would not have sent it from the first request's origin: a registry or
// token server cannot bounce them to another host or to plain HTTP.
func keepCredentialsHome(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if credentialsWithheld(via[0].URL.Scheme, via[0].URL.Host, req.URL) != "" {
		req.Header.Del("Authorization")
	}
	return nil
}

// dirStamp changes when a file in dir is added, removed or rewritten.
func dirStamp(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d;", e.Name(), info.Size(), info.ModTime().UnixNano())
		}
	}
	return b.String()
}

// tlsConfigFor trusts the system roots plus dir's *.crt, and presents
// dir's *.cert/*.key pair, as the engine does for a registry.
func tlsConfigFor(dir string, insecure bool) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // the engine's own rule for insecure registries
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return nil, fmt.Errorf("registry certificates: %w", err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case strings.HasSuffix(e.Name(), ".crt"):
			if cfg.RootCAs == nil {
				if cfg.RootCAs, err = x509.SystemCertPool(); err != nil || cfg.RootCAs == nil {
					cfg.RootCAs = x509.NewCertPool()
				}
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("registry certificates: %w", err)
			}
			if !cfg.RootCAs.AppendCertsFromPEM(data) {
				return nil, fmt.Errorf("registry certificates: %s holds no PEM certificate", p)
			}
		case strings.HasSuffix(e.Name(), ".cert"):
			key := strings.TrimSuffix(p, ".cert") + ".key"
			pair, err := tls.LoadX509KeyPair(p, key)
			if err != nil {
				return nil, fmt.Errorf("registry certificates: %s with %s: %w", p, key, err)
			}
			cfg.Certificates = append(cfg.Certificates, pair)
		}
	}
	return cfg, nil
}
