package loop

import (
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

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
