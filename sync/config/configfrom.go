package config

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/sources"
)

// ConfigFromSource is the name of the source `driftless run
// --config-from` makes.
const ConfigFromSource = "config"

// DefaultConfigFromPath is the file --config-from reads when URL#PATH
// leaves out #PATH.
const DefaultConfigFromPath = "driftless.yaml"

// ParseConfigFrom splits --config-from's URL#PATH; PATH defaults to
// driftless.yaml.
func ParseConfigFrom(arg string) (repo, file string, err error) {
	repo, file, hasPath := strings.Cut(strings.TrimSpace(arg), "#")
	if repo == "" {
		return "", "", fmt.Errorf("--config-from %q: want URL#PATH, like https://git.example.com/ops/agent.git#driftless.yaml (#PATH defaults to %s)", arg, DefaultConfigFromPath)
	}
	if !hasPath || file == "" {
		if hasPath {
			return "", "", fmt.Errorf("--config-from %q: the path after # is empty: name the file, or leave out # for %s", arg, DefaultConfigFromPath)
		}
		file = DefaultConfigFromPath
	}
	if err := (sources.Generator{Config: file}).Validate(); err != nil {
		return "", "", fmt.Errorf("--config-from %q: the path after #: %w", arg, err)
	}
	return repo, file, nil
}

// inOtherRepo points app at the repository its entry names, which is not
// the source's. Its ref is the entry's (none: that repository's default
// branch, not the source's branch). The template's Git credentials and
// its acceptance of insecure transports are given only when the
// repository is on the same server as the source's (scheme, host and
// port): a repository must not be able to send the agent's token to a
// host of its choosing.
func (s SourceConfig) inOtherRepo(app *AppConfig, g sources.App) error {
	app.Repo = g.Repo
	app.Branch, app.Tag, app.Commit = g.Branch, g.Tag, ""
	if !SameServer(s.App.Repo, g.Repo) {
		app.Auth = gitsource.Auth{KnownHostsFile: s.App.Auth.KnownHostsFile}
		app.AllowInsecureTransport = false
	}
	if !app.AllowInsecureTransport {
		if err := gitsource.CheckTransport(g.Repo); err != nil {
			return fmt.Errorf("%s: repo: %w; use an https:// or ssh:// URL (an insecure one is accepted only on the source's own server, with allowInsecureTransport on the source)", g.At, err)
		}
	}
	return nil
}

// SameServer reports whether two repository URLs are on the same Git
// server: the same scheme, host and port. A local repository (a path,
// file://) is on no server: a repository's file must not be able to
// point the agent at another repository of the agent's host. A URL
// that does not parse is on none either.
func SameServer(a, b string) bool {
	ea, errA := transport.NewEndpoint(a)
	eb, errB := transport.NewEndpoint(b)
	if errA != nil || errB != nil || strings.EqualFold(ea.Protocol, "file") || strings.EqualFold(eb.Protocol, "file") {
		return false
	}
	return strings.EqualFold(ea.Protocol, eb.Protocol) && strings.EqualFold(ea.Host, eb.Host) && port(ea) == port(eb)
}

// port is the endpoint's port, or its protocol's default.
func port(e *transport.Endpoint) int {
	if e.Port != 0 {
		return e.Port
	}
	return map[string]int{"https": 443, "http": 80, "ssh": 22, "git": 9418}[strings.ToLower(e.Protocol)]
}
