package dockerspec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
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
	rc, err := BuildReplicaConfig(ReplicaInput{App: &manifest.App{Name: "shop"}, Service: svc, Slot: 2, Revision: "abc123"})
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
	if want := []ExtraNetwork{{Name: "shop-default", Aliases: []string{"web"}}}; !reflect.DeepEqual(rc.ExtraNetworks, want) {
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
		if got := RestartPolicy(&manifest.ServiceSpec{Restart: restart}).Name; got != want {
			t.Errorf("restart %s -> %s, want %s", restart, got, want)
		}
	}
}

// modelApp uses every field added for compose files.
func modelApp() *manifest.App {
	conf := &manifest.RepoTree{Dir: true, Files: []manifest.RepoFile{{Path: "a.conf", Data: []byte("a=1\n")}, {Path: "bin/run", Exec: true, Data: []byte("#!/bin/sh\n")}}}
	single := &manifest.RepoTree{Files: []manifest.RepoFile{{Data: []byte("x")}}}
	spec := manifest.ServiceSpec{
		Image: "web:v1", Replicas: 1, Restart: manifest.RestartOnFailure, RestartMaxRetries: 4,
		Networks: []string{"backend", "front"},
		Aliases:  map[string][]string{"backend": {"api"}, "front": {"www", "web2"}},
		Volumes:  []manifest.VolumeMount{{Name: "shared", MountPath: "/shared"}},
		User:     "1000:1000", WorkingDir: "/srv", Hostname: "h", Domainname: "example.org", Init: true,
		StopSignal: "SIGQUIT", TTY: true, StdinOpen: true,
		ExtraHosts: []string{"db:10.0.0.5"}, DNS: []string{"1.1.1.1"}, DNSSearch: []string{"example.org"}, DNSOptions: []string{"ndots:2"},
		MacAddress: "02:42:ac:11:00:09",
		Ports:      []manifest.Port{{ContainerPort: 80, HostPort: 8080, Protocol: "tcp", HostIP: "127.0.0.1"}},
		Binds: []manifest.BindMount{
			{HostPath: "/srv/a", MountPath: "/a", CreateHostPath: true, SELinux: "z", Propagation: "rslave"},
			{HostPath: "/srv/b", MountPath: "/b", ReadOnly: true, Propagation: "rshared"},
			{RepoPath: "conf", ContentHash: conf.Hash(), MountPath: "/etc/app", ReadOnly: true},
			{RepoPath: "one.txt", ContentHash: single.Hash(), MountPath: "/one.txt", ReadOnly: true},
		},
		Tmpfs:      []manifest.TmpfsMount{{MountPath: "/tmp", SizeBytes: 64 << 20, Mode: 0o1777}, {MountPath: "/run"}},
		Privileged: true, ReadOnlyRootfs: true, CapAdd: []string{"NET_ADMIN"}, CapDrop: []string{"MKNOD"},
		SecurityOpt: []string{"no-new-privileges"},
		Devices:     []manifest.Device{{HostPath: "/dev/fuse", ContainerPath: "/dev/fuse", Permissions: "rwm"}},
		DeviceRequests: []manifest.DeviceRequest{
			{Driver: "nvidia", Count: manifest.DeviceCountAll, Capabilities: [][]string{{"gpu"}}},
			{Driver: "nvidia", DeviceIDs: []string{"1", "0"}, Capabilities: [][]string{{"gpu", "utility"}}, Options: map[string]string{"a": "b"}},
		},
		GroupAdd: []string{"audio"}, PID: "host", IPC: "shareable",
		Sysctls:      map[string]string{"net.core.somaxconn": "1024"},
		Ulimits:      []manifest.Ulimit{{Name: "nofile", Soft: 1024, Hard: 4096}},
		ShmSizeBytes: 128 << 20,
		Logging:      &manifest.Logging{Driver: "json-file", Options: map[string]string{"max-size": "10m"}},
		Healthcheck: &manifest.Healthcheck{Test: []string{"CMD", "/check"}, Interval: 1500 * time.Millisecond, Timeout: 250 * time.Millisecond,
			StartPeriod: 3 * time.Second, StartInterval: time.Second, Retries: 7},
		Resources:              manifest.Resources{PidsLimit: 100, MemoryReservationBytes: 32 << 20},
		StopGracePeriodSeconds: 10,
	}
	return &manifest.App{
		Name:     "shop",
		Services: []manifest.Service{{Name: "web", Spec: spec, Hash: manifest.HashService(nil, nil, spec)}},
		Networks: []manifest.Network{
			{Name: "backend", Spec: manifest.NetworkSpec{External: true, ExternalName: "corp-net"}},
			{Name: "front", Spec: manifest.NetworkSpec{Driver: "bridge"}},
		},
		Volumes: []manifest.Volume{{Name: "shared", Spec: manifest.VolumeSpec{External: true, ExternalName: "corp-data"}}},
		Content: map[string]*manifest.RepoTree{conf.Hash(): conf, single.Hash(): single},
	}
}

func TestReplicaConfigEveryModelField(t *testing.T) {
	app := modelApp()
	rc, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: 1, Revision: "r", FilesDir: "/var/lib/driftless/files"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, host := rc.Create.Config, rc.Create.HostConfig
	conf, single := app.Services[0].Spec.Binds[2].ContentHash, app.Services[0].Spec.Binds[3].ContentHash
	pids := int64(100)
	init := true
	p80 := network.MustParsePort("80/tcp")
	checks := []struct {
		field     string
		got, want any
	}{
		{"User", cfg.User, "1000:1000"},
		{"WorkingDir", cfg.WorkingDir, "/srv"},
		{"Hostname", cfg.Hostname, "h"},
		{"Domainname", cfg.Domainname, "example.org"},
		{"StopSignal", cfg.StopSignal, "SIGQUIT"},
		{"Tty", cfg.Tty, true},
		{"OpenStdin", cfg.OpenStdin, true},
		{"Healthcheck", *cfg.Healthcheck, container.HealthConfig{Test: []string{"CMD", "/check"}, Interval: 1500 * time.Millisecond,
			Timeout: 250 * time.Millisecond, StartPeriod: 3 * time.Second, StartInterval: time.Second, Retries: 7}},
		{"Init", host.Init, &init},
		{"RestartPolicy", host.RestartPolicy, container.RestartPolicy{Name: container.RestartPolicyOnFailure, MaximumRetryCount: 4}},
		{"NetworkMode", string(host.NetworkMode), "corp-net"},
		{"aliases at create", rc.Create.NetworkingConfig.EndpointsConfig["corp-net"].Aliases, []string{"web", "api"}},
		{"MAC", rc.Create.NetworkingConfig.EndpointsConfig["corp-net"].MacAddress.String(), "02:42:ac:11:00:09"},
		{"extra networks", rc.ExtraNetworks, []ExtraNetwork{{Name: "shop-front", Aliases: []string{"web", "www", "web2"}}}},
		{"ExtraHosts", host.ExtraHosts, []string{"db:10.0.0.5"}},
		{"DNS", len(host.DNS) == 1 && host.DNS[0].String() == "1.1.1.1", true},
		{"DNSSearch", host.DNSSearch, []string{"example.org"}},
		{"DNSOptions", host.DNSOptions, []string{"ndots:2"}},
		{"PortBindings", host.PortBindings[p80][0].HostIP.String() + ":" + host.PortBindings[p80][0].HostPort, "127.0.0.1:8080"},
		{"Binds", host.Binds, []string{"/srv/a:/a:rw,z,rslave"}},
		{"Mounts", host.Mounts, []mount.Mount{
			{Type: mount.TypeVolume, Source: "corp-data", Target: "/shared"},
			{Type: mount.TypeBind, Source: "/srv/b", Target: "/b", ReadOnly: true, BindOptions: &mount.BindOptions{Propagation: mount.PropagationRShared}},
			{Type: mount.TypeBind, Source: "/var/lib/driftless/files/" + conf, Target: "/etc/app", ReadOnly: true},
			{Type: mount.TypeBind, Source: "/var/lib/driftless/files/" + single + "/file", Target: "/one.txt", ReadOnly: true},
			{Type: mount.TypeTmpfs, Target: "/tmp", TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 64 << 20, Mode: 0o1777}},
			{Type: mount.TypeTmpfs, Target: "/run"},
		}},
		{"Privileged", host.Privileged, true},
		{"ReadonlyRootfs", host.ReadonlyRootfs, true},
		{"CapAdd", host.CapAdd, []string{"NET_ADMIN"}},
		{"CapDrop", host.CapDrop, []string{"MKNOD"}},
		{"SecurityOpt", host.SecurityOpt, []string{"no-new-privileges"}},
		{"Devices", host.Devices, []container.DeviceMapping{{PathOnHost: "/dev/fuse", PathInContainer: "/dev/fuse", CgroupPermissions: "rwm"}}},
		{"DeviceRequests", host.DeviceRequests, []container.DeviceRequest{
			{Driver: "nvidia", Count: -1, Capabilities: [][]string{{"gpu"}}},
			{Driver: "nvidia", DeviceIDs: []string{"1", "0"}, Capabilities: [][]string{{"gpu", "utility"}}, Options: map[string]string{"a": "b"}},
		}},
		{"GroupAdd", host.GroupAdd, []string{"audio"}},
		{"PidMode", string(host.PidMode), "host"},
		{"IpcMode", string(host.IpcMode), "shareable"},
		{"Sysctls", host.Sysctls, map[string]string{"net.core.somaxconn": "1024"}},
		{"Ulimits", *host.Ulimits[0], container.Ulimit{Name: "nofile", Soft: 1024, Hard: 4096}},
		{"ShmSize", host.ShmSize, int64(128 << 20)},
		{"LogConfig", host.LogConfig, container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "10m"}}},
		{"PidsLimit", host.PidsLimit, &pids},
		{"MemoryReservation", host.MemoryReservation, int64(32 << 20)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.field, c.got, c.want)
		}
	}
}

func TestReplicaConfigNetworkModes(t *testing.T) {
	for _, mode := range []string{manifest.NetworkHost, manifest.NetworkNone, manifest.NetworkBridge, manifest.NetworkDefault} {
		app := &manifest.App{Name: "shop", Services: []manifest.Service{{Name: "web", Spec: manifest.ServiceSpec{Image: "x", NetworkMode: mode}}}}
		rc, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: 1})
		if err != nil {
			t.Fatal(err)
		}
		if string(rc.Create.HostConfig.NetworkMode) != mode || len(rc.Create.NetworkingConfig.EndpointsConfig) != 0 || len(rc.ExtraNetworks) != 0 {
			t.Errorf("%s: network mode %q endpoints %v extra %v", mode, rc.Create.HostConfig.NetworkMode, rc.Create.NetworkingConfig.EndpointsConfig, rc.ExtraNetworks)
		}
	}
}

func TestReplicaConfigHealthcheckForms(t *testing.T) {
	tests := []struct {
		name string
		spec manifest.ServiceSpec
		want *container.HealthConfig
	}{
		{"image's", manifest.ServiceSpec{}, nil},
		{"disabled", manifest.ServiceSpec{Healthcheck: &manifest.Healthcheck{Test: []string{"NONE"}}}, &container.HealthConfig{Test: []string{"NONE"}}},
		{"exec shell readiness", manifest.ServiceSpec{Readiness: &manifest.Readiness{Exec: &manifest.ExecProbe{Command: []string{"pg_isready -q"}, Shell: true}, PeriodSeconds: 2, TimeoutSeconds: 1, FailureThreshold: 3}},
			&container.HealthConfig{Test: []string{"CMD-SHELL", "pg_isready -q"}, Interval: 2 * time.Second, Timeout: time.Second, Retries: 3}},
	}
	for _, tt := range tests {
		if got := HealthConfig(&tt.spec); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestReplicaConfigRepoBindWithoutContent(t *testing.T) {
	app := modelApp()
	app.Content = nil
	_, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: 1, FilesDir: "/x"})
	if err == nil {
		t.Fatal("a repository bind without loaded content must not be created")
	}
}

// With Remote (an engine that may be on another host) the
// repository binds are left out of the create call, with no path under
// FilesDir, while host binds stay; the spec hash label is the same as on
// a local engine, so the content still decides when a replica is replaced.
func TestReplicaConfigCopyRepoFiles(t *testing.T) {
	app := modelApp()
	local, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: 1, Revision: "r", FilesDir: "/var/lib/driftless/files"})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: 1, Revision: "r", FilesDir: "/var/lib/driftless/files", Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, m := range rc.Create.HostConfig.Mounts {
		targets = append(targets, m.Target)
		if strings.HasPrefix(m.Source, "/var/lib/driftless/files") {
			t.Errorf("mount %+v from the agent's files directory", m)
		}
	}
	if want := []string{"/shared", "/b", "/tmp", "/run"}; !reflect.DeepEqual(targets, want) {
		t.Errorf("mount targets %v, want %v", targets, want)
	}
	if !reflect.DeepEqual(rc.Create.HostConfig.Binds, []string{"/srv/a:/a:rw,z,rslave"}) {
		t.Errorf("binds %v", rc.Create.HostConfig.Binds)
	}
	if got, want := rc.Create.Config.Labels[drift.LabelSpecHash], local.Create.Config.Labels[drift.LabelSpecHash]; got != want || got == "" {
		t.Errorf("spec hash %q, want the local engine's %q", got, want)
	}
}

// A port published on any host port is bound with an empty host port, so
// that Docker picks one at each start (compose `ports: ["80"]`).
func TestReplicaConfigAnyHostPort(t *testing.T) {
	svc := testService()
	svc.Spec.Ports = []manifest.Port{
		{ContainerPort: 80, Protocol: "tcp", AnyHostPort: true},
		{ContainerPort: 81, Protocol: "udp", HostIP: "127.0.0.1", AnyHostPort: true},
	}
	rc, err := BuildReplicaConfig(ReplicaInput{App: &manifest.App{Name: "shop"}, Service: svc, Slot: 1})
	if err != nil {
		t.Fatal(err)
	}
	host := rc.Create.HostConfig
	if b := host.PortBindings[network.MustParsePort("80/tcp")]; len(b) != 1 || b[0].HostPort != "" || b[0].HostIP.IsValid() {
		t.Errorf("80/tcp binding = %v, want one with no host port and no host IP", b)
	}
	if b := host.PortBindings[network.MustParsePort("81/udp")]; len(b) != 1 || b[0].HostPort != "" || b[0].HostIP.String() != "127.0.0.1" {
		t.Errorf("81/udp binding = %v, want one on 127.0.0.1 with no host port", b)
	}
}

// With Remote, a state directory is a named volume on that engine
// (manifest.StateVolumeName), not a path under the agent's StateDir; on
// a local engine it stays a bind of that path.
func TestReplicaConfigRemoteStateDirectory(t *testing.T) {
	app := &manifest.App{Name: "shop", Services: []manifest.Service{{Name: "db", Spec: manifest.ServiceSpec{Image: "db:1",
		Binds: []manifest.BindMount{{StatePath: "volumes/db", MountPath: "/var/lib/db"}}}}}}
	remote, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: 1, Revision: "r", StateDir: "/var/lib/driftless/state", Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	want := mount.Mount{Type: mount.TypeVolume, Source: manifest.StateVolumeName("shop", "volumes/db"), Target: "/var/lib/db"}
	if ms := remote.Create.HostConfig.Mounts; len(ms) != 1 || !reflect.DeepEqual(ms[0], want) || len(remote.Create.HostConfig.Binds) != 0 {
		t.Errorf("remote: mounts %+v binds %v, want only %+v", ms, remote.Create.HostConfig.Binds, want)
	}
	if !strings.HasPrefix(want.Source, "shop-state-volumes.db-") {
		t.Errorf("volume name %q", want.Source)
	}
	if manifest.StateVolumeName("shop", "a/b") == manifest.StateVolumeName("shop", "a.b") {
		t.Error("two state paths that read alike share a volume")
	}
	local, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: 1, Revision: "r", StateDir: "/var/lib/driftless/state"})
	if err != nil {
		t.Fatal(err)
	}
	all := fmt.Sprint(local.Create.HostConfig.Mounts, local.Create.HostConfig.Binds)
	if !strings.Contains(all, "/var/lib/driftless/state/shop/volumes/db") {
		t.Errorf("local: %s, want the state directory bound", all)
	}
}

// With Remote, a secret file is not a bind of a file under SecretsDir
// (the agent's host is not the engine's): it is copied into the container
// (deploy/internal/copyin), so the create call mounts nothing at its
// target. On a local engine it is that read-only bind. The spec hash is
// the same on both and covers the secret's digest (manifest.HashService
// hashes spec.Secrets, Digest included): a rotated value is a new hash,
// which replaces the container, the only way a copied value changes.
func TestReplicaConfigRemoteSecrets(t *testing.T) {
	key := manifest.SecretKey("k")
	spec := manifest.ServiceSpec{Image: "web:v1", Replicas: 1, Secrets: []manifest.SecretRef{{Name: "db", File: "db.txt", Target: "/run/secrets/db", Mode: 0o400, Digest: key.Digest("v1")}}}
	app := &manifest.App{Name: "shop", SecretKey: key, Services: []manifest.Service{{Name: "web", Spec: spec, Hash: manifest.HashService(key, nil, spec)}}}
	local, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: 1, Revision: "r", SecretsDir: "/run/driftless/secrets"})
	if err != nil {
		t.Fatal(err)
	}
	if m := local.Create.HostConfig.Mounts; len(m) != 1 || m[0].Target != "/run/secrets/db" || !strings.HasPrefix(m[0].Source, "/run/driftless/secrets/") || !m[0].ReadOnly {
		t.Errorf("local mounts %+v, want the secret's read-only bind", m)
	}
	remote, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: 1, Revision: "r", SecretsDir: "/run/driftless/secrets", Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	if m, b := remote.Create.HostConfig.Mounts, remote.Create.HostConfig.Binds; len(m) != 0 || len(b) != 0 {
		t.Errorf("remote mounts %+v, binds %v, want none (the secret is copied in)", m, b)
	}
	if got, want := remote.Create.Config.Labels[drift.LabelSpecHash], local.Create.Config.Labels[drift.LabelSpecHash]; got != want || got == "" {
		t.Errorf("spec hash %q, want the local engine's %q", got, want)
	}
	rotated := spec
	rotated.Secrets = []manifest.SecretRef{spec.Secrets[0]}
	rotated.Secrets[0].Digest = key.Digest("v2")
	if manifest.HashService(key, nil, rotated) == app.Services[0].Hash {
		t.Error("a rotated secret keeps the spec hash: the container would keep the old value")
	}
}

// A spec that clears the image's entrypoint sends an empty list, which
// Docker reads as "no entrypoint"; no list at all would be the image's.
func TestReplicaConfigClearedEntrypoint(t *testing.T) {
	app := modelApp()
	svc := app.Services[0]
	svc.Spec.Command, svc.Spec.ClearEntrypoint, svc.Spec.Args = nil, true, []string{"python", "-m", "app"}
	rc, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &svc, Slot: 1, Revision: "r", FilesDir: "/var/lib/driftless/files"})
	if err != nil {
		t.Fatal(err)
	}
	if ep := rc.Create.Config.Entrypoint; ep == nil || len(ep) != 0 || !reflect.DeepEqual(rc.Create.Config.Cmd, []string{"python", "-m", "app"}) {
		t.Errorf("entrypoint %#v, cmd %#v: want an empty, non-nil entrypoint and the args", ep, rc.Create.Config.Cmd)
	}
	svc.Spec.ClearEntrypoint = false
	rc, err = BuildReplicaConfig(ReplicaInput{App: app, Service: &svc, Slot: 1, Revision: "r", FilesDir: "/var/lib/driftless/files"})
	if err != nil || rc.Create.Config.Entrypoint != nil {
		t.Errorf("without it: entrypoint %#v (%v), want none sent (the image's)", rc.Create.Config.Entrypoint, err)
	}
}
