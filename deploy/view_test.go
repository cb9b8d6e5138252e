package deploy

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/deploy/view"
	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/volume"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"
)

// memEngine is an engine in memory: lists honour the id, name and label
// filters the view uses, events are sent by the test, calls are counted.
type memEngine struct {
	dockerAPI
	mu         sync.Mutex
	containers map[string]container.Summary
	networks   map[string]network.Summary
	volumes    map[string]volume.Volume
	calls      map[string]int
	events     chan events.Message
}

func newMemEngine() *memEngine {
	return &memEngine{containers: map[string]container.Summary{}, networks: map[string]network.Summary{}, volumes: map[string]volume.Volume{},
		calls: map[string]int{}, events: make(chan events.Message, 100)}
}

func (m *memEngine) Ping(context.Context, client.PingOptions) (client.PingResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls["Ping"]++
	return client.PingResult{}, nil
}

func (m *memEngine) DaemonHost() string { return "unix:///mem.sock" }

func (m *memEngine) Events(context.Context, client.EventsListOptions) client.EventsResult {
	return client.EventsResult{Messages: m.events, Err: make(chan error)}
}

func matches(f client.Filters, id, name string, labels map[string]string) bool {
	for v := range f["id"] {
		if !strings.HasPrefix(id, v) {
			return false
		}
	}
	for v := range f["name"] {
		if !strings.Contains(name, v) {
			return false
		}
	}
	for v := range f["label"] {
		k, want, hasValue := strings.Cut(v, "=")
		if got, ok := labels[k]; !ok || hasValue && got != want {
			return false
		}
	}
	return true
}

func (m *memEngine) ContainerList(_ context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls["ContainerList"]++
	var out client.ContainerListResult
	for _, c := range m.containers {
		if matches(o.Filters, c.ID, c.Names[0], c.Labels) {
			out.Items = append(out.Items, c)
		}
	}
	return out, nil
}

func (m *memEngine) NetworkList(_ context.Context, o client.NetworkListOptions) (client.NetworkListResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls["NetworkList"]++
	var out client.NetworkListResult
	for _, n := range m.networks {
		if matches(o.Filters, n.ID, n.Name, n.Labels) {
			out.Items = append(out.Items, n)
		}
	}
	return out, nil
}

func (m *memEngine) VolumeList(_ context.Context, o client.VolumeListOptions) (client.VolumeListResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls["VolumeList"]++
	var out client.VolumeListResult
	for _, v := range m.volumes {
		if matches(o.Filters, v.Name, v.Name, v.Labels) {
			out.Items = append(out.Items, v)
		}
	}
	return out, nil
}

func (m *memEngine) ContainerInspect(_ context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls["ContainerInspect"]++
	c := m.containers[id]
	return client.ContainerInspectResult{Container: container.InspectResponse{ID: id, Name: c.Names[0], Config: &container.Config{Labels: c.Labels},
		State: &container.State{Status: c.State, Running: c.State == "running", StartedAt: time.Now().Add(-time.Hour).Format(time.RFC3339Nano)}}}, nil
}

func (m *memEngine) apiCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.calls {
		n += c
	}
	return n
}

func (m *memEngine) setContainer(id, name, app, state string, nets ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	labels := map[string]string{}
	if app != "" {
		labels = map[string]string{drift.LabelApp: app, drift.LabelService: "web", drift.LabelSlot: "1"}
	}
	s := container.Summary{ID: id, Names: []string{"/" + name}, Labels: labels, State: container.ContainerState(state), Status: "Created",
		NetworkSettings: &container.NetworkSettingsSummary{Networks: map[string]*network.EndpointSettings{}}}
	for _, n := range nets {
		s.NetworkSettings.Networks[n] = &network.EndpointSettings{}
	}
	m.containers[id] = s
}

func (m *memEngine) send(typ events.Type, action, id string, attrs map[string]string) {
	m.events <- events.Message{Type: typ, Action: events.Action(action), Actor: events.Actor{ID: id, Attributes: attrs}}
}

// watching runs Watch until the test ends and returns a function that
// waits until the view has applied every event sent so far: it sends an
// owned container's die event, which Watch reports after applying it.
func watching(t *testing.T, m *memEngine, e *Engine) (caughtUp func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reported := make(chan drift.EngineEvent, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.Watch(ctx, func(ev drift.EngineEvent) { reported <- ev })
	}()
	t.Cleanup(func() { cancel(); <-done; e.prober.Stop() })
	if ev := <-reported; ev.Action != drift.EventConnected {
		t.Fatalf("first event %+v, want connected", ev)
	}
	return func() {
		m.send(events.ContainerEventType, "die", "marker", map[string]string{drift.LabelApp: "marker", "name": "marker"})
		for ev := range reported {
			if ev.ID == "marker" {
				return
			}
		}
	}
}

func names(cs []drift.Container) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name+":"+string(c.State)+":"+strings.Join(c.Networks, "+"))
	}
	return strings.Join(out, ",")
}

func TestViewFollowsEventsWithoutListing(t *testing.T) {
	m := newMemEngine()
	m.setContainer("c1", "shop-web-1", "shop", "running", "shop-default")
	m.setContainer("f1", "other", "", "running")
	m.networks["n1"] = network.Summary{Network: network.Network{ID: "n1", Name: "shop-default", Labels: map[string]string{drift.LabelApp: "shop"}}}
	e := newEngine(m, Options{})
	e.view.Grace = 0
	caughtUp := watching(t, m, e)
	ctx := context.Background()

	// Changes, each announced by its event.
	m.setContainer("c2", "shop-web-2", "shop", "created")
	m.send(events.ContainerEventType, "create", "c2", nil)
	m.setContainer("c1", "shop-web-1", "shop", "exited", "shop-default")
	m.send(events.ContainerEventType, "die", "c1", nil)
	m.setContainer("c2", "shop-web-2", "shop", "created", "shop-default")
	m.send(events.NetworkEventType, "connect", "n1", map[string]string{"container": "c2"})
	m.setContainer("f2", "shop-web-3", "", "created")
	m.send(events.ContainerEventType, "create", "f2", nil)
	m.mu.Lock()
	delete(m.containers, "f1")
	m.volumes["shop-data"] = volume.Volume{Name: "shop-data", Labels: map[string]string{drift.LabelApp: "shop"}}
	m.mu.Unlock()
	m.send(events.ContainerEventType, "destroy", "f1", nil)
	m.send(events.VolumeEventType, "create", "shop-data", nil)
	caughtUp()

	a, err := e.Observe(ctx, "shop", true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(a.Containers), "shop-web-1:exited:shop-default,shop-web-2:created:shop-default"; got != want {
		t.Errorf("containers from the view = %s, want %s", got, want)
	}
	if got := names(a.ForeignContainers); got != "shop-web-3:created:" {
		t.Errorf("foreign containers = %s; want the new holder of shop-web-3, not the removed one", got)
	}
	if len(a.Volumes) != 1 || len(a.Networks) != 1 {
		t.Errorf("networks %v volumes %v", a.Networks, a.Volumes)
	}
	cold, err := e.ObserveCold(ctx, "shop", true)
	if err != nil {
		t.Fatal(err)
	}
	if names(cold.Containers) != names(a.Containers) || names(cold.ForeignContainers) != names(a.ForeignContainers) {
		t.Errorf("view %s / %s differs from a cold list %s / %s", names(a.Containers), names(a.ForeignContainers), names(cold.Containers), names(cold.ForeignContainers))
	}

	// Both replicas start. Once the prober knows them, an observation
	// makes no call at all.
	m.setContainer("c1", "shop-web-1", "shop", "running", "shop-default")
	m.send(events.ContainerEventType, "start", "c1", nil)
	m.setContainer("c2", "shop-web-2", "shop", "running", "shop-default")
	m.send(events.ContainerEventType, "start", "c2", nil)
	caughtUp()
	if _, err := e.Observe(ctx, "shop", true); err != nil {
		t.Fatal(err)
	}
	before := m.apiCalls()
	if _, err := e.Observe(ctx, "shop", true); err != nil {
		t.Fatal(err)
	}
	if calls := m.apiCalls() - before; calls != 0 {
		t.Errorf("steady-state observation made %d API calls, want 0 (the previous pass's ping still vouches for the engine)", calls)
	}
	// Once the ping is older than the liveness interval, one ping again.
	e.live.Expire()
	before = m.apiCalls()
	if _, err := e.Observe(ctx, "shop", true); err != nil {
		t.Fatal(err)
	}
	if calls := m.apiCalls() - before; calls != 1 {
		t.Errorf("observation after the liveness interval made %d API calls, want 1 (the ping)", calls)
	}
	r, err := e.CheckView(ctx)
	if err != nil || len(r.Divergences) != 0 {
		t.Errorf("check after evented changes: %+v, %v; want no divergence", r, err)
	}
}

func TestViewCountsAndRepairsWhatNoEventAnnounced(t *testing.T) {
	m := newMemEngine()
	m.setContainer("c1", "shop-web-1", "shop", "running", "shop-default")
	m.setContainer("c2", "shop-web-2", "shop", "running")
	e := newEngine(m, Options{})
	e.view.Grace, e.view.DestroyWait = 0, 0
	watching(t, m, e)
	ctx := context.Background()

	// Changed behind the view's back: a disconnect, a removal and a new
	// volume, none announced.
	m.setContainer("c1", "shop-web-1", "shop", "running")
	m.mu.Lock()
	delete(m.containers, "c2")
	m.volumes["v"] = volume.Volume{Name: "v"}
	m.mu.Unlock()

	r, err := e.CheckView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range r.Divergences {
		got = append(got, d.String())
	}
	want := []string{
		"container shop-web-1 (c1): differs: Networks [shop-default]→[]",
		"container shop-web-2 (c2): gone from the engine, still in the view",
		"volume v (v): missing from the view",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("divergences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := divergences(t, e, "container"); n != 2 {
		t.Errorf("driftless_observation_divergence_total{kind=container} = %v, want 2", n)
	}
	a, err := e.Observe(ctx, "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(a.Containers); got != "shop-web-1:running:" {
		t.Errorf("after the repair the view shows %s", got)
	}
	if r, err := e.CheckView(ctx); err != nil || len(r.Divergences) != 0 {
		t.Errorf("second check: %+v, %v; want nothing left to repair", r.Divergences, err)
	}
}

// The engine hides a network from its lists as soon as its removal
// starts and announces "destroy" only when the driver is done, seconds
// later on a busy host. A check in that window repairs the view at once
// and counts nothing once the event comes.
func TestViewWaitsForTheDestroyEventOfAnUnlistedNetwork(t *testing.T) {
	m := newMemEngine()
	m.networks["n1"] = network.Summary{Network: network.Network{ID: "n1", Name: "other-default", Labels: map[string]string{drift.LabelApp: "other"}}}
	e := newEngine(m, Options{})
	e.view.Grace, e.view.DestroyWait = 0, time.Minute
	watching(t, m, e)
	ctx := context.Background()

	m.mu.Lock()
	delete(m.networks, "n1") // removal under way, not yet announced
	m.mu.Unlock()
	type result struct {
		r   view.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := e.CheckView(ctx)
		done <- result{r, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for slices.ContainsFunc(e.view.Snapshot().Networks, func(n drift.Network) bool { return n.ID == "n1" }) {
		if time.Now().After(deadline) {
			t.Fatal("the check did not repair the view within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case res := <-done:
		t.Fatalf("the check gave its verdict (%+v, %v) before the destroy event or DestroyWait", res.r.Divergences, res.err)
	case <-time.After(100 * time.Millisecond):
	}
	m.send(events.NetworkEventType, "destroy", "n1", nil)
	res := <-done
	if res.err != nil || len(res.r.Divergences) != 0 {
		t.Errorf("check: %v, %v; a removal announced late is not a divergence", res.r.Divergences, res.err)
	}
	if n := divergences(t, e, "network"); n != 0 {
		t.Errorf("driftless_observation_divergence_total{kind=network} = %v, want 0", n)
	}
}

func TestViewRelistsAnAppAfterItsApply(t *testing.T) {
	m := newMemEngine()
	e := newEngine(m, Options{})
	watching(t, m, e)
	// Apply created a container whose event has not arrived yet.
	m.setContainer("c1", "shop-web-1", "shop", "created")
	e.view.Touch("shop")
	a, err := e.Observe(context.Background(), "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(a.Containers); got != "shop-web-1:created:" {
		t.Errorf("after an apply the view shows %q; want the app's objects re-listed", got)
	}
}

// Docker announces no event when a container that is not running is
// connected to a network: the view repairs that on its check without
// calling it a divergence, and an observation re-lists the app's
// non-running containers rather than trust their networks.
func TestViewRelistsContainersWhoseNetworksChangeSilently(t *testing.T) {
	m := newMemEngine()
	m.setContainer("c1", "shop-web-1", "shop", "created")
	e := newEngine(m, Options{})
	e.view.Grace = 0
	caughtUp := watching(t, m, e)
	ctx := context.Background()
	m.setContainer("c1", "shop-web-1", "shop", "created", "shop-default") // no event
	a, err := e.Observe(ctx, "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(a.Containers); got != "shop-web-1:created:shop-default" {
		t.Errorf("observed %s; want the silent connect seen", got)
	}
	m.setContainer("f1", "other", "", "exited")
	m.send(events.ContainerEventType, "create", "f1", nil)
	// With no grace, a check could judge before the create arrives.
	caughtUp()
	m.setContainer("f1", "other", "", "exited", "corp") // no event
	r, err := e.CheckView(ctx)
	if err != nil || len(r.Divergences) != 0 {
		t.Errorf("check: %v, %v; a silent connect is not a divergence", r.Divergences, err)
	}
	for _, c := range e.view.Snapshot().Containers {
		if c.ID == "f1" && names([]drift.Container{c}) != "other:exited:corp" {
			t.Errorf("the check did not repair the silent connect: %+v", c)
		}
	}
}

func TestViewTakesTheNameFromTheRenameEvent(t *testing.T) {
	m := newMemEngine()
	m.setContainer("c1", "shop-web-1", "shop", "running")
	e := newEngine(m, Options{})
	caughtUp := watching(t, m, e)
	// The list still answers the old name when the event arrives.
	m.send(events.ContainerEventType, "rename", "c1", map[string]string{"name": "shop-web-1-renamed", "oldName": "/shop-web-1"})
	caughtUp()
	a, err := e.Observe(context.Background(), "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(a.Containers); got != "shop-web-1-renamed:running:" {
		t.Errorf("after a rename event the view shows %s", got)
	}
}

func TestViewTakesADestroyEventAsFinal(t *testing.T) {
	m := newMemEngine()
	m.setContainer("c1", "shop-web-1", "shop", "running")
	m.networks["n1"] = network.Summary{Network: network.Network{ID: "n1", Name: "shop-default", Labels: map[string]string{drift.LabelApp: "shop"}}}
	e := newEngine(m, Options{})
	caughtUp := watching(t, m, e)
	// The list still shows both when their destroy events arrive.
	m.send(events.ContainerEventType, "destroy", "c1", nil)
	m.send(events.NetworkEventType, "destroy", "n1", nil)
	caughtUp()
	a, err := e.Observe(context.Background(), "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Containers)+len(a.Networks) != 0 {
		t.Errorf("after destroy events the view shows %s and %v", names(a.Containers), a.Networks)
	}
}

// divergences is driftless_observation_divergence_total{kind} as the
// view exports it.
func divergences(t *testing.T, e *Engine, kind string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.view.Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
