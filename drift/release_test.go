package drift

import (
	"strings"
	"testing"
	"time"
)

func TestWatchRelease(t *testing.T) {
	web, db := service("web", 2), service("db", 1)
	d := desiredApp(web, db)
	rules := ReleaseRules{Watch: 5 * time.Minute}
	start := t0
	watch := func(act Actual) ReleaseWatch {
		return StartWatch("new", "old", []string{"web"}, rules, d, act, start, start)
	}
	cases := []struct {
		name string
		edit func(*Actual)
		at   time.Duration
		// want is a substring of the regression's reason; "" = none.
		want string
	}{
		{name: "healthy", at: time.Minute},
		{name: "crash loop of a new replica", at: 40 * time.Second, edit: func(a *Actual) {
			edit(a, "shop-web-2", func(c *Container) {
				c.State, c.ExitCode, c.RestartCount, c.Ready, c.FinishedAt = StateRestarting, 137, 3, false, start.Add(40*time.Second)
			})
		}, want: "shop-web-2 crash-looped 40s after the release (exit 137, 3 restarts)"},
		{name: "exit non-zero", at: 20 * time.Second, edit: func(a *Actual) {
			edit(a, "shop-web-1", func(c *Container) { c.State, c.ExitCode, c.Ready = StateExited, 1, false })
		}, want: "shop-web-1 exited 20s after the release (exit 1, 0 restarts)"},
		{name: "stopped by a person is drift, not a regression", at: 20 * time.Second, edit: func(a *Actual) {
			edit(a, "shop-web-1", func(c *Container) { c.State, c.ExitCode, c.Ready = StateExited, 143, false })
		}},
		{name: "removed by a person is drift, not a regression", at: 20 * time.Second, edit: func(a *Actual) {
			a.Containers = a.Containers[1:]
		}},
		{name: "a service the release did not change is not watched", at: 20 * time.Second, edit: func(a *Actual) {
			edit(a, "shop-db-1", func(c *Container) { c.State, c.ExitCode, c.Ready = StateExited, 1, false })
		}},
		{name: "an old replica of another spec is not the release's", at: 20 * time.Second, edit: func(a *Actual) {
			edit(a, "shop-web-1", func(c *Container) { c.SpecHash, c.State, c.ExitCode = "old-hash", StateExited, 1 })
		}},
		{name: "a restart is a regression with maxRestarts 0", at: 90 * time.Second, edit: func(a *Actual) {
			edit(a, "shop-web-1", func(c *Container) { c.RestartCount = 1 })
		}, want: "shop-web-1 crash-looped"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			act := converged(d)
			w := watch(act)
			if tc.edit != nil {
				tc.edit(&act)
			}
			_, reg := WatchRelease(w, rules, ReleaseObservation{Desired: d, Actual: act, Now: start.Add(tc.at)})
			switch {
			case tc.want == "" && reg != nil:
				t.Fatalf("regression %q, want none", reg.Reason)
			case tc.want != "" && reg == nil:
				t.Fatalf("no regression, want %q", tc.want)
			case tc.want != "" && !strings.Contains(reg.Reason, tc.want):
				t.Fatalf("regression %q, want it to contain %q", reg.Reason, tc.want)
			}
		})
	}
}

func TestWatchReleaseRestartsBeforeTheWindowDoNotCount(t *testing.T) {
	d := desiredApp(service("web", 1))
	act := converged(d)
	edit(&act, "shop-web-1", func(c *Container) { c.RestartCount = 4 })
	w := StartWatch("new", "old", []string{"web"}, ReleaseRules{Watch: time.Minute}, d, act, t0, t0)
	if _, reg := WatchRelease(w, ReleaseRules{Watch: time.Minute}, ReleaseObservation{Desired: d, Actual: act, Now: t0.Add(time.Second)}); reg != nil {
		t.Fatalf("regression %q from restarts before the window", reg.Reason)
	}
	edit(&act, "shop-web-1", func(c *Container) { c.RestartCount = 5 })
	if _, reg := WatchRelease(w, ReleaseRules{Watch: time.Minute}, ReleaseObservation{Desired: d, Actual: act, Now: t0.Add(time.Second)}); reg == nil {
		t.Fatal("a restart inside the window was not a regression")
	}
}

func TestWatchReleaseUnreadyFor(t *testing.T) {
	d := desiredApp(service("web", 1))
	rules := ReleaseRules{Watch: 5 * time.Minute, UnreadyFor: 30 * time.Second}
	act := converged(d)
	w := StartWatch("new", "old", []string{"web"}, rules, d, act, t0, t0)
	edit(&act, "shop-web-1", func(c *Container) { c.Ready, c.ReadyReason = false, "GET /healthz: 503" })
	w, reg := WatchRelease(w, rules, ReleaseObservation{Desired: d, Actual: act, Now: t0.Add(10 * time.Second)})
	if reg != nil {
		t.Fatalf("unready for 0s is a regression: %q", reg.Reason)
	}
	w, reg = WatchRelease(w, rules, ReleaseObservation{Desired: d, Actual: act, Now: t0.Add(39 * time.Second)})
	if reg != nil {
		t.Fatalf("unready for 29s is a regression: %q", reg.Reason)
	}
	// Ready again in between resets the clock.
	ready := converged(d)
	w2, _ := WatchRelease(w, rules, ReleaseObservation{Desired: d, Actual: ready, Now: t0.Add(40 * time.Second)})
	if _, reg := WatchRelease(w2, rules, ReleaseObservation{Desired: d, Actual: act, Now: t0.Add(45 * time.Second)}); reg != nil {
		t.Fatalf("the unready clock did not restart after the replica was ready: %q", reg.Reason)
	}
	_, reg = WatchRelease(w, rules, ReleaseObservation{Desired: d, Actual: act, Now: t0.Add(40 * time.Second)})
	want := "shop-web-1 was not ready for 30s, 10s after the release: GET /healthz: 503"
	if reg == nil || reg.Reason != want {
		t.Fatalf("regression %v, want %q", reg, want)
	}
}

func TestWatchReleaseCheckAndJob(t *testing.T) {
	d := desiredApp(service("web", 1))
	rules := ReleaseRules{Watch: time.Minute, Check: &HTTPCheck{URL: "http://127.0.0.1:1/health", FailureThreshold: 2}}
	act := converged(d)
	w := StartWatch("new", "old", []string{"web"}, rules, d, act, t0, t0)
	fail := &CheckResult{Detail: "503 Service Unavailable"}
	w, reg := WatchRelease(w, rules, ReleaseObservation{Desired: d, Actual: act, Now: t0.Add(time.Second), Check: fail})
	if reg != nil {
		t.Fatalf("one failed check is a regression: %q", reg.Reason)
	}
	w2, _ := WatchRelease(w, rules, ReleaseObservation{Desired: d, Actual: act, Now: t0.Add(2 * time.Second), Check: &CheckResult{OK: true}})
	if w2.CheckFailures != 0 {
		t.Fatalf("a passing check left %d failures", w2.CheckFailures)
	}
	_, reg = WatchRelease(w, rules, ReleaseObservation{Desired: d, Actual: act, Now: t0.Add(2 * time.Second), Check: fail})
	if reg == nil || !strings.Contains(reg.Reason, "failed 2 times in a row (503 Service Unavailable)") {
		t.Fatalf("regression %v after two failed checks", reg)
	}
	_, reg = WatchRelease(w, rules, ReleaseObservation{Desired: d, Actual: act, Now: t0.Add(2 * time.Second), JobFailure: "post-sync job smoke failed: exit 1"})
	if reg == nil || reg.Reason != "post-sync job smoke failed: exit 1" {
		t.Fatalf("regression %v for a failed post-sync job", reg)
	}
}

func TestWatchReleaseRestartsDuringTheRolloutCount(t *testing.T) {
	d := desiredApp(service("web", 1))
	act := converged(d)
	rolloutStart := t0.Add(-10 * time.Second)
	// Created by this rollout, it crashed once before the last replica
	// was ready and the window opened.
	edit(&act, "shop-web-1", func(c *Container) { c.RestartCount, c.Created = 1, rolloutStart.Add(time.Second) })
	w := StartWatch("new", "old", []string{"web"}, ReleaseRules{Watch: time.Minute}, d, act, rolloutStart, t0)
	if _, reg := WatchRelease(w, ReleaseRules{Watch: time.Minute}, ReleaseObservation{Desired: d, Actual: act, Now: t0.Add(time.Second)}); reg == nil {
		t.Fatal("a restart of a replica the rollout created, before the window opened, was not a regression")
	}
}
