package drift

import (
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

func TestRenderAlignment(t *testing.T) {
	plan := Plan{
		App: "shop", Revision: "abc1234ffff",
		Changes: []Change{
			{Action: ActionCreate, Kind: KindNetwork, Name: "shop-backend", Reason: "declared in revision abc1234"},
			{Action: ActionCreate, Kind: KindContainer, Name: "shop-web-3", Reason: "scale up: replicas 2 → 3"},
			{Action: ActionReplace, Kind: KindContainer, Name: "shop-web-1", Reason: "spec changed in revision abc1234",
				Fields: []FieldChange{{Path: "image", Before: "shop/web:v6", After: "shop/web:v7"}}},
			{Action: ActionStart, Kind: KindContainer, Name: "shop-db-1", Cause: CauseDrift, Reason: "stopped outside Git: Exited (0) 3 minutes ago"},
			{Action: ActionRemove, Kind: KindContainer, Name: "shop-web-4", Reason: "scale down: replicas 4 → 3"},
		},
		Deferred: []Change{{Action: ActionStart, Kind: KindContainer, Name: "shop-api-1", Reason: "stopped outside Git",
			NotBefore: time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)}},
		Pruneable: []Change{{Action: ActionRemove, Kind: KindContainer, Name: "shop-old-1", Reason: "service old is no longer declared"}},
		Conflicts: []Conflict{{Kind: KindContainer, Name: "shop-cron-1", Reason: "name is held by a container driftless does not own"}},
	}
	want := `Plan for app shop at revision abc1234:

  + network shop-backend          declared in revision abc1234
  + container shop-web-3          scale up: replicas 2 → 3
  -/+ container shop-web-1        spec changed in revision abc1234
        image: shop/web:v6 → shop/web:v7
  ~ container shop-db-1 (start)   stopped outside Git: Exited (0) 3 minutes ago
  - container shop-web-4          scale down: replicas 4 → 3

Deferred (crash-loop backoff):
  ~ container shop-api-1 (start)  not before 12:00:30 (stopped outside Git)

Would be removed with --prune:
  - container shop-old-1          service old is no longer declared

Conflicts (driftless will not touch these):
  ! container shop-cron-1         name is held by a container driftless does not own

Plan: 2 to create, 1 to replace, 1 to start, 1 to remove.
`
	if got := plan.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		plan Plan
		want string
	}{
		{Plan{Revision: "0123456789"}, "No changes: running state matches revision 0123456."},
		{Plan{}, "No changes."},
		{Plan{Revision: "abc", Conflicts: []Conflict{{}}, Deferred: []Change{{}, {}}}, "No changes to make now: 2 deferred, 1 conflict."},
		{Plan{Changes: []Change{{Action: ActionCreate}, {Action: ActionCreate}, {Action: ActionReplace}, {Action: ActionStart}}},
			"Plan: 2 to create, 1 to replace, 1 to start, 0 to remove."},
	} {
		if got := tc.plan.Summary(); got != tc.want {
			t.Errorf("Summary() = %q, want %q", got, tc.want)
		}
	}
}

func TestDiffServiceSpec(t *testing.T) {
	before := manifest.ServiceSpec{
		Image: "shop/web:v1", Replicas: 2, Command: []string{"serve"},
		Env: map[string]string{"LOG_LEVEL": "info", "TOKEN": "h1", "GONE": "x", "SAME": "s",
			"KEPT_SECRET": manifest.SecretKey("k1").Redact("p4ss")},
		SecretEnv: []string{"KEPT_SECRET", "TOKEN"},
		Ports:     []manifest.Port{{ContainerPort: 80, HostPort: 8080, Protocol: "tcp"}},
		Networks:  []string{"default"},
		Resources: manifest.Resources{MemoryBytes: 512 << 20, NanoCPUs: 500_000_000},
		Restart:   manifest.RestartAlways, DependsOn: []string{"db"},
		Update: manifest.Update{Strategy: manifest.StrategyRolling, MaxSurge: 1},
	}
	after := before
	after.Replicas = 5
	after.DependsOn = []string{"db", "cache"}
	after.Command = []string{"serve", "--fast"}
	// KEPT_SECRET: recorded redacted, desired redacted with the same key
	// below, unchanged.
	after.Env = map[string]string{"LOG_LEVEL": "debug", "TOKEN": "h2", "NEW": "n", "SAME": "s", "API_KEY": "k", "KEPT_SECRET": "p4ss"}
	after.SecretEnv = []string{"API_KEY", "KEPT_SECRET", "TOKEN"}
	after.Ports = []manifest.Port{{ContainerPort: 80, HostPort: 9090, Protocol: "tcp"}}
	after.Volumes = []manifest.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true}}
	after.Resources = manifest.Resources{MemoryBytes: 1 << 30, NanoCPUs: 2_000_000_000}
	after.Readiness = &manifest.Readiness{HTTPGet: &manifest.HTTPGetProbe{Path: "/healthz", Port: 80}, PeriodSeconds: 5,
		TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}

	want := []FieldChange{
		{"command", `["serve"]`, `["serve" "--fast"]`},
		{"env.API_KEY", "(unset)", "(sensitive)"},
		{"env.GONE", "x", "(unset)"},
		{"env.LOG_LEVEL", "info", "debug"},
		{"env.NEW", "(unset)", "n"},
		{"env.TOKEN", "(sensitive)", "(sensitive)"},
		{"secretEnv", "KEPT_SECRET, TOKEN", "API_KEY, KEPT_SECRET, TOKEN"},
		{"ports", "8080:80/tcp", "9090:80/tcp"},
		{"volumes", "(none)", "data:/data:ro"},
		{"resources.memory", "512Mi", "1Gi"},
		{"resources.cpus", "0.5", "2"},
		{"readiness", "(none)", "httpGet :80/healthz (delay 0s, every 5s, timeout 1s, success 1, failure 3)"},
	}
	got := DiffServiceSpec(before, after.Redacted(manifest.SecretKey("k1")))
	if len(got) != len(want) {
		t.Fatalf("got %d fields, want %d:\n%v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("field %d = %v, want %v", i, got[i], want[i])
		}
	}
	if d := DiffServiceSpec(before, before); len(d) != 0 {
		t.Errorf("identical specs differ: %v", d)
	}
	scaled := before
	scaled.Replicas, scaled.DependsOn = 9, nil
	if d := DiffServiceSpec(before, scaled); len(d) != 0 {
		t.Errorf("replicas and dependsOn must not be listed: %v", d)
	}
}
