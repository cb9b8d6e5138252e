package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/registry"
)

func writeDockerConfig(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fakeHelper writes docker-credential-NAME into a directory of its own: a
// shell script that records the server it was asked for and answers like
// docker-credential-helpers, or says "not found" for other servers.
func fakeHelper(t *testing.T, name, server, username, secret string) (dir, asked string) {
	t.Helper()
	dir = t.TempDir()
	asked = filepath.Join(dir, "asked")
	script := `#!/bin/sh
[ "$1" = get ] || exit 3
read -r server
printf '%s' "$server" > ` + asked + `
if [ "$server" = "` + server + `" ]; then
  printf '{"ServerURL":"%s","Username":"` + username + `","Secret":"` + secret + `"}' "$server"
  exit 0
fi
echo "credentials not found in native keychain"
exit 1
`
	if err := os.WriteFile(filepath.Join(dir, "docker-credential-"+name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, asked
}

func lookPathIn(dir string) func(string) (string, error) {
	return func(name string) (string, error) {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			return "", errors.New(name + ": executable file not found in $PATH")
		}
		return p, nil
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestDockerConfigAuths(t *testing.T) {
	dir := writeDockerConfig(t, `{"auths": {
		"https://reg.example:5000/v2/": {"auth": "`+b64("alice:s3cret:with:colons")+`"},
		"other.example": {"username": "bob", "password": "pw"},
		"https://index.docker.io/v1/": {"auth": "`+b64("hubuser:hubpass")+`"},
		"tok.example": {"identitytoken": "idtok"}
	}}`)
	c := &DockerConfig{Dir: dir}
	tests := []struct {
		host string
		want registry.AuthConfig
	}{
		{"reg.example:5000", registry.AuthConfig{Username: "alice", Password: "s3cret:with:colons", ServerAddress: "reg.example:5000"}},
		{"other.example", registry.AuthConfig{Username: "bob", Password: "pw", ServerAddress: "other.example"}},
		{"docker.io", registry.AuthConfig{Username: "hubuser", Password: "hubpass", ServerAddress: dockerHubKey}},
		{"tok.example", registry.AuthConfig{IdentityToken: "idtok", ServerAddress: "tok.example"}},
		{"unknown.example", registry.AuthConfig{}},
	}
	for _, tt := range tests {
		got, err := c.Lookup(context.Background(), tt.host)
		if err != nil || got != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v", tt.host, got, err, tt.want)
		}
	}
}

func TestDockerConfigHelpers(t *testing.T) {
	ctx := context.Background()
	helperDir, asked := fakeHelper(t, "fake", "reg.example:5000", "carol", "helper-pw")
	t.Run("credHelpers wins over auths for its host", func(t *testing.T) {
		dir := writeDockerConfig(t, `{"auths": {"reg.example:5000": {"auth": "`+b64("stale:stale")+`"}}, "credHelpers": {"reg.example:5000": "fake"}}`)
		got, err := (&DockerConfig{Dir: dir, LookPath: lookPathIn(helperDir)}).Lookup(ctx, "reg.example:5000")
		if err != nil || got.Username != "carol" || got.Password != "helper-pw" {
			t.Errorf("got %+v, %v", got, err)
		}
		if b, _ := os.ReadFile(asked); string(b) != "reg.example:5000" {
			t.Errorf("helper was asked for %q", b)
		}
	})
	t.Run("credsStore for every host; not found is anonymous", func(t *testing.T) {
		dir := writeDockerConfig(t, `{"credsStore": "fake", "auths": {"elsewhere.example": {}}}`)
		c := &DockerConfig{Dir: dir, LookPath: lookPathIn(helperDir)}
		got, err := c.Lookup(ctx, "reg.example:5000")
		if err != nil || got.Username != "carol" {
			t.Errorf("store: got %+v, %v", got, err)
		}
		got, err = c.Lookup(ctx, "elsewhere.example")
		if err != nil || got != (registry.AuthConfig{}) {
			t.Errorf("not in store: got %+v, %v; want anonymous", got, err)
		}
	})
	t.Run("Docker Hub is asked for under its index key", func(t *testing.T) {
		dir := writeDockerConfig(t, `{"credsStore": "fake"}`)
		_, _ = (&DockerConfig{Dir: dir, LookPath: lookPathIn(helperDir)}).Lookup(ctx, "docker.io")
		if b, _ := os.ReadFile(asked); string(b) != dockerHubKey {
			t.Errorf("helper was asked for %q, want %q", b, dockerHubKey)
		}
	})
	t.Run("identity token", func(t *testing.T) {
		tokDir, _ := fakeHelper(t, "tok", "reg.example:5000", "<token>", "refresh-token")
		dir := writeDockerConfig(t, `{"credHelpers": {"reg.example:5000": "tok"}}`)
		got, err := (&DockerConfig{Dir: dir, LookPath: lookPathIn(tokDir)}).Lookup(ctx, "reg.example:5000")
		if err != nil || got.IdentityToken != "refresh-token" || got.Username != "" {
			t.Errorf("got %+v, %v", got, err)
		}
	})
	t.Run("a missing helper is an error naming it", func(t *testing.T) {
		dir := writeDockerConfig(t, `{"credHelpers": {"reg.example:5000": "absent"}}`)
		_, err := (&DockerConfig{Dir: dir, LookPath: lookPathIn(helperDir)}).Lookup(ctx, "reg.example:5000")
		if err == nil || !strings.Contains(err.Error(), `credential helper "absent"`) {
			t.Errorf("got %v", err)
		}
	})
}

// The real lookup, as the agent runs it: DOCKER_CONFIG names the
// directory, and helpers are found on PATH.
func TestDockerConfigFromEnvironment(t *testing.T) {
	helperDir, _ := fakeHelper(t, "envfake", "reg.example:5000", "dave", "pw")
	dir := writeDockerConfig(t, `{"credHelpers": {"reg.example:5000": "envfake"}}`)
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("PATH", helperDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	got, err := (&DockerConfig{Dir: DockerConfigDir(os.Getenv)}).Lookup(context.Background(), "reg.example:5000")
	if err != nil || got.Username != "dave" {
		t.Errorf("got %+v, %v", got, err)
	}
	if d := DockerConfigDir(func(k string) string { return map[string]string{"HOME": "/home/x"}[k] }); d != "/home/x/.docker" {
		t.Errorf("default dir %q", d)
	}
}

func TestDockerConfigErrors(t *testing.T) {
	if got, err := (&DockerConfig{Dir: t.TempDir()}).Lookup(context.Background(), "x.example"); err != nil || got != (registry.AuthConfig{}) {
		t.Errorf("missing config.json: %+v, %v; want anonymous", got, err)
	}
	dir := writeDockerConfig(t, `{"auths": {"x.example": {"auth": "not base64!"}}}`)
	_, err := (&DockerConfig{Dir: dir}).Lookup(context.Background(), "x.example")
	if err == nil || !strings.Contains(err.Error(), `auths["x.example"].auth: is not base64 of username:password`) {
		t.Errorf("got %v", err)
	}
	dir = writeDockerConfig(t, `{"auths": `)
	if _, err := (&DockerConfig{Dir: dir}).Lookup(context.Background(), "x.example"); err == nil || !strings.Contains(err.Error(), "is not valid JSON") {
		t.Errorf("got %v", err)
	}
}

func TestLoginsPrecedence(t *testing.T) {
	dir := writeDockerConfig(t, `{"auths": {"reg.example:5000": {"username": "fromdocker", "password": "d"}, "only.example": {"username": "docker-only", "password": "d"}}}`)
	l := &Logins{
		Global: []Login{{Host: "reg.example:5000", Username: "global", Password: "g"}},
		PerApp: map[string][]Login{"shop": {{Host: "https://reg.example:5000", Username: "shop", Password: "s"}}},
		Docker: &DockerConfig{Dir: dir},
	}
	for _, tt := range []struct{ app, host, want string }{
		{"shop", "reg.example:5000", "shop"},
		{"blog", "reg.example:5000", "global"},
		{"shop", "only.example", "docker-only"},
		{"shop", "none.example", ""},
	} {
		got, err := l.Lookup(context.Background(), tt.app, tt.host)
		if err != nil || got.Username != tt.want {
			t.Errorf("%s %s: got %+v, %v; want user %q", tt.app, tt.host, got, err, tt.want)
		}
	}
}

func TestEncodeAuth(t *testing.T) {
	if s, err := EncodeAuth(registry.AuthConfig{}); s != "" || err != nil {
		t.Errorf("anonymous: %q %v", s, err)
	}
	s, err := EncodeAuth(registry.AuthConfig{Username: "u", Password: "p?>>", ServerAddress: "r:5000"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := base64.URLEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("not base64url: %v", err)
	}
	var back registry.AuthConfig
	if err := json.Unmarshal(b, &back); err != nil || back.Username != "u" || back.Password != "p?>>" || back.ServerAddress != "r:5000" {
		t.Errorf("round trip: %+v %v", back, err)
	}
}

func TestRegistryHost(t *testing.T) {
	for in, want := range map[string]string{
		"nginx":                      "docker.io",
		"library/nginx:1":            "docker.io",
		"127.0.0.1:5000/shop/web:v1": "127.0.0.1:5000",
		"ghcr.io/o/i@sha256:" + strings.Repeat("a", 64): "ghcr.io",
	} {
		if got, err := Host(in); err != nil || got != want {
			t.Errorf("%s: %q %v", in, got, err)
		}
	}
}

// The texts are what the engine (moby 28/29) relays from the registry.
func TestClassifyPull(t *testing.T) {
	for msg, want := range map[string]PullErrorKind{
		`Head "http://127.0.0.1:5000/v2/shop/web/manifests/v1": no basic auth credentials`:                               PullAuth,
		`unauthorized: authentication required`:                                                                          PullAuth,
		`pull access denied for shop/web, repository does not exist or may require 'docker login': denied`:               PullAuth,
		`manifest for 127.0.0.1:5000/shop/web:v9 not found: manifest unknown: manifest unknown`:                          PullNotFound,
		`Get "http://127.0.0.1:5001/v2/": dial tcp 127.0.0.1:5001: connect: connection refused`:                          PullUnreachable,
		`Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host`:                    PullUnreachable,
		`Get "https://r.example/v2/": net/http: request canceled while waiting for connection (Client.Timeout exceeded)`: PullUnreachable,
		`Get "https://172.17.0.1:45123/v2/": x509: certificate signed by unknown authority`:                              PullUntrusted,
		`something else went wrong`: PullOther,
		// A registry port that starts with 401 is not an HTTP 401.
		`Get "https://172.17.0.1:40153/v2/": dial tcp 172.17.0.1:40153: connect: connection refused`: PullUnreachable,
		`pull 172.17.0.1:5000/shop/web@sha256:40140140: manifest unknown`:                            PullNotFound,
		`received unexpected HTTP status: 401`:                                                       PullAuth,
	} {
		if got := ClassifyPull(errors.New(msg)); got != want {
			t.Errorf("%s: got %s, want %s", msg, got, want)
		}
	}
	// Words in the image's own name are not evidence.
	image := "r.example/denied-app:v1"
	msg := `manifest for r.example/denied-app:v1 not found: manifest unknown: manifest unknown`
	if got := ClassifyPull(errors.New(msg), image, "r.example"); got != PullNotFound {
		t.Errorf("%s: got %s, want %s", msg, got, PullNotFound)
	}
}

func TestPullErrorSaysWhatToDo(t *testing.T) {
	e := &PullError{Image: "127.0.0.1:5000/shop/web:v1", Registry: "127.0.0.1:5000", Kind: PullAuth, Err: errors.New("unauthorized: authentication required\nmore")}
	want := "image 127.0.0.1:5000/shop/web:v1 could not be pulled from registry 127.0.0.1:5000: authentication failed (401/denied): check the credentials for 127.0.0.1:5000 (registries: in driftless.yaml, or Docker's config.json): unauthorized: authentication required"
	if e.Error() != want {
		t.Errorf("got  %s\nwant %s", e.Error(), want)
	}
}

// FuzzDockerConfig: any config.json either yields credentials or an
// error naming the file; never a panic. An auths entry written as the
// docker CLI writes it reads back as written.
func FuzzDockerConfig(f *testing.F) {
	f.Add([]byte(`{"auths": {"r.example": {"auth": "dTpw"}}}`), "u", "p")
	f.Add([]byte(`{"auths": {"https://index.docker.io/v1/": {"username": "a", "password": "b"}}}`), "x", "y:z")
	f.Add([]byte(`{"auths": {"r.example": {"auth": "%%%"}}}`), "", "")
	f.Add([]byte(`{"credHelpers": {"r.example": ""}}`), "a", "")
	f.Fuzz(func(t *testing.T, data []byte, user, pass string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		c := &DockerConfig{Dir: dir, LookPath: func(string) (string, error) { return "", errors.New("no helpers in fuzzing") }}
		for _, host := range []string{"r.example", "docker.io"} {
			if _, err := c.Lookup(context.Background(), host); err != nil && !strings.Contains(err.Error(), dir) && !strings.Contains(err.Error(), "credential helper") {
				t.Fatalf("error does not name the file: %v", err)
			}
		}
		if strings.Contains(user, ":") {
			return
		}
		entry, _ := json.Marshal(map[string]any{"auths": map[string]any{"r.example": map[string]string{"auth": b64(user + ":" + pass)}}})
		if err := os.WriteFile(filepath.Join(dir, "config.json"), entry, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := c.Lookup(context.Background(), "r.example")
		if err != nil || got.Username != user || got.Password != pass {
			t.Fatalf("round trip of %q:%q: %+v %v", user, pass, got, err)
		}
	})
}
