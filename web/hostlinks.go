package web

import (
	"html/template"

	"github.com/driftless-dev/driftless/gitsource"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// HostLinks builds links to a Git host's pages for one repository. The
// zero value links nothing.
type HostLinks struct {
	// Commit and Tree are URL templates: {sha} is the full commit SHA,
	// {path} the app's path in the repository ("" at the root).
	Commit, Tree string
}

// CommitURL is the host's page of a commit; "" when unknown.
func (h HostLinks) CommitURL(sha string) string {
	if h.Commit == "" || sha == "" {
		return ""
	}
	return expandLink(h.Commit, sha, "")
}

// TreeURL is the host's page of the app's path at a commit; "" when
// unknown.
func (h HostLinks) TreeURL(sha, dir string) string {
	if h.Tree == "" || sha == "" {
		return ""
	}
	return expandLink(h.Tree, sha, cleanRepoPath(dir))
}

func expandLink(t, sha, dir string) string {
	out := strings.ReplaceAll(t, "{sha}", url.PathEscape(sha))
	escaped := make([]string, 0, 4)
	if dir != "" {
		for p := range strings.SplitSeq(dir, "/") {
			escaped = append(escaped, url.PathEscape(p))
		}
	}
	out = strings.ReplaceAll(out, "{path}", strings.Join(escaped, "/"))
	// A root path leaves "…/tree/abc/" behind; hosts answer both, but the
	// slash-less form is the canonical one.
	return strings.TrimSuffix(out, "/")
}

// cleanRepoPath turns ".", "/", "./deploy/" into "" and "deploy".
func cleanRepoPath(p string) string {
	p = strings.Trim(path.Clean("/"+p), "/")
	return p
}

// hostKind is a family of Git hosts sharing one URL layout.
type hostKind int

const (
	hostUnknown hostKind = iota
	hostGitHub
	hostGitLab
	hostGitea // Gitea and Forgejo (Codeberg)
	hostBitbucket
)

// RecognizeHost derives the links of a repository URL on GitHub, GitLab,
// Gitea/Forgejo or Bitbucket, in https, ssh:// or scp form
// (git@host:owner/repo.git). Self-hosted GitLab and Gitea are recognised
// when the host name says so (gitlab.example.com); others need templates.
// Unknown hosts give the zero HostLinks.
func RecognizeHost(repoURL string) HostLinks {
	host, repoPath, ok := splitRepoURL(repoURL)
	if !ok || !hostChars.MatchString(host) {
		return HostLinks{}
	}
	base := "https://" + host + "/" + repoPath
	switch kindOf(host) {
	case hostGitHub:
		return HostLinks{Commit: base + "/commit/{sha}", Tree: base + "/tree/{sha}/{path}"}
	case hostGitLab:
		return HostLinks{Commit: base + "/-/commit/{sha}", Tree: base + "/-/tree/{sha}/{path}"}
	case hostGitea:
		return HostLinks{Commit: base + "/commit/{sha}", Tree: base + "/src/commit/{sha}/{path}"}
	case hostBitbucket:
		return HostLinks{Commit: base + "/commits/{sha}", Tree: base + "/src/{sha}/{path}"}
	}
	return HostLinks{}
}

// LinksFor is what an app's revisions link to: its templates where set,
// else what RecognizeHost finds.
func LinksFor(repoURL, commitTemplate, treeTemplate string) HostLinks {
	h := RecognizeHost(repoURL)
	if commitTemplate != "" {
		h.Commit = commitTemplate
	}
	if treeTemplate != "" {
		h.Tree = treeTemplate
	}
	return h
}

func kindOf(host string) hostKind {
	name := strings.ToLower(host)
	if h, _, ok := strings.Cut(name, ":"); ok {
		name = h
	}
	switch name {
	case "github.com", "www.github.com":
		return hostGitHub
	case "gitlab.com":
		return hostGitLab
	case "gitea.com", "codeberg.org":
		return hostGitea
	case "bitbucket.org", "www.bitbucket.org":
		return hostBitbucket
	}
	first, _, _ := strings.Cut(name, ".")
	switch {
	case strings.Contains(first, "gitlab"):
		return hostGitLab
	case strings.Contains(first, "gitea"), strings.Contains(first, "forgejo"):
		return hostGitea
	}
	return hostUnknown
}

// splitRepoURL returns the web host (with a port only for http(s) URLs:
// an ssh port is not the web server's) and "owner/repo" without ".git".
func splitRepoURL(raw string) (host, repoPath string, ok bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", "", false
	}
	if !strings.Contains(raw, "://") {
		// scp form: [user@]host:owner/repo.git
		at := strings.LastIndex(raw, "@")
		rest := raw[at+1:]
		h, p, found := strings.Cut(rest, ":")
		if !found || h == "" || strings.Contains(h, "/") {
			return "", "", false
		}
		rp, ok := trimRepoPath(p)
		return h, rp, ok
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", "", false
	}
	host = u.Hostname()
	switch u.Scheme {
	case "https", "http":
		host = u.Host
	case "ssh", "git", "git+ssh", "ssh+git":
	default:
		return "", "", false
	}
	p := u.Path
	if u.Scheme != "https" && u.Scheme != "http" {
		// GitLab's ssh:// URLs sometimes carry the scp colon: ssh://git@host:/group/repo.
		p = strings.TrimPrefix(p, ":")
	}
	repoPath, ok = trimRepoPath(p)
	return host, repoPath, ok
}

func trimRepoPath(p string) (string, bool) {
	p = strings.Trim(p, "/")
	p = strings.TrimSuffix(p, ".git")
	p = strings.TrimSuffix(p, "/")
	// owner/repo at least; GitLab groups nest deeper. Hosts allow no
	// other characters in names, so anything else is not a repository we
	// can link to.
	if !strings.Contains(p, "/") || strings.Contains(p, "..") || !repoPathChars.MatchString(p) {
		return "", false
	}
	return p, true
}

var (
	repoPathChars = regexp.MustCompile(`^[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)+$`)
	hostChars     = regexp.MustCompile(`^[A-Za-z0-9.-]+(:[0-9]{1,5})?$`)
)

// revView is a revision with its links on the Git host, what the "rev"
// template shows.
type revView struct {
	gitsource.Revision
	CommitURL string `json:"commitURL,omitempty"`
	TreeURL   string `json:"treeURL,omitempty"`
	Path      string `json:"path,omitempty"`
}

// appLinks returns an app's host links and manifests path.
func (s *Server) appLinks(app string) (HostLinks, string) {
	st, ok := s.opts.Agent.App(app)
	if !ok {
		return HostLinks{}, ""
	}
	var commitT, treeT string
	if s.configs != nil {
		for _, c := range s.configs.AppConfigs() {
			if c.Name == app {
				commitT, treeT = c.CommitURLTemplate, c.TreeURLTemplate
				break
			}
		}
	}
	return LinksFor(st.Source.URL, commitT, treeT), st.Source.Path
}

// linkRev adds an app's host links to a revision.
func (s *Server) linkRev(app string, r *gitsource.Revision) revView {
	if r == nil {
		return revView{}
	}
	h, dir := s.appLinks(app)
	return revView{Revision: *r, CommitURL: h.CommitURL(r.SHA), TreeURL: h.TreeURL(r.SHA, dir), Path: cleanRepoPath(dir)}
}

func (s *Server) linkFuncs() template.FuncMap {
	return template.FuncMap{
		// link takes the app and a *Revision or Revision.
		"link": func(app string, r any) revView {
			switch r := r.(type) {
			case *gitsource.Revision:
				return s.linkRev(app, r)
			case gitsource.Revision:
				return s.linkRev(app, &r)
			}
			return revView{}
		},
	}
}
