package native_test

import (
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
)

const jobDoc = "apiVersion: driftless.dev/v1\nkind: Job\nmetadata:\n  name: migrate\nspec:\n"

func TestLoadJobs(t *testing.T) {
	a, err := loadtest.LoadFiles(t, map[string]string{
		"web.yaml": loadtest.Svc + "  image: web:1\n",
		"jobs.yaml": jobDoc + "  type: pre-sync\n  image: web:1\n  command: [migrate]\n  env: {A: b}\n  timeout: 90s\n  backoffLimit: 2\n" +
			"---\napiVersion: driftless.dev/v1\nkind: Job\nmetadata: {name: backup}\nspec:\n  image: tools:1\n  schedule: '@every 5m'\n  timeZone: Europe/Paris\n  catchUp: true\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Services) != 1 || len(a.Jobs) != 2 {
		t.Fatalf("services %d jobs %d", len(a.Services), len(a.Jobs))
	}
	m := a.Job("migrate")
	if m.Type != manifest.JobPreSync || m.Timeout != 90*time.Second || m.BackoffLimit != 2 || m.Service.Spec.Restart != manifest.RestartNever ||
		m.Service.Spec.Env["A"] != "b" || m.Service.Spec.Command[0] != "migrate" || m.Hash == "" || m.Source.Line != 4 {
		t.Errorf("migrate = %+v", m)
	}
	b := a.Job("backup")
	if b.Type != manifest.JobScheduled || b.Schedule != "@every 5m" || b.TimeZone != "Europe/Paris" || !b.CatchUp ||
		b.Concurrency != manifest.ConcurrencyForbid || b.Timeout != manifest.DefaultJobTimeout {
		t.Errorf("backup = %+v", b)
	}
	// The job's network is the default one, which the app then has.
	if a.Network(manifest.DefaultNetwork) == nil {
		t.Error("no default network")
	}
}

func TestLoadJobErrors(t *testing.T) {
	tests := []struct {
		name, spec string
		want       []string
	}{
		{"no type", "  image: x\n", []string{"j.yaml:5:1: spec.type: is required"}},
		{"bad type", "  image: x\n  type: presync\n", []string{`j.yaml:7:9: spec.type: must be pre-sync, post-sync, scheduled, got "presync" (did you mean "pre-sync"?)`}},
		{"bad schedule", "  image: x\n  schedule: every day\n", []string{`j.yaml:7:13: spec.schedule: "every day" is not a cron spec`}},
		{"bad zone", "  image: x\n  schedule: '@daily'\n  timeZone: Mars/Olympus\n", []string{`j.yaml:8:13: spec.timeZone: unknown time zone "Mars/Olympus"`}},
		{"bad concurrency", "  image: x\n  schedule: '@daily'\n  concurrency: replace\n", []string{`j.yaml:8:16: spec.concurrency: must be forbid or allow`}},
		{"schedule on pre-sync", "  image: x\n  type: pre-sync\n  catchUp: true\n", []string{"j.yaml:8:12: spec.catchUp: only a scheduled job has catchUp"}},
		{"replicas", "  image: x\n  type: post-sync\n  replicas: 2\n", []string{"j.yaml:8:13: spec.replicas: a Job runs one container to completion: remove replicas"}},
		{"dependsOnRestart", "  image: x\n  type: post-sync\n  dependsOnRestart: [db]\n", []string{"j.yaml:8:3: spec.dependsOnRestart: a Job runs one container to completion: remove dependsOnRestart"}},
		{"restart", "  image: x\n  type: post-sync\n  restart: always\n", []string{"j.yaml:8:12: spec.restart: a Job's container is never restarted"}},
		{"timeout", "  image: x\n  type: post-sync\n  timeout: soon\n", []string{"j.yaml:8:12: spec.timeout:"}},
		{"backoff", "  image: x\n  type: post-sync\n  backoffLimit: 99\n", []string{"j.yaml:8:17: spec.backoffLimit:"}},
		{"unknown field", "  image: x\n  type: post-sync\n  schedul: x\n", []string{`j.yaml:8:3: spec.schedul: unknown field (did you mean "schedule"?)`}},
		{"undeclared network", "  image: x\n  type: post-sync\n  networks: [db]\n", []string{`j.yaml:8:14: spec.networks[0]: network "db" is not declared`}},
		{"service name", "  image: x\n  type: post-sync\n", []string{`duplicate Job name "migrate"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"j.yaml": jobDoc + tt.spec}
			if tt.name == "service name" {
				files["a.yaml"] = strings.Replace(loadtest.Svc, "name: web", "name: migrate", 1) + "  image: x\n"
			}
			_, err := loadtest.LoadFiles(t, files)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant %q", err, w)
				}
			}
		})
	}
}

func TestJobHashChangesWithTheJob(t *testing.T) {
	load := func(spec string) manifest.Job {
		a, err := loadtest.LoadFiles(t, map[string]string{"j.yaml": jobDoc + spec})
		if err != nil {
			t.Fatal(err)
		}
		return a.Jobs[0]
	}
	base := load("  image: x\n  type: pre-sync\n")
	for _, spec := range []string{
		"  image: y\n  type: pre-sync\n",
		"  image: x\n  type: post-sync\n",
		"  image: x\n  type: pre-sync\n  env: {A: b}\n",
		"  image: x\n  type: pre-sync\n  timeout: 1m\n",
		"  image: x\n  type: pre-sync\n  backoffLimit: 1\n",
	} {
		if h := load(spec).Hash; h == base.Hash {
			t.Errorf("%q: hash unchanged", spec)
		}
	}
	if again := load("  image: x\n  type: pre-sync\n"); again.Hash != base.Hash {
		t.Error("hash not stable")
	}
}
