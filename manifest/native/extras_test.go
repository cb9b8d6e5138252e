package native_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

const fullService = loadtest.Svc + `  image: x
  restart: on-failure
  restartMaxRetries: 5
  user: "1000:1000"
  workingDir: /srv
  hostname: web-host
  domainname: example.org
  init: true
  stopSignal: quit
  tty: true
  stdinOpen: true
  networks: [default, backend]
  aliases: {backend: [api, www]}
  extraHosts: ["db.local:10.0.0.5", "gw:host-gateway"]
  dns: [1.1.1.1]
  dnsSearch: [example.org]
  dnsOptions: ["ndots:2"]
  macAddress: "02:42:AC:11:00:02"
  ports: [{containerPort: 80, hostPort: 8080, hostIP: 127.0.0.1}]
  update: {maxSurge: 0, maxUnavailable: 1, delay: 1m30s}
  binds:
    - {hostPath: /srv/data, mountPath: /data, createHostPath: true, propagation: rslave, selinux: z}
    - {repoPath: ./conf, mountPath: /etc/app}
  tmpfs: [{mountPath: /tmp, size: 64Mi, mode: 1777}]
  privileged: true
  readOnlyRootfs: true
  capAdd: [cap_net_admin, SYS_TIME]
  capDrop: [ALL]
  securityOpt: [no-new-privileges, "seccomp=unconfined"]
  devices: [{hostPath: /dev/fuse}]
  groupAdd: [audio, 1001]
  pid: host
  ipc: shareable
  sysctls: {net.core.somaxconn: 1024}
  ulimits: [{name: nofile, soft: 1024, hard: 4096}, {name: nproc, soft: 512}]
  shmSize: 128Mi
  logging: {driver: json-file, options: {max-size: 10m}}
  healthcheck: {test: [CMD, /bin/check], interval: 10s, timeout: 500ms, startPeriod: 1m, startInterval: 2s, retries: 4}
  resources: {pids: 100, memory: 256Mi, memoryReservation: 128Mi}
  dependsOn: [db]
  dependsOnCondition: {db: started}
  dependsOnRestart: [db]
  anonymousVolumes: [{mountPath: /var/cache/app}, {mountPath: /srv/seed}]
---
apiVersion: driftless.dev/v1
kind: Service
metadata: {name: db}
spec:
  image: db
  readiness: {exec: {command: ["pg_isready -q"], shell: true}}
---
apiVersion: driftless.dev/v1
kind: Network
metadata: {name: backend}
spec: {external: true, name: corp-backend}
---
apiVersion: driftless.dev/v1
kind: Network
metadata: {name: front}
spec: {attachable: true, enableIPv6: true, driverOpts: {com.docker.network.bridge.name: br-front}}
---
apiVersion: driftless.dev/v1
kind: Volume
metadata: {name: shared}
spec: {external: true}
---
apiVersion: driftless.dev/v1
kind: Volume
metadata: {name: nfs}
spec: {driverOpts: {type: nfs, o: "addr=10.0.0.1"}}
`

// allowAll lets a manifest use every host power.
var allowAll = load.Options{Policy: policy.Policy{Allow: policy.AllowNames, HostPaths: []string{"/srv"}}}

func TestLoadEveryNewServiceField(t *testing.T) {
	app, err := appdir.LoadWith(fstest.MapFS{"a.yaml": {Data: []byte(fullService)}, "conf/app.conf": {Data: []byte("x=1\n")}}, ".", "shop", allowAll)
	if err != nil {
		t.Fatal(err)
	}
	got := app.Service("web").Spec
	want := got
	want.RestartMaxRetries = 5
	want.User, want.WorkingDir, want.Hostname, want.Domainname = "1000:1000", "/srv", "web-host", "example.org"
	want.Init, want.StopSignal, want.TTY, want.StdinOpen = true, "SIGQUIT", true, true
	want.Networks = []string{"backend", "default"}
	want.Aliases = map[string][]string{"backend": {"api", "www"}}
	want.ExtraHosts = []string{"db.local:10.0.0.5", "gw:host-gateway"}
	want.DNS, want.DNSSearch, want.DNSOptions = []string{"1.1.1.1"}, []string{"example.org"}, []string{"ndots:2"}
	want.MacAddress = "02:42:ac:11:00:02"
	want.Ports = []manifest.Port{{ContainerPort: 80, HostPort: 8080, Protocol: "tcp", HostIP: "127.0.0.1"}}
	want.Update = manifest.Update{Strategy: manifest.StrategyRolling, MaxSurge: 0, MaxUnavailable: 1, Delay: 90 * time.Second}
	want.Binds = []manifest.BindMount{
		{HostPath: "/srv/data", MountPath: "/data", CreateHostPath: true, Propagation: "rslave", SELinux: "z"},
		{RepoPath: "conf", MountPath: "/etc/app", ReadOnly: true, ContentHash: got.Binds[1].ContentHash},
	}
	want.Tmpfs = []manifest.TmpfsMount{{MountPath: "/tmp", SizeBytes: 64 << 20, Mode: 0o1777}}
	want.AnonymousVolumes = []manifest.AnonymousVolume{{MountPath: "/srv/seed"}, {MountPath: "/var/cache/app"}}
	want.Privileged, want.ReadOnlyRootfs = true, true
	want.CapAdd, want.CapDrop = []string{"NET_ADMIN", "SYS_TIME"}, []string{"ALL"}
	want.SecurityOpt = []string{"no-new-privileges", "seccomp=unconfined"}
	want.Devices = []manifest.Device{{HostPath: "/dev/fuse", ContainerPath: "/dev/fuse", Permissions: "rwm"}}
	want.GroupAdd = []string{"1001", "audio"}
	want.PID, want.IPC = "host", "shareable"
	want.Sysctls = map[string]string{"net.core.somaxconn": "1024"}
	want.Ulimits = []manifest.Ulimit{{Name: "nofile", Soft: 1024, Hard: 4096}, {Name: "nproc", Soft: 512, Hard: 512}}
	want.ShmSizeBytes = 128 << 20
	want.Logging = &manifest.Logging{Driver: "json-file", Options: map[string]string{"max-size": "10m"}}
	want.Healthcheck = &manifest.Healthcheck{Test: []string{"CMD", "/bin/check"}, Interval: 10 * time.Second, Timeout: 500 * time.Millisecond,
		StartPeriod: time.Minute, StartInterval: 2 * time.Second, Retries: 4}
	want.Resources = manifest.Resources{PidsLimit: 100, MemoryBytes: 256 << 20, MemoryReservationBytes: 128 << 20}
	want.DependsOnCondition = map[string]string{"db": manifest.DependsStarted}
	want.DependsOnRestart = []string{"db"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spec:\n got %+v\nwant %+v", got, want)
	}
	for field, v := range map[string]any{
		"restart": got.Restart, "user": got.User, "pid": got.PID, "ipc": got.IPC, "tty": got.TTY, "dependsOn": got.DependsOn,
	} {
		if reflect.ValueOf(v).IsZero() {
			t.Errorf("%s not set", field)
		}
	}
	if e := app.Service("db").Spec.Readiness.Exec; e == nil || !e.Shell {
		t.Errorf("exec shell = %+v", e)
	}
	if n := app.Network("backend"); !n.Spec.External || n.Spec.ExternalName != "corp-backend" || n.DockerName("shop") != "corp-backend" {
		t.Errorf("external network = %+v", n.Spec)
	}
	if n := app.Network("front").Spec; !n.Attachable || !n.EnableIPv6 || n.DriverOpts["com.docker.network.bridge.name"] != "br-front" || n.Driver != "bridge" {
		t.Errorf("front network = %+v", n)
	}
	if v := app.Volume("shared"); !v.Spec.External || v.DockerName("shop") != "shared" {
		t.Errorf("external volume = %+v", v.Spec)
	}
	if v := app.Volume("nfs").Spec; v.DriverOpts["type"] != "nfs" || v.Driver != "local" {
		t.Errorf("nfs volume = %+v", v)
	}
}

// A refusal by the host-power policy points at the line that asks for it.
func TestPolicyErrorsPointAtTheField(t *testing.T) {
	fsys := fstest.MapFS{"a.yaml": {Data: []byte(fullService)}, "conf/app.conf": {Data: []byte("x=1\n")}}
	_, err := appdir.LoadWith(fsys, ".", "shop", load.Options{})
	got := loadtest.ErrorLines(t, err)
	wantSubs := []string{
		"a.yaml:27:7: spec.binds[0]: host path /srv/data is outside the paths this app may mount",
		"a.yaml:30:15: spec.privileged: a privileged container can take over the host",
		"a.yaml:32:12: spec.capAdd[0]: capability NET_ADMIN is beyond Docker's defaults",
		"a.yaml:32:27: spec.capAdd[1]: capability SYS_TIME is beyond Docker's defaults",
		`a.yaml:34:36: spec.securityOpt[1]: "seccomp=unconfined" turns off`,
		"a.yaml:35:13: spec.devices[0]: host device /dev/fuse",
		"a.yaml:37:8: spec.pid: the host's PID namespace",
		`a.yaml:75:8: spec.driverOpts: volume nfs has the host mount a filesystem of type "nfs": the local driver's options are host power, as a bind mount is; allow it for this app with ` + "`allow: [volume-drivers]`",
	}
	if len(got) != len(wantSubs) {
		t.Errorf("got %d errors, want %d:\n%s", len(got), len(wantSubs), strings.Join(got, "\n"))
	}
	for i, w := range wantSubs {
		if i < len(got) && !strings.HasPrefix(got[i], w) {
			t.Errorf("error %d:\n got %s\nwant %s...", i, got[i], w)
		}
	}
	if _, err := appdir.LoadWith(fsys, ".", "shop", allowAll); err != nil {
		t.Errorf("with every power allowed: %v", err)
	}
}

func TestLoadNewFieldErrors(t *testing.T) {
	tests := []struct {
		name string
		spec string // lines after "  image: x\n"
		want []string
	}{
		{"user", "  user: 'a b'\n", []string{`a.yaml:7:9: spec.user: invalid user "a b": write name, uid, name:group or uid:gid`}},
		{"working dir", "  workingDir: srv\n", []string{`a.yaml:7:15: spec.workingDir: must be an absolute path, got "srv"`}},
		{"hostname", "  hostname: -x\n", []string{`a.yaml:7:13: spec.hostname: invalid host name "-x": letters, digits, '-' and '.', at most 63 characters`}},
		{"stop signal", "  stopSignal: SIGFOO\n", []string{`a.yaml:7:15: spec.stopSignal: invalid signal "SIGFOO": use a name such as SIGTERM, TERM or SIGQUIT, or a number`}},
		{"stop signal number", "  stopSignal: 99\n", []string{`a.yaml:7:15: spec.stopSignal: invalid signal 99: must be 1..64`}},
		{"stop signal type", "  stopSignal: [1]\n", []string{`a.yaml:7:15: spec.stopSignal: must be a string or an integer, got a list`}},
		{"network mode", "  networkMode: container:x\n", []string{`a.yaml:7:16: spec.networkMode: must be bridge, default, none, host or service:NAME, got "container:x"`}},
		{"network mode with networks", "  networkMode: host\n  networks: [default]\n", []string{`a.yaml:8:3: spec.networks: must be empty with networkMode host: the container joins no app network`}},
		{"hostname with host network", "  networkMode: host\n  hostname: web\n", []string{`a.yaml:8:13: spec.hostname: the host's network namespace has the host's name: remove hostname or networkMode host`}},
		{"aliases on a network not joined", "  aliases: {other: [x]}\n", []string{`a.yaml:7:13: spec.aliases.other: the service does not join network "other": aliases must name one of spec.networks`}},
		{"alias not a host name", "  aliases: {default: [\"a b\"]}\n", []string{`a.yaml:7:23: spec.aliases.default[0]: invalid alias "a b": must be a host name`}},
		{"extra host", "  extraHosts: [\"db:nope\", \"noip\"]\n", []string{
			`a.yaml:7:16: spec.extraHosts[0]: invalid extra host "db:nope": "nope" is not an IP address`,
			`a.yaml:7:27: spec.extraHosts[1]: invalid extra host "noip": write host:ip`}},
		{"dns", "  dns: [dns.google]\n", []string{`a.yaml:7:9: spec.dns[0]: invalid DNS server "dns.google": must be an IP address`}},
		{"mac", "  macAddress: 02:42\n", []string{`a.yaml:7:15: spec.macAddress: invalid MAC address "02:42": write six hex pairs such as 02:42:ac:11:00:02`}},
		{"host ip", "  ports: [{containerPort: 80, hostPort: 80, hostIP: localhost}]\n  update: {strategy: recreate}\n", []string{`a.yaml:7:53: spec.ports[0].hostIP: invalid IP address "localhost"`}},
		{"bind both sources", "  binds: [{hostPath: /a, repoPath: a, mountPath: /a}]\n", []string{`a.yaml:7:11: spec.binds[0]: has hostPath and repoPath: use exactly one`}},
		{"bind no source", "  binds: [{mountPath: /a}]\n", []string{`a.yaml:7:11: spec.binds[0]: needs hostPath (an absolute path on the host), repoPath (a path in the repository) or statePath (a directory of the app's state)`}},
		{"bind relative host path", "  binds: [{hostPath: a, mountPath: /a}]\n", []string{`a.yaml:7:22: spec.binds[0].hostPath: must be an absolute path, got "a": a relative path is repoPath`}},
		{"bind repo path leaves", "  binds: [{repoPath: ../x, mountPath: /a}]\n", []string{`a.yaml:7:22: spec.binds[0].repoPath: "../x" leaves the app directory`}},
		{"bind repo path writable", "  binds: [{repoPath: x, mountPath: /a, readOnly: false}]\n", []string{`a.yaml:7:50: spec.binds[0].readOnly: repository files are always mounted read-only: they are shared by every replica and revision with the same content`}},
		{"bind relative mount path", "  binds: [{hostPath: /a, mountPath: a}]\n", []string{`a.yaml:7:37: spec.binds[0].mountPath: must be an absolute path, got "a"`}},
		{"bind propagation", "  binds: [{hostPath: /a, mountPath: /a, propagation: up}]\n", []string{`a.yaml:7:54: spec.binds[0].propagation: must be one of private, rprivate, shared, rshared, slave, rslave, got "up"`}},
		{"mount path used twice", "  binds: [{hostPath: /a, mountPath: /a}]\n  tmpfs: [{mountPath: /a/}]\n", []string{`a.yaml:8:23: spec.tmpfs[0].mountPath: "/a/" is already mounted by spec.binds[0]`}},
		{"anonymous volume on a used path", "  tmpfs: [{mountPath: /data}]\n  anonymousVolumes: [{mountPath: /data}, {mountPath: rel}]\n", []string{
			`a.yaml:8:34: spec.anonymousVolumes[0].mountPath: "/data" is already mounted by spec.tmpfs[0]`,
			`a.yaml:8:54: spec.anonymousVolumes[1].mountPath: must be an absolute path, got "rel"`}},
		{"tmpfs size and mode", "  tmpfs: [{mountPath: /t, size: 1X, mode: 999}]\n", []string{
			`a.yaml:7:33: spec.tmpfs[0].size: invalid memory quantity "1X": use bytes or a number with Ki, Mi, Gi, Ti, K, M, G or T (e.g. 512Mi)`,
			`a.yaml:7:43: spec.tmpfs[0].mode: invalid mode "999": use octal permission bits such as 1777 or 0755`}},
		{"capabilities", "  capAdd: [NET_ADMIN, cap_net_admin, FLY]\n", []string{
			`a.yaml:7:23: spec.capAdd[1]: NET_ADMIN is already listed at spec.capAdd[0]`,
			`a.yaml:7:38: spec.capAdd[2]: unknown capability "FLY": use a Linux capability such as NET_ADMIN (CAP_ prefix optional) or ALL`}},
		{"devices", "  devices: [{hostPath: dev/x, permissions: rwx}]\n", []string{
			`a.yaml:7:24: spec.devices[0].hostPath: must be an absolute path, got "dev/x"`,
			`a.yaml:7:44: spec.devices[0].permissions: must be made of r, w and m, got "rwx"`}},
		{"pid and ipc", "  pid: container\n  ipc: none\n", []string{
			`a.yaml:7:8: spec.pid: must be host (or absent for the container's own), got "container"`,
			`a.yaml:8:8: spec.ipc: must be host, private or shareable, got "none"`}},
		{"sysctls", "  sysctls: {kernel.hostname: x, \"Bad Name\": y}\n", []string{
			`a.yaml:7:30: spec.sysctls["kernel.hostname"]: sysctl kernel.hostname is not namespaced, so Docker refuses it: only net.*, fs.mqueue.* and kernel.msg*/sem/shm* can be set per container`,
			`a.yaml:7:45: spec.sysctls["Bad Name"]: invalid sysctl name "Bad Name": dot-separated, such as net.core.somaxconn`}},
		{"ulimits", "  ulimits: [{name: nofile, soft: 10, hard: 5}, {name: files, soft: 1}, {name: nofile}]\n", []string{
			`a.yaml:7:34: spec.ulimits[0].soft: soft limit 10 is above the hard limit 5`,
			`a.yaml:7:55: spec.ulimits[1].name: unknown limit "files": one of as, core, cpu, data, fsize, locks, memlock, msgqueue, nice, nofile, nproc, rss, rtprio, rttime, sigpending, stack`,
			`a.yaml:7:72: spec.ulimits[2].soft: is required`,
			`a.yaml:7:79: spec.ulimits[2].name: nofile is already limited at spec.ulimits[0]`}},
		{"healthcheck test", "  healthcheck: {test: [curl, x]}\n", []string{`a.yaml:7:24: spec.healthcheck.test[0]: must be CMD or CMD-SHELL, got "curl"`}},
		{"healthcheck durations", "  healthcheck: {test: [CMD-SHELL, x], interval: 10, timeout: 1x, startPeriod: -1s}\n", []string{
			`a.yaml:7:49: spec.healthcheck.interval: must be a duration such as 10s, 1m30s or 500ms, got an integer`,
			`a.yaml:7:62: spec.healthcheck.timeout: invalid duration "1x": use a number with a unit, such as 10s, 1m30s or 500ms`,
			`a.yaml:7:79: spec.healthcheck.startPeriod: invalid duration "-1s": must not be negative`}},
		{"healthcheck disable with test", "  healthcheck: {disable: true, test: [CMD, x]}\n", []string{`a.yaml:7:26: spec.healthcheck.disable: turns the image's healthcheck off: remove the other healthcheck fields`}},
		{"healthcheck and exec readiness", "  healthcheck: {test: [CMD, x]}\n  readiness: {exec: {command: [y]}}\n", []string{`a.yaml:7:3: spec.healthcheck: readiness.exec is also a Docker healthcheck: use one of them`}},
		{"restart max retries", "  restartMaxRetries: 3\n", []string{`a.yaml:7:22: spec.restartMaxRetries: only applies with restart: on-failure`}},
		{"depends on condition", "  dependsOnCondition: {db: ready}\n", []string{
			`a.yaml:7:28: spec.dependsOnCondition.db: must be started, healthy or completed, got "ready"`}},
		{"depends on condition without dependsOn", "  dependsOnCondition: {db: started}\n", []string{
			`a.yaml:7:28: spec.dependsOnCondition.db: "db" is not in spec.dependsOn: add it there`}},
		{"depends on restart", "  dependsOn: [db]\n  dependsOnRestart: [db, cache, db]\n", []string{
			`a.yaml:7:15: spec.dependsOn[0]: service "db" is not declared`,
			`a.yaml:8:26: spec.dependsOnRestart[1]: "cache" is not in spec.dependsOn: add it there`,
			`a.yaml:8:33: spec.dependsOnRestart[2]: "db" is already listed at spec.dependsOnRestart[0]`}},
		{"update delay", "  update: {delay: soon}\n", []string{`a.yaml:7:19: spec.update.delay: invalid duration "soon": use a number with a unit, such as 10s, 1m30s or 500ms`}},
		{"resources", "  resources: {pids: -1, memory: 64Mi, memoryReservation: 128Mi}\n", []string{
			`a.yaml:7:21: spec.resources.pids: must be >= 0`,
			`a.yaml:7:58: spec.resources.memoryReservation: must not exceed resources.memory (64Mi)`}},
		{"shm size", "  shmSize: lots\n", []string{`a.yaml:7:12: spec.shmSize: invalid memory quantity "lots": use bytes or a number with Ki, Mi, Gi, Ti, K, M, G or T (e.g. 512Mi)`}},
		{"exec shell with probe on host network", "  networkMode: host\n  readiness: {tcpSocket: {port: 80}}\n", []string{
			`a.yaml:8:3: spec.readiness: httpGet and tcpSocket probes need the container's own network address, which networkMode host does not give: use exec readiness or a healthcheck`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc + "  image: x\n" + tt.spec})
			if err == nil {
				t.Fatalf("no error, want %v", tt.want)
			}
			if got := loadtest.ErrorLines(t, err); !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
			}
		})
	}
}

func TestLoadExternalErrors(t *testing.T) {
	const net = "apiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: n, labels: {a: b}}\nspec:\n"
	const vol = "apiVersion: driftless.dev/v1\nkind: Volume\nmetadata: {name: v}\nspec:\n"
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"network fields with external", net + "  external: true\n  driver: overlay\n  internal: true\n", []string{
			"a.yaml:3:21: metadata.labels: are not applied to an external network: driftless never creates or changes it",
			"a.yaml:6:11: spec.driver: does not apply to an external network: driftless never creates or changes it",
			"a.yaml:7:13: spec.internal: does not apply to an external network: driftless never creates or changes it"}},
		{"bad name without external", vol + "  name: \"a b\"\n", []string{
			`a.yaml:5:9: spec.name: invalid Docker volume name "a b": letters, digits, '_', '.' and '-', starting with a letter or digit`}},
		{"bad external name", vol + "  external: true\n  name: \"a b\"\n", []string{
			`a.yaml:6:9: spec.name: invalid Docker volume name "a b"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": tt.doc})
			if got := loadtest.ErrorLines(t, err); !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
			}
		})
	}
}

func TestLoadNetworkModeHasNoNetworks(t *testing.T) {
	app, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  networkMode: none\n"})
	if err != nil {
		t.Fatal(err)
	}
	if s := app.Services[0].Spec; s.NetworkMode != manifest.NetworkNone || len(s.Networks) != 0 {
		t.Errorf("networkMode none: %q networks %v", s.NetworkMode, s.Networks)
	}
	if len(app.Networks) != 0 {
		t.Errorf("no service joins the default network, yet it is declared: %+v", app.Networks)
	}
}

func TestHealthcheckDisable(t *testing.T) {
	app, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  healthcheck: {disable: true}\n"})
	if err != nil {
		t.Fatal(err)
	}
	if h := app.Services[0].Spec.Healthcheck; !h.Disabled() || !slices.Equal(h.Test, []string{"NONE"}) {
		t.Errorf("healthcheck = %+v", h)
	}
}

func TestResolveRepoBinds(t *testing.T) {
	doc := loadtest.Svc + "  image: x\n  binds:\n    - {repoPath: ./conf, mountPath: /etc/app}\n    - {repoPath: conf/main.conf, mountPath: /main.conf}\n"
	fsys := fstest.MapFS{
		"apps/shop/web.yaml":       {Data: []byte(doc)},
		"apps/shop/conf/main.conf": {Data: []byte("a=1\n")},
		"apps/shop/conf/run.sh":    {Data: []byte("#!/bin/sh\n"), Mode: 0o755},
	}
	load := func() *manifest.App {
		t.Helper()
		app, err := appdir.Load(fsys, "apps/shop", "shop")
		if err != nil {
			t.Fatal(err)
		}
		unresolved := app.Services[0].Spec
		unresolved.Binds = slices.Clone(unresolved.Binds)
		for i := range unresolved.Binds {
			unresolved.Binds[i].ContentHash = ""
		}
		if app.Services[0].Hash == manifest.HashService(nil, app.Services[0].Labels, unresolved) {
			t.Error("the content hash must be part of the service hash")
		}
		return app
	}
	app := load()
	binds := app.Services[0].Spec.Binds
	dir, file := binds[0], binds[1]
	if dir.MountPath != "/etc/app" || dir.ContentHash == "" || file.ContentHash == "" || dir.ContentHash == file.ContentHash {
		t.Fatalf("binds = %+v", binds)
	}
	if tree := app.Content[dir.ContentHash]; tree == nil || !tree.Dir || len(tree.Files) != 2 || !tree.Files[1].Exec {
		t.Errorf("dir tree = %+v", tree)
	}
	if tree := app.Content[file.ContentHash]; tree == nil || tree.Dir || string(tree.Files[0].Data) != "a=1\n" {
		t.Errorf("file tree = %+v", tree)
	}
	hash := app.Services[0].Hash
	if again := load(); again.Services[0].Hash != hash {
		t.Error("same content, different service hash")
	}
	fsys["apps/shop/conf/main.conf"] = &fstest.MapFile{Data: []byte("a=2\n")}
	if changed := load(); changed.Services[0].Hash == hash || changed.Services[0].Spec.Binds[0].ContentHash == dir.ContentHash {
		t.Error("changed content must change the content and service hashes")
	}
}

func TestResolveRepoBindsMissingPath(t *testing.T) {
	doc := loadtest.Svc + "  image: x\n  binds:\n    - {repoPath: ./conf, mountPath: /etc/app}\n    - {repoPath: conf/main.conf, mountPath: /main.conf}\n"
	fsys := fstest.MapFS{"apps/shop/web.yaml": {Data: []byte(doc)}, "apps/shop/conf/other": {Data: []byte("x")}}
	_, err := appdir.Load(fsys, "apps/shop", "shop")
	var list manifest.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].Error() != "apps/shop/web.yaml:9:7: spec.binds[1]: repoPath conf/main.conf does not exist in this revision" {
		t.Errorf("missing file: %v", err)
	}
}
