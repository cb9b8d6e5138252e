package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/status"
)

func TestAppNameFor(t *testing.T) {
	for _, tc := range []struct{ repo, path, want string }{
		{"https://git.example.com/acme/deploy.git", "apps/shop", "shop"},
		{"https://git.example.com/acme/deploy.git", ".", "deploy"},
		{"git@host:acme/My_Repo.git", "", "my-repo"},
		{"/srv/git/infra", "apps/Web Front/", "web-front"},
		{"https://h/x/9lives.git", "", "app-9lives"},
	} {
		if got := appNameFor(tc.repo, tc.path); got != tc.want {
			t.Errorf("appNameFor(%q, %q) = %q, want %q", tc.repo, tc.path, got, tc.want)
		}
	}
}

func TestLocalAppRejectsBadNames(t *testing.T) {
	if _, _, err := localApp([]string{"."}, "Bad_Name"); err == nil || !strings.Contains(err.Error(), "--app") {
		t.Fatalf("want an error naming --app, got %v", err)
	}
	if _, _, err := localApp([]string{"a", "b"}, ""); err == nil {
		t.Fatal("two paths must be refused")
	}
	name, dir, err := localApp([]string{"../../examples/shop"}, "")
	if err != nil || name != "shop" || dir != "../../examples/shop" {
		t.Fatalf("got %q %q %v", name, dir, err)
	}
	// A directory name that is no app name is made one, as the agent
	// names discovered directories; one with nothing to make it of asks
	// for --app.
	root := t.TempDir()
	for dir, want := range map[string]string{"transfer.sh": "transfer-sh", "0_skeleton": "app-0-skeleton", "My App": "my-app", "a--b": "a--b", "__": ""} {
		if err := os.Mkdir(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		name, _, err := localApp([]string{filepath.Join(root, dir)}, "")
		switch {
		case want == "" && (err == nil || !strings.Contains(err.Error(), "--app")):
			t.Errorf("directory %q: got %q, %v; want an error naming --app", dir, name, err)
		case want != "" && (err != nil || name != want):
			t.Errorf("directory %q: app name %q, %v; want %q", dir, name, err, want)
		}
	}
}

func TestRunNeedsASource(t *testing.T) {
	var f runFlags
	f.data, f.listen, f.interval = defaultDataDir(), "127.0.0.1:8080", "30s"
	if _, err := f.toConfig(); err == nil || !strings.Contains(err.Error(), "--repo") {
		t.Fatalf("want a hint about --repo, got %v", err)
	}
	f.repo, f.interval = "https://example.com/x.git", "every minute"
	if _, err := f.toConfig(); err == nil || !strings.Contains(err.Error(), "--interval") {
		t.Fatalf("want an --interval error, got %v", err)
	}
	f.interval, f.path = "*/5 * * * *", "apps/shop"
	cfg, err := f.toConfig()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Apps) != 1 || cfg.Apps[0].Name != "shop" || !strings.HasPrefix(cfg.Apps[0].Interval, "*/5") {
		t.Fatalf("config: %+v", cfg.Apps)
	}
}

func TestProgressShowsMilestonesOnly(t *testing.T) {
	web3 := drift.Change{Action: drift.ActionCreate, Kind: drift.KindContainer, Name: "shop-web-3"}
	if line := progressLine(drift.Event{Change: web3, Phase: "created"}); line != "" {
		t.Fatalf("created should be silent, got %q", line)
	}
	line := progressLine(drift.Event{Change: web3, Phase: "ready", Message: "shop-web-3 ready in 1.2s"})
	if !strings.Contains(line, "+") || !strings.Contains(line, "shop-web-3") || !strings.HasSuffix(line, "ready in 1.2s") {
		t.Fatalf("ready line: %q", line)
	}
}

func TestValidateAcceptsAFileAndNamesMissingPaths(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"validate", "../../examples/shop/web.yaml"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "valid: app shop") {
		t.Fatalf("validate FILE: exit %d, %q %q", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	missing := t.TempDir() + "/nope"
	code := dispatch(context.Background(), []string{"validate", missing}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), missing+": no such file or directory") || strings.Contains(errb.String(), "stat .") {
		t.Fatalf("missing path: exit %d, %q", code, errb.String())
	}
}

// TestValidateComposeFileNamed: a compose file named on the command line
// is the app's one compose file, as with docker compose -f, whatever its
// name and whatever else the directory holds; a native manifest named
// there still stands for its directory.
func TestValidateComposeFileNamed(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"compose.yaml":            "services:\n  web: {image: shop/web:1, restart: sometimes}\n",
		"docker-compose.prod.yml": "services:\n  web: {image: shop/web:1}\n  worker: {image: shop/worker:1}\n",
		"stack.yml":               "services:\n  api: {image: shop/api:1}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("COMPOSE_FILE", "compose.yaml")
	for file, want := range map[string]string{
		"docker-compose.prod.yml": "valid: compose app shop with 2 service(s)",
		"stack.yml":               "valid: compose app shop with 1 service(s)",
	} {
		code, out, errs := run(t, "validate", filepath.Join(dir, file), "--app", "shop")
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("validate %s: exit %d, want %q:\n%s%s", file, code, want, out, errs)
		}
	}
	// The directory is its compose.yaml (COMPOSE_FILE here), which is wrong.
	if code, out, errs := run(t, "validate", dir, "--app", "shop"); code != 1 || !strings.Contains(out+errs, "restart") {
		t.Errorf("validate DIR: exit %d:\n%s%s", code, out, errs)
	}
}

func TestStatusKeepsHealthAndStateApart(t *testing.T) {
	a := status.AppStatus{Name: "shop", Sync: drift.SyncSynced, Health: drift.HealthDegraded, Services: []status.ServiceStatus{{
		Name: "web", Image: "shop/web:1", Desired: 1, Health: drift.HealthDegraded,
		Containers: []status.ContainerStatus{{Name: "shop-web-1", State: "exited", Status: "Exited (1) 2 seconds ago", Image: "shop/web:1"}},
	}}}
	var out bytes.Buffer
	printAppStatus(&out, a, time.Now())
	lines := strings.Split(out.String(), "\n")
	var header, svc, ctr []string
	for _, l := range lines {
		switch f := strings.Fields(l); {
		case strings.HasPrefix(l, "SERVICE"):
			header = f
		case strings.HasPrefix(l, "web "):
			svc = f
		case strings.HasPrefix(l, "  shop-web-1"):
			ctr = f
		}
	}
	if !slices.Contains(header, "HEALTH") || !slices.Contains(header, "STATE") {
		t.Fatalf("header %q", header)
	}
	healthCol := strings.Index(lines[indexOf(lines, "SERVICE")], "HEALTH")
	stateCol := strings.Index(lines[indexOf(lines, "SERVICE")], "STATE")
	ctrLine := lines[indexOf(lines, "  shop-web-1")]
	if strings.TrimSpace(ctrLine[healthCol:stateCol]) != "" || !strings.HasPrefix(ctrLine[stateCol:], "exited") {
		t.Fatalf("a container's state must sit under STATE, not HEALTH:\n%s", out.String())
	}
	if svc == nil || ctr == nil || svc[2] != "Degraded" {
		t.Fatalf("rows:\n%s", out.String())
	}
}

func indexOf(lines []string, prefix string) int {
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

// Hints name the binary as it was run: it need not be on PATH.
func TestHintsNameTheBinaryAsRun(t *testing.T) {
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"status", "--server", "http://127.0.0.1:1"}, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "'"+os.Args[0]+" run'") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

func TestRunRefusesInsecureTransportWithoutTheFlag(t *testing.T) {
	for _, repo := range []string{"git://git.example.com/infra.git", "http://bob:hunter2@git.example.com/infra.git", "/srv/git/infra", "file:///srv/git/infra"} {
		f := runFlags{repo: repo, data: defaultDataDir(), listen: "127.0.0.1:8080", interval: "30s", path: "apps/shop"}
		_, err := f.toConfig()
		if err == nil {
			t.Fatalf("%s accepted without --allow-insecure-transport", repo)
		}
		msg := err.Error()
		if !strings.Contains(msg, "app shop") || !strings.Contains(msg, "--allow-insecure-transport") ||
			!strings.Contains(msg, "can change what is deployed") || strings.Contains(msg, "hunter2") {
			t.Errorf("%s: error %q should name the app, the risk and the flag, without the password", repo, msg)
		}
		f.allowInsecure = true
		cfg, err := f.toConfig()
		if err != nil || !cfg.Apps[0].AllowInsecureTransport {
			t.Errorf("%s with the flag: %v", repo, err)
		}
	}
	f := runFlags{repo: "https://git.example.com/infra.git", data: defaultDataDir(), listen: "127.0.0.1:8080", interval: "30s", onForcePush: "sometimes"}
	if _, err := f.toConfig(); err == nil || !strings.Contains(err.Error(), "--on-force-push") {
		t.Fatalf("bad --on-force-push: %v", err)
	}
	f.onForcePush = "refuse"
	if cfg, err := f.toConfig(); err != nil || cfg.Apps[0].OnForcePush != "refuse" {
		t.Fatalf("--on-force-push refuse: %v", err)
	}
}

func TestRepoKeyAndSameSource(t *testing.T) {
	same := [][]string{
		{"https://github.com/acme/shop.git", "https://github.com/acme/shop", "ssh://git@github.com/acme/shop.git", "git@github.com:acme/shop.git", "https://user:tok@GitHub.com/acme/shop/"},
		{"/srv/git/shop.git", "file:///srv/git/shop.git", "/srv/git/shop"},
	}
	for _, group := range same {
		for _, u := range group[1:] {
			if repoKey(u) != repoKey(group[0]) {
				t.Errorf("repoKey(%q) = %q, want %q as for %q", u, repoKey(u), repoKey(group[0]), group[0])
			}
		}
	}
	if repoKey("https://github.com/acme/shop") == repoKey("https://github.com/acme/blog") || repoKey("https://gitlab.com/acme/shop") == repoKey("https://github.com/acme/shop") {
		t.Error("different repositories compare equal")
	}

	co := checkout{root: "/home/ada/shop", path: "deploy", remotes: []string{"git@github.com:acme/shop.git"}}
	for _, tc := range []struct {
		src  status.SourceStatus
		want bool
	}{
		{status.SourceStatus{URL: "https://github.com/acme/shop.git", Path: "deploy"}, true},
		{status.SourceStatus{URL: "https://github.com/acme/shop.git", Path: "deploy/"}, true},
		{status.SourceStatus{URL: "/home/ada/shop", Path: "deploy"}, true}, // the checkout itself
		{status.SourceStatus{URL: "https://github.com/acme/shop.git", Path: "."}, false},
		{status.SourceStatus{URL: "https://github.com/acme/blog.git", Path: "deploy"}, false},
		{status.SourceStatus{URL: "", Path: "deploy"}, false},
	} {
		if got := co.sameSource(tc.src); got != tc.want {
			t.Errorf("sameSource(%+v) = %v, want %v", tc.src, got, tc.want)
		}
	}
	top := checkout{root: "/srv/demo/repo", path: "."}
	for _, p := range []string{".", "", "/"} {
		if !top.sameSource(status.SourceStatus{URL: "/srv/demo/repo", Path: p}) {
			t.Errorf("path %q does not match the top of the checkout", p)
		}
	}
}

// A compose secret that is not SOPS-encrypted is refused, with the flag to
// accept it on the command line; with the flag it validates.
func TestValidateAllowPlaintextSecretsFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shop")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	compose := "services:\n  web:\n    image: shop/web:1\n    secrets: [db]\nsecrets:\n  db: {file: ./db.txt}\n"
	for name, body := range map[string]string{"compose.yaml": compose, "db.txt": "hunter2\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb strings.Builder
	code := dispatch(context.Background(), []string{"validate", dir}, &out, &errb)
	if code != 1 || !strings.Contains(out.String()+errb.String(), "--allow-plaintext-secrets") {
		t.Errorf("plaintext secret: exit %d, output %q %q; want 1 naming --allow-plaintext-secrets", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := dispatch(context.Background(), []string{"validate", "--allow-plaintext-secrets", dir}, &out, &errb); code != 0 {
		t.Errorf("with --allow-plaintext-secrets: exit %d, %q %q", code, out.String(), errb.String())
	}
	if strings.Contains(out.String()+errb.String(), "hunter2") {
		t.Error("validate printed the secret's value")
	}
}

// TestSharedFlags: --shared-network and --shared-volume are checked like
// shared: in driftless.yaml.
func TestSharedFlags(t *testing.T) {
	l := loadFlags{sharedNetworks: "traefik-public", sharedVolumes: "blog-media, uploads"}
	s, err := l.shared()
	if err != nil || fmt.Sprint(s.Networks, s.Volumes) != "[traefik-public] [blog-media uploads]" {
		t.Fatalf("shared = %+v, %v", s, err)
	}
	l.sharedVolumes = "media,media"
	if _, err := l.shared(); err == nil || !strings.Contains(err.Error(), `--shared-network / --shared-volume: shared.volumes: "media" is listed twice`) {
		t.Fatalf("a name twice: %v", err)
	}
}
