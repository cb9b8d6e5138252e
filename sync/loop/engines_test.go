package loop

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/status"
)

// namedFake is a fakeEngine placed by name: no jobs, removal or files.
type namedFake struct{ *fakeEngine }

func (namedFake) RunJob(context.Context, *manifest.App, *manifest.Job, string) drift.JobRun {
	return drift.JobRun{ExitCode: -1, Error: "no jobs on the fake"}
}
func (namedFake) RemoveJobRuns(context.Context, string, func(string) bool)           {}
func (namedFake) RemoveAppObjects(context.Context, string, bool) error               { return nil }
func (namedFake) RemoveUnusedFiles(context.Context, time.Duration) ([]string, error) { return nil, nil }

// TestAppsOnNamedEngines: an app placed on a named engine runs there and
// nowhere else, shows its engine, hears only that engine's events, and
// that engine being down makes only its apps Unknown while the local
// engine's apps keep healing.
func TestAppsOnNamedEngines(t *testing.T) {
	edge := &fakeEngine{}
	blog := appConfig("blog")
	blog.Engine = "edge"
	h := &harness{t: t, dir: t.TempDir(), engine: &fakeEngine{}, sources: map[string]*fakeSource{"shop": newFakeSource(), "blog": newFakeSource()},
		clock: &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, apps: []config.AppConfig{appConfig("shop"), blog}, engines: map[string]NamedEngine{"edge": namedFake{edge}}}
	h.open()
	t.Cleanup(func() { h.agent.queue.ShutDown() })
	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.sources["blog"].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	shop, _ := h.pass("shop", "startup")
	st, _ := h.pass("blog", "startup")
	if st.Health != drift.HealthHealthy || st.Engine != "edge" || shop.Engine != "" {
		t.Fatalf("blog %s engine %q (%s), shop engine %q; want blog healthy on edge, shop on the local engine", st.Health, st.Engine, st.Message, shop.Engine)
	}
	if len(h.engine.running("blog")) != 0 || len(edge.running("blog")) != 1 || len(edge.running("shop")) != 0 || len(h.engine.running("shop")) != 1 {
		t.Fatalf("local runs shop %v blog %v, edge runs shop %v blog %v; want each app on its own engine only",
			h.engine.running("shop"), h.engine.running("blog"), edge.running("shop"), edge.running("blog"))
	}

	// Events: an engine's events reach only the apps placed on it.
	q := h.agent.queue
	h.agent.onEngineEvent("edge", drift.EngineEvent{Action: drift.EventConnected})
	h.agent.onEngineEvent("edge", drift.EngineEvent{Action: "destroy", App: "shop"})
	h.agent.onEngineEvent(config.LocalEngine, drift.EngineEvent{Action: "destroy", App: "blog"})
	if n := q.Len(); n != 1 {
		t.Fatalf("queued %d apps, want only blog (edge reconnected; shop's name on edge and blog's on the local engine are not theirs)", n)
	}
	if key, _, _ := q.Get(); key != "blog" {
		t.Fatalf("queued %s, want blog", key)
	}
	q.Done("blog")
	h.agent.onEngineEvent(config.LocalEngine, drift.EngineEvent{Action: "destroy", App: "shop"})
	if key, _, _ := q.Get(); key != "shop" {
		t.Fatalf("queued %s, want shop", key)
	}
	q.Done("shop")
	// A tag moved onto another image concerns the apps on that engine
	// whose services run it, however the reference is written.
	h.agent.onEngineEvent(config.LocalEngine, drift.EngineEvent{Action: "tag", Image: "docker.io/library/demo:v2"})
	h.agent.onEngineEvent(config.LocalEngine, drift.EngineEvent{Action: "tag", Image: "docker.io/library/demo:v1"})
	if key, _, _ := q.Get(); key != "shop" || q.Len() != 0 {
		t.Fatalf("queued %s (and %d more), want only shop, whose web runs demo:v1 on the local engine", key, q.Len())
	}
	q.Done("shop")

	// edge down: blog is Unknown, shop still heals on the local engine.
	edge.setDown(errors.New("dial tcp 10.0.0.5:2376: connect: connection refused"))
	st, _ = h.pass("blog", "poll")
	if st.Sync != status.SyncUnknown || !strings.HasPrefix(st.Message, "Docker engine unreachable") {
		t.Fatalf("blog with edge down: %s %q", st.Sync, st.Message)
	}
	h.engine.rm(h.engine.running("shop")[0])
	shop, _ = h.pass("shop", "docker-event")
	if len(h.engine.running("shop")) != 1 || shop.Health != drift.HealthHealthy {
		t.Fatalf("shop with edge down: running %v, %s %q; want healed", h.engine.running("shop"), shop.Health, shop.Message)
	}
	if err := h.agent.Ready(); err != nil && strings.Contains(err.Error(), "unreachable") {
		t.Errorf("Ready with edge down = %v; a named engine down is its apps' problem, not the agent's", err)
	}
	if err := h.agent.EngineReady("edge"); !errors.Is(err, drift.ErrEngineUnreachable) {
		t.Errorf("EngineReady(edge) with edge down = %v, want unreachable", err)
	}
	if err := h.agent.EngineReady(config.LocalEngine); err != nil {
		t.Errorf("EngineReady(local) with edge down = %v, want nil", err)
	}
	if err := h.agent.EngineReady("cabin"); !errors.Is(err, ErrUnknownEngine) {
		t.Errorf("EngineReady(cabin) = %v, want ErrUnknownEngine", err)
	}
	edge.setDown(nil)
	if st, _ = h.pass("blog", "engine-reconnected"); st.Health != drift.HealthHealthy {
		t.Fatalf("blog after edge came back: %s %q", st.Health, st.Message)
	}
}

// TestAppOnSeveralEngines: an app declared with engines: [local, edge]
// is two instances, shop@local and shop@edge. Each runs its containers
// under the app's own name on its engine only, has its own status, and
// hears only its engine's events; another app may not take the name
// shop on either engine.
func TestAppOnSeveralEngines(t *testing.T) {
	edge := &fakeEngine{}
	onLocal, onEdge := appConfig("shop@local"), appConfig("shop@edge")
	onLocal.InstanceOf, onEdge.InstanceOf, onEdge.Engine = "shop", "shop", "edge"
	h := &harness{t: t, dir: t.TempDir(), engine: &fakeEngine{}, sources: map[string]*fakeSource{"shop@local": newFakeSource(), "shop@edge": newFakeSource()},
		clock: &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, apps: []config.AppConfig{onLocal, onEdge}, engines: map[string]NamedEngine{"edge": namedFake{edge}}}
	h.open()
	t.Cleanup(func() { h.agent.queue.ShutDown() })
	for _, name := range []string{"shop@local", "shop@edge"} {
		h.sources[name].commit("web", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	}
	local, _ := h.pass("shop@local", "startup")
	far, _ := h.pass("shop@edge", "startup")
	if local.Health != drift.HealthHealthy || far.Health != drift.HealthHealthy || far.Engine != "edge" || local.Engine != "" {
		t.Fatalf("shop@local %s on %q (%s), shop@edge %s on %q (%s); want both healthy, each on its engine", local.Health, local.Engine, local.Message, far.Health, far.Engine, far.Message)
	}
	if len(h.engine.running("shop")) != 1 || len(edge.running("shop")) != 1 {
		t.Fatalf("containers of shop: local %v, edge %v; want one on each, named for the app", h.engine.running("shop"), edge.running("shop"))
	}

	q := h.agent.queue
	h.agent.onEngineEvent("edge", drift.EngineEvent{Action: "destroy", App: "shop"})
	if q.Len() != 1 {
		t.Fatalf("an event of shop on edge queued %d apps, want shop@edge", q.Len())
	}
	if key, _, _ := q.Get(); key != "shop@edge" || q.Len() != 0 {
		t.Fatalf("an event of shop on edge queued %s (and %d more), want shop@edge alone", key, q.Len())
	}
	q.Done("shop@edge")
	h.agent.onEngineEvent(config.LocalEngine, drift.EngineEvent{Action: "destroy", App: "shop"})
	if q.Len() != 1 {
		t.Fatalf("an event of shop on the local engine queued %d apps, want shop@local", q.Len())
	}
	if key, _, _ := q.Get(); key != "shop@local" || q.Len() != 0 {
		t.Fatalf("an event of shop on the local engine queued %s (and %d more), want shop@local alone", key, q.Len())
	}
	q.Done("shop@local")

	// Healing one instance leaves the other alone.
	kept := edge.running("shop")
	h.engine.rm(h.engine.running("shop")[0])
	if st, _ := h.pass("shop@local", "docker-event"); st.Health != drift.HealthHealthy || len(h.engine.running("shop")) != 1 {
		t.Fatalf("shop@local after rm: %s, running %v; want healed", st.Health, h.engine.running("shop"))
	}
	if got := edge.running("shop"); len(got) != 1 || got[0] != kept[0] {
		t.Fatalf("healing shop@local changed edge's containers %v → %v", kept, got)
	}

	h.agent.mu.Lock()
	err := h.agent.addApp(appConfig("shop"))
	h.agent.mu.Unlock()
	if err == nil || !strings.Contains(err.Error(), "already runs an app called shop") {
		t.Fatalf("adding an app called shop on the local engine: %v; want refused, shop@local runs there", err)
	}
}

// TestNamedEngineKeepsAWorkerFree: with two workers, a named engine may
// run one pass at a time, so a pass that hangs on it leaves a worker to
// the other engines; the local engine has no such limit.
func TestNamedEngineKeepsAWorkerFree(t *testing.T) {
	edge := &fakeEngine{}
	a1, a2, cabin := appConfig("a1"), appConfig("a2"), appConfig("c1")
	a1.Engine, a2.Engine, cabin.Engine = "edge", "edge", "cabin"
	h := &harness{t: t, dir: t.TempDir(), engine: &fakeEngine{}, sources: map[string]*fakeSource{"a1": newFakeSource(), "a2": newFakeSource(), "c1": newFakeSource(), "l1": newFakeSource(), "l2": newFakeSource()},
		clock: &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, apps: []config.AppConfig{a1, a2, cabin, appConfig("l1"), appConfig("l2")},
		engines: map[string]NamedEngine{"edge": namedFake{edge}, "cabin": namedFake{&fakeEngine{}}}}
	h.open()
	t.Cleanup(func() { h.agent.queue.ShutDown() })
	if h.agent.opts.Workers != 2 {
		t.Fatalf("workers %d, want the default 2", h.agent.opts.Workers)
	}
	release, ok := h.agent.takeEngineSlot("a1")
	if !ok {
		t.Fatal("the first pass on edge was not let through")
	}
	if _, ok := h.agent.takeEngineSlot("a2"); ok {
		t.Fatal("a second pass on edge was let through: two hung passes there would hold both workers")
	}
	for _, app := range []string{"c1", "l1", "l2"} {
		if _, ok := h.agent.takeEngineSlot(app); !ok {
			t.Errorf("%s waits while edge is busy", app)
		}
	}
	release()
	if _, ok := h.agent.takeEngineSlot("a2"); !ok {
		t.Error("a2 still waits once a1's pass ended")
	}

	// Every app on one named engine: no one to keep a worker for.
	h2 := &harness{t: t, dir: t.TempDir(), engine: &fakeEngine{}, sources: map[string]*fakeSource{"a1": newFakeSource(), "a2": newFakeSource()},
		clock: &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, apps: []config.AppConfig{a1, a2},
		engines: map[string]NamedEngine{"edge": namedFake{edge}}}
	h2.open()
	t.Cleanup(func() { h2.agent.queue.ShutDown() })
	if _, ok := h2.agent.takeEngineSlot("a1"); !ok {
		t.Fatal("a1 waits with every app on edge")
	}
	if _, ok := h2.agent.takeEngineSlot("a2"); !ok {
		t.Error("a2 waits while a1's pass runs, with every app on edge: nothing else needs a worker")
	}
}
