package dockerspec

import (
	"reflect"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

func TestContainerFromSummary(t *testing.T) {
	svc := testService()
	rc, err := BuildReplicaConfig(ReplicaInput{App: &manifest.App{Name: "shop"}, Service: svc, Slot: 3, Revision: "abc123"})
	if err != nil {
		t.Fatal(err)
	}
	s := container.Summary{
		ID:      "0123456789abcdef",
		Names:   []string{"/shop-web-3"},
		Image:   "shop/web:v7",
		Created: 1700000000,
		Labels:  rc.Create.Config.Labels,
		State:   "exited",
		Status:  "Exited (137) 3 seconds ago",
		Ports: []container.PortSummary{
			{PrivatePort: 9090, PublicPort: 19090, Type: "tcp"},
			{PrivatePort: 9090, PublicPort: 19090, Type: "tcp"}, // IPv4 and IPv6 bindings
			{PrivatePort: 8080, Type: "tcp"},
		},
		NetworkSettings: &container.NetworkSettingsSummary{Networks: map[string]*network.EndpointSettings{
			"shop-default": {}, "shop-backend": {},
		}},
	}
	c := ContainerFromSummary(s)
	if c.App != "shop" || c.Service != "web" || c.Slot != 3 || c.SpecHash != svc.Hash || c.Revision != "abc123" || c.Name != "shop-web-3" {
		t.Errorf("identity = %+v", c)
	}
	if c.Spec == nil || c.Spec.Image != "shop/web:v7" || c.Spec.Replicas != 3 {
		t.Errorf("recorded spec = %+v", c.Spec)
	}
	if c.State != drift.StateExited || c.ExitCode != 137 {
		t.Errorf("state %s exit %d, want exited 137", c.State, c.ExitCode)
	}
	if !reflect.DeepEqual(c.Networks, []string{"shop-backend", "shop-default"}) || !reflect.DeepEqual(c.HostPorts, []int{19090}) {
		t.Errorf("networks %v host ports %v", c.Networks, c.HostPorts)
	}
	if !c.Created.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("created = %v", c.Created)
	}

	foreign := ContainerFromSummary(container.Summary{ID: "x", Names: []string{"/shop-web-1"}, Labels: map[string]string{"team": "shop"}, State: "running", Status: "Up 2 hours"})
	if foreign.App != "" || foreign.Service != "" || foreign.Spec != nil {
		t.Errorf("a container without our labels must not look owned: %+v", foreign)
	}
	if bad := ContainerFromSummary(container.Summary{ID: "y", Labels: map[string]string{drift.LabelApp: "shop", drift.LabelSpec: "{not json"}}); bad.Spec != nil || bad.App != "shop" {
		t.Errorf("unreadable spec label: %+v", bad)
	}
}

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		status string
		exit   int
		exitOK bool
		health string
		up     time.Duration
		upOK   bool
	}{
		{"Exited (137) 3 seconds ago", 137, true, "", 0, false},
		{"Exited (0) 2 hours ago", 0, true, "", 0, false},
		{"Up 3 minutes (healthy)", 0, false, "healthy", 3 * time.Minute, true},
		{"Up 5 seconds (unhealthy)", 0, false, "unhealthy", 5 * time.Second, true},
		{"Up Less than a second (health: starting)", 0, false, "starting", 0, true},
		{"Up About a minute", 0, false, "", time.Minute, true},
		{"Up 2 hours", 0, false, "", 2 * time.Hour, true},
		{"Restarting (1) 2 seconds ago", 1, true, "", 0, false},
		{"Created", 0, false, "", 0, false},
	} {
		code, ok := ParseExitCode(tc.status)
		if code != tc.exit || ok != tc.exitOK {
			t.Errorf("ParseExitCode(%q) = %d, %v", tc.status, code, ok)
		}
		if h := ParseHealth(tc.status); h != tc.health {
			t.Errorf("ParseHealth(%q) = %q, want %q", tc.status, h, tc.health)
		}
		up, ok := ParseUptime(tc.status)
		if up != tc.up || ok != tc.upOK {
			t.Errorf("ParseUptime(%q) = %v, %v", tc.status, up, ok)
		}
	}
}
