package loop

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/status"
)

// crash makes the named replica exit with code on its own, as a release
// that breaks under traffic does.
func (e *fakeEngine) crash(name string, code int) {
	e.outside(func(e *fakeEngine) {
		for i := range e.containers {
			if e.containers[i].Name == name {
				c := &e.containers[i]
				c.State, c.Status, c.ExitCode, c.Ready, c.RestartCount = drift.StateRestarting, "Restarting (1) 1 second ago", code, false, 1
			}
		}
	})
}

// TestReleaseRegressionQuarantinesAndRollsBack: v2 passes readiness, then
// crashes inside its watch window. The agent quarantines v2 while the
// branch still names it, rolls back to v1 (the last release that passed
// its window) and keeps v1 on later polls; a fix commit then deploys and
// passes its own window.
func TestReleaseRegressionQuarantinesAndRollsBack(t *testing.T) {
	cfg := appConfig("shop")
	cfg.Release = drift.ReleaseRules{Watch: 5 * time.Minute, UnreadyFor: 30 * time.Second}
	h := newHarness(t, cfg)
	src := h.sources["shop"]
	v1 := src.commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 2)})
	st, err := h.pass("shop", "startup")
	if err != nil {
		t.Fatal(err)
	}
	if st.Release == nil || st.Release.Watching == nil || st.Release.Watching.Revision != v1 {
		t.Fatalf("release %+v after the first sync, want v1 under watch", st.Release)
	}
	if !strings.Contains(st.Message, "watching (5m0s left)") {
		t.Errorf("message %q, want it to say the window is open", st.Message)
	}
	if h.lastResult.WatchAfter != watchPoll {
		t.Errorf("requeue after %v, want a look every %v while watching", h.lastResult.WatchAfter, watchPoll)
	}
	h.clock.Advance(5*time.Minute + time.Second)
	if st, err = h.pass("shop", TriggerWatch); err != nil {
		t.Fatal(err)
	}
	if st.Release.Watching != nil || st.Release.LastGood != v1 {
		t.Fatalf("release %+v after the window, want v1 last good and no watch", st.Release)
	}
	if es := h.history("shop", status.KindRelease); len(es) != 1 || es[0].Result != "passed" {
		t.Fatalf("release history %q, want v1 passed", summaries(es))
	}

	v2 := src.commit("v2", map[string]string{"web.yaml": service("web", "demo:v2", 2)})
	if st, err = h.pass("shop", "poll"); err != nil {
		t.Fatal(err)
	}
	if st.Applied.SHA != v2 || st.Release.Watching == nil || st.Release.Watching.Revision != v2 {
		t.Fatalf("applied %s, release %+v: want v2 applied and watched", st.Applied.Short(), st.Release)
	}
	h.clock.Advance(40 * time.Second)
	h.engine.crash("shop-web-2", 137)
	st, err = h.pass("shop", TriggerDockerEvent)
	if err != nil {
		t.Fatal(err)
	}
	if !h.lastResult.Requeue {
		t.Fatal("a regression did not ask for the rollback pass at once")
	}
	want := "quarantined " + v2[:7] + ": shop-web-2 crash-looped 40s after the release (exit 137, 1 restart); running " + v1[:7] + ", rolled back automatically"
	if st.Message != want {
		t.Fatalf("message %q\nwant    %q", st.Message, want)
	}
	if st, err = h.pass("shop", TriggerRepair); err != nil {
		t.Fatal(err)
	}
	if st.Applied.SHA != v1 || st.Fetched.SHA != v2 || st.Sync == drift.SyncSynced {
		t.Fatalf("applied %s, head %s, sync %s: want v1 running, v2 at the head, out of sync", st.Applied.Short(), st.Fetched.Short(), st.Sync)
	}
	for _, r := range h.engine.running("shop") {
		if !strings.HasSuffix(r, "@"+v1[:7]) {
			t.Fatalf("running %v, want only v1's replicas", h.engine.running("shop"))
		}
	}
	rb := h.history("shop", status.KindRollback)
	if len(rb) != 2 || rb[0].Result != "succeeded" || !status.AutomaticRollback(rb[0]) || rb[1].Result != "quarantined" {
		t.Fatalf("rollback history %q, want the quarantine then the automatic rollback", summaries(rb))
	}
	if st.Message != want {
		t.Errorf("message after the rollback %q, want %q", st.Message, want)
	}
	// The branch still names v2: later polls keep v1 and apply nothing.
	applies := h.engine.applyCount()
	for range 3 {
		if st, err = h.pass("shop", "poll"); err != nil {
			t.Fatal(err)
		}
	}
	if h.engine.applyCount() != applies || st.Applied.SHA != v1 {
		t.Fatalf("polls applied %d more times, applied %s: the quarantined head must not be tried again", h.engine.applyCount()-applies, st.Applied.Short())
	}
	// A restart keeps the quarantine.
	h.restart()
	if st, err = h.pass("shop", "startup"); err != nil || st.Applied.SHA != v1 {
		t.Fatalf("after a restart: err %v, applied %s; want v1 kept", err, st.Applied.Short())
	}
	// A fix commit is tried as usual.
	v3 := src.commit("v3 fix", map[string]string{"web.yaml": service("web", "demo:v3", 2)})
	if st, err = h.pass("shop", "poll"); err != nil {
		t.Fatal(err)
	}
	if st.Applied.SHA != v3 || st.Release.Watching == nil || st.Release.Watching.Revision != v3 {
		t.Fatalf("applied %s, release %+v: want the fix applied and watched", st.Applied.Short(), st.Release)
	}
	if st.Release.LastGood != v1 {
		t.Errorf("last good %s, want v1 until the fix passes its window", st.Release.LastGood)
	}
}

// TestReleaseQuarantineLiftedByAPerson: "Sync now" retries the
// quarantined head on purpose, and it is watched again.
func TestReleaseQuarantineLiftedByAPerson(t *testing.T) {
	h, v2 := releaseUnderWatch(t, 1)
	h.engine.crash("shop-web-1", 1)
	mustPass(t, h, TriggerDockerEvent)
	st := mustPass(t, h, TriggerRepair)
	if st.Applied.SHA == v2 {
		t.Fatal("not rolled back")
	}
	if err := h.agent.Unquarantine("shop"); err != nil {
		t.Fatal(err)
	}
	st = mustPass(t, h, TriggerManual)
	if st.Applied.SHA != v2 || st.Release.Watching == nil || len(st.Release.Quarantined) != 0 {
		t.Fatalf("applied %s, release %+v: want v2 retried, watched, no longer quarantined", st.Applied.Short(), st.Release)
	}
	if es := h.history("shop", status.KindAction); len(es) == 0 || !strings.Contains(es[0].Summary, "quarantine of "+v2[:7]+" lifted") {
		t.Fatalf("action history %q, want the lifted quarantine", summaries(es))
	}
	if err := h.agent.Unquarantine("shop"); err == nil {
		t.Fatal("unquarantine of a head that is not quarantined succeeded")
	}
}

// TestReleaseDriftIsNotARegression: a replica stopped or removed by a
// person inside the window is repaired, not rolled back.
func TestReleaseDriftIsNotARegression(t *testing.T) {
	h, v2 := releaseUnderWatch(t, 2)
	h.engine.stop("shop-web-1")
	h.engine.rm("shop-web-2")
	st := mustPass(t, h, TriggerDockerEvent)
	if st.Applied.SHA != v2 || len(st.Release.Quarantined) != 0 {
		t.Fatalf("applied %s, release %+v: drift must not roll back", st.Applied.Short(), st.Release)
	}
	if got := h.engine.running("shop"); len(got) != 2 {
		t.Fatalf("running %v, want both replicas repaired", got)
	}
}

// TestReleaseWithoutEarlierGoodRevision: the first release regresses; it
// is quarantined, nothing is rolled back, and the status says to fix
// forward.
func TestReleaseWithoutEarlierGoodRevision(t *testing.T) {
	cfg := appConfig("shop")
	cfg.Release = drift.ReleaseRules{Watch: time.Minute}
	h := newHarness(t, cfg)
	v1 := h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	mustPass(t, h, "startup")
	h.engine.crash("shop-web-1", 1)
	st := mustPass(t, h, TriggerDockerEvent)
	if len(st.Release.Quarantined) != 1 || !strings.Contains(st.Message, "nothing was rolled back") {
		t.Fatalf("release %+v, message %q", st.Release, st.Message)
	}
	st = mustPass(t, h, TriggerRepair)
	if st.Applied.SHA != v1 {
		t.Fatalf("applied %s, want v1 kept (nothing to roll back to)", st.Applied.Short())
	}
}

// releaseUnderWatch is app shop (a one-minute watch window) whose v1 of
// service web, with replicas, passed its window, and whose v2 is applied
// and under watch; it returns the harness and v2's SHA.
func releaseUnderWatch(t *testing.T, replicas int) (*harness, string) {
	t.Helper()
	cfg := appConfig("shop")
	cfg.Release = drift.ReleaseRules{Watch: time.Minute}
	h := newHarness(t, cfg)
	src := h.sources["shop"]
	src.commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", replicas)})
	mustPass(t, h, "startup")
	h.clock.Advance(2 * time.Minute)
	mustPass(t, h, TriggerWatch)
	v2 := src.commit("v2", map[string]string{"web.yaml": service("web", "demo:v2", replicas)})
	mustPass(t, h, "poll")
	return h, v2
}

func mustPass(t *testing.T, h *harness, trigger string) status.AppStatus {
	t.Helper()
	st, err := h.pass("shop", trigger)
	if err != nil {
		t.Fatalf("pass (%s): %v", trigger, err)
	}
	return st
}

func canaryService(image string) string {
	return service("web", image, 3) + "  update: {canary: 1, canaryWatch: 1m}\n"
}

// TestCanaryStep: a new spec reaches one replica first; the rest wait
// until it passes its canaryWatch, then roll at once. A regression of the
// canary rolls back just that replica and quarantines the commit.
func TestCanaryStep(t *testing.T) {
	cfg := appConfig("shop")
	cfg.Release = drift.ReleaseRules{Watch: 5 * time.Minute}
	h := newHarness(t, cfg)
	src := h.sources["shop"]
	v1 := src.commit("v1", map[string]string{"web.yaml": canaryService("demo:v1")})
	mustPass(t, h, "startup")
	if got := h.engine.running("shop"); len(got) != 3 {
		t.Fatalf("first deploy ran %v: a canary holds replacements, not creations", got)
	}
	h.clock.Advance(6 * time.Minute)
	mustPass(t, h, TriggerWatch)

	v2 := src.commit("v2", map[string]string{"web.yaml": canaryService("demo:v2")})
	st := mustPass(t, h, "poll")
	want := []string{"shop-web-1@" + v2[:7], "shop-web-2@" + v1[:7], "shop-web-3@" + v1[:7]}
	if got := h.engine.running("shop"); !slices.Equal(got, want) {
		t.Fatalf("running %v, want only the canary on v2: %v", got, want)
	}
	if st.Release.Watching == nil || !strings.HasPrefix(st.Message, "canary of "+v2[:7]) {
		t.Fatalf("release %+v, message %q: want the canary watched", st.Release, st.Message)
	}
	h.clock.Advance(30 * time.Second)
	mustPass(t, h, "poll")
	if got := h.engine.running("shop"); !slices.Equal(got, want) {
		t.Fatalf("running %v inside the canary window, want the rest held", got)
	}
	h.clock.Advance(31 * time.Second)
	mustPass(t, h, TriggerWatch)
	if !h.lastResult.Requeue {
		t.Fatal("a passed canary did not ask for the rest at once")
	}
	st = mustPass(t, h, TriggerRepair)
	for _, r := range h.engine.running("shop") {
		if !strings.HasSuffix(r, "@"+v2[:7]) {
			t.Fatalf("running %v after the canary passed, want every replica on v2", h.engine.running("shop"))
		}
	}
	if st.Release.Watching == nil || st.Release.Watching.Revision != v2 || strings.HasPrefix(st.Message, "canary") {
		t.Fatalf("release %+v, message %q: want the release's own window after the canary", st.Release, st.Message)
	}
	h.clock.Advance(6 * time.Minute)
	mustPass(t, h, TriggerWatch)

	// v3's canary crashes: only that replica goes back to v2.
	v3 := src.commit("v3", map[string]string{"web.yaml": canaryService("demo:v3")})
	mustPass(t, h, "poll")
	h.engine.crash("shop-web-1", 1)
	st = mustPass(t, h, TriggerDockerEvent)
	if !strings.Contains(st.Message, "quarantined "+v3[:7]) {
		t.Fatalf("message %q, want v3 quarantined", st.Message)
	}
	applies := h.engine.applyCount()
	mustPass(t, h, TriggerRepair)
	for _, r := range h.engine.running("shop") {
		if !strings.HasSuffix(r, "@"+v2[:7]) {
			t.Fatalf("running %v after the canary regression, want v2 everywhere", h.engine.running("shop"))
		}
	}
	if h.engine.applyCount() != applies+1 {
		t.Fatalf("%d applies for the rollback, want 1", h.engine.applyCount()-applies)
	}
	rb := h.history("shop", status.KindRollback)
	if len(rb) == 0 || !strings.Contains(rb[0].Summary, "0 to create, 1 to replace") {
		t.Fatalf("rollback history %q: want one replica replaced back", summaries(rb))
	}
}

// TestReleasePostSyncFailureRollsBack: a failed smoke test (post-sync job)
// is a regression of the release it tested.
func TestReleasePostSyncFailureRollsBack(t *testing.T) {
	h := &harness{t: t, dir: t.TempDir(), engine: &fakeEngine{}, sources: map[string]*fakeSource{"shop": newFakeSource()},
		clock: &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}
	cfg := appConfig("shop")
	cfg.Release = drift.ReleaseRules{Watch: time.Minute}
	h.apps = []config.AppConfig{cfg}
	f := &fakeJobs{engine: h.engine, exits: map[string]int{}}
	h.jobs = f
	h.open()
	src := h.sources["shop"]
	v1 := src.commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 1), "smoke.yaml": job("smoke", "post-sync", "demo:v1")})
	mustPass(t, h, "startup")
	h.clock.Advance(2 * time.Minute)
	mustPass(t, h, TriggerWatch)
	f.exits["smoke"] = 1
	v2 := src.commit("v2", map[string]string{"web.yaml": service("web", "demo:v2", 1), "smoke.yaml": job("smoke", "post-sync", "demo:v2")})
	st := mustPass(t, h, "poll")
	if !h.lastResult.Requeue || !strings.Contains(st.Message, "quarantined "+v2[:7]+": post-sync job smoke failed (exit 1); last line: error: column exists") {
		t.Fatalf("requeue %v, message %q: want v2 quarantined for its smoke test", h.lastResult.Requeue, st.Message)
	}
	if st = mustPass(t, h, TriggerRepair); st.Applied.SHA != v1 {
		t.Fatalf("applied %s, want the rollback to v1", st.Applied.Short())
	}
}

// TestReleaseSettingsFromTheRepository: a compose file's top-level
// x-driftless.release turns the window on, and sets its length, without
// any release: in the local config.
func TestReleaseSettingsFromTheRepository(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	compose := func(image string) map[string]string {
		return map[string]string{"compose.yaml": "services:\n  web:\n    image: " + image + "\nx-driftless:\n  release: {watch: 2m}\n"}
	}
	h.sources["shop"].commit("v1", compose("demo:v1"))
	st := mustPass(t, h, "startup")
	if st.Release == nil || st.Release.Watching == nil || st.Release.Watching.Until.Sub(st.Release.Watching.Since) != 2*time.Minute {
		t.Fatalf("release %+v: want a 2m window from the repository", st.Release)
	}
}
