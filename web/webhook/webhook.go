// Package webhook reads the push notifications forges send: each
// forge's signature scheme and payload (GitHub, GitLab, Gitea and Forgejo,
// Bitbucket, and a generic JSON form), reduced to the repository URLs and
// refs a push names. It is pure: the web server decides what a push
// triggers.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Push is what a webhook delivery says, reduced to what matching needs.
type Push struct {
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

// Provider knows one forge's signature scheme and push payload.
type Provider struct {
	Name string
	// SigHeader names the header the signature arrives in, for messages.
	SigHeader string
	// Signature extracts the signature (or token) from the headers; "" when
	// the request is unsigned.
	Signature func(h http.Header) string
	// Verify checks sig against the body under secret, in constant time.
	Verify func(sig string, body []byte, secret string) bool
	// Parse reads a delivery's payload.
	Parse func(h http.Header, body []byte) (Push, error)
}

// Providers are the forges driftless takes webhooks from, each served at
// /hooks/<Name>.
func Providers() []Provider {
	return []Provider{
		{
			Name: "github", SigHeader: "X-Hub-Signature-256",
			Signature: func(h http.Header) string { return h.Get("X-Hub-Signature-256") },
			Verify:    verifyPrefixedHMAC, Parse: parseGitHub,
		},
		{
			Name: "gitlab", SigHeader: "X-Gitlab-Token",
			Signature: func(h http.Header) string { return h.Get("X-Gitlab-Token") },
			Verify:    func(sig string, _ []byte, secret string) bool { return EqualSecret(sig, secret) },
			Parse:     parseGitLab,
		},
		{
			Name: "gitea", SigHeader: "X-Gitea-Signature or X-Forgejo-Signature",
			Signature: func(h http.Header) string {
				if v := h.Get("X-Forgejo-Signature"); v != "" {
					return v
				}
				return h.Get("X-Gitea-Signature")
			},
			Verify: verifyHexHMAC, Parse: parseGitea,
		},
		{
			Name: "bitbucket", SigHeader: "X-Hub-Signature",
			Signature: func(h http.Header) string { return h.Get("X-Hub-Signature") },
			Verify:    verifyPrefixedHMAC, Parse: parseBitbucket,
		},
		{
			Name: "generic", SigHeader: "X-Signature",
			Signature: func(h http.Header) string { return h.Get("X-Signature") },
			Verify:    verifyPrefixedHMAC, Parse: parseGeneric,
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

// NormalizeRepo reduces a repository URL to host/path so https, ssh and
// scp-like forms of the same repository compare equal: scheme,
// credentials, port, trailing ".git" and "/" are dropped and the result is
// lowercased (forges treat owner and repo names case-insensitively).
func NormalizeRepo(raw string) string {
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

func parseGitHub(h http.Header, body []byte) (Push, error) {
	var p struct {
		Ref        string     `json:"ref"`
		RefType    string     `json:"ref_type"`
		Zen        string     `json:"zen"`
		Repository *forgeRepo `json:"repository"`
	}
	if err := decode(body, &p); err != nil {
		return Push{}, err
	}
	switch ev := h.Get("X-GitHub-Event"); ev {
	case "ping":
		return Push{Ping: true}, nil
	case "push", "":
	case "create", "delete":
		return refEvent(ev, p.Ref, p.RefType, p.Repository)
	default:
		return Push{Event: ev}, nil
	}
	return forgePush(p.Ref, p.Repository)
}

// refEvent is a GitHub- or Gitea-shaped create or delete event: the ref
// is a short name with its type. It changes what a source of previews
// runs, so it counts as a push of that ref.
func refEvent(ev, ref, refType string, repo *forgeRepo) (Push, error) {
	if ref == "" || repo == nil {
		return Push{}, fmt.Errorf("%s payload has no ref or repository", ev)
	}
	switch refType {
	case "branch":
		ref = "refs/heads/" + ref
	case "tag":
		ref = "refs/tags/" + ref
	default:
		return Push{Event: ev + " " + refType}, nil
	}
	return Push{Repos: repo.urls(), Refs: []string{ref}}, nil
}

// forgePush is a GitHub-shaped push (GitHub, Gitea, Forgejo): no ref means
// a test delivery.
func forgePush(ref string, repo *forgeRepo) (Push, error) {
	if ref == "" {
		return Push{Ping: true}, nil
	}
	if repo == nil {
		return Push{}, fmt.Errorf("push payload has no repository")
	}
	return Push{Repos: repo.urls(), Refs: []string{ref}}, nil
}

func parseGitea(h http.Header, body []byte) (Push, error) {
	var p struct {
		Ref        string     `json:"ref"`
		RefType    string     `json:"ref_type"`
		Repository *forgeRepo `json:"repository"`
	}
	if err := decode(body, &p); err != nil {
		return Push{}, err
	}
	ev := h.Get("X-Forgejo-Event")
	if ev == "" {
		ev = h.Get("X-Gitea-Event")
	}
	switch ev {
	case "push", "":
	case "create", "delete":
		return refEvent(ev, p.Ref, p.RefType, p.Repository)
	default:
		return Push{Event: ev}, nil
	}
	return forgePush(p.Ref, p.Repository)
}

func parseGitLab(h http.Header, body []byte) (Push, error) {
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
		return Push{}, err
	}
	ev := h.Get("X-Gitlab-Event")
	switch {
	case ev == "Push Hook" || ev == "Tag Push Hook" || ev == "System Hook" && (p.ObjectKind == "push" || p.ObjectKind == "tag_push"):
	case ev == "" && (p.ObjectKind == "push" || p.ObjectKind == "tag_push" || p.ObjectKind == ""):
	default:
		if ev == "" {
			ev = p.ObjectKind
		}
		return Push{Event: ev}, nil
	}
	if p.Ref == "" {
		return Push{Ping: true}, nil
	}
	repos := appendNonEmpty(nil, p.Project.GitHTTPURL, p.Project.GitSSHURL, p.Project.WebURL, p.Project.HTTPURL, p.Project.SSHURL,
		p.Repository.GitHTTPURL, p.Repository.GitSSHURL, p.Repository.Homepage, p.Repository.URL)
	if len(repos) == 0 {
		return Push{}, fmt.Errorf("push payload has no project URL")
	}
	return Push{Repos: repos, Refs: []string{p.Ref}}, nil
}

func parseBitbucket(h http.Header, body []byte) (Push, error) {
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
		return Push{}, err
	}
	switch ev := h.Get("X-Event-Key"); ev {
	case "diagnostics:ping":
		return Push{Ping: true}, nil
	case "repo:push", "":
	default:
		return Push{Event: ev}, nil
	}
	if p.Push == nil || len(p.Push.Changes) == 0 {
		return Push{Ping: true}, nil
	}
	if p.Repository == nil || p.Repository.Links.HTML.Href == "" {
		return Push{}, fmt.Errorf("push payload has no repository.links.html.href")
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
		return Push{Event: "deletion"}, nil
	}
	return Push{Repos: []string{p.Repository.Links.HTML.Href}, Refs: refs}, nil
}

func parseGeneric(_ http.Header, body []byte) (Push, error) {
	var p struct {
		Repository string `json:"repository"`
		Ref        string `json:"ref"`
		Branch     string `json:"branch"`
		Tag        string `json:"tag"`
	}
	if err := decode(body, &p); err != nil {
		return Push{}, err
	}
	if p.Repository == "" {
		return Push{}, fmt.Errorf(`"repository" is required: {"repository": "<clone url>", "ref": "refs/heads/<branch>"}`)
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
	return Push{Repos: []string{p.Repository}, Refs: refs}, nil
}

// EqualSecret compares shared secrets (a forge's token, the API token) in
// constant time, also with respect to their lengths (both sides are hashed
// first).
func EqualSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}
