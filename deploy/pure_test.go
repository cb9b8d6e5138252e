package deploy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
)

func testService() *manifest.Service {
	spec := manifest.ServiceSpec{
		Image:     "shop/web:v7",
		Replicas:  3,
		Command:   []string{"/server"},
		Args:      []string{"-v"},
		Env:       map[string]string{"LOG_LEVEL": "info", "API_TOKEN": "s3cret", "A": "1"},
		SecretEnv: []string{"API_TOKEN"},
		Ports: []manifest.Port{
			{ContainerPort: 8080, Protocol: "tcp"},
			{ContainerPort: 9090, HostPort: 19090, Protocol: "tcp"},
		},
		Networks:  []string{"backend", "default"},
		Volumes:   []manifest.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true}},
		Resources: manifest.Resources{MemoryBytes: 64 << 20, NanoCPUs: 500_000_000},
		Readiness: &manifest.Readiness{
			Exec:          &manifest.ExecProbe{Command: []string{"/server", "check"}},
			PeriodSeconds: 2, TimeoutSeconds: 1, FailureThreshold: 3, InitialDelaySeconds: 5, SuccessThreshold: 1,
		},
		Restart:                manifest.RestartAlways,
		Update:                 manifest.Update{Strategy: manifest.StrategyRolling, MaxSurge: 1},
		StopGracePeriodSeconds: 7,
	}
	labels := map[string]string{"team": "shop", drift.LabelApp: "not-allowed-to-override"}
	return &manifest.Service{Name: "web", Labels: labels, Spec: spec, Hash: manifest.HashService(nil, labels, spec)}
}

func TestReplicaConfigFromSpec(t *testing.T) {
	svc := testService()
	rc, err := dockerspec.BuildReplicaConfig(dockerspec.ReplicaInput{App: &manifest.App{Name: "shop"}, Service: svc, Slot: 2, Revision: "abc123"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, host := rc.Create.Config, rc.Create.HostConfig
	if rc.Create.Name != "shop-web-2" {
		t.Errorf("name = %q, want shop-web-2", rc.Create.Name)
	}
	if cfg.Image != "shop/web:v7" || !reflect.DeepEqual([]string(cfg.Entrypoint), []string{"/server"}) || !reflect.DeepEqual([]string(cfg.Cmd), []string{"-v"}) {
		t.Errorf("image/entrypoint/cmd = %s %v %v", cfg.Image, cfg.Entrypoint, cfg.Cmd)
	}
	if want := []string{"A=1", "API_TOKEN=s3cret", "LOG_LEVEL=info"}; !reflect.DeepEqual(cfg.Env, want) {
		t.Errorf("env = %v, want %v (sorted, secret passed to the container)", cfg.Env, want)
	}
	wantLabels := map[string]string{
		"team":              "shop",
		drift.LabelApp:      "shop",
		drift.LabelService:  "web",
		drift.LabelSlot:     "2",
		drift.LabelSpecHash: svc.Hash,
		drift.LabelRevision: "abc123",
	}
	for k, v := range wantLabels {
		if cfg.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cfg.Labels[k], v)
		}
	}
	var recorded manifest.ServiceSpec
	if err := json.Unmarshal([]byte(cfg.Labels[drift.LabelSpec]), &recorded); err != nil {
		t.Fatalf("spec label is not JSON: %v", err)
	}
	if recorded.Env["API_TOKEN"] == "s3cret" || recorded.Env["LOG_LEVEL"] != "info" {
		t.Errorf("spec label must hold the redacted spec, got env %v", recorded.Env)
	}
	p8080, p9090 := network.MustParsePort("8080/tcp"), network.MustParsePort("9090/tcp")
	if _, ok := cfg.ExposedPorts[p8080]; !ok {
		t.Errorf("8080/tcp not exposed: %v", cfg.ExposedPorts)
	}
	if b := host.PortBindings[p9090]; len(b) != 1 || b[0].HostPort != "19090" || b[0].HostIP.IsValid() {
		t.Errorf("9090 binding = %v, want :19090 on every address (no host IP), as docker run -p does", b)
	}
	if _, ok := host.PortBindings[p8080]; ok {
		t.Errorf("8080 has no hostPort and must not be published")
	}
	if host.RestartPolicy.Name != container.RestartPolicyUnlessStopped {
		t.Errorf("restart always -> %q, want unless-stopped", host.RestartPolicy.Name)
	}
	if host.Memory != 64<<20 || host.NanoCPUs != 500_000_000 {
		t.Errorf("resources = %d %d", host.Memory, host.NanoCPUs)
	}
	if cfg.StopTimeout == nil || *cfg.StopTimeout != 7 {
		t.Errorf("stop timeout = %v, want 7", cfg.StopTimeout)
	}
	if len(host.Mounts) != 1 || host.Mounts[0].Source != "shop-data" || host.Mounts[0].Target != "/data" || !host.Mounts[0].ReadOnly || host.Mounts[0].Type != "volume" {
		t.Errorf("mounts = %+v", host.Mounts)
	}
	if string(host.NetworkMode) != "shop-backend" {
		t.Errorf("network mode = %q, want shop-backend", host.NetworkMode)
	}
	ep := rc.Create.NetworkingConfig.EndpointsConfig["shop-backend"]
	if ep == nil || !reflect.DeepEqual(ep.Aliases, []string{"web"}) || len(rc.Create.NetworkingConfig.EndpointsConfig) != 1 {
		t.Errorf("create-time networks = %+v", rc.Create.NetworkingConfig.EndpointsConfig)
	}
	if want := []dockerspec.ExtraNetwork{{Name: "shop-default", Aliases: []string{"web"}}}; !reflect.DeepEqual(rc.ExtraNetworks, want) {
		t.Errorf("extra networks = %+v, want %+v", rc.ExtraNetworks, want)
	}
	hc := cfg.Healthcheck
	if hc == nil || !reflect.DeepEqual(hc.Test, []string{"CMD", "/server", "check"}) || hc.Interval != 2*time.Second ||
		hc.Timeout != time.Second || hc.Retries != 3 || hc.StartPeriod != 5*time.Second {
		t.Errorf("healthcheck = %+v", hc)
	}
}

func TestRestartPolicies(t *testing.T) {
	for restart, want := range map[string]container.RestartPolicyMode{
		manifest.RestartAlways:    container.RestartPolicyUnlessStopped,
		manifest.RestartOnFailure: container.RestartPolicyOnFailure,
		manifest.RestartNever:     container.RestartPolicyDisabled,
	} {
		if got := dockerspec.RestartPolicy(&manifest.ServiceSpec{Restart: restart}).Name; got != want {
			t.Errorf("restart %s -> %s, want %s", restart, got, want)
		}
	}
}

func TestContainerFromSummary(t *testing.T) {
	svc := testService()
	rc, err := dockerspec.BuildReplicaConfig(dockerspec.ReplicaInput{App: &manifest.App{Name: "shop"}, Service: svc, Slot: 3, Revision: "abc123"})
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
	c := dockerspec.ContainerFromSummary(s)
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

	foreign := dockerspec.ContainerFromSummary(container.Summary{ID: "x", Names: []string{"/shop-web-1"}, Labels: map[string]string{"team": "shop"}, State: "running", Status: "Up 2 hours"})
	if foreign.App != "" || foreign.Service != "" || foreign.Spec != nil {
		t.Errorf("a container without our labels must not look owned: %+v", foreign)
	}
	if bad := dockerspec.ContainerFromSummary(container.Summary{ID: "y", Labels: map[string]string{drift.LabelApp: "shop", drift.LabelSpec: "{not json"}}); bad.Spec != nil || bad.App != "shop" {
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
		code, ok := dockerspec.ParseExitCode(tc.status)
		if code != tc.exit || ok != tc.exitOK {
			t.Errorf("dockerspec.ParseExitCode(%q) = %d, %v", tc.status, code, ok)
		}
		if h := dockerspec.ParseHealth(tc.status); h != tc.health {
			t.Errorf("dockerspec.ParseHealth(%q) = %q, want %q", tc.status, h, tc.health)
		}
		up, ok := dockerspec.ParseUptime(tc.status)
		if up != tc.up || ok != tc.upOK {
			t.Errorf("dockerspec.ParseUptime(%q) = %v, %v", tc.status, up, ok)
		}
	}
}

func TestRolloutBatches(t *testing.T) {
	for _, tc := range []struct {
		n, surge, unavailable int
		want                  []rolloutBatch
	}{
		{3, 1, 0, []rolloutBatch{{1, 1}, {1, 1}, {1, 1}}},
		{5, 2, 0, []rolloutBatch{{2, 2}, {2, 2}, {1, 1}}},
		{3, 0, 1, []rolloutBatch{{1, 0}, {1, 0}, {1, 0}}},
		{4, 1, 1, []rolloutBatch{{2, 1}, {2, 1}}},
		{3, 1, 2, []rolloutBatch{{3, 1}}},
		{2, 0, 0, []rolloutBatch{{1, 1}, {1, 1}}}, // cannot make progress as written: surge one
		{0, 1, 0, nil},
	} {
		got := rolloutBatches(tc.n, tc.surge, tc.unavailable)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("rolloutBatches(%d, surge %d, unavailable %d) = %v, want %v", tc.n, tc.surge, tc.unavailable, got, tc.want)
		}
		// Invariant: never more than maxUnavailable replicas stopped first.
		for _, b := range got {
			if b.Size-b.Surge > tc.unavailable {
				t.Errorf("batch %v takes more than %d replicas out of service", b, tc.unavailable)
			}
		}
	}
}

func TestWatchedEvent(t *testing.T) {
	msg := func(typ, action string, attrs map[string]string) eventsMessage {
		return eventsMessage{Type: eventsType(typ), Action: eventsAction(action), Actor: eventsActor{ID: "abc", Attributes: attrs}}
	}
	owned := map[string]string{drift.LabelApp: "shop", "name": "shop-web-1"}
	foreign := map[string]string{"name": "redis-by-hand"}
	for _, tc := range []struct {
		m    eventsMessage
		want string // app/container/id/action/network, or "" when ignored
	}{
		{msg("container", "die", owned), "shop/shop-web-1/abc/die/"},
		{msg("container", "health_status: unhealthy", owned), "shop/shop-web-1/abc/health_status/"},
		{msg("container", "update", owned), "shop/shop-web-1/abc/update/"},
		{msg("container", "rename", owned), "shop/shop-web-1/abc/rename/"},
		{msg("container", "exec_start: /bin/sh", owned), ""},
		{msg("container", "destroy", foreign), "/redis-by-hand/abc/destroy/"},
		{msg("container", "start", foreign), ""},
		{msg("network", "disconnect", map[string]string{"container": "c1", "name": "shop-default"}), "//c1/disconnect/shop-default"},
		{msg("network", "create", map[string]string{"name": "x"}), ""},
		{msg("image", "pull", owned), ""},
	} {
		ev, ok := watchedEvent(tc.m)
		got := ""
		if ok {
			got = ev.App + "/" + ev.Container + "/" + ev.ID + "/" + ev.Action + "/" + ev.Network
		}
		if got != tc.want {
			t.Errorf("watchedEvent(%s %s) = %q, want %q", tc.m.Type, tc.m.Action, got, tc.want)
		}
	}
}

type (
	eventsMessage = events.Message
	eventsType    = events.Type
	eventsAction  = events.Action
	eventsActor   = events.Actor
)

func TestNotReadyReplicasAreReplacedFirst(t *testing.T) {
	mk := func(ids ...string) []indexed {
		var out []indexed
		for i, id := range ids {
			out = append(out, indexed{index: i, change: drift.Change{ID: id}})
		}
		return out
	}
	ready := map[string]bool{"a": true, "b": false, "c": true, "d": false}
	got := notReadyFirst(mk("a", "b", "c", "d"), func(id string) bool { return ready[id] })
	var order []string
	for _, ic := range got {
		order = append(order, ic.change.ID)
	}
	if strings.Join(order, ",") != "b,d,a,c" {
		t.Fatalf("order %v, want the not-ready b and d first, each group in plan order", order)
	}
}

// A service whose network or volume could not be created is held back
// with that failure; other services are not.
func TestFailedResourcesBlockTheirServices(t *testing.T) {
	netCreate := drift.Change{Action: drift.ActionCreate, Kind: drift.KindNetwork, Name: "shop-back", Resource: "back"}
	volCreate := drift.Change{Action: drift.ActionCreate, Kind: drift.KindVolume, Name: "shop-data", Resource: "data"}
	r := &run{outcomes: []drift.Outcome{
		{Change: netCreate, Result: drift.ResultFailed, Error: "address pool exhausted: raise addressPool", Failure: &drift.Failure{Cause: drift.FailureConflict, Summary: "pool"}},
		{Change: volCreate, Result: drift.ResultDone},
	}}
	missing := r.failedResources([]indexed{{0, netCreate}, {1, volCreate}})
	api := &manifest.Service{Name: "api", Spec: manifest.ServiceSpec{Networks: []string{"back"}}}
	db := &manifest.Service{Name: "db", Spec: manifest.ServiceSpec{Networks: []string{"default"}, Volumes: []manifest.VolumeMount{{Name: "data", MountPath: "/data"}}}}
	f := missing.blocks(api)
	if f == nil || f.Cause != drift.FailureConflict || !strings.Contains(f.Summary, "network shop-back could not be created: address pool exhausted") {
		t.Errorf("api: %+v, want the network's conflict", f)
	}
	if f := missing.blocks(db); f != nil {
		t.Errorf("db (its volume was created): %+v, want nil", f)
	}
}
