package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/sync/status"
)

// `driftless status` words a container's state as of now, not as the
// agent's last observation did.
func TestStatusWordsStateAsOfNow(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	a := status.AppStatus{Name: "shop", Services: []status.ServiceStatus{{Name: "web", Desired: 1, Containers: []status.ContainerStatus{
		{Name: "shop-web-1", State: "running", Status: "Up 2 seconds", Ready: true, StartedAt: now.Add(-5 * time.Minute)},
	}}}}
	var out bytes.Buffer
	printAppStatus(&out, a, now)
	if !strings.Contains(out.String(), "Up 5 minutes") || strings.Contains(out.String(), "Up 2 seconds") {
		t.Errorf("status:\n%s", out.String())
	}
}
