// Package registry owns driftless's side of container registries: which
// credentials an app pulls and pushes with (its logins, Docker's
// config.json and credential helpers), the HTTP client that asks a
// registry for a tag's digest itself, and the typed pull and push errors
// the loop decides on. It is apart from the Docker applier so that the
// configuration (sync/config) can name logins without importing deploy.
package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"
)

// Credentials finds what to send a registry when pulling or resolving an
// image for an app. A zero AuthConfig means anonymous.
type Credentials interface {
	Lookup(ctx context.Context, app, host string) (registry.AuthConfig, error)
}

// RegistryLogin is one registry's credentials from driftless.yaml: a
// username and password, or a bearer token.
type Login struct {
	Host     string
	Username string
	Password string
	// Token is sent to the registry as a bearer token instead of a
	// username and password.
	Token string
}

func (l Login) authConfig() registry.AuthConfig {
	return registry.AuthConfig{Username: l.Username, Password: l.Password, RegistryToken: l.Token, ServerAddress: l.Host}
}

// Logins resolves credentials the way driftless.yaml layers them: the
// app's own registries first, then the global ones, then Docker's
// config.json (DockerConfig), as the docker CLI would.
type Logins struct {
	Global []Login
	PerApp map[string][]Login
	// Docker is consulted when driftless.yaml names no login for the
	// host; nil skips it.
	Docker *DockerConfig
}

// Lookup implements Credentials.
func (l *Logins) Lookup(ctx context.Context, app, host string) (registry.AuthConfig, error) {
	for _, list := range [][]Login{l.PerApp[app], l.Global} {
		for _, lg := range list {
			if sameRegistry(lg.Host, host) {
				return lg.authConfig(), nil
			}
		}
	}
	if l.Docker == nil {
		return registry.AuthConfig{}, nil
	}
	return l.Docker.Lookup(ctx, host)
}

// dockerHubHost is the registry host of images without one; the docker
// CLI keys its credentials under dockerHubKey.
const (
	dockerHubHost = "docker.io"
	dockerHubKey  = "https://index.docker.io/v1/"
)

// RegistryHost is the registry an image reference pulls from:
// "docker.io" for Docker Hub images ("nginx", "library/nginx").
func Host(image string) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", fmt.Errorf("invalid image reference %q: %w", image, err)
	}
	return reference.Domain(named), nil
}

// normalizeRegistry turns a config key or a host into a comparable host:
// "https://reg.example:5000/v2/" → "reg.example:5000"; Docker Hub's
// aliases → "docker.io".
func normalizeRegistry(s string) string {
	s = strings.TrimSpace(strings.ToLower(s))
	s = strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://")
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s = s[:i]
	}
	switch s {
	case "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return dockerHubHost
	}
	return s
}

func sameRegistry(a, b string) bool { return normalizeRegistry(a) == normalizeRegistry(b) }

// DockerConfig reads credentials from Docker's config.json the way the
// docker CLI does: credHelpers for the host, else credsStore, else the
// auths entry. The file is read on each lookup, so a `docker login`
// while the agent runs takes effect at the next pull.
type DockerConfig struct {
	// Dir holds config.json; see DockerConfigDir.
	Dir string
	// LookPath finds docker-credential-NAME; nil is exec.LookPath.
	LookPath func(string) (string, error)
}

// DockerConfigDir is the docker CLI's configuration directory:
// $DOCKER_CONFIG, else ~/.docker.
func DockerConfigDir(getenv func(string) string) string {
	if d := getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".docker")
}

// dockerConfigFile is the part of config.json about registries.
type dockerConfigFile struct {
	Auths       map[string]dockerAuthEntry `json:"auths"`
	CredsStore  string                     `json:"credsStore"`
	CredHelpers map[string]string          `json:"credHelpers"`
}

type dockerAuthEntry struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

func (c *DockerConfig) path() string { return filepath.Join(c.Dir, "config.json") }

// read loads config.json; a missing file is an empty configuration, as
// for the docker CLI.
func (c *DockerConfig) read() (dockerConfigFile, error) {
	var f dockerConfigFile
	data, err := os.ReadFile(c.path())
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("read Docker credentials: %w", err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("read Docker credentials: %s is not valid JSON: %w", c.path(), err)
	}
	return f, nil
}

// Lookup returns the credentials config.json holds for host.
func (c *DockerConfig) Lookup(ctx context.Context, host string) (registry.AuthConfig, error) {
	f, err := c.read()
	if err != nil {
		return registry.AuthConfig{}, err
	}
	key := normalizeRegistry(host)
	server := key
	if key == dockerHubHost {
		server = dockerHubKey
	}
	for k, helper := range f.CredHelpers {
		if normalizeRegistry(k) == key && helper != "" {
			return c.fromHelper(ctx, helper, server)
		}
	}
	if f.CredsStore != "" {
		return c.fromHelper(ctx, f.CredsStore, server)
	}
	for k, e := range f.Auths {
		if normalizeRegistry(k) != key {
			continue
		}
		ac := registry.AuthConfig{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken, ServerAddress: server}
		if e.Auth != "" {
			user, pass, err := decodeBasicAuth(e.Auth)
			if err != nil {
				return registry.AuthConfig{}, fmt.Errorf("read Docker credentials: %s: auths[%q].auth: %w", c.path(), k, err)
			}
			ac.Username, ac.Password = user, pass
		}
		return ac, nil
	}
	return registry.AuthConfig{}, nil
}

// decodeBasicAuth reads an auths entry's "auth": base64 of user:password.
func decodeBasicAuth(s string) (string, string, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return "", "", errors.New("is not base64 of username:password")
	}
	user, pass, ok := strings.Cut(string(b), ":")
	if !ok {
		return "", "", errors.New("is not base64 of username:password (no colon)")
	}
	return user, pass, nil
}

// helperNotFound is what credential helpers print when they hold nothing
// for the server (docker-credential-helpers' ErrCredentialsNotFound).
const helperNotFound = "credentials not found in native keychain"

// fromHelper runs `docker-credential-NAME get` with the server on stdin,
// the docker CLI's protocol.
func (c *DockerConfig) fromHelper(ctx context.Context, helper, server string) (registry.AuthConfig, error) {
	look := c.LookPath
	if look == nil {
		look = exec.LookPath
	}
	prog, err := look("docker-credential-" + helper)
	if err != nil {
		return registry.AuthConfig{}, fmt.Errorf("credential helper %q named in %s: %w", helper, c.path(), err)
	}
	cmd := exec.CommandContext(ctx, prog, "get")
	cmd.Stdin = strings.NewReader(server)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		out := strings.TrimSpace(stdout.String() + " " + stderr.String())
		if strings.Contains(out, helperNotFound) {
			return registry.AuthConfig{}, nil
		}
		return registry.AuthConfig{}, fmt.Errorf("credential helper docker-credential-%s get %s: %w: %s", helper, server, err, out)
	}
	var got struct {
		ServerURL string
		Username  string
		Secret    string
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		return registry.AuthConfig{}, fmt.Errorf("credential helper docker-credential-%s get %s: output is not JSON: %w", helper, server, err)
	}
	ac := registry.AuthConfig{ServerAddress: server}
	if got.Username == "<token>" {
		// The docker CLI's convention for an identity token.
		ac.IdentityToken = got.Secret
	} else {
		ac.Username, ac.Password = got.Username, got.Secret
	}
	return ac, nil
}

// encodeAuth is the X-Registry-Auth header value: base64url JSON of the
// AuthConfig, or "" for anonymous.
func EncodeAuth(ac registry.AuthConfig) (string, error) {
	if ac == (registry.AuthConfig{}) {
		return "", nil
	}
	b, err := json.Marshal(ac)
	if err != nil {
		return "", err
	}
	return base64.URLEncoding.EncodeToString(b), nil
}
