package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"

	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// `diff` and `apply` without --app name the app after the directory, as
// docker compose names a project. Inside a repository a running agent
// deploys under another name (the demo's `repo` directory is the app
// `demo`) that default plans a second copy of everything. So first ask the
// running agents this machine knows of which app they deploy from this
// directory's repository and path, as `argocd app diff` would name it.

// agentProbeTimeout bounds asking one agent; an agent that does not answer
// in time is not running, as far as the CLI is concerned.
const agentProbeTimeout = 2 * time.Second

// checkout is where a directory sits in a Git work tree.
type checkout struct {
	root    string   // the work tree's top directory
	path    string   // the directory relative to root, "." at the top
	remotes []string // URLs of the repository's remotes
}

// checkoutOf finds the Git work tree holding dir; false outside Git.
func checkoutOf(dir string) (checkout, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return checkout{}, false
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	repo, err := git.PlainOpenWithOptions(abs, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return checkout{}, false
	}
	wt, err := repo.Worktree()
	if err != nil {
		return checkout{}, false
	}
	root := wt.Filesystem.Root()
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
		return checkout{}, false
	}
	c := checkout{root: root, path: rel}
	if remotes, err := repo.Remotes(); err == nil {
		for _, r := range remotes {
			c.remotes = append(c.remotes, r.Config().URLs...)
		}
	}
	return c, true
}

// repoKey normalises a repository URL so that the forms of one repository
// compare equal: https://host/o/r.git, ssh://git@host/o/r, git@host:o/r,
// and, for a local repository, its absolute path (with or without
// file://).
func repoKey(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	if strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, "file://") {
		p := strings.TrimPrefix(raw, "file://")
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		return "file:" + strings.TrimSuffix(strings.TrimSuffix(filepath.Clean(p), "/.git"), ".git")
	}
	host, path := "", ""
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Host != "" {
		host, path = u.Hostname(), u.Path
	} else if at, rest, ok := strings.Cut(raw, "@"); ok && !strings.Contains(at, "/") {
		// scp-like: git@host:owner/repo
		host, path, _ = strings.Cut(rest, ":")
	} else {
		return raw
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	return strings.ToLower(host) + "/" + path
}

// sameSource reports whether an agent's app deploys from the checkout's
// directory: the same repository (its local path, or one of its remotes)
// and the same path in it.
func (c checkout) sameSource(src status.SourceStatus) bool {
	if filepath.Clean(strings.Trim(src.Path, "/")) != filepath.Clean(c.path) && !(src.Path == "" && c.path == ".") {
		return false
	}
	key := repoKey(src.URL)
	if key == "" {
		return false
	}
	if key == repoKey(c.root) {
		return true
	}
	for _, r := range c.remotes {
		if repoKey(r) == key {
			return true
		}
	}
	return false
}

// knownAgents are the agents a local command can find without being told:
// the demo's (its pid file in DATA/demo, or in DATA itself when --data
// names the demo's directory) and the one `status` talks to
// ($DRIFTLESS_SERVER, else http://127.0.0.1:8080).
func knownAgents(data string) []string {
	var out []string
	for _, d := range []string{data, filepath.Join(data, "demo"), filepath.Join(defaultDataDir(), "demo")} {
		if a, ok := runningDemo(d); ok && a.url != "" {
			out = append(out, strings.TrimRight(a.url, "/"))
		}
	}
	server := os.Getenv("DRIFTLESS_SERVER")
	if server == "" {
		server = "http://127.0.0.1:8080"
	}
	out = append(out, strings.TrimRight(server, "/"))
	slices.Sort(out)
	return slices.Compact(out)
}

// owner is an app of a running agent deploying a directory.
type owner struct {
	app, agent string
}

// agentOwners asks the known agents which of their apps deploy dir.
func agentOwners(ctx context.Context, dir, data string) []owner {
	co, ok := checkoutOf(dir)
	if !ok {
		return nil // not in Git: no agent deploys it
	}
	token, _ := readSecret("", "DRIFTLESS_API_TOKEN")
	var out []owner
	for _, base := range knownAgents(data) {
		c := &web.Client{BaseURL: base, Token: token, HTTP: &http.Client{Timeout: agentProbeTimeout}}
		actx, cancel := context.WithTimeout(ctx, agentProbeTimeout)
		apps, err := c.Apps(actx)
		cancel()
		if err != nil {
			continue
		}
		for _, a := range apps {
			if co.sameSource(a.Source) {
				out = append(out, owner{a.Name, base})
			}
		}
	}
	return out
}

// defaultAppName is the app name when --app is not given: the name the
// one running agent that deploys dir uses, said on stderr; else the
// directory's name. Two agents' apps deploying dir under different names
// is an error that names them: the user picks with --app.
func defaultAppName(ctx context.Context, dir, dirName, data string, stderr io.Writer) (string, error) {
	owners := agentOwners(ctx, dir, data)
	names := map[string]bool{}
	for _, o := range owners {
		names[o.app] = true
	}
	switch {
	case len(names) == 0:
		return dirName, nil
	case len(names) == 1:
		o := owners[0]
		if o.app != dirName {
			fmt.Fprintf(stderr, "app name: %s — the agent at %s deploys this directory as %s (not %q, the directory's name); pass --app to choose another\n", o.app, o.agent, o.app, dirName)
		}
		return o.app, nil
	}
	var list []string
	for _, o := range owners {
		list = append(list, fmt.Sprintf("%s (agent %s)", o.app, o.agent))
	}
	return "", fmt.Errorf("running agents deploy this directory as %s: pass --app NAME to say which one to compare with", strings.Join(list, ", "))
}
