package deploy

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/deploy/hostfiles"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/volume"
	"github.com/moby/moby/client"
)

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
		GroupAdd:    []string{"audio"}, PID: "host", IPC: "shareable",
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
	rc, err := dockerspec.BuildReplicaConfig(dockerspec.ReplicaInput{App: app, Service: &app.Services[0], Slot: 1, Revision: "r", FilesDir: "/var/lib/driftless/files"})
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
		{"extra networks", rc.ExtraNetworks, []dockerspec.ExtraNetwork{{Name: "shop-front", Aliases: []string{"web", "www", "web2"}}}},
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
	for _, mode := range []string{manifest.NetworkHost, manifest.NetworkNone, manifest.NetworkBridge} {
		app := &manifest.App{Name: "shop", Services: []manifest.Service{{Name: "web", Spec: manifest.ServiceSpec{Image: "x", NetworkMode: mode}}}}
		rc, err := dockerspec.BuildReplicaConfig(dockerspec.ReplicaInput{App: app, Service: &app.Services[0], Slot: 1})
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
		if got := dockerspec.HealthConfig(&tt.spec); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestReplicaConfigRepoBindWithoutContent(t *testing.T) {
	app := modelApp()
	app.Content = nil
	_, err := dockerspec.BuildReplicaConfig(dockerspec.ReplicaInput{App: app, Service: &app.Services[0], Slot: 1, FilesDir: "/x"})
	if err == nil {
		t.Fatal("a repository bind without loaded content must not be created")
	}
}

// listFake answers the list calls of Observe and RemoveUnusedFiles.
type listFake struct {
	dockerAPI
	containers []container.Summary
	networks   []network.Summary
	volumes    []volume.Volume
}

func (f *listFake) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	return client.ContainerListResult{Items: f.containers}, nil
}

func (f *listFake) NetworkList(context.Context, client.NetworkListOptions) (client.NetworkListResult, error) {
	return client.NetworkListResult{Items: f.networks}, nil
}

func (f *listFake) VolumeList(context.Context, client.VolumeListOptions) (client.VolumeListResult, error) {
	return client.VolumeListResult{Items: f.volumes}, nil
}

// Observing with foreign objects reports every network and volume the app
// does not own, whatever its name: external ones are looked up there.
func TestObserveForeignNetworksAndVolumes(t *testing.T) {
	net := func(name, app string) network.Summary {
		n := network.Summary{}
		n.Name, n.ID, n.Driver = name, "id-"+name, "bridge"
		if app != "" {
			n.Labels = map[string]string{drift.LabelApp: app, drift.LabelResource: "x"}
		}
		return n
	}
	vol := func(name, app string) volume.Volume {
		v := volume.Volume{Name: name, Driver: "local"}
		if app != "" {
			v.Labels = map[string]string{drift.LabelApp: app}
		}
		return v
	}
	fake := &listFake{
		networks: []network.Summary{net("shop-default", "shop"), net("corp-net", ""), net("bridge", ""), net("other-x", "other")},
		volumes:  []volume.Volume{vol("shop-data", "shop"), vol("corp-data", ""), vol("other-y", "other")},
	}
	e := newEngine(fake, Options{FilesDir: t.TempDir()})
	defer e.prober.Stop()
	a, err := e.Observe(context.Background(), "shop", true)
	if err != nil {
		t.Fatal(err)
	}
	names := func(ns []drift.Network) (out []string) {
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return out
	}
	vnames := func(vs []drift.Volume) (out []string) {
		for _, v := range vs {
			out = append(out, v.Name)
		}
		return out
	}
	if got := names(a.ForeignNetworks); !slices.Equal(got, []string{"bridge", "corp-net", "other-x"}) {
		t.Errorf("foreign networks = %v", got)
	}
	if got := vnames(a.ForeignVolumes); !slices.Equal(got, []string{"corp-data", "other-y"}) {
		t.Errorf("foreign volumes = %v", got)
	}
	if got := names(a.Networks); !slices.Equal(got, []string{"shop-default"}) {
		t.Errorf("owned networks = %v", got)
	}
}

func TestMaterializeAndRemoveUnusedFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "files")
	fake := &listFake{}
	e := newEngine(fake, Options{FilesDir: dir})
	defer e.prober.Stop()
	t.Cleanup(func() { _ = hostfiles.RemoveTree(dir) })
	app := modelApp()
	svc := &app.Services[0]
	if err := e.files.MaterializeService(app, svc); err != nil {
		t.Fatal(err)
	}
	conf, single := svc.Spec.Binds[2].ContentHash, svc.Spec.Binds[3].ContentHash
	for p, want := range map[string]os.FileMode{
		filepath.Join(dir, conf):               0o555 | os.ModeDir,
		filepath.Join(dir, conf, "a.conf"):     0o444,
		filepath.Join(dir, conf, "bin"):        0o555 | os.ModeDir,
		filepath.Join(dir, conf, "bin", "run"): 0o555,
		filepath.Join(dir, single):             0o555 | os.ModeDir,
		filepath.Join(dir, single, "file"):     0o444,
	} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode(), err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, conf, "a.conf")); string(b) != "a=1\n" {
		t.Errorf("content = %q", b)
	}
	before, _ := os.Stat(filepath.Join(dir, conf, "a.conf"))
	if err := e.files.MaterializeService(app, svc); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(dir, conf, "a.conf"))
	if !os.SameFile(before, after) {
		t.Error("an existing tree must be reused, not rewritten")
	}
	// A leftover of an interrupted write.
	if err := os.Mkdir(filepath.Join(dir, hostfiles.TmpPrefix+"dead-1"), 0o755); err != nil {
		t.Fatal(err)
	}

	fake.containers = []container.Summary{{ID: "c1", Labels: map[string]string{drift.LabelApp: "shop"},
		Mounts: []container.MountPoint{{Type: mount.TypeBind, Source: filepath.Join(dir, single, "file")}}}}
	removed, err := e.RemoveUnusedFiles(context.Background(), time.Hour)
	if err != nil || len(removed) != 0 {
		t.Errorf("young trees removed: %v %v", removed, err)
	}
	removed, err = e.RemoveUnusedFiles(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if want := []string{hostfiles.TmpPrefix + "dead-1", conf}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	if _, err := os.Stat(filepath.Join(dir, single, "file")); err != nil {
		t.Errorf("a mounted tree was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, conf)); !os.IsNotExist(err) {
		t.Errorf("an unused tree is still there: %v", err)
	}
}
