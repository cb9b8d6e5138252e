package deploy_test

// Real-engine tests of the fields added for compose files: every setting
// reaches Docker, repository files are mounted read-only and content-
// addressed, external networks are joined but never created, and a Docker
// healthcheck decides readiness.

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/moby/moby/client/pkg/versions"
)

// loadWith parses files ({{image}} is the workload image) under a policy
// and reads their repository binds, as the loader does.
func (f *fixture) loadWith(opts load.Options, files map[string]string) *manifest.App {
	f.t.Helper()
	fsys := fstest.MapFS{}
	for name, d := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(strings.ReplaceAll(d, "{{image}}", f.image))}
	}
	app, err := appdir.LoadWith(fsys, ".", f.app, opts)
	if err != nil {
		f.t.Fatalf("manifests: %v", err)
	}
	if err := load.ResolveRepoBinds(fsys, ".", app); err != nil {
		f.t.Fatalf("repository binds: %v", err)
	}
	return app
}

func (f *fixture) inspect(name string) container.InspectResponse {
	f.t.Helper()
	res, err := f.cli.ContainerInspect(context.Background(), name, client.ContainerInspectOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return res.Container
}

// externalNetwork creates a network driftless does not own; it is removed
// after the app's containers.
func (f *fixture) externalNetwork() string {
	f.t.Helper()
	name := f.app + "-corp"
	ctx := context.Background()
	if _, err := f.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge"}); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		testenv.RemoveApp(f.t, f.app)
		if _, err := f.cli.NetworkRemove(ctx, name, client.NetworkRemoveOptions{}); err != nil {
			f.t.Errorf("remove external network %s: %v", name, err)
		}
	})
	return name
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// readInContainer reads a file as the container sees it.
func (f *fixture) readInContainer(id, path string) string {
	f.t.Helper()
	res, err := f.cli.CopyFromContainer(context.Background(), id, client.CopyFromContainerOptions{SourcePath: path})
	if err != nil {
		f.t.Fatalf("read %s in container: %v", path, err)
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	if _, err := tr.Next(); err != nil {
		f.t.Fatal(err)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

var allowAll = load.Options{Policy: policy.Policy{Allow: policy.AllowNames, HostPaths: []string{"/"}}}

func TestEveryFieldReachesDocker(t *testing.T) {
	filesDir := t.TempDir()
	f := newFixture(t, deploy.Options{FilesDir: filesDir, ReadyTimeout: 30 * time.Second})
	ext := f.externalNetwork()
	hostDir := t.TempDir()
	port := freePort(t)
	app := f.loadWith(allowAll, map[string]string{
		"web.yaml": fmt.Sprintf(`apiVersion: driftless.dev/v1
kind: Service
metadata: {name: web}
spec:
  image: {{image}}
  stopGracePeriodSeconds: 1
  restart: on-failure
  restartMaxRetries: 3
  user: "1000:1000"
  workingDir: /work
  hostname: webhost
  domainname: example.org
  init: true
  stopSignal: SIGINT
  tty: true
  stdinOpen: true
  networks: [corp, front]
  aliases: {corp: [api], front: [www, www2]}
  extraHosts: ["db.local:10.9.8.7"]
  dns: [10.0.0.53]
  dnsSearch: [example.org]
  dnsOptions: ["ndots:2"]
  macAddress: "02:42:ac:11:99:01"
  ports: [{containerPort: 8080, hostPort: %d, hostIP: 127.0.0.1}]
  update: {strategy: recreate}
  binds:
    - {hostPath: %s/created/below, mountPath: /created, createHostPath: true}
    - {hostPath: %s, mountPath: /host, readOnly: true, propagation: rprivate}
    - {repoPath: conf, mountPath: /etc/app}
  tmpfs: [{mountPath: /scratch, size: 16Mi, mode: 1777}]
  privileged: true
  readOnlyRootfs: true
  capAdd: [net_admin]
  capDrop: [MKNOD]
  securityOpt: [no-new-privileges]
  devices: [{hostPath: /dev/null, containerPath: /dev/xnull, permissions: rw}]
  groupAdd: ["1001"]
  pid: host
  ipc: shareable
  sysctls: {net.core.somaxconn: 1024}
  ulimits: [{name: nofile, soft: 1024, hard: 2048}]
  shmSize: 32Mi
  logging: {driver: json-file, options: {max-size: 1m}}
  healthcheck: {test: [CMD, /workload, probe, "http://127.0.0.1:8080/healthz"], interval: 300ms, timeout: 2s, startPeriod: 5s, retries: 5}
  resources: {pids: 100, memory: 256Mi, memoryReservation: 32Mi}
`, port, hostDir, hostDir),
		"net.yaml": fmt.Sprintf(`apiVersion: driftless.dev/v1
kind: Network
metadata: {name: corp}
spec: {external: true, name: %s}
---
apiVersion: driftless.dev/v1
kind: Network
metadata: {name: front}
spec: {attachable: true, driverOpts: {com.docker.network.driver.mtu: "1400"}}
`, ext),
		"conf/app.conf": "greeting=hello\n",
	})
	plan := f.converge(app, drift.Options{})
	for _, c := range plan.Changes {
		if c.Name == ext {
			t.Errorf("the external network is in the plan: %+v", c)
		}
	}

	c := f.inspect(manifest.ContainerName(f.app, "web", 1))
	cfg, host := c.Config, c.HostConfig
	front := f.app + "-front"
	var content string
	for _, b := range app.Services[0].Spec.Binds {
		content += b.ContentHash
	}
	pids := int64(100)
	init := true
	mountOf := func(dst string) container.MountPoint {
		for _, m := range c.Mounts {
			if m.Destination == dst {
				return m
			}
		}
		return container.MountPoint{}
	}
	checks := []struct {
		field     string
		got, want any
	}{
		{"User", cfg.User, "1000:1000"},
		{"WorkingDir", cfg.WorkingDir, "/work"},
		{"Hostname", cfg.Hostname, "webhost"},
		{"Domainname", cfg.Domainname, "example.org"},
		{"StopSignal", cfg.StopSignal, "SIGINT"},
		{"Tty", cfg.Tty, true},
		{"OpenStdin", cfg.OpenStdin, true},
		{"Healthcheck", [5]any{cfg.Healthcheck.Test, cfg.Healthcheck.Interval, cfg.Healthcheck.Timeout, cfg.Healthcheck.StartPeriod, cfg.Healthcheck.Retries},
			[5]any{[]string{"CMD", "/workload", "probe", "http://127.0.0.1:8080/healthz"}, 300 * time.Millisecond, 2 * time.Second, 5 * time.Second, 5}},
		{"Init", host.Init, &init},
		{"RestartPolicy", host.RestartPolicy, container.RestartPolicy{Name: container.RestartPolicyOnFailure, MaximumRetryCount: 3}},
		{"NetworkMode", string(host.NetworkMode), ext},
		{"ExtraHosts", host.ExtraHosts, []string{"db.local:10.9.8.7"}},
		{"DNS", fmt.Sprint(host.DNS), "[10.0.0.53]"},
		{"DNSSearch", host.DNSSearch, []string{"example.org"}},
		{"DNSOptions", host.DNSOptions, []string{"ndots:2"}},
		{"port binding", fmt.Sprint(c.NetworkSettings.Ports[network.MustParsePort("8080/tcp")]), fmt.Sprintf("[{127.0.0.1 %d}]", port)},
		{"Binds", host.Binds, []string{hostDir + "/created/below:/created:rw"}},
		{"created host path", dirExists(filepath.Join(hostDir, "created", "below")), true},
		{"host bind ro", [3]any{mountOf("/host").Source, mountOf("/host").RW, string(mountOf("/host").Propagation)}, [3]any{hostDir, false, "rprivate"}},
		{"repo bind", [2]any{mountOf("/etc/app").Source, mountOf("/etc/app").RW}, [2]any{filepath.Join(filesDir, content), false}},
		{"tmpfs", tmpfsOf(host, "/scratch"), "size=16777216 mode=1777"},
		{"Privileged", host.Privileged, true},
		{"ReadonlyRootfs", host.ReadonlyRootfs, true},
		{"CapAdd", host.CapAdd, []string{"CAP_NET_ADMIN"}},
		{"CapDrop", host.CapDrop, []string{"CAP_MKNOD"}},
		{"SecurityOpt", slices.Contains(host.SecurityOpt, "no-new-privileges"), true}, // privileged adds label=disable
		{"Devices", host.Devices, []container.DeviceMapping{{PathOnHost: "/dev/null", PathInContainer: "/dev/xnull", CgroupPermissions: "rw"}}},
		{"GroupAdd", host.GroupAdd, []string{"1001"}},
		{"PidMode", string(host.PidMode), "host"},
		{"IpcMode", string(host.IpcMode), "shareable"},
		{"Sysctls", host.Sysctls, map[string]string{"net.core.somaxconn": "1024"}},
		{"Ulimits", fmt.Sprint(*host.Ulimits[0]), "{nofile 2048 1024}"},
		{"ShmSize", host.ShmSize, int64(32 << 20)},
		{"LogConfig", [2]string{host.LogConfig.Type, host.LogConfig.Config["max-size"]}, [2]string{"json-file", "1m"}}, // the daemon adds its defaults
		{"PidsLimit", host.PidsLimit, &pids},
		{"MemoryReservation", host.MemoryReservation, int64(32 << 20)},
		{"Memory", host.Memory, int64(256 << 20)},
		{"aliases on the external network", hasAll(c.NetworkSettings.Networks[ext].Aliases, "web", "api"), true},
		{"aliases on the app network", hasAll(c.NetworkSettings.Networks[front].Aliases, "web", "www", "www2"), true},
		{"health", c.State.Health.Status, container.Healthy},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.field, ch.got, ch.want)
		}
	}
	// Docker takes a MAC address per endpoint from API 1.44 on; older
	// engines read it only from the container config this client no longer
	// has, and ignore it (a documented limitation).
	if mac := c.NetworkSettings.Networks[ext].MacAddress.String(); versions.GreaterThanOrEqualTo(f.cli.ClientVersion(), "1.44") && mac != "02:42:ac:11:99:01" {
		t.Errorf("MAC address = %s, want 02:42:ac:11:99:01", mac)
	} else {
		t.Logf("API %s: MAC address %s", f.cli.ClientVersion(), mac)
	}
	nres, err := f.cli.NetworkInspect(context.Background(), front, client.NetworkInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := nres.Network; !n.Attachable || n.Options["com.docker.network.driver.mtu"] != "1400" {
		t.Errorf("network %s: attachable %v options %v", front, n.Attachable, n.Options)
	}
	if got := f.readInContainer(c.ID, "/etc/app/app.conf"); got != "greeting=hello\n" {
		t.Errorf("repository file in the container = %q", got)
	}
}

func tmpfsOf(host *container.HostConfig, target string) string {
	for _, m := range host.Mounts {
		if m.Target == target && m.TmpfsOptions != nil {
			return fmt.Sprintf("size=%d mode=%o", m.TmpfsOptions.SizeBytes, uint32(m.TmpfsOptions.Mode))
		}
	}
	return "(none)"
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func hasAll(have []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func TestRepositoryBindsAreContentAddressed(t *testing.T) {
	filesDir := t.TempDir()
	f := newFixture(t, deploy.Options{FilesDir: filesDir})
	svc := func(name string) string {
		return `apiVersion: driftless.dev/v1
kind: Service
metadata: {name: ` + name + `}
spec:
  image: {{image}}
  stopGracePeriodSeconds: 1
  readiness: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
  binds:
    - {repoPath: conf, mountPath: /etc/app}
    - {repoPath: conf/motd, mountPath: /motd}
`
	}
	files := map[string]string{"a.yaml": svc("a"), "b.yaml": svc("b"), "conf/motd": "v1\n", "conf/sub/x": "x\n"}
	app := f.loadWith(load.Options{}, files)
	f.converge(app, drift.Options{})

	a1, b1 := f.inspect(f.app+"-a-1"), f.inspect(f.app+"-b-1")
	dirHash := app.Services[0].Spec.Binds[0].ContentHash
	wantDir := filepath.Join(filesDir, dirHash)
	for _, c := range []container.InspectResponse{a1, b1} {
		for _, m := range c.Mounts {
			if !strings.HasPrefix(m.Source, filesDir+"/") || m.RW {
				t.Errorf("%s: mount %s from %s rw=%v: want read-only under %s", c.Name, m.Destination, m.Source, m.RW, filesDir)
			}
		}
	}
	if got := f.readInContainer(a1.ID, "/motd"); got != "v1\n" {
		t.Errorf("/motd in the container = %q", got)
	}
	if got := f.readInContainer(b1.ID, "/etc/app/sub/x"); got != "x\n" {
		t.Errorf("/etc/app/sub/x in the container = %q", got)
	}
	entries, _ := os.ReadDir(filesDir)
	if len(entries) != 2 {
		t.Errorf("two services with the same content: %d trees in %s, want 2 (directory and file)", len(entries), filesDir)
	}
	if fi, err := os.Stat(filepath.Join(wantDir, "motd")); err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("materialized file: %v %v", fi, err)
	}

	changeMountedContent(t, f, files, filesDir, dirHash)
}

// changeMountedContent: a new hash, a new tree, a rolling replacement; the
// old tree stays until nothing mounts it.
func changeMountedContent(t *testing.T, f *fixture, files map[string]string, filesDir, dirHash string) {
	wantDir := filepath.Join(filesDir, dirHash)
	files["conf/motd"] = "v2\n"
	app2 := f.loadWith(load.Options{}, files)
	newHash := app2.Services[0].Spec.Binds[0].ContentHash
	if newHash == dirHash {
		t.Fatal("changed content kept its hash")
	}
	plan := f.converge(app2, drift.Options{})
	replaced := 0
	for _, c := range plan.Changes {
		if c.Action == drift.ActionReplace {
			replaced++
		}
	}
	if replaced != 2 {
		t.Errorf("replaced %d replicas, want 2:\n%s", replaced, describePlan(plan))
	}
	a2 := f.inspect(f.app + "-a-1")
	if got := f.readInContainer(a2.ID, "/motd"); got != "v2\n" {
		t.Errorf("/motd after the change = %q", got)
	}
	if !dirExists(filepath.Join(filesDir, newHash)) || !dirExists(wantDir) {
		t.Errorf("want the new tree and, until collected, the old one")
	}
	ctx := context.Background()
	removed, err := f.eng.RemoveUnusedFiles(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, dirHash) || dirExists(wantDir) {
		t.Errorf("removed %v: the old tree %s must go", removed, dirHash)
	}
	if slices.Contains(removed, newHash) || !dirExists(filepath.Join(filesDir, newHash)) {
		t.Errorf("removed %v: the mounted tree %s must stay", removed, newHash)
	}
}

func TestMissingExternalNetworkIsAConflict(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	missing := f.app + "-nowhere"
	app := f.load(webYAML(1, "  networks: [corp]\n"), `apiVersion: driftless.dev/v1
kind: Network
metadata: {name: corp}
spec: {external: true, name: `+missing+`}
`)
	plan := f.plan(app, drift.Options{})
	if len(plan.Changes) != 0 || len(plan.Conflicts) != 1 || !strings.Contains(plan.Conflicts[0].Reason, "docker network create "+missing) {
		t.Fatalf("plan:\n%s", describePlan(plan))
	}
	res, _ := f.apply(app, plan)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if _, err := f.cli.NetworkInspect(context.Background(), missing, client.NetworkInspectOptions{}); err == nil {
		t.Errorf("driftless created the external network %s", missing)
	}
	if a := f.observe(); len(a.Containers) != 0 {
		t.Errorf("a service on a missing external network was created: %v", a.Containers)
	}
}

func TestImageHealthcheckDecidesReadiness(t *testing.T) {
	f := newFixture(t, deploy.Options{SettleTime: time.Second, ReadyTimeout: 3 * time.Second})
	// Never healthy: the probe asks a port nothing listens on.
	sick := f.load(`apiVersion: driftless.dev/v1
kind: Service
metadata: {name: web}
spec:
  image: {{image}}
  stopGracePeriodSeconds: 1
  healthcheck: {test: [CMD, /workload, probe, "http://127.0.0.1:9/"], interval: 200ms, retries: 1}
`)
	plan := f.plan(sick, drift.Options{})
	res, _ := f.apply(sick, plan)
	if res.Err == nil {
		t.Errorf("a replica Docker calls unhealthy must not be ready: applied without error, degraded %v", res.Degraded)
	}
	a := f.observe()
	if cs := service(a, "web"); len(cs) != 1 || cs[0].Ready || !strings.Contains(cs[0].ReadyReason, "healthcheck unhealthy") {
		t.Errorf("observed %+v", cs)
	}
}

// minReadySeconds replaces the engine's settle time. With a settle time no
// replica could wait out (30s against a 5s ready timeout), a service with
// minReadySeconds: 0 is ready once running and one with 2 once it has run
// 2s; a service without it is held back by the settle time.
func TestMinReadySecondsReplacesSettleTime(t *testing.T) {
	f := newFixture(t, deploy.Options{SettleTime: 30 * time.Second, ReadyTimeout: 5 * time.Second})
	svc := func(name, extra string) string {
		return fmt.Sprintf("apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: %s}\nspec:\n  image: {{image}}\n  stopGracePeriodSeconds: 1\n%s", name, extra)
	}
	now, soon := svc("now", "  minReadySeconds: 0\n"), svc("soon", "  minReadySeconds: 2\n")
	desired := f.load(now, soon)
	if res, _ := f.apply(desired, f.plan(desired, drift.Options{})); res.Err != nil {
		t.Fatalf("apply: %v", res.Err)
	}
	a := f.observe()
	for _, name := range []string{"now", "soon"} {
		if cs := service(a, name); len(cs) != 1 || !cs[0].Ready {
			t.Errorf("%s: %+v; want one ready replica", name, cs)
		}
	}

	desired = f.load(now, soon, svc("later", ""))
	res, _ := f.apply(desired, f.plan(desired, drift.Options{}))
	if got := degraded(res, "later"); res.Err == nil || !strings.Contains(got, "ready after 30s without restarting") {
		t.Errorf("without minReadySeconds: err %v, degraded %q; want held back by the 30s settle time", res.Err, got)
	}
}
