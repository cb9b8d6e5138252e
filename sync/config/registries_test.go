package config

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/deploy/registry"
)

func TestConfigRegistries(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "reg-pass"), []byte("filepass\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "ghcr-token"), []byte("tok\n"), 0o600)
	t.Setenv("REG_USER", "envuser")
	t.Setenv("REG_PASS", "envpass")
	path := filepath.Join(dir, "driftless.yaml")
	os.WriteFile(path, []byte(`
registries:
  - host: https://reg.example:5000/
    usernameEnv: REG_USER
    passwordFile: reg-pass
  - host: ghcr.io
    tokenFile: ghcr-token
apps:
  - name: shop
    repo: https://git.example.com/r.git
    registries:
      - host: reg.example:5000
        username: shop
        passwordEnv: REG_PASS
  - name: blog
    repo: https://git.example.com/r.git
`), 0o600)
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []registry.Login{{Host: "reg.example:5000", Username: "envuser", Password: "filepass"}, {Host: "ghcr.io", Token: "tok"}}
	if !reflect.DeepEqual(cfg.Registries, want) {
		t.Errorf("global registries = %+v, want %+v", cfg.Registries, want)
	}
	if want := []registry.Login{{Host: "reg.example:5000", Username: "shop", Password: "envpass"}}; !reflect.DeepEqual(cfg.Apps[0].Registries, want) {
		t.Errorf("shop registries = %+v", cfg.Apps[0].Registries)
	}
	logins := cfg.Logins(nil)
	for app, user := range map[string]string{"shop": "shop", "blog": "envuser"} {
		ac, err := logins.Lookup(context.Background(), app, "reg.example:5000")
		if err != nil || ac.Username != user {
			t.Errorf("%s: got %+v %v, want user %s", app, ac, err, user)
		}
	}
}

func TestConfigRegistryErrors(t *testing.T) {
	for _, tc := range []struct{ name, reg, want string }{
		{"inline password", "host: r.example\n    username: u\n    password: hunter2", "registries[0] (r.example): password: inline passwords are not accepted: use passwordEnv or passwordFile"},
		{"no host", "username: u\n    passwordEnv: HOME", "registries[0]: host: required"},
		{"path in host", "host: r.example/v2/x\n    username: u\n    passwordEnv: HOME", `host: "r.example/v2/x" must be a host[:port], without a path`},
		{"no secret", "host: r.example\n    username: u", "needs passwordEnv, passwordFile or tokenFile"},
		{"no username", "host: r.example\n    passwordEnv: HOME", "a password needs username or usernameEnv"},
		{"unset env", "host: r.example\n    username: u\n    passwordEnv: DRIFTLESS_TEST_UNSET", "environment variable DRIFTLESS_TEST_UNSET is empty or not set"},
		{"missing file", "host: r.example\n    username: u\n    passwordFile: nope", "password: open"},
		{"token and password", "host: r.example\n    tokenFile: t\n    passwordEnv: HOME", "set tokenFile or password(Env|File), not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "driftless.yaml")
			os.WriteFile(path, []byte("registries:\n  - "+tc.reg+"\napps:\n  - name: shop\n    repo: https://git.example.com/r.git\n"), 0o600)
			_, err := LoadConfig(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// An engine's registries: serve the apps placed on it, after an app's own
// and before the global ones; other engines do not see them. An instance
// of an app on several engines is looked up by its name there.
func TestEngineRegistries(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "far-pass"), []byte("farpass\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "global-pass"), []byte("globalpass\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "shop-pass"), []byte("shoppass\n"), 0o600)
	path := filepath.Join(dir, "driftless.yaml")
	os.WriteFile(path, []byte(`
registries:
  - {host: reg.example, username: global, passwordFile: global-pass}
  - {host: other.example, username: global, passwordFile: global-pass}
engines:
  - name: far
    host: ssh://deploy@far.example
    registries:
      - {host: reg.example, username: far, passwordFile: far-pass}
apps:
  - name: shop
    repo: https://git.example.com/r.git
    engines: [local, far]
    registries:
      - {host: shop.example, username: shop, passwordFile: shop-pass}
  - name: blog
    repo: https://git.example.com/r.git
    engine: far
`), 0o600)
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	user := func(l *registry.Logins, app, host string) string {
		a, err := l.Lookup(ctx, app, host)
		if err != nil {
			t.Fatal(err)
		}
		return a.Username
	}
	far, local := cfg.LoginsFor("far", nil), cfg.Logins(nil)
	for _, c := range []struct {
		l                 *registry.Logins
		engine, app, host string
		want              string
	}{
		{far, "far", "blog", "reg.example", "far"},
		{far, "far", "blog", "other.example", "global"},
		{far, "far", "shop", "shop.example", "shop"},
		{far, "far", "shop", "reg.example", "far"},
		{local, "local", "shop", "reg.example", "global"},
		{local, "local", "shop", "shop.example", "shop"},
	} {
		if got := user(c.l, c.app, c.host); got != c.want {
			t.Errorf("engine %s, app %s, %s: user %q, want %q", c.engine, c.app, c.host, got, c.want)
		}
	}
}
