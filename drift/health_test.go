package drift

import (
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

func TestAssess(t *testing.T) {
	web := service("web", 2)
	job := service("job", 1, restart(manifest.RestartOnFailure))
	never := service("job", 1, restart(manifest.RestartNever))
	d := desiredApp(web)

	type want struct {
		sync                    SyncStatus
		app                     Health
		health                  Health
		desired, running, ready int
		message                 string
	}
	cases := []struct {
		name string
		in   Input
		want want
	}{
		{
			name: "healthy",
			in:   input(d, converged(d), Options{}),
			want: want{SyncSynced, HealthHealthy, HealthHealthy, 2, 2, 2, "2/2 replicas ready"},
		},
		{
			name: "crash loop",
			in: func() Input {
				act := converged(d)
				edit(&act, "shop-web-2", func(c *Container) {
					c.State, c.Status, c.ExitCode, c.RestartCount, c.Ready = StateRestarting, "Restarting (1) 4 seconds ago", 1, 7, false
				})
				return input(d, act, Options{})
			}(),
			want: want{SyncSynced, HealthDegraded, HealthDegraded, 2, 1, 1,
				"1/2 replicas ready; shop-web-2 is crash-looping: exit code 1, 7 restarts, Restarting (1) 4 seconds ago; see docker logs shop-web-2"},
		},
		{
			name: "restart never: a failed exit is degraded and left alone",
			in: func() Input {
				d := desiredApp(never)
				act := converged(d)
				edit(&act, "shop-job-1", func(c *Container) {
					c.State, c.Status, c.ExitCode, c.Ready = StateExited, "Exited (3) 1 minute ago", 3, false
				})
				return input(d, act, Options{})
			}(),
			want: want{SyncSynced, HealthDegraded, HealthDegraded, 1, 0, 0,
				"0/1 replicas ready; shop-job-1 is crash-looping: exit code 3, 0 restarts, Exited (3) 1 minute ago; see docker logs shop-job-1"},
		},
		{
			name: "restart on-failure: a clean exit is a finished job",
			in: func() Input {
				d := desiredApp(job)
				act := converged(d)
				edit(&act, "shop-job-1", func(c *Container) {
					c.State, c.Status, c.ExitCode, c.Ready = StateExited, "Exited (0) 1 minute ago", 0, false
				})
				return input(d, act, Options{})
			}(),
			want: want{SyncSynced, HealthHealthy, HealthHealthy, 1, 0, 0,
				"0/1 replicas ready (1 completed with exit code 0; restart policy on-failure)"},
		},
		{
			name: "never ready past the deadline",
			in: func() Input {
				act := converged(d)
				edit(&act, "shop-web-1", func(c *Container) {
					c.Ready, c.ReadyReason, c.Created = false, "GET /healthz: 503", t0.Add(-10*time.Minute)
				})
				return input(d, act, Options{ReadyDeadline: 5 * time.Minute})
			}(),
			want: want{SyncSynced, HealthDegraded, HealthDegraded, 2, 2, 1,
				"1/2 replicas ready; shop-web-1 has not become ready within 5m0s: GET /healthz: 503; check its readiness probe and logs"},
		},
		{
			name: "starting within the deadline",
			in: func() Input {
				act := converged(d)
				edit(&act, "shop-web-1", func(c *Container) {
					c.Ready, c.ReadyReason, c.Created = false, "connection refused", t0.Add(-10*time.Second)
				})
				return input(d, act, Options{ReadyDeadline: 5 * time.Minute})
			}(),
			want: want{SyncSynced, HealthProgressing, HealthProgressing, 2, 2, 1,
				"1/2 replicas ready; waiting for shop-web-1 to become ready: connection refused"},
		},
		{
			name: "self-heal off: a replica removed outside Git is not coming back",
			in: func() Input {
				act := converged(d)
				drop(&act, "shop-web-2")
				return input(d, act, Options{NoSelfHeal: true, Applied: map[string]AppliedService{"web": {Hash: web.Hash, Replicas: 2}}})
			}(),
			want: want{SyncOutOfSync, HealthDegraded, HealthDegraded, 2, 1, 1,
				"1/2 replicas ready; 1 change made outside Git not repaired: self-heal is off"},
		},
		{
			name: "a failed rollout at the desired spec is degraded while old replicas serve",
			in: input(desiredApp(service("web", 2, image("shop/web:v2"))), converged(d), Options{
				FailedRollouts: map[string]RolloutFailure{"web": {
					Hash:      service("web", 2, image("shop/web:v2")).Hash,
					Failure:   Failure{Cause: FailureRollout, Summary: "shop-web-1 exited with code 1 (restarted 3 times)", ExitCode: 1, Restarts: 3, Logs: []string{"boom"}},
					NotBefore: t0.Add(20 * time.Second),
				}},
			}),
			want: want{SyncOutOfSync, HealthDegraded, HealthDegraded, 2, 2, 2,
				"2/2 replicas ready; rollout failed: shop-web-1 exited with code 1 (restarted 3 times) (last log lines in history); next attempt in 20s (fix the image or manifest in a new commit)"},
		},
		{
			name: "a failed rollout of an older spec no longer counts",
			in: input(d, converged(d), Options{
				FailedRollouts: map[string]RolloutFailure{"web": {Hash: "older", Failure: Failure{Cause: FailureRollout, Summary: "exited with code 1"}, NotBefore: t0.Add(time.Minute)}},
			}),
			want: want{SyncSynced, HealthHealthy, HealthHealthy, 2, 2, 2, "2/2 replicas ready"},
		},
		{
			name: "changes pending",
			in:   input(desiredApp(service("web", 3)), converged(d), Options{}),
			want: want{SyncOutOfSync, HealthProgressing, HealthProgressing, 3, 2, 2, "2/3 replicas ready; 1 change pending"},
		},
		{
			name: "missing",
			in:   input(d, Actual{}, Options{}),
			want: want{SyncOutOfSync, HealthMissing, HealthMissing, 2, 0, 0, "no replica exists; 2 changes pending"},
		},
		{
			name: "mid-replace: the new copy is the replica",
			in: func() Input {
				act := converged(desiredApp(service("web", 2, image("shop/web:v0"))))
				for _, slot := range []int{1, 2} {
					next := replica(web, slot)
					next.ID, next.Name, next.State, next.Ready = "new", next.Name+"-next", StateCreated, false
					act.Containers = append(act.Containers, next)
				}
				return input(d, act, Options{})
			}(),
			want: want{SyncOutOfSync, HealthProgressing, HealthProgressing, 2, 0, 0, "0/2 replicas ready; 4 changes pending"},
		},
		{
			name: "missing, recreation in backoff",
			in: input(desiredApp(service("web", 1)), converged(desiredApp(service("web", 0))), Options{
				Backoff: map[string]time.Time{"shop-web-1": t0.Add(30 * time.Second)},
			}),
			want: want{SyncOutOfSync, HealthMissing, HealthMissing, 1, 0, 0,
				"no replica exists; it keeps failing, next attempt not before 12:00:30"},
		},
		{
			name: "missing, held back by a conflict",
			in: input(desiredApp(service("web", 1, networks("backend"))),
				Actual{ForeignNetworks: []Network{{Name: "shop-backend"}}}, Options{}),
			want: want{SyncOutOfSync, HealthMissing, HealthMissing, 1, 0, 0,
				"no replica exists; held back by a conflict: network shop-backend: name is held by a network driftless does not own; remove or rename it"},
		},
		{
			name: "a replica held back by a host port",
			in: func() Input {
				d := desiredApp(service("web", 2, hostPort(80)))
				act := converged(d)
				drop(&act, "shop-web-2")
				act.ForeignContainers = []Container{{Name: "nginx", HostPorts: []int{80}}}
				return input(d, act, Options{})
			}(),
			want: want{SyncOutOfSync, HealthDegraded, HealthDegraded, 2, 1, 1,
				"1/2 replicas ready; held back by a conflict: container nginx: publishes host port 80 that service web needs; remove or rename it"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := Assess(tc.in, Compute(tc.in))
			if len(h.Services) != 1 {
				t.Fatalf("got %d services, want 1", len(h.Services))
			}
			s := h.Services[0]
			got := want{h.Sync, h.Health, s.Health, s.Desired, s.Running, s.Ready, s.Message}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestAssessAppIsWorstService(t *testing.T) {
	d := desiredApp(service("api", 1), service("web", 1), service("db", 1))
	act := converged(d)
	drop(&act, "shop-db-1")
	edit(&act, "shop-web-1", func(c *Container) { c.State, c.Ready = StatePaused, false })
	in := input(d, act, Options{})
	h := Assess(in, Compute(in))
	if h.Health != HealthDegraded || h.Sync != SyncOutOfSync {
		t.Fatalf("app: %s %s, want Degraded OutOfSync", h.Health, h.Sync)
	}
	got := map[string]Health{}
	for _, s := range h.Services {
		got[s.Service] = s.Health
	}
	want := map[string]Health{"api": HealthHealthy, "db": HealthMissing, "web": HealthDegraded}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if h.Services[0].Service != "api" || h.Services[2].Service != "web" {
		t.Errorf("services not in name order: %v", h.Services)
	}
}
