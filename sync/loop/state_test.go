package loop

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/sync/store"
)

// The agent's side of the store: what it keeps across a restart or a
// damaged database. The store's own tests are in sync/store.

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// An unreadable database is moved aside and a new one started, with an
// entry that says so; a database locked by another agent is not.
func TestCorruptStoreIsMovedAsideAndHistoryStartsOver(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "driftless.db")
	if err := os.WriteFile(path, bytes.Repeat([]byte("not a bolt database "), 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, engine: &fakeEngine{}, sources: map[string]*fakeSource{"shop": newFakeSource()},
		clock: &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, apps: []config.AppConfig{appConfig("shop")}}
	h.open()
	es := h.history("shop")
	if len(es) != 1 || !strings.Contains(es[0].Summary, "history database was unreadable") || !strings.Contains(es[0].Summary, "driftless.db.corrupt-") {
		t.Fatalf("history after recovery: %q", summaries(es))
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("moved-aside files: %v", aside)
	}
	// The agent works on the new store.
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	if st, err := h.pass("shop", TriggerStartup); err != nil || st.Sync != drift.SyncSynced {
		t.Fatalf("after recovery: %v %s", err, st.Sync)
	}

	// A second agent on the same directory is refused, not "recovered".
	if _, err := store.Open(dir, 0); err == nil || !strings.Contains(err.Error(), "another driftless") {
		t.Fatalf("second store on a locked database: %v", err)
	}
	if aside2, _ := filepath.Glob(path + ".corrupt-*"); len(aside2) != 1 {
		t.Fatalf("a locked database was moved aside: %v", aside2)
	}
}

// Through the agent: a pass records what it saw before and after an
// apply, and the series is there after a restart.
func TestAgentRecordsReplicaSeries(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 3)})
	h.pass("shop", "startup")
	h.clock.Advance(2 * time.Minute)
	h.engine.rm("shop-web-2")
	h.pass("shop", "docker-event")
	h.clock.Advance(2 * time.Minute)
	h.sources["shop"].commit("scale down", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", "commit")

	check := func(when string) {
		t.Helper()
		got := points(h.agent.Series("shop", t0), "web")
		// The first deploy from 0, the repair's dip to 2, the scale-down.
		want := []status.SeriesPoint{{Time: t0, Ready: 3, Desired: 3, MinReady: 0, MaxReady: 3}, {Time: t0.Add(2 * time.Minute), Ready: 3, Desired: 3, MinReady: 2, MaxReady: 3}, {Time: t0.Add(4 * time.Minute), Ready: 1, Desired: 1, MinReady: 1, MaxReady: 1}}
		requirePoints(t, when, got, want)
	}
	check("before restart")
	if err := h.agent.series.Flush(h.agent.store, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	h.restart()
	check("after restart")
}

func points(s []status.ServiceSeries, service string) []status.SeriesPoint {
	for _, x := range s {
		if x.Service == service {
			return x.Points
		}
	}
	return nil
}

func requirePoints(t *testing.T, when string, got, want []status.SeriesPoint) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: points = %+v, want %+v", when, got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.Time.Equal(w.Time) || g.Ready != w.Ready || g.Desired != w.Desired || g.MinReady != w.MinReady || g.MaxReady != w.MaxReady {
			t.Fatalf("%s: point %d = %+v, want %+v (all %+v)", when, i, g, w, got)
		}
	}
}
