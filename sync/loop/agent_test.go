package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/prometheus/client_golang/prometheus"
)

func summaries(es []status.HistoryEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Summary)
	}
	return out
}

func TestPassDeploysHeadAndRecordsSync(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	sha := h.sources["shop"].commit("add web", map[string]string{"web.yaml": service("web", "demo:v1", 2)})

	st, err := h.pass("shop", "startup")
	if err != nil {
		t.Fatal(err)
	}
	if got := h.engine.running("shop"); !slices.Equal(got, []string{"shop-web-1@" + sha[:7], "shop-web-2@" + sha[:7]}) {
		t.Fatalf("running = %v", got)
	}
	if st.Sync != drift.SyncSynced || st.Health != drift.HealthHealthy || st.Applied == nil || st.Applied.SHA != sha || st.Fetched.SHA != sha {
		t.Fatalf("status = sync %s health %s applied %v: %s", st.Sync, st.Health, st.Applied, st.Message)
	}
	if len(st.Services) != 1 || st.Services[0].Desired != 2 || st.Services[0].Ready != 2 || len(st.Services[0].Containers) != 2 {
		t.Fatalf("services = %+v", st.Services)
	}
	es := h.history("shop")
	if len(es) != 1 || es[0].Kind != status.KindSync || es[0].Trigger != "startup" || es[0].Result != "succeeded" || len(es[0].Outcomes) != 3 {
		t.Fatalf("history = %+v", es)
	}

	// A pass that changes nothing writes no history.
	if _, err := h.pass("shop", "poll"); err != nil {
		t.Fatal(err)
	}
	if n := len(h.history("shop")); n != 1 {
		t.Fatalf("an idle pass wrote history: %d entries", n)
	}
}

func TestInvalidRevisionIsRefusedAndLastGoodKeepsBeingEnforced(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	src := h.sources["shop"]
	good := src.commit("web v1", map[string]string{"web.yaml": service("web", "demo:v1", 2)})
	h.pass("shop", "startup")

	bad := src.commit("typo", map[string]string{"web.yaml": service("web", "demo:v2", 2) + "  replcas: 3\n"})
	st, err := h.pass("shop", "poll")
	var stalled *stalledError
	if !errors.As(err, &stalled) {
		t.Fatalf("pass error = %v, want a stalled error (wait for a new commit)", err)
	}
	if got := h.engine.running("shop"); !slices.Equal(got, []string{"shop-web-1@" + good[:7], "shop-web-2@" + good[:7]}) {
		t.Fatalf("running after refusal = %v, want the good revision untouched", got)
	}
	if st.Refused == nil || st.Refused.Revision.SHA != bad || len(st.Refused.Errors) == 0 || !strings.HasPrefix(st.Refused.Errors[0], "web.yaml:8:3: spec.replcas") {
		t.Fatalf("refusal = %+v, want the bad revision with file:line errors", st.Refused)
	}
	if st.Applied.SHA != good || !strings.Contains(st.Message, "still running "+good[:7]) {
		t.Fatalf("applied %s, message %q", st.Applied.Short(), st.Message)
	}
	if !hasCondition(st, "validation") {
		t.Fatalf("errors = %+v, want a validation condition", st.Errors)
	}

	// Polling the same bad head again records nothing new.
	h.clock.Advance(time.Minute)
	st2, _ := h.pass("shop", "poll")
	if n := len(h.history("shop", status.KindRefused)); n != 1 {
		t.Fatalf("%d refused entries after two passes on the same sha, want 1", n)
	}
	if st2.Errors[0].Since != st.Errors[0].Since {
		t.Fatalf("condition since moved from %s to %s while the problem lasted", st.Errors[0].Since, st2.Errors[0].Since)
	}

	// Self-heal keeps enforcing the last good revision, and a pass that
	// looks only at the engine still says the revision is refused.
	h.engine.rm("shop-web-2")
	st3, _ := h.pass("shop", "docker-event")
	if got := h.engine.running("shop"); !slices.Equal(got, []string{"shop-web-1@" + good[:7], "shop-web-2@" + good[:7]}) {
		t.Fatalf("running after repair = %v, want the good revision repaired", got)
	}
	if st3.Refused == nil || !strings.Contains(st3.Message, "revision "+bad[:7]+" refused") {
		t.Fatalf("after an engine-only pass: refused %+v, message %q", st3.Refused, st3.Message)
	}

	// The next good commit applies and clears the refusal.
	fixed := src.commit("fix", map[string]string{"web.yaml": service("web", "demo:v2", 3)})
	st, err = h.pass("shop", "poll")
	if err != nil || st.Refused != nil || st.Applied.SHA != fixed || hasCondition(st, "validation") {
		t.Fatalf("after fix: err %v refused %+v applied %s errors %+v", err, st.Refused, st.Applied.Short(), st.Errors)
	}
	if n := len(h.engine.running("shop")); n != 3 {
		t.Fatalf("running %d replicas, want 3", n)
	}
}

func hasCondition(st status.AppStatus, kind string) bool {
	return slices.ContainsFunc(st.Errors, func(c status.Condition) bool { return c.Kind == kind })
}

func TestEmptyRevisionIsRefusedUnlessAllowed(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprint("allowEmpty=", allow), func(t *testing.T) {
			cfg := appConfig("shop")
			cfg.Prune, cfg.AllowEmpty, cfg.MaxRemovalPercent = true, allow, 100
			h := newHarness(t, cfg)
			h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
			h.pass("shop", "startup")
			h.sources["shop"].commit("remove everything", map[string]string{"README.md": "nothing here"})
			st, _ := h.pass("shop", "poll")
			running := len(h.engine.running("shop"))
			if !allow {
				if st.Refused == nil || !strings.Contains(st.Refused.Reason, "allowEmpty: true") || running != 1 {
					t.Fatalf("refused %+v, running %d: want refusal naming allowEmpty and web kept", st.Refused, running)
				}
				return
			}
			if st.Refused != nil || running != 0 {
				t.Fatalf("refused %+v, running %d: want the empty revision applied", st.Refused, running)
			}
		})
	}
}

func TestRevisionRemovingTooManyServicesIsRefused(t *testing.T) {
	cfg := appConfig("shop")
	cfg.Prune = true
	h := newHarness(t, cfg)
	src := h.sources["shop"]
	src.commit("three services", map[string]string{
		"web.yaml": service("web", "demo:v1", 1), "api.yaml": service("api", "demo:v1", 1), "worker.yaml": service("worker", "demo:v1", 1),
	})
	h.pass("shop", "startup")
	src.commit("oops", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	st, _ := h.pass("shop", "poll")
	if st.Refused == nil || !strings.Contains(st.Refused.Reason, "2 of 3 running services") || !strings.Contains(st.Refused.Reason, "maxRemovalPercent") {
		t.Fatalf("refusal = %+v, want it to name the count and the setting", st.Refused)
	}
	if n := len(h.engine.running("shop")); n != 3 {
		t.Fatalf("running %d, want all 3 kept", n)
	}
	// Removing one of three (33%) is within the limit.
	src.commit("drop worker", map[string]string{"web.yaml": service("web", "demo:v1", 1), "api.yaml": service("api", "demo:v1", 1)})
	st, _ = h.pass("shop", "poll")
	if st.Refused != nil || len(h.engine.running("shop")) != 2 {
		t.Fatalf("refused %+v, running %v", st.Refused, h.engine.running("shop"))
	}
}

func TestSelfHealOffShowsDriftWithoutRepairing(t *testing.T) {
	cfg := appConfig("shop")
	cfg.SelfHeal = false
	h := newHarness(t, cfg)
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 2)})
	h.pass("shop", "startup")
	h.engine.rm("shop-web-2")
	applies := h.engine.applyCount()
	st, err := h.pass("shop", "docker-event")
	if err != nil {
		t.Fatal(err)
	}
	if h.engine.applyCount() != applies || len(h.engine.running("shop")) != 1 {
		t.Fatal("drift was repaired with self-heal off")
	}
	if st.Sync != drift.SyncOutOfSync || st.Drift == nil || len(st.Drift.Changes) != 1 || st.Drift.Changes[0].Cause != drift.CauseDrift || !strings.Contains(st.Message, "self-heal is off") {
		t.Fatalf("status = %s %q drift %+v", st.Sync, st.Message, st.Drift)
	}
	// Nothing will repair it, so it is not "Progressing".
	if st.Health != drift.HealthDegraded || st.Services[0].Health != drift.HealthDegraded || !strings.Contains(st.Services[0].Message, "self-heal is off") {
		t.Fatalf("health with unrepaired drift = %s, service %s %q", st.Health, st.Services[0].Health, st.Services[0].Message)
	}
	if n := len(h.history("shop", status.KindRepair)); n != 0 {
		t.Fatalf("%d repair entries with self-heal off", n)
	}
	// A new commit is still applied.
	h.sources["shop"].commit("scale", map[string]string{"web.yaml": service("web", "demo:v1", 3)})
	h.pass("shop", "poll")
	if got := h.engine.running("shop"); len(got) != 2 || got[0][:10] != "shop-web-1" || got[1][:10] != "shop-web-3" {
		t.Fatalf("running %v: want the git change (web-3) applied and the drift (web-2) left", got)
	}
}

func TestSuspendAppliesNothingAndSurvivesRestart(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	v1 := h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", "startup")
	if err := h.agent.SetSuspended("shop", true); err != nil {
		t.Fatal(err)
	}
	h.restart()
	h.sources["shop"].commit("v2", map[string]string{"web.yaml": service("web", "demo:v2", 1)})
	h.engine.stop("shop-web-1")
	applies := h.engine.applyCount()
	st, _ := h.pass("shop", "poll")
	if h.engine.applyCount() != applies {
		t.Fatal("a suspended app was changed")
	}
	if !st.Suspended || st.Health != status.HealthSuspended || st.Applied.SHA != v1 || st.Sync != drift.SyncOutOfSync {
		t.Fatalf("status = suspended %v health %s applied %s sync %s", st.Suspended, st.Health, st.Applied.Short(), st.Sync)
	}
	actions := h.history("shop", status.KindAction)
	if len(actions) != 1 || !strings.HasPrefix(actions[0].Summary, "suspended") {
		t.Fatalf("action entries = %v", summaries(actions))
	}
	if err := h.agent.SetSuspended("shop", false); err != nil {
		t.Fatal(err)
	}
	st, _ = h.pass("shop", "api")
	if st.Suspended || st.Sync != drift.SyncSynced || len(h.engine.running("shop")) != 1 {
		t.Fatalf("after resume: %s %q", st.Sync, st.Message)
	}
}

func TestSelfHealToggleOverridesConfigAfterRestart(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	if err := h.agent.SetSelfHeal("shop", false); err != nil {
		t.Fatal(err)
	}
	if err := h.agent.SetSelfHeal("shop", false); err != nil {
		t.Fatal(err)
	}
	if es := h.history("shop", status.KindAction); len(es) != 1 || !strings.HasPrefix(es[0].Summary, "self-heal turned off") {
		t.Fatalf("action entries = %q, want one for the one real change", summaries(es))
	}
	h.restart()
	st, _ := h.agent.App("shop")
	cfgs := h.agent.AppConfigs()
	if st.SelfHeal || cfgs[0].SelfHeal {
		t.Fatal("self-heal toggle did not survive a restart")
	}
	if err := h.agent.SetSelfHeal("nope", true); !errors.Is(err, ErrUnknownApp) {
		t.Fatalf("unknown app: %v", err)
	}
}

func TestRevertCommitIsMarkedInHistory(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	src := h.sources["shop"]
	v1files := map[string]string{"web.yaml": service("web", "demo:v1", 1)}
	src.commit("v1", v1files)
	h.pass("shop", "startup")
	v2 := src.commit("v2", map[string]string{"web.yaml": service("web", "demo:v2", 1)})
	h.pass("shop", "poll")
	rv := src.revert(v2, v1files)
	h.pass("shop", "commit")
	syncs := h.history("shop", status.KindSync)
	if len(syncs) != 3 {
		t.Fatalf("sync entries = %v", summaries(syncs))
	}
	e := syncs[0]
	if e.Revision == nil || e.Revision.SHA != rv || !e.Revision.Revert || e.Revision.Reverts != v2 || !strings.HasPrefix(e.Summary, "synced revert") || e.Trigger != "commit" {
		t.Fatalf("revert entry = %+v", e)
	}
	if got := h.engine.running("shop"); !slices.Equal(got, []string{"shop-web-1@" + rv[:7]}) {
		t.Fatalf("running %v", got)
	}
}

func TestDriftRepairsAreRecordedOneByOne(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 2)})
	h.pass("shop", "startup")
	h.engine.rm("shop-web-2")
	h.engine.stop("shop-web-1")
	st, err := h.pass("shop", "docker-event")
	if err != nil {
		t.Fatal(err)
	}
	got := summaries(h.history("shop", status.KindRepair))
	slices.Sort(got)
	want := []string{"shop-web-1 was stopped outside Git; started", "shop-web-2 was removed outside Git; recreated"}
	if !slices.Equal(got, want) {
		t.Fatalf("repairs = %q, want %q", got, want)
	}
	if n := len(h.history("shop", status.KindSync)); n != 1 {
		t.Fatalf("a repair without a new commit wrote a sync entry (%d sync entries)", n)
	}
	if st.Sync != drift.SyncSynced || len(h.engine.running("shop")) != 2 {
		t.Fatalf("after repair: %s, running %v", st.Sync, h.engine.running("shop"))
	}
}

// While a new revision rolls out, the status must not keep saying "Synced"
// about the previous one.
func TestStatusShowsProgressingDuringRollout(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	h.sources["shop"].commit("web v1", map[string]string{"web.yaml": service("web", "demo:v1", 2)})
	h.pass("shop", "startup")
	var during status.AppStatus
	h.engine.duringApply = func() { during, _ = h.agent.App("shop") }
	sha := h.sources["shop"].commit("web v2", map[string]string{"web.yaml": service("web", "demo:v2", 2)})
	after, _ := h.pass("shop", "poll")
	if during.Sync != drift.SyncOutOfSync || during.Health != drift.HealthProgressing || during.Drift == nil || len(during.Drift.Changes) != 2 {
		t.Fatalf("during the rollout: sync %s, health %s, drift %+v", during.Sync, during.Health, during.Drift)
	}
	if !strings.Contains(during.Message, "applying "+sha[:7]) {
		t.Fatalf("during the rollout the message should name the revision being applied: %q", during.Message)
	}
	if after.Sync != drift.SyncSynced || after.Health != drift.HealthHealthy {
		t.Fatalf("after the rollout: %s %s", after.Sync, after.Health)
	}
}

// A bad image is rolled out once, reported as Degraded with the reason, and
// not tried again until its backoff ends — however many Docker events and
// polls arrive meanwhile. A fixing commit is applied at once.
func TestFailedRolloutBacksOffAndIsDegraded(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	v1 := h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 2)})
	h.pass("shop", "startup")
	h.engine.outside(func(e *fakeEngine) { e.badImage = "demo:crash" })
	h.sources["shop"].commit("bad", map[string]string{"web.yaml": service("web", "demo:crash", 2)})
	h.pass("shop", "poll")
	applies := h.engine.applyCount()
	h.logs.take("")
	for _, trigger := range []string{"docker-event", "docker-event", "poll", "retry"} {
		h.clock.Advance(time.Second)
		st, _ := h.pass("shop", trigger)
		if st.Health != drift.HealthDegraded || !strings.Contains(st.Services[0].Message, "exited with code 1") || !strings.Contains(st.Services[0].Message, "next attempt in") {
			t.Fatalf("after a failed rollout: %s, service %q", st.Health, st.Services[0].Message)
		}
		if st.Applied == nil || st.Applied.SHA != v1 || st.Sync != drift.SyncOutOfSync {
			t.Fatalf("the failed revision must not count as applied: applied %+v, %s", st.Applied, st.Sync)
		}
	}
	if got := h.engine.applyCount(); got != applies {
		t.Fatalf("the failed rollout was retried %d times within its backoff", got-applies)
	}
	// Becoming Degraded is news; staying Degraded is not.
	if lines := h.logs.take("msg=pass"); len(lines) != 1 || !strings.Contains(lines[0], "health=Degraded") {
		t.Fatalf("want one line for the transition to Degraded; the log said:\n%s", strings.Join(lines, "\n"))
	}
	if got := h.engine.running("shop"); len(got) != 2 {
		t.Fatalf("the old replicas must keep running: %v", got)
	}
	// After the backoff it is tried once more, and the backoff doubles.
	h.clock.Advance(10 * time.Second)
	h.pass("shop", "poll")
	if got := h.engine.applyCount(); got != applies+1 {
		t.Fatalf("after the backoff: %d more applies, want 1", got-applies)
	}
	h.clock.Advance(15 * time.Second)
	h.pass("shop", "poll")
	if got := h.engine.applyCount(); got != applies+1 {
		t.Fatal("the second backoff should be longer than the first")
	}
	// A commit that fixes the image is applied at once.
	h.sources["shop"].commit("fix", map[string]string{"web.yaml": service("web", "demo:v2", 2)})
	st, _ := h.pass("shop", "poll")
	if st.Sync != drift.SyncSynced || st.Health != drift.HealthHealthy {
		t.Fatalf("after the fix: %s %s %q", st.Sync, st.Health, st.Message)
	}
}

// A replica held back by a foreign container was never created, so creating
// it once the way is clear is the revision's doing, not a drift repair.
func TestReplicaHeldBackByConflictIsNotARepair(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	h.engine.outside(func(e *fakeEngine) {
		e.foreign = []drift.Container{{ID: "f00", Name: "shop-web-1", Image: "other", State: drift.StateRunning}}
	})
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	st, _ := h.pass("shop", "startup")
	if len(st.Drift.Conflicts) != 1 || len(h.engine.running("shop")) != 0 {
		t.Fatalf("want the create held back by a conflict: conflicts %+v, running %v", st.Drift.Conflicts, h.engine.running("shop"))
	}
	h.engine.outside(func(e *fakeEngine) { e.foreign = nil })
	st, _ = h.pass("shop", "docker-event")
	if len(h.engine.running("shop")) != 1 || st.Sync != drift.SyncSynced {
		t.Fatalf("after the conflict cleared: %s, running %v", st.Sync, h.engine.running("shop"))
	}
	if repairs := summaries(h.history("shop", status.KindRepair)); len(repairs) != 0 {
		t.Fatalf("a replica that never existed was reported as repaired: %q", repairs)
	}
}

// A container removed by hand again and again is recreated at once each
// time (and reported as flapping): removal is not a crash.
func TestRepeatedRemovalIsRepairedAtOnce(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", "startup")
	for i := 0; i < 4; i++ {
		h.engine.rm("shop-web-1")
		h.clock.Advance(time.Second)
		st, _ := h.pass("shop", "docker-event")
		if len(h.engine.running("shop")) != 1 {
			t.Fatalf("removal %d was not repaired at once: deferred %+v", i+1, st.Drift.Deferred)
		}
	}
	if st, _ := h.agent.App("shop"); len(st.Flapping) != 1 {
		t.Fatalf("four removals in a few seconds should be reported as flapping: %+v", st.Flapping)
	}
}

func TestCrashLoopBacksOffAndFlappingIsReported(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", "startup")

	h.engine.stop("shop-web-1")
	h.pass("shop", "docker-event") // first repair: no backoff
	h.engine.stop("shop-web-1")
	h.pass("shop", "docker-event") // fails again: repaired, backoff 10s starts
	h.engine.stop("shop-web-1")
	st, _ := h.pass("shop", "docker-event")
	if len(h.engine.running("shop")) != 0 || st.Drift == nil || len(st.Drift.Deferred) != 1 {
		t.Fatalf("third failure within the backoff was repaired at once (running %v, drift %+v)", h.engine.running("shop"), st.Drift)
	}
	if n := len(h.history("shop", status.KindRepair)); n != 2 {
		t.Fatalf("%d repair entries, want 2", n)
	}

	h.clock.Advance(11 * time.Second)
	st, _ = h.pass("shop", "backoff")
	if len(h.engine.running("shop")) != 1 {
		t.Fatal("not repaired after the backoff ended")
	}
	if len(st.Flapping) != 1 || st.Flapping[0].Container != "shop-web-1" || st.Flapping[0].Field != "state" || st.Flapping[0].Count != 3 || !hasCondition(st, "flapping") {
		t.Fatalf("flapping = %+v errors %+v", st.Flapping, st.Errors)
	}
	flaps := h.history("shop", status.KindFlapping)
	if len(flaps) != 1 || !strings.Contains(flaps[0].Summary, "shop-web-1 state was repaired 3 times") {
		t.Fatalf("flapping entries = %v", summaries(flaps))
	}

	// The backoff doubles: the next failure waits 20s, not 10s.
	h.engine.stop("shop-web-1")
	h.pass("shop", "docker-event")
	h.engine.stop("shop-web-1")
	h.clock.Advance(11 * time.Second)
	h.pass("shop", "backoff")
	if len(h.engine.running("shop")) != 0 {
		t.Fatal("repaired after 11s although the backoff had doubled to 20s")
	}
	if n := len(h.history("shop", status.KindFlapping)); n != 1 {
		t.Fatalf("%d flapping entries while the same flap lasts, want 1", n)
	}

	// Quiet for longer than the window: the flap clears.
	h.clock.Advance(15 * time.Minute)
	st, _ = h.pass("shop", "poll")
	h.clock.Advance(time.Second)
	st, _ = h.pass("shop", "poll")
	if len(st.Flapping) != 0 || hasCondition(st, "flapping") {
		t.Fatalf("flapping still reported after a quiet window: %+v", st.Flapping)
	}
}

func TestSourceFailureKeepsLastGoodAndRecordsTransitions(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	src := h.sources["shop"]
	good := src.commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", "startup")

	src.setFetchErr(errUnreachable)
	h.engine.rm("shop-web-1")
	st, err := h.pass("shop", "poll")
	var waiting *waitingError
	if !errors.As(err, &waiting) {
		t.Fatalf("pass error = %v, want a waiting error (retry after a delay)", err)
	}
	if st.Source.Error == "" || st.Source.ErrorSince.IsZero() || st.Applied.SHA != good || !hasCondition(st, "source") {
		t.Fatalf("source status = %+v applied %s", st.Source, st.Applied.Short())
	}
	if got := h.engine.running("shop"); len(got) != 1 {
		t.Fatalf("last good revision not enforced while the source is down: %v", got)
	}
	since := st.Source.ErrorSince
	h.clock.Advance(time.Minute)
	st, _ = h.pass("shop", "poll")
	if !st.Source.ErrorSince.Equal(since) {
		t.Fatalf("ErrorSince moved from %s to %s", since, st.Source.ErrorSince)
	}

	src.setFetchErr(nil)
	st, err = h.pass("shop", "poll")
	if err != nil || st.Source.Error != "" || hasCondition(st, "source") {
		t.Fatalf("after recovery: %v %+v", err, st.Source)
	}
	es := h.history("shop", status.KindSource)
	if len(es) != 2 || es[1].Result != "failed" || es[0].Result != "succeeded" || !strings.Contains(es[1].Summary, "keeping "+good[:7]) {
		t.Fatalf("source entries = %q", summaries(es))
	}
}

func TestEngineDownMakesAgentNotReady(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	if err := h.agent.Ready(); err == nil || !strings.Contains(err.Error(), "no successful pass yet") {
		t.Fatalf("Ready before any pass = %v", err)
	}
	h.pass("shop", "startup")
	if err := h.agent.Ready(); err != nil {
		t.Fatalf("Ready after a good pass = %v", err)
	}
	h.engine.setDown(errors.New("dial unix /var/run/docker.sock: connect: no such file or directory"))
	st, _ := h.pass("shop", "poll")
	if !strings.HasPrefix(st.Message, "Docker engine unreachable") || st.Sync != status.SyncUnknown || !hasCondition(st, "engine") {
		t.Fatalf("status = %s %q", st.Sync, st.Message)
	}
	if err := h.agent.Ready(); err == nil || !strings.Contains(err.Error(), "Docker engine unreachable") {
		t.Fatalf("Ready with the engine down = %v", err)
	}
	h.engine.setDown(nil)
	h.clock.Advance(10 * time.Minute)
	if err := h.agent.Ready(); err == nil || !strings.Contains(err.Error(), "no successful pass for 10m0s") {
		t.Fatalf("Ready after 10 minutes without a pass = %v", err)
	}
}

func TestPinRollsBackAndUnpinFollowsBranch(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	src := h.sources["shop"]
	v1 := src.commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", "startup")
	v2 := src.commit("v2", map[string]string{"web.yaml": service("web", "demo:v2", 1)})
	h.pass("shop", "poll")

	if err := h.agent.Pin(context.Background(), "shop", v1); err != nil {
		t.Fatal(err)
	}
	h.restart()
	st, _ := h.pass("shop", "api")
	if st.Pinned == nil || st.Pinned.SHA != v1 || st.Applied.SHA != v1 || !slices.Equal(h.engine.running("shop"), []string{"shop-web-1@" + v1[:7]}) {
		t.Fatalf("pinned %v applied %v running %v", st.Pinned, st.Applied, h.engine.running("shop"))
	}
	if err := h.agent.Pin(context.Background(), "shop", v1); err != nil {
		t.Fatalf("pinning again to the same commit: %v", err)
	}
	if err := h.agent.Pin(context.Background(), "shop", "deadbeef"); err == nil {
		t.Fatal("pinning an unknown commit succeeded")
	}
	if err := h.agent.Unpin("shop"); err != nil {
		t.Fatal(err)
	}
	st, _ = h.pass("shop", "api")
	if st.Pinned != nil || st.Applied.SHA != v2 {
		t.Fatalf("after unpin: pinned %v applied %v", st.Pinned, st.Applied.Short())
	}
	rb := h.history("shop", status.KindRollback)
	if len(rb) != 2 || !strings.HasPrefix(rb[1].Summary, "pinned to "+v1[:7]) || !strings.HasPrefix(rb[0].Summary, "unpinned") {
		t.Fatalf("rollback entries = %q", summaries(rb))
	}
}

func TestRestartKeepsEnforcingLastGoodWhenHeadIsInvalid(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	src := h.sources["shop"]
	good := src.commit("good", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", "startup")
	src.commit("bad", map[string]string{"web.yaml": "kind: [\n"})
	h.pass("shop", "poll")
	h.restart()
	h.engine.rm("shop-web-1")
	st, _ := h.pass("shop", "startup")
	if !slices.Equal(h.engine.running("shop"), []string{"shop-web-1@" + good[:7]}) {
		t.Fatalf("after restart with a bad head, running %v; want the last good revision repaired", h.engine.running("shop"))
	}
	if n := len(h.history("shop", status.KindRefused)); n != 1 {
		t.Fatalf("%d refused entries for one bad sha across a restart", n)
	}
	if st.Refused == nil {
		t.Fatal("refusal not shown after restart")
	}
}

func TestStatusCopiesAreIndependent(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", "startup")
	st, _ := h.agent.App("shop")
	st.Services[0].Containers[0].Name = "changed"
	st.Applied.SHA = "changed"
	again, _ := h.agent.App("shop")
	if again.Services[0].Containers[0].Name == "changed" || again.Applied.SHA == "changed" {
		t.Fatal("a caller's change to a returned status leaked into the agent")
	}
}

func TestSubscribersGetEventsAndSlowOnesDoNotBlock(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	events, cancel := h.agent.Subscribe()
	defer cancel()
	_, stalled := h.agent.Subscribe() // never read
	for range 100 {
		h.pass("shop", "poll") // would deadlock if a full subscriber blocked
	}
	got := map[string]bool{}
	for len(events) > 0 {
		e := <-events
		got[e.App+"/"+e.Kind] = true
	}
	if !got["shop/status"] || !got["shop/history"] {
		t.Fatalf("events = %v, want status and history for shop", got)
	}
	stalled()
	if err := h.agent.Enqueue("nope", "api"); !errors.Is(err, ErrUnknownApp) {
		t.Fatalf("Enqueue unknown = %v", err)
	}
}

func TestRunDeploysOnStartupAndStopsCleanly(t *testing.T) {
	h := newHarness(t, appConfig("shop"), appConfig("blog"))
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.sources["blog"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 2)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.agent.Run(ctx) }()
	events, unsub := h.agent.Subscribe()
	defer unsub()
	for len(h.engine.running("shop")) != 1 || len(h.engine.running("blog")) != 2 {
		select {
		case <-events:
		case <-time.After(10 * time.Second):
			t.Fatal("startup passes did not deploy both apps")
		}
	}
	if err := h.agent.Enqueue("shop", "api"); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := h.agent.History(status.HistoryQuery{}); err == nil {
		t.Fatal("history store still open after Run returned")
	}
	// The data dir can be opened again: the store was closed.
	h.open()
	if n := len(h.history("")); n < 2 {
		t.Fatalf("%d history entries after restart, want the two syncs", n)
	}
}

func TestMetricsReflectStatus(t *testing.T) {
	h, reg := newMetricsHarness(t)
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 2)})
	h.pass("shop", "startup")
	h.engine.rm("shop-web-1")
	h.pass("shop", "docker-event")

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Gauge != nil:
				got[key] = m.Gauge.GetValue()
			case m.Counter != nil:
				got[key] = m.Counter.GetValue()
			case m.Histogram != nil:
				got[key] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	for key, want := range map[string]float64{
		`driftless_app_sync_status{app=shop,status=Synced}`:    1,
		`driftless_app_sync_status{app=shop,status=OutOfSync}`: 0,
		`driftless_app_health{app=shop,health=Healthy}`:        1,
		`driftless_app_desired_replicas{app=shop,service=web}`: 2,
		`driftless_app_ready_replicas{app=shop,service=web}`:   2,
		`driftless_drift_repairs_total{app=shop}`:              1,
		`driftless_reconcile_duration_seconds{app=shop}`:       2,
		`driftless_git_fetch_duration_seconds{app=shop}`:       1, // the docker-event pass repairs without fetching
		`driftless_queue_depth{}`:                              0,
		// Both passes observe before and after their apply and compute
		// the plan, then the gap left; only the startup pass fetched and
		// loaded a revision.
		`driftless_pass_phase_seconds{phase=fetch}`:          1,
		`driftless_pass_phase_seconds{phase=load}`:           1,
		`driftless_pass_phase_seconds{phase=observe}`:        4,
		`driftless_pass_phase_seconds{phase=compute}`:        4,
		`driftless_pass_phase_seconds{phase=apply}`:          2,
		`driftless_pass_phase_seconds{phase=status}`:         2,
		`driftless_last_success_timestamp_seconds{app=shop}`: float64(h.clock.Now().Unix()),
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
	h.sources["shop"].setFetchErr(errUnreachable)
	h.pass("shop", "poll")
	families, _ = reg.Gather()
	found := false
	for _, f := range families {
		if f.GetName() == "driftless_git_fetch_errors_total" || f.GetName() == "driftless_reconcile_errors_total" {
			found = found || len(f.GetMetric()) > 0
		}
	}
	if !found {
		t.Error("a failed fetch left no error counter")
	}
}

// A pass that finds nothing new must not log or count as a change just
// because Docker's "Up 3 minutes" moved on.
func TestStatusChangedIgnoresDockersUptimeWords(t *testing.T) {
	st := status.AppStatus{Name: "shop", Services: []status.ServiceStatus{{Name: "web", Containers: []status.ContainerStatus{{Name: "shop-web-1", Status: "Up 3 minutes", Ready: true}}}}}
	later := cloneStatus(st)
	later.Services[0].Containers[0].Status = "Up 4 minutes"
	if statusChanged(st, later) {
		t.Fatal("uptime words alone counted as a status change")
	}
	if st.Services[0].Containers[0].Status != "Up 3 minutes" {
		t.Fatal("statusChanged modified its argument")
	}
	later.Services[0].Containers[0].Ready = false
	if !statusChanged(st, later) {
		t.Fatal("a replica going unready was not a change")
	}
}

// A service removed by a new revision leaves no replica series behind;
// one that stays keeps its series with the new counts.
func TestMetricsDropRemovedServices(t *testing.T) {
	h, reg := newMetricsHarness(t)
	h.sources["shop"].commit("web and api", map[string]string{"web.yaml": service("web", "demo:v1", 2), "api.yaml": service("api", "demo:v1", 1)})
	h.pass("shop", "poll")
	h.sources["shop"].commit("api only", map[string]string{"api.yaml": service("api", "demo:v1", 3)})
	h.pass("shop", "poll")

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range families {
		if f.GetName() != "driftless_app_desired_replicas" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "service" {
					got = append(got, fmt.Sprintf("%s=%v", l.GetValue(), m.Gauge.GetValue()))
				}
			}
		}
	}
	if want := []string{"api=3"}; !slices.Equal(got, want) {
		t.Errorf("desired replica series %v, want %v", got, want)
	}
}

// newMetricsHarness is a harness for app "shop" whose agent exports its
// series to the returned registry.
func newMetricsHarness(t *testing.T) (*harness, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	h := newHarness(t, appConfig("shop"))
	h.agent.Close()
	a, err := New(Options{DataDir: t.TempDir(), Apps: h.apps, Engine: h.engine, Now: h.clock.Now, Registerer: reg,
		NewSource: func(c config.AppConfig) (Source, error) { return h.sources[c.Name], nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	h.agent = a
	return h, reg
}
