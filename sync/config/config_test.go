package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

func TestLoadConfigReadsAppsAndSecrets(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "token"), []byte("s3cret-token\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "hook"), []byte("hooksecret"), 0o600)
	t.Setenv("GIT_USER", "deploy")
	path := filepath.Join(dir, "driftless.yaml")
	os.WriteFile(path, []byte(`
dataDir: data
listen: ":8080"
webhookSecretFile: hook
readOnlyPublic: true
apps:
  - name: shop
    repo: https://git.example.com/team/infra.git
    branch: main
    path: apps/shop
    usernameEnv: GIT_USER
    tokenFile: token
  - name: blog
    repo: git@example.com:team/blog.git
    tag: v1.2.0
    interval: "*/5 * * * *"
    selfHeal: false
    prune: true
    maxRemovalPercent: 100
`), 0o600)
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != filepath.Join(dir, "data") || cfg.Listen != ":8080" || !cfg.ReadOnlyPublic || cfg.WebhookSecret != "hooksecret" {
		t.Fatalf("global settings = %+v", cfg)
	}
	shop, blog := cfg.Apps[0], cfg.Apps[1]
	if shop.Auth.Username != "deploy" || shop.Auth.Password != "s3cret-token" {
		t.Errorf("shop auth = %+v, want user from env and token from file", shop.Auth)
	}
	if !shop.SelfHeal || shop.Prune || shop.Interval != DefaultInterval || shop.MaxRemovalPercent != 50 {
		t.Errorf("shop defaults = %+v, want selfHeal on, prune off, interval %q, maxRemovalPercent 50", shop, DefaultInterval)
	}
	if shop.WebhookSecret != "hooksecret" {
		t.Errorf("shop webhook secret = %q, want the global one", shop.WebhookSecret)
	}
	if blog.SelfHeal || !blog.Prune || blog.Tag != "v1.2.0" || blog.MaxRemovalPercent != 100 {
		t.Errorf("blog = %+v", blog)
	}
}

func TestLoadConfigErrorsSayWhatToFix(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown key", "apps:\n  - name: shop\n    repo: r\n    brnch: main\n", `unknown field "brnch"`},
		{"bad name", "apps:\n  - name: Shop_1\n    repo: r\n", `apps[0] (Shop_1): name: "Shop_1" is not a valid app name`},
		{"duplicate", "apps:\n  - name: shop\n    repo: r\n  - name: shop\n    repo: r\n", "apps[1] (shop): name: \"shop\" is used by another app"},
		{"two refs", "apps:\n  - name: shop\n    repo: r\n    branch: main\n    tag: v1\n", "set at most one of branch, tag and commit"},
		{"bad interval", "apps:\n  - name: shop\n    repo: r\n    interval: often\n", `interval: "often" is neither a duration`},
		{"no repo", "apps:\n  - name: shop\n", "repo: required"},
		{"missing env", "apps:\n  - name: shop\n    repo: r\n    passwordEnv: DRIFTLESS_TEST_UNSET\n", "environment variable DRIFTLESS_TEST_UNSET is empty or not set"},
		{"password in url", "apps:\n  - name: shop\n    repo: https://u:p@example.com/x.git\n", "the URL contains a password"},
		{"removal range", "apps:\n  - name: shop\n    repo: r\n    maxRemovalPercent: 150\n", "maxRemovalPercent: 150 is out of range"},
		{"no apps", "listen: :80\n", "no apps configured"},
		{"age key file missing", "apps:\n  - name: shop\n    repo: r\n    decryption: {ageKeyFile: nope.txt}\n", "decryption.ageKeyFile: stat "},
		{"decryption typo", "apps:\n  - name: shop\n    repo: r\n    decryption: {agekey: x}\n", `unknown field "agekey"`},
		{"gnupg home missing", "apps:\n  - name: shop\n    repo: r\n    decryption: {gnupgHome: nope}\n", "decryption.gnupgHome "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "driftless.yaml")
			os.WriteFile(path, []byte(tc.yaml), 0o600)
			_, err := LoadConfig(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
		})
	}
}

func TestParseSchedule(t *testing.T) {
	start := time.Date(2026, 1, 1, 10, 2, 0, 0, time.UTC)
	for _, tc := range []struct {
		spec string
		next time.Time
	}{
		{"30s", start.Add(30 * time.Second)},
		{"@every 1m", start.Add(time.Minute)},
		{"*/5 * * * *", time.Date(2026, 1, 1, 10, 5, 0, 0, time.UTC)},
		{"@hourly", time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC)},
	} {
		s, err := ParseSchedule(tc.spec)
		if err != nil {
			t.Fatalf("ParseSchedule(%q): %v", tc.spec, err)
		}
		if got := s.Next(start); !got.Equal(tc.next) {
			t.Errorf("ParseSchedule(%q).Next = %s, want %s", tc.spec, got, tc.next)
		}
	}
	for _, bad := range []string{"", "soon", "* * *", "10ms", "-5s"} {
		if _, err := ParseSchedule(bad); err == nil {
			t.Errorf("ParseSchedule(%q) accepted", bad)
		}
	}
}

func TestConfigRefusesInsecureTransportsUnlessAllowed(t *testing.T) {
	load := func(t *testing.T, yaml string) (Config, error) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "driftless.yaml")
		os.WriteFile(path, []byte(yaml), 0o600)
		return LoadConfig(path)
	}
	for _, repo := range []string{"git://git.example.com/shop.git", "http://bob:hunter2@git.example.com/shop.git", "file:///srv/shop.git", "/srv/shop.git", "./shop"} {
		t.Run(repo, func(t *testing.T) {
			_, err := load(t, "apps:\n  - name: shop\n    repo: "+repo+"\n")
			if err == nil {
				t.Fatal("insecure transport accepted without the opt-in")
			}
			msg := err.Error()
			for _, want := range []string{"apps[0] (shop): repo:", "can change what is deployed", "allowInsecureTransport: true"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q should contain %q", msg, want)
				}
			}
			if strings.Contains(msg, "hunter2") {
				t.Errorf("error leaks the password: %s", msg)
			}
			cfg, err := load(t, "apps:\n  - name: shop\n    repo: "+strings.Replace(repo, "bob:hunter2@", "", 1)+"\n    allowInsecureTransport: true\n")
			if err != nil || !cfg.Apps[0].AllowInsecureTransport {
				t.Fatalf("with the opt-in: %v, %+v", err, cfg.Apps)
			}
		})
	}
	cfg, err := load(t, "apps:\n  - name: shop\n    repo: https://git.example.com/shop.git\n  - name: blog\n    repo: git@example.com:blog.git\n")
	if err != nil || cfg.Apps[0].AllowInsecureTransport || cfg.Apps[1].AllowInsecureTransport {
		t.Fatalf("https and ssh need no opt-in: %v, %+v", err, cfg.Apps)
	}
}

func TestConfigOnForcePush(t *testing.T) {
	signers := allowedSignersFile(t)
	for _, tc := range []struct {
		value, verify    string
		refuse, byVerify bool
		err              string
	}{
		{value: "", refuse: false},
		{value: "follow", refuse: false},
		{value: "refuse", refuse: true},
		// With verify, an older signed commit verifies too: a rewritten
		// history is refused unless follow is explicit.
		{value: "", verify: signers, refuse: true, byVerify: true},
		{value: "follow", verify: signers, refuse: false},
		{value: "refuse", verify: signers, refuse: true},
		{value: "ignore", err: `onForcePush: "ignore" is not supported: use "follow"`},
	} {
		yaml := "apps:\n  - name: shop\n    repo: https://git.example.com/shop.git\n"
		if tc.value != "" {
			yaml += "    onForcePush: " + tc.value + "\n"
		}
		if tc.verify != "" {
			yaml += "    verify: {sshAllowedSigners: " + tc.verify + "}\n"
		}
		name := fmt.Sprintf("onForcePush %q, verify %t", tc.value, tc.verify != "")
		cfg, err := parseConfig([]byte(yaml), t.TempDir(), func(string) string { return "" })
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if refuse, byVerify := cfg.Apps[0].RefusesForcePush(); refuse != tc.refuse || byVerify != tc.byVerify {
			t.Errorf("%s: refuse %t (by verify %t), want %t (by verify %t)", name, refuse, byVerify, tc.refuse, tc.byVerify)
		}
	}
}

func TestLoadConfigAgeKeyFileIsRelativeToTheConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "age.txt"), []byte("AGE-SECRET-KEY-1X\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "driftless.yaml")
	if err := os.WriteFile(path, []byte("apps:\n  - name: shop\n    repo: https://git.example.com/r.git\n    decryption: {ageKeyFile: age.txt}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Apps[0].AgeKeyFile; got != filepath.Join(dir, "age.txt") {
		t.Errorf("AgeKeyFile = %q, want the file next to the config", got)
	}
}

func TestConfigAddressPool(t *testing.T) {
	for _, tc := range []struct{ value, want, err string }{
		{"", "default", ""},
		{"addressPool: {base: 10.99.0.0/16}", "10.99.0.0/16/24", ""},
		{"addressPool: {base: 10.213.0.0/28, size: 29}", "10.213.0.0/28/29", ""},
		{"addressPool: {base: docker}", "docker", ""},
		{"addressPool: {base: 10.99.0.0/16, size: 12}", "", "addressPool: address pool 10.99.0.0/16: size /12 must be between /16 (the pool itself) and /29"},
		{"addressPool: {bse: 10.99.0.0/16}", "", `unknown field "bse"`},
	} {
		yaml := tc.value + "\napps:\n  - name: shop\n    repo: https://git.example.com/shop.git\n"
		cfg, err := parseConfig([]byte(yaml), t.TempDir(), func(string) string { return "" })
		got := "default"
		if cfg.AddressPool != nil {
			got = cfg.AddressPool.String()
		}
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.value, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %v, %s; want %s", tc.value, err, got, tc.want)
		}
	}
}

func TestLoadConfigDecryptionAndSecretsDir(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "gnupg")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "driftless.yaml")
	body := "secretsDir: /run/s\napps:\n  - name: shop\n    repo: https://git.example.com/r.git\n    decryption: {gnupgHome: gnupg, allowPlaintext: true}\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Apps[0]
	if cfg.SecretsDir != "/run/s" || a.GnuPGHome != home || !a.AllowPlaintext || !a.LoadOptions().AllowPlaintext {
		t.Errorf("secretsDir %q, gnupgHome %q, allowPlaintext %v", cfg.SecretsDir, a.GnuPGHome, a.AllowPlaintext)
	}
	// A home others may read is refused: sops would ignore it silently.
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), "invalid permissions") {
		t.Errorf("home with mode 0755: %v", err)
	}
}
func TestConfigTarget(t *testing.T) {
	for _, tc := range []struct{ extra, want, err string }{
		{"", "", ""},
		{"    target: engine\n", "engine", ""},
		{"    target: swarm\n", "swarm", ""},
		{"    target: k8s\n", "", `target: "k8s" is not a target: use engine (containers on one engine, the default) or swarm`},
		{"    target: swarm\n    adopt: compose\n", "", "target: swarm cannot adopt a docker compose project"},
	} {
		yaml := "apps:\n  - name: shop\n    repo: https://git.example.com/shop.git\n" + tc.extra
		cfg, err := parseConfig([]byte(yaml), t.TempDir(), func(string) string { return "" })
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.extra, err, tc.err)
		case tc.err == "" && (err != nil || cfg.Apps[0].Target != tc.want):
			t.Errorf("%q: %v, %+v; want target %q", tc.extra, err, cfg.Apps, tc.want)
		case tc.err == "" && (cfg.Apps[0].LoadOptions().Target == manifest.TargetSwarm) != (tc.want == "swarm"):
			t.Errorf("%q: the loader is not told the target", tc.extra)
		}
	}
}

func TestConfigShared(t *testing.T) {
	base := "apps:\n  - name: shop\n    repo: https://git.example.com/shop.git\n"
	cfg, err := parseConfig([]byte(base+"    shared: {networks: [traefik-public], volumes: [blog-media, uploads]}\n"), t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Apps[0].Shared; fmt.Sprint(s.Networks, s.Volumes) != "[traefik-public] [blog-media uploads]" {
		t.Fatalf("shared = %+v", s)
	}
	if cfg, err := parseConfig([]byte(base), t.TempDir(), func(string) string { return "" }); err != nil || len(cfg.Apps[0].Shared.Networks)+len(cfg.Apps[0].Shared.Volumes) != 0 {
		t.Fatalf("left out: %v, %+v; want nothing shared", err, cfg.Apps)
	}
	for _, tc := range []struct{ shared, want string }{
		{"{volume: [media]}", `unknown field "volume"`},
		{"{volumes: media}", "cannot unmarshal string"},
		{"{volumes: [media, media]}", `apps[0] (shop): shared.volumes: "media" is listed twice`},
		{`{networks: ["a b"]}`, `shared.networks: "a b" is not a Docker network name`},
		{`{volumes: [""]}`, `shared.volumes: "" is not a Docker volume name`},
	} {
		_, err := parseConfig([]byte(base+"    shared: "+tc.shared+"\n"), t.TempDir(), func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("shared: %s: error %v, want %q", tc.shared, err, tc.want)
		}
	}
}
