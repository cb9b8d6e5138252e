package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
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

// `driftless status APP` lists where the app keeps its data, as its page
// does: each state directory with its host path and who mounts it, and
// the volumes with whose they are. Neither section shows for an app
// without them.
func TestStatusListsStateDirsAndVolumes(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	a := status.AppStatus{Name: "shop",
		StateDirs: []status.StateDir{{StateDir: manifest.StateDir{Path: "volumes/db/data", Mounts: []manifest.StateMount{
			{Service: "db", MountPath: "/var/lib/postgresql/data"}, {Service: "backup", MountPath: "/data", ReadOnly: true},
		}}, HostPath: "/var/lib/driftless/state/shop/volumes/db/data"}},
		Volumes: []status.VolumeStatus{
			{Name: "shop-data", Driver: "local", Resource: "data"},
			{Name: "shop-web-1-anon-1a2b", Driver: "local", Service: "web", Slot: 1, Target: "/cache"},
		},
	}
	var out bytes.Buffer
	printAppStatus(&out, a, now)
	got := out.String()
	for _, want := range []string{
		"State directories",
		"./volumes/db/data  /var/lib/driftless/state/shop/volumes/db/data  db at /var/lib/postgresql/data, backup at /data (read-only)",
		"Volumes",
		"shop-data",
		"volume data",
		"anonymous volume of web slot 1  /cache",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}

	out.Reset()
	printAppStatus(&out, status.AppStatus{Name: "blog"}, now)
	if strings.Contains(out.String(), "State directories") || strings.Contains(out.String(), "Volumes") {
		t.Errorf("an app without data shows the sections:\n%s", out.String())
	}
}
