package sync

import (
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

func TestContainerStateAt(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, c := range []struct {
		name string
		c    ContainerStatus
		want string
	}{
		// The observation's words were true two seconds after the start;
		// the page is rendered five minutes later.
		{"running", ContainerStatus{State: "running", Status: "Up 2 seconds", StartedAt: ago(5 * time.Minute)}, "Up 5 minutes"},
		{"running, just started", ContainerStatus{State: "running", StartedAt: ago(300 * time.Millisecond)}, "Up Less than a second"},
		{"running, seconds", ContainerStatus{State: "running", StartedAt: ago(42 * time.Second)}, "Up 42 seconds"},
		{"running, about an hour", ContainerStatus{State: "running", StartedAt: ago(70 * time.Minute)}, "Up About an hour"},
		{"running, days", ContainerStatus{State: "running", StartedAt: ago(80 * time.Hour)}, "Up 3 days"},
		{"running, healthy", ContainerStatus{State: "running", Health: "healthy", StartedAt: ago(10 * time.Minute)}, "Up 10 minutes (healthy)"},
		{"running, health starting", ContainerStatus{State: "running", Health: "starting", StartedAt: ago(3 * time.Second)}, "Up 3 seconds (health: starting)"},
		{"running, unhealthy", ContainerStatus{State: "running", Health: "unhealthy", StartedAt: ago(2 * time.Minute)}, "Up 2 minutes (unhealthy)"},
		{"started after now (clocks apart)", ContainerStatus{State: "running", StartedAt: now.Add(3 * time.Second)}, "Up Less than a second"},
		{"paused", ContainerStatus{State: "paused", StartedAt: ago(time.Hour)}, "Up About an hour (Paused)"},
		{"exited", ContainerStatus{State: "exited", Status: "Exited (1) 2 seconds ago", ExitCode: 1, StartedAt: ago(time.Hour), FinishedAt: ago(4 * time.Minute)}, "Exited (1) 4 minutes ago"},
		{"exited cleanly", ContainerStatus{State: "exited", FinishedAt: ago(2 * time.Hour)}, "Exited (0) 2 hours ago"},
		{"restarting", ContainerStatus{State: "restarting", ExitCode: 137, FinishedAt: ago(30 * time.Second)}, "Restarting (137) 30 seconds ago"},
		{"created", ContainerStatus{State: "created", Status: "Created"}, "Created"},
		{"dead", ContainerStatus{State: "dead"}, "Dead"},
		{"removing", ContainerStatus{State: "removing"}, "Removal In Progress"},
		// Without the time a state needs: the words as observed.
		{"running, not yet inspected", ContainerStatus{State: "running", Status: "Up 2 seconds"}, "Up 2 seconds"},
		{"exited, not yet inspected", ContainerStatus{State: "exited", Status: "Exited (1) 2 seconds ago", StartedAt: ago(time.Hour)}, "Exited (1) 2 seconds ago"},
		{"swarm task", ContainerStatus{State: "running", Status: "running on node-1 (started)", Node: "node-1"}, "running on node-1 (started)"},
		{"swarm pending", ContainerStatus{State: "pending", Status: "pending: no suitable node"}, "pending: no suitable node"},
	} {
		if got := c.c.StateAt(now); got != c.want {
			t.Errorf("%s: StateAt = %q, want %q", c.name, got, c.want)
		}
	}
}

// The status carries what StateAt needs from the observation.
func TestServiceStatusesCarryContainerTimes(t *testing.T) {
	started := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	app := &manifest.App{Name: "shop", Services: []manifest.Service{{Name: "web", Spec: manifest.ServiceSpec{Image: "web:1", Replicas: 1}}}}
	actual := &drift.Actual{Containers: []drift.Container{{Name: "shop-web-1", App: "shop", Service: "web", State: drift.StateExited,
		Status: "Exited (2) 1 second ago", ExitCode: 2, Health: "unhealthy", StartedAt: started, FinishedAt: started.Add(time.Minute)}}}
	got := serviceStatuses(&revisionState{app: app}, nil, nil, actual)
	if len(got) != 1 || len(got[0].Containers) != 1 {
		t.Fatalf("statuses = %+v", got)
	}
	c := got[0].Containers[0]
	if !c.StartedAt.Equal(started) || !c.FinishedAt.Equal(started.Add(time.Minute)) || c.ExitCode != 2 || c.Health != "unhealthy" {
		t.Errorf("container status = %+v", c)
	}
	if s := c.StateAt(started.Add(time.Hour)); s != "Exited (2) 59 minutes ago" {
		t.Errorf("StateAt an hour after the start = %q", s)
	}
}
