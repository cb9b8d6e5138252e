package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/sources"
)

const sourceBase = "sources:\n  - name: platform\n    repo: https://git.example.com/platform.git\n    branch: main\n"

func TestConfigSources(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, err string
	}{
		{name: "directories", yaml: sourceBase + "    directories: ['apps/*']\n    exclude: ['apps/old']\n    prune: true\n    maxApps: 5\n    template: {allow: [privileged], prune: true, interval: 1m, release: {watch: 2m}}\n"},
		{name: "file", yaml: sourceBase + "    file: driftless-apps.yaml\n"},
		{name: "no generator", yaml: sourceBase, err: "no generator: set directories:"},
		{name: "branches", yaml: sourceBase + "    branches: {match: 'preview/*', path: deploy}\n    preview: {ports: {range: 20000-20999, perPreview: 5}, url: 'https://{{.Slug}}.preview.example.com', ttl: 72h}\n    maxPreviews: 3\n"},
		{name: "branches and directories", yaml: sourceBase + "    branches: {match: 'preview/*'}\n    directories: ['apps/*']\n", err: "one of them"},
		{name: "preview without branches", yaml: sourceBase + "    directories: ['apps/*']\n    preview: {ttl: 1h}\n", err: "only a source with branches: makes previews"},
		{name: "bad port range", yaml: sourceBase + "    branches: {match: 'p/*'}\n    preview: {ports: {range: 30000-20000}}\n", err: "preview.ports.range"},
		{name: "bad url template", yaml: sourceBase + "    branches: {match: 'p/*'}\n    preview: {url: 'https://{{.Nope}}/'}\n", err: "preview.url"},
		{name: "per-app key on the source", yaml: sourceBase + "    directories: ['apps/*']\n    allow: [privileged]\n", err: "allow: a setting of the generated apps belongs under template"},
		{name: "repository key in the template", yaml: sourceBase + "    directories: ['apps/*']\n    template: {path: apps/x}\n", err: "template.path: set on the source itself"},
		{name: "commit status without a token", yaml: sourceBase + "    directories: ['apps/*']\n    template: {notifications: [{url: 'generic://x'}], commitStatus: {provider: gitea}}\n",
			err: "sources[0] (platform): commitStatus: set tokenEnv or tokenFile"},
		{name: "bad commit status provider", yaml: sourceBase + "    directories: ['apps/*']\n    template: {commitStatus: {provider: sourcehut, tokenEnv: T}}\n",
			err: `sources[0] (platform): commitStatus.provider: "sourcehut" is not supported`},
		{name: "notification without url", yaml: sourceBase + "    directories: ['apps/*']\n    template: {notifications: [{name: team}]}\n",
			err: "sources[0] (platform): notifications[0]: set exactly one of url"},
		{name: "notifications on the source itself", yaml: sourceBase + "    directories: ['apps/*']\n    notifications: [{url: 'generic://x'}]\n", err: "notifications: a setting of the generated apps belongs under template"},
		{name: "bad maxApps", yaml: sourceBase + "    directories: ['apps/*']\n    maxApps: 0\n", err: "maxApps: 0 must be 1 or more"},
		{name: "duplicate source", yaml: sourceBase + "    directories: ['a/*']\n  - name: platform\n    repo: https://git.example.com/x.git\n    directories: ['b/*']\n", err: `name: "platform" is used by another source`},
		{name: "insecure repo", yaml: "sources:\n  - name: p\n    repo: git://127.0.0.1/p.git\n    directories: ['apps/*']\n", err: "allowInsecureTransport"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig([]byte(tc.yaml), t.TempDir(), func(string) string { return "" })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Apps) != 0 || len(cfg.Sources) != 1 || cfg.Sources[0].App.Repo != "https://git.example.com/platform.git" || cfg.Sources[0].App.Source != "platform" {
				t.Fatalf("config %+v", cfg)
			}
		})
	}
}

// TestSourceAppFor: a generated app is the template with its name and
// path; a driftless-apps.yaml entry may change its ref, interval, prune,
// self-heal, profiles and watch, but never the template's host power or
// HTTP check.
// TestSourceTemplateNotifications: a template's notifications and commit
// status are read as an app's, and every app the source generates (a
// preview too) carries them.
func TestSourceTemplateNotifications(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := sourceBase + "    branches: {match: 'preview/*'}\n    template:\n      notifications: [{url: 'generic://hooks.example.com/x', events: [synced]}]\n" +
		"      commitStatus: {provider: gitea, baseURL: 'https://git.example.com/api/v1', tokenFile: token}\n"
	cfg, err := parseConfig([]byte(yaml), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.Sources[0]
	want := []Notification{{Name: "platform-1", URL: "generic://hooks.example.com/x", Events: []string{"synced"}}}
	if !reflect.DeepEqual(sc.App.Notifications, want) {
		t.Fatalf("notifications %+v, want %+v", sc.App.Notifications, want)
	}
	if cs := sc.App.CommitStatus; cs == nil || *cs != (CommitStatus{Provider: "gitea", BaseURL: "https://git.example.com/api/v1", Token: "s3cret"}) {
		t.Fatalf("commit status %+v", cs)
	}
	app, err := sc.PreviewFor("preview/login", -1)
	if err != nil {
		t.Fatal(err)
	}
	if app.Source != "platform" || app.CommitStatus == nil || len(app.Notifications) != 1 {
		t.Fatalf("the preview lost its source's template: %+v", app)
	}
}

func TestSourceAppFor(t *testing.T) {
	cfg, err := parseConfig([]byte(sourceBase+"    directories: ['apps/*']\n    prune: true\n    template: {allow: [privileged], interval: 1m, release: {watch: 2m, check: {url: 'http://127.0.0.1:9/'}}}\n"), t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.Sources[0]
	if !sc.Prune || sc.App.Prune {
		t.Fatalf("the source's prune is about apps, the template's about resources: source %v, app %v", sc.Prune, sc.App.Prune)
	}
	off, restarts := false, 3
	app, err := sc.AppFor(sources.App{Name: "shop", Path: "apps/shop", Tag: "v2", Interval: "5m", SelfHeal: &off, Profiles: []string{"debug"},
		Release: &sources.Release{UnreadyFor: "10s", MaxRestarts: &restarts}, At: "driftless-apps.yaml:3"})
	if err != nil {
		t.Fatal(err)
	}
	if app.Name != "shop" || app.Path != "apps/shop" || app.Source != "platform" || app.Tag != "v2" || app.Branch != "" || app.Interval != "5m" || app.SelfHeal {
		t.Fatalf("app %+v", app)
	}
	if len(app.Policy.Allow) != 1 || app.Policy.Allow[0] != "privileged" {
		t.Fatalf("the template's host power is lost: %+v", app.Policy)
	}
	want := drift.ReleaseRules{Watch: 2 * time.Minute, UnreadyFor: 10 * time.Second, MaxRestarts: 3, Check: sc.App.Release.Check}
	if app.Release != want || app.Release.Check == nil {
		t.Fatalf("release %+v, want %+v", app.Release, want)
	}
	if _, err := sc.AppFor(sources.App{Name: "shop", Path: "apps/shop", Interval: "often", At: "driftless-apps.yaml:4"}); err == nil || !strings.Contains(err.Error(), "driftless-apps.yaml:4: interval") {
		t.Fatalf("bad interval: %v", err)
	}
	if app.SameGenerated(sc.App) {
		t.Fatal("a changed app reads as unchanged")
	}
}
