package config

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/gitsource"
)

// FuzzParseConfig: any driftless.yaml either loads into a config whose apps
// all have valid names and schedules, or fails with an error — never a
// panic, and never an error that echoes a secret read from the environment.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		"apps:\n  - name: shop\n    repo: https://git.example.com/x.git\n",
		"apps:\n  - name: shop\n    repo: https://git.example.com/x.git\n    interval: \"*/5 * * * *\"\n    passwordEnv: GIT_TOKEN\n",
		"listen: 127.0.0.1:9\nwebhookSecretEnv: HOOK\napps: []\n",
		"apps:\n  - {name: Bad_Name, repo: x}\n",
		"apps:\n  - name: a\n    repo: r\n    branch: main\n    tag: v1\n",
		"apps:\n  - name: a\n    repo: git://h/r\n    allowInsecureTransport: true\n    onForcePush: refuse\n",
		"apps:\n  - name: a\n    repo: http://u:p@h/r\n    onForcePush: follow\n",
		"{",
		"apps: 3",
		"notifications: [{name: ops, urlEnv: HOOK, events: [synced]}, {urlFile: nope}]\nnotify: {repairBatch: 5s, sourceUnreachableAfter: x}\napps:\n  - name: a\n    repo: r\n",
		"apps:\n  - name: a\n    repo: https://github.com/o/r.git\n    notifications: [{url: 'generic://h/x', urlEnv: U}]\n    commitStatus: {provider: gitlab, tokenEnv: T, baseURL: 'http://127.0.0.1:1'}\n",
		"apps:\n  - name: a\n    repo: r\n    limits: {replicas: 5, manifestBytes: 1Mi, contentBytes: 1e3, files: \"7\", documents: -1}\n",
	} {
		f.Add(seed)
	}
	const secret = "s3cr3t-value-never-shown"
	getenv := func(string) string { return secret }
	f.Fuzz(func(t *testing.T, data string) {
		cfg, err := parseConfig([]byte(data), t.TempDir(), getenv)
		if err != nil {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error echoes a secret: %v", err)
			}
			return
		}
		for _, a := range cfg.Apps {
			if a.Name == "" || a.Repo == "" {
				t.Fatalf("accepted an app without name or repo: %+v", a)
			}
			if !a.AllowInsecureTransport && gitsource.CheckTransport(a.Repo) != nil {
				t.Fatalf("accepted an insecure repository %q without the opt-in", a.Repo)
			}
			if a.OnForcePush != "" && a.OnForcePush != ForcePushFollow && a.OnForcePush != ForcePushRefuse {
				t.Fatalf("accepted onForcePush %q", a.OnForcePush)
			}
			if _, err := ParseSchedule(a.Interval); err != nil {
				t.Fatalf("accepted an app with a bad interval %q: %v", a.Interval, err)
			}
			if err := a.Limits.Validate(); err != nil {
				t.Fatalf("accepted an app with bad limits %+v: %v", a.Limits, err)
			}
		}
	})
}
