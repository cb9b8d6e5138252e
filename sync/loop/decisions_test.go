package loop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/status"
)

// The decisions that were wrong before the loop became one pure decision
// (each observed on the agent built from main), and the new ones: each
// test fails on the old code.

// An app whose only problem is a container name held by a foreign
// container is not Synced: the declared replica does not run.
func TestConflictOnlyIsOutOfSync(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	h.engine.outside(func(e *fakeEngine) {
		e.foreign = []drift.Container{{ID: "f00", Name: "shop-web-1", Image: "other", State: drift.StateRunning}}
	})
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	st, _ := h.pass("shop", "startup")
	if st.Sync != drift.SyncOutOfSync || st.Health == drift.HealthHealthy || !strings.Contains(st.Message, "conflict") {
		t.Fatalf("conflict only: sync %s health %s %q; want OutOfSync and the conflict", st.Sync, st.Health, st.Message)
	}
}

// With self-heal off the agent leaves drift alone, but a person's "Sync
// now" applies the whole plan, drift included, as an Argo CD sync does.
func TestManualSyncRepairsDriftWithSelfHealOff(t *testing.T) {
	cfg := appConfig("shop")
	cfg.SelfHeal = false
	h := newHarness(t, cfg)
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 2)})
	h.pass("shop", TriggerStartup)
	h.engine.rm("shop-web-1")
	st, _ := h.pass("shop", TriggerDockerEvent)
	if len(h.engine.running("shop")) != 1 || len(st.Held) != 1 || st.Held[0].Reason != drift.HeldNoSelfHeal {
		t.Fatalf("self-heal off: running %v, held %+v", h.engine.running("shop"), st.Held)
	}
	st, _ = h.pass("shop", TriggerManual)
	if len(h.engine.running("shop")) != 2 || st.Sync != drift.SyncSynced || len(st.Held) != 0 {
		t.Fatalf("after Sync now: running %v, %s, held %+v", h.engine.running("shop"), st.Sync, st.Held)
	}
	if r := summaries(h.history("shop", status.KindRepair)); len(r) != 1 || r[0] != "shop-web-1 was removed outside Git; recreated" {
		t.Fatalf("repairs %q", r)
	}
}

// A refused revision says what still runs: the last revision that was
// applied, not one that was accepted but whose rollout failed.
func TestRefusalNamesTheRevisionThatRuns(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	v1 := h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", TriggerStartup)
	h.engine.outside(func(e *fakeEngine) { e.badImage = "demo:missing" })
	bad := h.sources["shop"].commit("bad image", map[string]string{"web.yaml": service("web", "demo:missing", 1)})
	h.pass("shop", TriggerPoll)
	h.sources["shop"].commit("broken", map[string]string{"web.yaml": "apiVersion: driftless.dev/v1\nkind: Service\n"})
	st, _ := h.pass("shop", TriggerPoll)
	if !strings.Contains(st.Message, "still running "+v1[:7]) || strings.Contains(st.Message, bad[:7]) {
		t.Fatalf("message %q; want it to name %s, which runs, not %s", st.Message, v1[:7], bad[:7])
	}
	refused := h.history("shop", status.KindRefused)
	if len(refused) != 1 || !strings.HasSuffix(refused[0].Summary, "still running "+v1[:7]) {
		t.Fatalf("refusal entry %q", summaries(refused))
	}
}

// A replica removed by someone while it is being rolled out is drift, not
// a failed rollout: recorded as a repair, retried at once, no backoff.
func TestInterferenceDuringRolloutIsRepairedAtOnce(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 2)})
	h.pass("shop", TriggerStartup)
	h.sources["shop"].commit("v2", map[string]string{"web.yaml": service("web", "demo:v2", 2)})
	h.engine.outside(func(e *fakeEngine) {
		e.interfere = map[string]drift.Failure{"shop-web-1": {Cause: drift.FailureInterference,
			Summary: "shop-web-1 was removed outside driftless while waiting for it to become ready"}}
	})
	st, err := h.pass("shop", TriggerPoll)
	if err != nil || !h.lastResult.Requeue {
		t.Fatalf("pass: err %v, result %+v; want no error and an immediate requeue", err, h.lastResult)
	}
	if st.Health == drift.HealthDegraded || strings.Contains(st.Message, "fix the image") {
		t.Fatalf("interference reported as a bad release: %s %q", st.Health, st.Message)
	}
	repairs := h.history("shop", status.KindRepair)
	if len(repairs) != 1 || !strings.Contains(repairs[0].Summary, "removed outside driftless") {
		t.Fatalf("repairs %q", summaries(repairs))
	}
	// The requeued pass finishes the rollout: no backoff was set.
	st, _ = h.pass("shop", TriggerRepair)
	if st.Sync != drift.SyncSynced || st.Health != drift.HealthHealthy || len(st.Drift.Deferred) != 0 {
		t.Fatalf("after the repair pass: %s %s %q", st.Sync, st.Health, st.Message)
	}
}

// A rollout under way notices a newer commit and stops at its next safe
// point, so the new commit does not wait behind it.
func TestNewerCommitStopsARolloutAtASafePoint(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	src := h.sources["shop"]
	src.commit("scale up", map[string]string{"web.yaml": service("web", "demo:v1", 50)})
	stopped := make(chan struct{})
	h.engine.duringApply = func() {
		h.engine.duringApply = nil
		src.commit("scale back", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
		h.agent.trigger(context.Background(), "shop", TriggerPoll)
		h.agent.mu.Lock()
		stop := h.agent.apps["shop"].running.stop
		h.agent.mu.Unlock()
		select {
		case <-stop:
			close(stopped)
		case <-time.After(10 * time.Second):
		}
	}
	_, err := h.pass("shop", TriggerStartup)
	select {
	case <-stopped:
	default:
		t.Fatal("the rollout was not asked to stop when a newer commit arrived")
	}
	if err != nil || !h.lastResult.Requeue || !h.lastResult.Preempted {
		t.Fatalf("a stopped apply: err %v, result %+v; want an immediate requeue that reads the source", err, h.lastResult)
	}
	if n := len(h.engine.running("shop")); n != 0 {
		t.Fatalf("%d replicas created after the stop", n)
	}
	st, _ := h.pass("shop", TriggerPreempted)
	if n := len(h.engine.running("shop")); n != 1 || st.Sync != drift.SyncSynced {
		t.Fatalf("after the new commit: %d running, %s %q", n, st.Sync, st.Message)
	}
}

// Suspending an app stops a rollout under way at its next safe point.
func TestSuspendStopsARolloutUnderWay(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 5)})
	h.engine.duringApply = func() {
		h.engine.duringApply = nil
		if err := h.agent.SetSuspended("shop", true); err != nil {
			t.Error(err)
		}
	}
	st, _ := h.pass("shop", TriggerStartup)
	if n := len(h.engine.running("shop")); n != 0 {
		t.Fatalf("%d replicas created after suspend", n)
	}
	if st.Health != status.HealthSuspended {
		t.Fatalf("health %s", st.Health)
	}
}

// A history store that cannot be written (full disk) shows in status;
// enforcement goes on.
func TestHistoryWriteFailureShowsAndHealingGoesOn(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", TriggerStartup)
	h.agent.store.Close() // every write fails from now on
	h.engine.rm("shop-web-1")
	st, _ := h.pass("shop", TriggerDockerEvent)
	if len(h.engine.running("shop")) != 1 {
		t.Fatal("healing stopped because history could not be written")
	}
	if !hasCondition(st, "history") {
		t.Fatalf("errors %+v; want the history condition", st.Errors)
	}
}
