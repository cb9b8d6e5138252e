package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadConfigReadsNotificationsAndCommitStatus(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "slack-url"), []byte("slack://hook:T000/B000/XXX\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "gh-token"), []byte("ghp_abc\n"), 0o600)
	t.Setenv("NTFY_URL", "ntfy://ntfy.sh/driftless")
	cfg, err := parseConfig([]byte(`
externalURL: https://driftless.example.com/
notify:
  sourceUnreachableAfter: 10m
  repairBatch: 30s
notifications:
  - name: team-slack
    urlFile: slack-url
    events: [rollout-failed, recovered]
  - urlEnv: NTFY_URL
apps:
  - name: web
    repo: https://github.com/acme/infra.git
    notifications:
      - url: generic://127.0.0.1:9/hook?template=json
    commitStatus:
      provider: github
      tokenFile: gh-token
`), dir, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ExternalURL != "https://driftless.example.com" || cfg.Notify.SourceUnreachableAfter != 10*time.Minute || cfg.Notify.RepairBatch != 30*time.Second {
		t.Errorf("global notify settings = %q %+v", cfg.ExternalURL, cfg.Notify)
	}
	if len(cfg.Notifications) != 2 || cfg.Notifications[0].Name != "team-slack" || cfg.Notifications[0].URL != "slack://hook:T000/B000/XXX" ||
		strings.Join(cfg.Notifications[0].Events, ",") != "rollout-failed,recovered" ||
		cfg.Notifications[1].Name != "notify-2" || cfg.Notifications[1].URL != "ntfy://ntfy.sh/driftless" {
		t.Errorf("global destinations = %+v", cfg.Notifications)
	}
	web := cfg.Apps[0]
	if len(web.Notifications) != 1 || web.Notifications[0].Name != "web-1" {
		t.Errorf("app destinations = %+v, want one named web-1", web.Notifications)
	}
	if cs := web.CommitStatus; cs == nil || cs.Provider != "github" || cs.Token != "ghp_abc" {
		t.Errorf("commit status = %+v", cs)
	}
}

func TestNotificationConfigErrorsSayWhatToFix(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"notifications: [{name: a}]", "notifications[0]: set exactly one of url, urlEnv and urlFile"},
		{"notifications: [{url: 'x://', urlEnv: X}]", "notifications[0]: set exactly one of url, urlEnv and urlFile"},
		{"notifications: [{urlEnv: NOPE_NOT_SET}]", "notifications[0]: url: environment variable NOPE_NOT_SET is empty or not set"},
		{"notifications: [{name: a, url: 'x://'}, {name: a, url: 'y://'}]", `notifications[1]: name "a" is used twice`},
		{"notify: {repairBatch: soon}", `notify.repairBatch: "soon" is not a positive duration`},
		{"apps: [{name: web, repo: r, commitStatus: {provider: gitea}}]", "apps[0] (web): commitStatus: set tokenEnv or tokenFile"},
		{"apps: [{name: web, repo: r, commitStatus: {provider: svn, tokenEnv: HOME}}]", `apps[0] (web): commitStatus.provider: "svn" is not supported: use one of [github gitlab gitea bitbucket]`},
	} {
		y := tc.yaml
		if !strings.Contains(y, "apps:") {
			y += "\napps: [{name: web, repo: https://example.com/r.git}]"
		}
		_, err := parseConfig([]byte(y), t.TempDir(), os.Getenv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n error %v\n want %q", tc.yaml, err, tc.want)
		}
	}
}
