package loop

import (
	"context"
	"sync"
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/status"
)

type reports struct {
	mu  sync.Mutex
	got []Report
}

func (r *reports) Observe(rep Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, rep)
}

func (r *reports) take() []Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

// TestObserverHearsRolloutsPassesAndPins checks what the notification
// hook is told: the rollout's start, the pass's history entries with their
// IDs and the status after it, and a pin made outside a pass.
func TestObserverHearsRolloutsPassesAndPins(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	obs := &reports{}
	h.agent.opts.Observer = obs
	first := h.sources["shop"].commit("add web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", "startup")
	got := obs.take()
	if len(got) != 2 || got[0].Applying == nil || got[0].Applying.SHA != first {
		t.Fatalf("first report = %+v, want the rollout of %s starting", got, first[:7])
	}
	done := got[1]
	if done.Applying != nil || len(done.Entries) != 1 || done.Entries[0].ID == 0 || done.Entries[0].Kind != status.KindSync ||
		done.Next.Health != drift.HealthHealthy || done.Next.Applied == nil || done.Next.Applied.SHA != first {
		t.Fatalf("pass report = %+v, want the stored sync entry and the healthy status", done)
	}

	h.pass("shop", "poll")
	if got := obs.take(); len(got) != 1 || len(got[0].Entries) != 0 || got[0].Applying != nil {
		t.Fatalf("a quiet pass reports %+v, want one report with no entries", got)
	}

	h.sources["shop"].commit("v2", map[string]string{"web.yaml": service("web", "demo:v2", 1)})
	h.pass("shop", "poll")
	obs.take()
	if err := h.agent.Pin(context.Background(), "shop", first); err != nil {
		t.Fatal(err)
	}
	got = obs.take()
	if len(got) != 1 || len(got[0].Entries) != 1 || got[0].Entries[0].Kind != status.KindRollback || got[0].Entries[0].ID == 0 {
		t.Fatalf("pin reports %+v, want its rollback entry", got)
	}

	if err := h.agent.RecordNotification("shop", "ops: could not deliver", "failed"); err != nil {
		t.Fatal(err)
	}
	if got := obs.take(); len(got) != 0 {
		t.Fatalf("a delivery problem was reported to the observer (it would feed itself): %+v", got)
	}
	if es := h.history("shop", status.KindNotification); len(es) != 1 || es[0].Summary != "ops: could not deliver" || es[0].Result != "failed" {
		t.Fatalf("delivery problem history = %+v", es)
	}
	hasCondition := func(st status.AppStatus) bool {
		for _, c := range st.Errors {
			if c.Kind == "notification" && c.Message == "notifications are not delivered: ops: could not deliver" {
				return true
			}
		}
		return false
	}
	if st, _ := h.agent.App("shop"); !hasCondition(st) {
		t.Fatalf("status errors %+v lack the delivery problem", st.Errors)
	}
	// It lasts through passes until a delivery works again.
	if st, _ := h.pass("shop", "poll"); !hasCondition(st) {
		t.Fatalf("after a pass, status errors %+v lack the delivery problem", st.Errors)
	}
	if err := h.agent.RecordNotification("shop", "ops: delivers again", "recovered"); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.pass("shop", "poll"); hasCondition(st) || len(st.Errors) != 0 {
		t.Fatalf("after recovery, status errors = %+v", st.Errors)
	}
}
