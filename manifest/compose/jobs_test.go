package compose_test

import (
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
)

func TestComposeJobs(t *testing.T) {
	a, err := loadtest.LoadFiles(t, map[string]string{"compose.yaml": `services:
  web:
    image: shop/web:1
  migrate:
    image: shop/web:1
    command: [migrate]
    restart: "no"
    environment: {DB: x}
    x-driftless:
      job: {type: pre-sync, timeout: 2m, backoffLimit: 1}
  backup:
    image: tools:1
    restart: "no"
    x-driftless:
      job: {schedule: "0 3 * * *", timeZone: UTC, concurrency: allow}
`})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Services) != 1 || a.Services[0].Name != "web" || len(a.Jobs) != 2 {
		t.Fatalf("services %+v jobs %+v", a.Services, a.Jobs)
	}
	m := a.Job("migrate")
	if m.Type != manifest.JobPreSync || m.Timeout != 2*time.Minute || m.BackoffLimit != 1 || m.Service.Spec.Env["DB"] != "x" || m.Hash == "" || m.Source.Line != 4 {
		t.Errorf("migrate = %+v", m)
	}
	if b := a.Job("backup"); b.Type != manifest.JobScheduled || b.Schedule != "0 3 * * *" || b.Concurrency != manifest.ConcurrencyAllow {
		t.Errorf("backup = %+v", b)
	}
}

func TestComposeJobErrors(t *testing.T) {
	tests := []struct{ name, svc, want string }{
		{"bad type", "    x-driftless:\n      job: {type: nightly}\n", `compose.yaml:5:19: services.migrate.x-driftless.job.type: must be pre-sync, post-sync, scheduled, got "nightly"`},
		{"bad schedule", "    x-driftless:\n      job: {schedule: 'at noon'}\n", `compose.yaml:5:23: services.migrate.x-driftless.job.schedule: "at noon" is not a cron spec`},
		{"bad zone", "    x-driftless:\n      job: {schedule: '@daily', timeZone: Nowhere/City}\n", `services.migrate.x-driftless.job.timeZone: unknown time zone "Nowhere/City"`},
		{"restart", "    restart: always\n    x-driftless:\n      job: {type: post-sync}\n", `compose.yaml:4:14: services.migrate.restart: a job's container is never restarted`},
		{"ports", "    ports: ['8080:80']\n    x-driftless:\n      job: {type: post-sync}\n", `services.migrate.ports: a job publishes no ports`},
		{"restart: true", "    restart: 'no'\n    depends_on: {db: {condition: service_started, restart: true}}\n    x-driftless:\n      job: {type: post-sync}\n  db:\n    image: x\n", `compose.yaml:5:60: services.migrate.depends_on.db.restart: a job is not replaced when its dependency is: remove restart: true`},
		{"monitor", "    restart: 'no'\n    deploy: {update_config: {monitor: 5s}}\n    x-driftless:\n      job: {type: pre-sync}\n", `compose.yaml:5:39: services.migrate.deploy.update_config.monitor: a job is not ready, it completes: remove it`},
		{"minReadySeconds", "    restart: 'no'\n    x-driftless:\n      job: {type: pre-sync}\n      minReadySeconds: 0\n", `compose.yaml:7:24: services.migrate.x-driftless.minReadySeconds: a job is not ready, it completes: remove it`},
		{"hooks", "    restart: 'no'\n    pre_stop: [{command: echo bye}]\n    x-driftless:\n      job: {type: pre-sync}\n", `compose.yaml:5:5: services.migrate.pre_stop: a job runs to completion: run the command in the job itself`},
		{"depended on", "    x-driftless:\n      job: {type: pre-sync}\n  web:\n    image: x\n    depends_on: [migrate]\n", `compose.yaml:8:18: services.web.depends_on[0]: "migrate" is a job, not a service`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadtest.LoadFiles(t, map[string]string{"compose.yaml": "services:\n  migrate:\n    image: x\n" + tt.svc})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v\nwant %q", err, tt.want)
			}
		})
	}
}
