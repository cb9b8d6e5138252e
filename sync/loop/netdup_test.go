package loop

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestDuplicateNetworkRepairIsRecorded: a second network with the app's
// network name (made again by an agent killed after Docker made the first)
// is repaired on the next pass and recorded as a repair, in words that say
// what happened rather than "added outside Git".
func TestDuplicateNetworkRepairIsRecorded(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", TriggerStartup)
	h.engine.outside(func(e *fakeEngine) {
		i := slices.IndexFunc(e.networks, func(n drift.Network) bool { return n.App == "shop" })
		if i < 0 {
			t.Fatal("no network of the app")
		}
		e.networks[i].Created = time.Now().Add(-time.Minute)
		dup := e.networks[i]
		dup.ID, dup.Created = "dup-"+dup.ID, time.Now()
		e.networks = append(e.networks, dup)
	})
	st, _ := h.pass("shop", TriggerDockerEvent)
	var names []string
	h.engine.outside(func(e *fakeEngine) {
		for _, n := range e.networks {
			names = append(names, n.ID)
		}
	})
	if len(names) != 1 || strings.HasPrefix(names[0], "dup-") || st.Sync != drift.SyncSynced {
		t.Fatalf("networks after the pass %v, sync %s", names, st.Sync)
	}
	r := summaries(h.history("shop", status.KindRepair))
	if len(r) != 1 || !strings.Contains(r[0], "network shop-default existed twice") || !strings.Contains(r[0], "kept the oldest") {
		t.Errorf("repairs recorded: %q", r)
	}
}
