package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
)

// push is what a webhook delivery says, reduced to what matching needs.
type push struct {
	// Ping is a delivery that only checks the hook works.
	Ping bool
	// Event is set for deliveries that are not pushes; they are ignored.
	Event string
	// Repos are the URL variants of the pushed repository.
	Repos []string
	// Refs are the pushed refs (refs/heads/x, refs/tags/y); empty means the
	// sender did not say, and every app tracking the repository matches.
	Refs []string
}

// provider knows one forge's signature scheme and push payload.
type provider struct {
	name string
	// sigHeader names the header the signature arrives in, for messages.
	sigHeader string
	// signature extracts the signature (or token) from the headers; "" when
	// the request is unsigned.
	signature func(h http.Header) string
	// verify checks sig against the body under secret, in constant time.
	verify func(sig string, body []byte, secret string) bool
	parse  func(h http.Header, body []byte) (push, error)
}

func providers() []provider {
	return []provider{
		{
			name: "github", sigHeader: "X-Hub-Signature-256",
			signature: func(h http.Header) string { return h.Get("X-Hub-Signature-256") },
			verify:    verifyPrefixedHMAC, parse: parseGitHub,
		},
		{
			name: "gitlab", sigHeader: "X-Gitlab-Token",
			signature: func(h http.Header) string { return h.Get("X-Gitlab-Token") },
			verify:    func(sig string, _ []byte, secret string) bool { return equalSecret(sig, secret) },
			parse:     parseGitLab,
		},
		{
			name: "gitea", sigHeader: "X-Gitea-Signature or X-Forgejo-Signature",
			signature: func(h http.Header) string {
				if v := h.Get("X-Forgejo-Signature"); v != "" {
					return v
				}
				return h.Get("X-Gitea-Signature")
			},
			verify: verifyHexHMAC, parse: parseGitea,
		},
		{
			name: "bitbucket", sigHeader: "X-Hub-Signature",
			signature: func(h http.Header) string { return h.Get("X-Hub-Signature") },
			verify:    verifyPrefixedHMAC, parse: parseBitbucket,
		},
		{
			name: "generic", sigHeader: "X-Signature",
			signature: func(h http.Header) string { return h.Get("X-Signature") },
			verify:    verifyPrefixedHMAC, parse: parseGeneric,
		},
	}
}

func hmacSHA256(body []byte, secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return m.Sum(nil)
}

// verifyPrefixedHMAC checks "sha256=<hex>" signatures (GitHub, Bitbucket,
// generic).
func verifyPrefixedHMAC(sig string, body []byte, secret string) bool {
	hexSig, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return false
	}
	return verifyHexHMAC(hexSig, body, secret)
}

// verifyHexHMAC checks bare hex HMAC-SHA256 signatures (Gitea, Forgejo).
func verifyHexHMAC(sig string, body []byte, secret string) bool {
	got, err := hex.DecodeString(strings.TrimSpace(sig))
	if err != nil || secret == "" {
		return false
	}
	return hmac.Equal(got, hmacSHA256(body, secret))
}

// secretFor is the secret an app's webhooks are signed with.
func (s *Server) secretFor(src AppSource) string {
	if src.WebhookSecret != "" {
		return src.WebhookSecret
	}
	return s.opts.WebhookSecret
}

func (s *Server) webhook(p provider) gin.HandlerFunc {
	return func(c *gin.Context) {
		result := func(code int, res string, body gin.H) {
			s.webhooks.WithLabelValues(p.name, res).Inc()
			c.JSON(code, body)
		}
		fail := func(code int, res, msg string) {
			s.log.Warn("webhook refused", "provider", p.name, "status", code, "reason", msg, "remote", c.Request.RemoteAddr)
			result(code, res, gin.H{"error": msg})
		}

		client := clientOf(c.Request)
		body, refused := s.receiveHook(c, client)
		if refused != nil {
			fail(refused.code, refused.result, refused.msg)
			return
		}

		sources := s.opts.Sources()
		sig := p.signature(c.Request.Header)
		if sig == "" {
			fail(http.StatusUnauthorized, "unauthorized", "unsigned webhook: set the webhook secret in "+p.name+" so it sends "+p.sigHeader)
			return
		}
		secrets := s.knownSecrets(sources)
		if len(secrets) == 0 {
			fail(http.StatusUnauthorized, "unauthorized", "no webhook secret is configured: start the agent with --webhook-secret or give the app a webhook secret")
			return
		}
		if !slices.ContainsFunc(secrets, func(sec string) bool { return p.verify(sig, body, sec) }) {
			s.failures.fail(client)
			fail(http.StatusUnauthorized, "unauthorized", "signature in "+p.sigHeader+" does not match any configured webhook secret")
			return
		}

		ev, err := p.parse(c.Request.Header, body)
		if err != nil {
			fail(http.StatusBadRequest, "bad_request", "malformed "+p.name+" payload: "+err.Error())
			return
		}
		if ev.Ping {
			result(http.StatusOK, "ping", gin.H{"ok": "ping received; pushes to tracked branches will queue a sync"})
			return
		}
		if ev.Event != "" {
			result(http.StatusAccepted, "ignored", gin.H{"ignored": fmt.Sprintf("event %q is not a push", ev.Event)})
			return
		}

		sameRepo := matchRepo(sources, ev.Repos)
		if len(sameRepo) == 0 {
			result(http.StatusAccepted, "ignored", gin.H{"ignored": "no app tracks repository " + firstOr(ev.Repos, "(none given)")})
			return
		}
		// The signature must come from a secret of an app tracking this
		// repository: a secret given to one team's repo must not trigger
		// another's.
		var authorized []AppSource
		for _, src := range sameRepo {
			if sec := s.secretFor(src); sec != "" && p.verify(sig, body, sec) {
				authorized = append(authorized, src)
			}
		}
		if len(authorized) == 0 {
			fail(http.StatusUnauthorized, "unauthorized", "signature does not match the webhook secret of any app tracking "+firstOr(ev.Repos, "this repository"))
			return
		}
		var targets []string
		var follows []string
		for _, src := range authorized {
			if matchRef(src, ev.Refs) {
				targets = append(targets, src.Name)
			} else {
				follows = append(follows, trackedRef(src))
			}
		}
		if len(targets) == 0 {
			result(http.StatusAccepted, "ignored", gin.H{"ignored": fmt.Sprintf("push to %s: apps tracking this repository follow %s",
				strings.Join(ev.Refs, ", "), strings.Join(follows, ", "))})
			return
		}
		var queued []string
		for _, app := range targets {
			if err := s.opts.Agent.Enqueue(app, "webhook"); err != nil {
				s.log.Warn("webhook could not queue a sync", "app", app, "err", err)
				continue
			}
			queued = append(queued, app)
		}
		if len(queued) == 0 {
			fail(http.StatusServiceUnavailable, "error", "the agent did not accept the sync; see its log")
			return
		}
		s.log.Info("webhook queued sync", "provider", p.name, "apps", queued, "refs", ev.Refs)
		result(http.StatusAccepted, "queued", gin.H{"queued": queued})
	}
}

// hookRefusal is why a delivery is refused: status, metric result and
// message.
type hookRefusal struct {
	code        int
	result, msg string
}

// receiveHook reads the payload of a client not refused for too many bad
// signatures.
func (s *Server) receiveHook(c *gin.Context, client string) ([]byte, *hookRefusal) {
	if wait := s.failures.retryAfter(client); wait > 0 {
		c.Header("Retry-After", retryAfterSeconds(wait))
		return nil, &hookRefusal{http.StatusTooManyRequests, "rate_limited", "too many wrongly signed webhooks from this address; retry after the Retry-After seconds"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, s.opts.MaxBodyBytes))
	if err == nil {
		return body, nil
	}
	switch code := bodyStatus(err); code {
	case http.StatusRequestEntityTooLarge:
		return nil, &hookRefusal{code, "too_large", fmt.Sprintf("payload exceeds %d bytes", s.opts.MaxBodyBytes)}
	case http.StatusRequestTimeout:
		return nil, &hookRefusal{code, "timeout", s.bodyErrorMessage(err)}
	}
	return nil, &hookRefusal{http.StatusBadRequest, "bad_request", "reading payload: " + err.Error()}
}

// knownSecrets are the distinct webhook secrets of all apps and the
// global one.
func (s *Server) knownSecrets(sources []AppSource) []string {
	var secrets []string
	for _, src := range sources {
		if sec := s.secretFor(src); sec != "" && !slices.Contains(secrets, sec) {
			secrets = append(secrets, sec)
		}
	}
	if s.opts.WebhookSecret != "" && !slices.Contains(secrets, s.opts.WebhookSecret) {
		secrets = append(secrets, s.opts.WebhookSecret)
	}
	return secrets
}

func firstOr(xs []string, def string) string {
	if len(xs) > 0 {
		return xs[0]
	}
	return def
}

func trackedRef(src AppSource) string {
	switch {
	case src.Tag != "":
		return "refs/tags/" + src.Tag
	case src.Branch != "":
		return "refs/heads/" + src.Branch
	}
	return "the default branch"
}

func matchRepo(sources []AppSource, repos []string) []AppSource {
	var norm []string
	for _, r := range repos {
		if n := normalizeRepo(r); n != "" {
			norm = append(norm, n)
		}
	}
	var out []AppSource
	for _, src := range sources {
		if n := normalizeRepo(src.Repo); n != "" && slices.Contains(norm, n) {
			out = append(out, src)
		}
	}
	return out
}

// matchRef reports whether a push of refs concerns the app. An app without
// branch or tag follows the remote's default branch, which a push payload
// does not reliably name, so any branch push matches: a spare pass only
// costs a fetch.
func matchRef(src AppSource, refs []string) bool {
	if len(refs) == 0 {
		return true
	}
	for _, ref := range refs {
		switch {
		case src.Tag != "":
			if ref == "refs/tags/"+src.Tag {
				return true
			}
		case src.Branch != "":
			if ref == "refs/heads/"+src.Branch {
				return true
			}
		default:
			if strings.HasPrefix(ref, "refs/heads/") {
				return true
			}
		}
	}
	return false
}

// normalizeRepo reduces a repository URL to host/path so https, ssh and
// scp-like forms of the same repository compare equal: scheme,
// credentials, port, trailing ".git" and "/" are dropped and the result is
// lowercased (forges treat owner and repo names case-insensitively).
func normalizeRepo(raw string) string {
	s := strings.TrimSpace(raw)
	if s == "" {
		return ""
	}
	scheme := false
	if i := strings.Index(s, "://"); i >= 0 {
		s, scheme = s[i+3:], true
	}
	hostPart, path, _ := strings.Cut(s, "/")
	if !scheme {
		// scp-like: [user@]host:path
		if h, p, ok := strings.Cut(s, ":"); ok && !strings.Contains(h, "/") && !isPortPrefix(p) {
			hostPart, path = h, p
		}
	}
	if at := strings.LastIndex(hostPart, "@"); at >= 0 {
		hostPart = hostPart[at+1:]
	}
	if h, _, ok := strings.Cut(hostPart, ":"); ok && !strings.HasPrefix(hostPart, "[") {
		hostPart = h
	} else if strings.HasPrefix(hostPart, "[") {
		if end := strings.Index(hostPart, "]"); end > 0 {
			hostPart = hostPart[:end+1]
		}
	}
	if cut, _, ok := strings.Cut(path, "?"); ok {
		path = cut
	}
	if cut, _, ok := strings.Cut(path, "#"); ok {
		path = cut
	}
	path = strings.Trim(path, "/")
	path = strings.TrimSuffix(path, ".git")
	path = strings.Trim(path, "/")
	if hostPart == "" || path == "" {
		return ""
	}
	return strings.ToLower(hostPart + "/" + path)
}

// isPortPrefix reports whether s starts with digits followed by "/": the
// "host:2222/path" form rather than scp-like "host:path".
func isPortPrefix(s string) bool {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i > 0 && (i == len(s) || s[i] == '/')
}

func appendNonEmpty(xs []string, vs ...string) []string {
	for _, v := range vs {
		if v != "" && !slices.Contains(xs, v) {
			xs = append(xs, v)
		}
	}
	return xs
}

func decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return err
	}
	return nil
}

// forgeRepo holds the URL fields GitHub and Gitea/Forgejo both use.
type forgeRepo struct {
	CloneURL string `json:"clone_url"`
	SSHURL   string `json:"ssh_url"`
	HTMLURL  string `json:"html_url"`
	GitURL   string `json:"git_url"`
	URL      string `json:"url"`
}

func (r forgeRepo) urls() []string {
	// GitHub's "url" is an API URL in some events; it never matches an app,
	// so listing it is harmless.
	return appendNonEmpty(nil, r.CloneURL, r.SSHURL, r.HTMLURL, r.GitURL, r.URL)
}

func parseGitHub(h http.Header, body []byte) (push, error) {
	var p struct {
		Ref        string     `json:"ref"`
		Zen        string     `json:"zen"`
		Repository *forgeRepo `json:"repository"`
	}
	if err := decode(body, &p); err != nil {
		return push{}, err
	}
	switch ev := h.Get("X-GitHub-Event"); ev {
	case "ping":
		return push{Ping: true}, nil
	case "push", "":
	default:
		return push{Event: ev}, nil
	}
	return forgePush(p.Ref, p.Repository)
}

// forgePush is a GitHub-shaped push (GitHub, Gitea, Forgejo): no ref means
// a test delivery.
func forgePush(ref string, repo *forgeRepo) (push, error) {
	if ref == "" {
		return push{Ping: true}, nil
	}
	if repo == nil {
		return push{}, fmt.Errorf("push payload has no repository")
	}
	return push{Repos: repo.urls(), Refs: []string{ref}}, nil
}

func parseGitea(h http.Header, body []byte) (push, error) {
	var p struct {
		Ref        string     `json:"ref"`
		Repository *forgeRepo `json:"repository"`
	}
	if err := decode(body, &p); err != nil {
		return push{}, err
	}
	ev := h.Get("X-Forgejo-Event")
	if ev == "" {
		ev = h.Get("X-Gitea-Event")
	}
	switch ev {
	case "push", "":
	default:
		return push{Event: ev}, nil
	}
	return forgePush(p.Ref, p.Repository)
}

func parseGitLab(h http.Header, body []byte) (push, error) {
	var p struct {
		ObjectKind string `json:"object_kind"`
		Ref        string `json:"ref"`
		Project    struct {
			GitHTTPURL string `json:"git_http_url"`
			GitSSHURL  string `json:"git_ssh_url"`
			WebURL     string `json:"web_url"`
			HTTPURL    string `json:"http_url"`
			SSHURL     string `json:"ssh_url"`
		} `json:"project"`
		Repository struct {
			URL        string `json:"url"`
			Homepage   string `json:"homepage"`
			GitHTTPURL string `json:"git_http_url"`
			GitSSHURL  string `json:"git_ssh_url"`
		} `json:"repository"`
	}
	if err := decode(body, &p); err != nil {
		return push{}, err
	}
	ev := h.Get("X-Gitlab-Event")
	switch {
	case ev == "Push Hook" || ev == "Tag Push Hook" || ev == "System Hook" && (p.ObjectKind == "push" || p.ObjectKind == "tag_push"):
	case ev == "" && (p.ObjectKind == "push" || p.ObjectKind == "tag_push" || p.ObjectKind == ""):
	default:
		if ev == "" {
			ev = p.ObjectKind
		}
		return push{Event: ev}, nil
	}
	if p.Ref == "" {
		return push{Ping: true}, nil
	}
	repos := appendNonEmpty(nil, p.Project.GitHTTPURL, p.Project.GitSSHURL, p.Project.WebURL, p.Project.HTTPURL, p.Project.SSHURL,
		p.Repository.GitHTTPURL, p.Repository.GitSSHURL, p.Repository.Homepage, p.Repository.URL)
	if len(repos) == 0 {
		return push{}, fmt.Errorf("push payload has no project URL")
	}
	return push{Repos: repos, Refs: []string{p.Ref}}, nil
}

func parseBitbucket(h http.Header, body []byte) (push, error) {
	var p struct {
		Repository *struct {
			FullName string `json:"full_name"`
			Links    struct {
				HTML struct {
					Href string `json:"href"`
				} `json:"html"`
			} `json:"links"`
		} `json:"repository"`
		Push *struct {
			Changes []struct {
				New *struct {
					Type string `json:"type"`
					Name string `json:"name"`
				} `json:"new"`
			} `json:"changes"`
		} `json:"push"`
	}
	if err := decode(body, &p); err != nil {
		return push{}, err
	}
	switch ev := h.Get("X-Event-Key"); ev {
	case "diagnostics:ping":
		return push{Ping: true}, nil
	case "repo:push", "":
	default:
		return push{Event: ev}, nil
	}
	if p.Push == nil || len(p.Push.Changes) == 0 {
		return push{Ping: true}, nil
	}
	if p.Repository == nil || p.Repository.Links.HTML.Href == "" {
		return push{}, fmt.Errorf("push payload has no repository.links.html.href")
	}
	var refs []string
	for _, ch := range p.Push.Changes {
		if ch.New == nil || ch.New.Name == "" {
			continue // a deleted branch or tag
		}
		switch ch.New.Type {
		case "tag", "annotated_tag":
			refs = appendNonEmpty(refs, "refs/tags/"+ch.New.Name)
		default:
			refs = appendNonEmpty(refs, "refs/heads/"+ch.New.Name)
		}
	}
	if len(refs) == 0 {
		return push{Event: "deletion"}, nil
	}
	return push{Repos: []string{p.Repository.Links.HTML.Href}, Refs: refs}, nil
}

func parseGeneric(_ http.Header, body []byte) (push, error) {
	var p struct {
		Repository string `json:"repository"`
		Ref        string `json:"ref"`
		Branch     string `json:"branch"`
		Tag        string `json:"tag"`
	}
	if err := decode(body, &p); err != nil {
		return push{}, err
	}
	if p.Repository == "" {
		return push{}, fmt.Errorf(`"repository" is required: {"repository": "<clone url>", "ref": "refs/heads/<branch>"}`)
	}
	var refs []string
	switch {
	case p.Ref != "" && strings.HasPrefix(p.Ref, "refs/"):
		refs = []string{p.Ref}
	case p.Ref != "":
		refs = []string{"refs/heads/" + p.Ref}
	case p.Branch != "":
		refs = []string{"refs/heads/" + p.Branch}
	case p.Tag != "":
		refs = []string{"refs/tags/" + p.Tag}
	}
	return push{Repos: []string{p.Repository}, Refs: refs}, nil
}
