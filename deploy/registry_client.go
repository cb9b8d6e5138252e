package deploy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
	"github.com/moby/moby/client"
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
var errNoAnswer = errors.New("no direct answer from the registry")

type registryClient struct {
	certsDir string
	// insecure says whether the engine lets host go unverified or over
	// HTTP.
	insecure func(ctx context.Context, host string) bool

	mu      sync.Mutex
	clients map[string]*hostClient
	tokens  map[string]bearerToken // "host scope" → token
}

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

func newRegistryClient(certsDir string, insecure func(context.Context, string) bool) *registryClient {
	return &registryClient{certsDir: certsDir, insecure: insecure, clients: map[string]*hostClient{}, tokens: map[string]bearerToken{}}
}

// apiHost is where a registry host's API answers: Docker Hub's is
// registry-1.docker.io.
func apiHost(host string) string {
	if host == dockerHubHost {
		return "registry-1.docker.io"
	}
	return host
}

// headDigest returns the digest the image's tag names now, or a
// *PullError for an answer from the registry (auth, not found), or an
// error wrapping errNoAnswer when the engine should be asked instead.
func (c *registryClient) headDigest(ctx context.Context, image string, ac registry.AuthConfig) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", fmt.Errorf("invalid image reference %q: %w", image, err)
	}
	tagged, ok := reference.TagNameOnly(named).(reference.NamedTagged)
	if !ok {
		return "", fmt.Errorf("%w: %s names no tag", errNoAnswer, image)
	}
	host := reference.Domain(named)
	repo := reference.Path(named)
	hc, err := c.client(ctx, host)
	if err != nil {
		return "", err
	}
	scope := "repository:" + repo + ":pull"
	for attempt := 0; attempt < 2; attempt++ {
		resp, err := c.head(ctx, hc, host, repo, tagged.Tag(), scope, ac)
		if err != nil {
			return "", err
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			d := resp.Header.Get("Docker-Content-Digest")
			if d == "" {
				return "", fmt.Errorf("%w: %s answered without Docker-Content-Digest", errNoAnswer, host)
			}
			return d, nil
		case http.StatusUnauthorized:
			if attempt > 0 || !c.learn(ctx, hc, host, scope, resp.Header.Get("WWW-Authenticate"), ac) {
				return "", &PullError{Image: image, Registry: host, Kind: PullAuth, Err: fmt.Errorf("HEAD manifest: %s", resp.Status)}
			}
		case http.StatusForbidden:
			return "", &PullError{Image: image, Registry: host, Kind: PullAuth, Err: fmt.Errorf("HEAD manifest: %s", resp.Status)}
		case http.StatusNotFound:
			return "", &PullError{Image: image, Registry: host, Kind: PullNotFound, Err: fmt.Errorf("HEAD manifest: %s (manifest unknown)", resp.Status)}
		default:
			return "", fmt.Errorf("%w: HEAD manifest: %s", errNoAnswer, resp.Status)
		}
	}
	return "", fmt.Errorf("%w: %s", errNoAnswer, host)
}

// head sends the HEAD with what is known of the registry's auth, falling
// back to plain HTTP once for an insecure registry.
func (c *registryClient) head(ctx context.Context, hc *hostClient, host, repo, tag, scope string, ac registry.AuthConfig) (*http.Response, error) {
	c.mu.Lock()
	scheme := hc.scheme
	c.mu.Unlock()
	do := func(scheme string) (*http.Response, error) {
		u := url.URL{Scheme: scheme, Host: apiHost(host), Path: "/v2/" + repo + "/manifests/" + tag}
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, u.String(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", strings.Join(manifestTypes, ", "))
		c.authorize(req, hc, host, scope, ac)
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
		return nil, fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	return resp, nil
}

func (c *registryClient) authorize(req *http.Request, hc *hostClient, host, scope string, ac registry.AuthConfig) {
	c.mu.Lock()
	tok, ok := c.tokens[host+" "+scope]
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
// Bearer realm gives a token for the scope, kept until it expires. It
// says whether a retry can succeed.
func (c *registryClient) learn(ctx context.Context, hc *hostClient, host, scope, challenge string, ac registry.AuthConfig) bool {
	kind, params := parseChallenge(challenge)
	switch kind {
	case "basic":
		c.mu.Lock()
		hc.basic = true
		c.mu.Unlock()
		return ac.Username != ""
	case "bearer":
		if params["realm"] == "" || ac.IdentityToken != "" {
			return false // an OAuth refresh token: left to the engine
		}
		tok, err := c.fetchToken(ctx, hc, params["realm"], params["service"], scope, ac)
		if err != nil {
			return false
		}
		c.mu.Lock()
		c.tokens[host+" "+scope] = tok
		c.mu.Unlock()
		return true
	}
	return false
}

func (c *registryClient) fetchToken(ctx context.Context, hc *hostClient, realm, service, scope string, ac registry.AuthConfig) (bearerToken, error) {
	u, err := url.Parse(realm)
	if err != nil {
		return bearerToken{}, err
	}
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
func (c *registryClient) client(ctx context.Context, host string) (*hostClient, error) {
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
		return nil, fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	hc = &hostClient{http: &http.Client{Transport: tr, Timeout: 30 * time.Second}, stamp: stamp, scheme: "https"}
	c.mu.Lock()
	c.clients[host] = hc
	c.mu.Unlock()
	return hc, nil
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

// infoAPI is the engine's /info; *client.Client has it.
type infoAPI interface {
	Info(ctx context.Context, options client.InfoOptions) (client.SystemInfoResult, error)
}

// engineInsecure reads, once, which registries the engine treats as
// insecure (its insecure-registries: CIDRs and names); without an answer,
// the engine's default, loopback.
func (e *Engine) engineInsecure(ctx context.Context, host string) bool {
	e.insecureOnce.Do(func() {
		e.insecureCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		api, ok := e.api.(infoAPI)
		if !ok {
			return
		}
		res, err := api.Info(ctx, client.InfoOptions{})
		if err != nil || res.Info.RegistryConfig == nil {
			return
		}
		e.insecureCIDRs = res.Info.RegistryConfig.InsecureRegistryCIDRs
		e.insecureNames = map[string]bool{}
		for name, idx := range res.Info.RegistryConfig.IndexConfigs {
			if idx != nil && !idx.Secure {
				e.insecureNames[name] = true
			}
		}
	})
	if e.insecureNames[host] {
		return true
	}
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	ips := []string{h}
	if _, err := netip.ParseAddr(h); err != nil {
		ips, _ = net.DefaultResolver.LookupHost(ctx, h)
	}
	for _, s := range ips {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		for _, p := range e.insecureCIDRs {
			if p.Contains(ip.Unmap()) {
				return true
			}
		}
	}
	return false
}
