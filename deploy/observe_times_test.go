package deploy

import (
	"context"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// An observation carries each container's start and finish times from the
// prober's inspect, so the dashboard can word its state at render time
// rather than repeat the list's "Up 2 seconds".
func TestObserveCarriesStartAndFinishTimes(t *testing.T) {
	started := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	finished := started.Add(90 * time.Second)
	labels := map[string]string{drift.LabelApp: "shop", drift.LabelService: "web", drift.LabelSlot: "1"}
	fake := &fakeDocker{
		calls:      map[string]int{},
		containers: []container.Summary{{ID: "c1", Names: []string{"/shop-web-1"}, Labels: labels, State: "running", Status: "Up 2 seconds"}},
		inspect: map[string]container.InspectResponse{"c1": {ID: "c1", Name: "/shop-web-1", Config: &container.Config{Labels: labels},
			State: &container.State{Status: "running", Running: true, StartedAt: started.Format(time.RFC3339Nano), FinishedAt: "0001-01-01T00:00:00Z"}}},
	}
	e := newEngine(fake, Options{})
	defer e.prober.Stop()
	e.prober.Now = func() time.Time { return started.Add(5 * time.Second) }
	observe := func() drift.Container {
		t.Helper()
		a, err := e.Observe(context.Background(), "shop", false)
		if err != nil || len(a.Containers) != 1 {
			t.Fatalf("observe: %v %+v", err, a)
		}
		return a.Containers[0]
	}
	if c := observe(); !c.StartedAt.Equal(started) || !c.FinishedAt.IsZero() {
		t.Errorf("running: started %v finished %v, want %v and zero", c.StartedAt, c.FinishedAt, started)
	}
	// No inspect this time (nothing changed): the times stay known.
	if c := observe(); !c.StartedAt.Equal(started) || fake.calls["ContainerInspect"] != 1 {
		t.Errorf("second observation: started %v after %d inspects", c.StartedAt, fake.calls["ContainerInspect"])
	}

	fake.containers[0].State, fake.containers[0].Status = "exited", "Exited (3) 1 second ago"
	fake.inspect["c1"] = container.InspectResponse{ID: "c1", Name: "/shop-web-1", Config: &container.Config{Labels: labels},
		State: &container.State{Status: "exited", ExitCode: 3, StartedAt: started.Format(time.RFC3339Nano), FinishedAt: finished.Format(time.RFC3339Nano)}}
	if c := observe(); !c.FinishedAt.Equal(finished) || c.ExitCode != 3 {
		t.Errorf("exited: finished %v exit %d, want %v and 3", c.FinishedAt, c.ExitCode, finished)
	}
}

// timedEngine is a memEngine whose inspects give each container the start
// time the test sets.
type timedEngine struct {
	*memEngine
	started map[string]time.Time
}

func (t *timedEngine) ContainerInspect(ctx context.Context, id string, o client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	res, err := t.memEngine.ContainerInspect(ctx, id, o)
	t.mu.Lock()
	defer t.mu.Unlock()
	res.Container.State.StartedAt = t.started[id].Format(time.RFC3339Nano)
	return res, err
}

func (t *timedEngine) setStarted(id string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.started[id] = at
}

// A container that restarts between two observations is "running" in
// both: its start event makes the next observation inspect it, so the
// start time (and restart count) are the new ones, not those of the
// periodic inspect minutes later.
func TestViewRestartBetweenObservationsRenewsStartTime(t *testing.T) {
	m := &timedEngine{memEngine: newMemEngine(), started: map[string]time.Time{}}
	first := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	m.setContainer("c1", "shop-web-1", "shop", "running")
	m.setStarted("c1", first)
	e := newEngine(m, Options{})
	e.view.Grace = 0
	caughtUp := watching(t, m.memEngine, e)
	ctx := context.Background()
	observe := func() drift.Container {
		t.Helper()
		a, err := e.Observe(ctx, "shop", false)
		if err != nil || len(a.Containers) != 1 {
			t.Fatalf("observe: %v %+v", err, a)
		}
		return a.Containers[0]
	}
	if c := observe(); !c.StartedAt.Equal(first) {
		t.Fatalf("started %v, want %v", c.StartedAt, first)
	}

	again := first.Add(50 * time.Minute)
	m.setStarted("c1", again)
	m.send(events.ContainerEventType, "die", "c1", map[string]string{drift.LabelApp: "shop"})
	m.send(events.ContainerEventType, "start", "c1", map[string]string{drift.LabelApp: "shop"})
	caughtUp()
	if c := observe(); !c.StartedAt.Equal(again) {
		t.Errorf("after a restart between observations: started %v, want %v", c.StartedAt, again)
	}
}
