package compose_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// SELinux labels on named volumes reach the model in both syntaxes, as
// compose passes them to Docker.
func TestComposeVolumeSELinux(t *testing.T) {
	files := map[string]string{"compose.yaml": `services:
  db:
    image: shop/db:1
    volumes:
      - data:/var/lib/db:Z
      - logs:/var/log/db:z,ro
      - type: volume
        source: cache
        target: /cache
        bind: {selinux: Z}
      - plain:/plain
volumes: {data: {}, logs: {}, cache: {}, plain: {}}
`}
	a := loadtest.MustLoadCompose(t, files, load.Options{})
	got := a.Service("db").Spec.Volumes
	want := []manifest.VolumeMount{
		{Name: "cache", MountPath: "/cache", SELinux: "Z"},
		{Name: "plain", MountPath: "/plain"},
		{Name: "data", MountPath: "/var/lib/db", SELinux: "Z"},
		{Name: "logs", MountPath: "/var/log/db", ReadOnly: true, SELinux: "z"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("volumes:\n got %+v\nwant %+v", got, want)
	}
	errs := loadtest.ComposeErrors(t, map[string]string{"compose.yaml": "services:\n  db:\n    image: shop/db:1\n    volumes: ['data:/d:rshared']\nvolumes: {data: {}}\n"}, load.Options{})
	if want := "compose.yaml:4:15: services.db.volumes[0]: bind propagation does not apply to a named volume"; len(errs) != 1 || !strings.HasPrefix(errs[0], want) {
		t.Errorf("propagation on a volume: got %q, want %q...", errs, want)
	}
}

// nocopy (short syntax or volume.nocopy) reaches the model for named and
// anonymous volumes, as compose passes it: the volume starts empty instead
// of with the image's content; on a bind it is refused.
func TestComposeVolumeNoCopy(t *testing.T) {
	files := map[string]string{"compose.yaml": `services:
  db:
    image: shop/db:1
    volumes:
      - data:/var/lib/db:nocopy
      - logs:/var/log/db:ro,Z,nocopy
      - type: volume
        source: cache
        target: /cache
        volume: {nocopy: true}
      - type: volume
        target: /scratch
        volume: {nocopy: true}
      - plain:/plain
volumes: {data: {}, logs: {}, cache: {}, plain: {}}
`}
	a := loadtest.MustLoadCompose(t, files, load.Options{})
	spec := a.Service("db").Spec
	want := []manifest.VolumeMount{
		{Name: "cache", MountPath: "/cache", NoCopy: true},
		{Name: "plain", MountPath: "/plain"},
		{Name: "data", MountPath: "/var/lib/db", NoCopy: true},
		{Name: "logs", MountPath: "/var/log/db", ReadOnly: true, SELinux: "Z", NoCopy: true},
	}
	if !reflect.DeepEqual(spec.Volumes, want) {
		t.Errorf("volumes:\n got %+v\nwant %+v", spec.Volumes, want)
	}
	if want := []manifest.AnonymousVolume{{MountPath: "/scratch", NoCopy: true}}; !reflect.DeepEqual(spec.AnonymousVolumes, want) {
		t.Errorf("anonymous volumes: got %+v, want %+v", spec.AnonymousVolumes, want)
	}
	errs := loadtest.ComposeErrors(t, map[string]string{"compose.yaml": "services:\n  db:\n    image: shop/db:1\n    volumes: [{type: bind, source: ./conf, target: /conf, volume: {nocopy: true}}]\n", "conf/a": "x"}, load.Options{})
	if want := "services.db.volumes[0]: nocopy applies to volumes, not binds"; len(errs) != 1 || !strings.Contains(errs[0], want) {
		t.Errorf("nocopy on a bind: got %q, want %q", errs, want)
	}
}

// label_file is read from the revision as compose reads it: later files
// win, labels: wins over every file, ${VAR} names a label of an earlier
// file; a missing file, an absolute path and a reserved label are refused
// where they are written.
func TestComposeLabelFile(t *testing.T) {
	files := map[string]string{
		"compose.yaml": `services:
  web:
    image: shop/web:1
    label_file: [labels/base.labels, labels/more.labels]
    labels: {team: explicit}
`,
		"labels/base.labels": "team=base\ntier=front\nowner=${team}-ops\n# a comment\n",
		"labels/more.labels": "tier=edge\n",
	}
	a := loadtest.MustLoadCompose(t, files, load.Options{})
	want := map[string]string{"team": "explicit", "tier": "edge", "owner": "base-ops"}
	if got := a.Service("web").Labels; !reflect.DeepEqual(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}

	files["compose.yaml"] = `services:
  web:
    image: shop/web:1
    label_file: [missing.labels, /etc/host.labels, labels/bad.labels]
`
	files["labels/bad.labels"] = "dev.driftless.app=other\n"
	got := strings.Join(loadtest.ComposeErrors(t, files, load.Options{}), "\n")
	for _, want := range []string{
		`compose.yaml:4:18: services.web.label_file[0]: label file "missing.labels" does not exist in the repository`,
		`compose.yaml:4:34: services.web.label_file[1]: "/etc/host.labels": label files are read from the revision`,
		`compose.yaml:4:52: services.web.label_file[2]: label dev.driftless.app in "labels/bad.labels": the label prefix "dev.driftless." is reserved`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
}

// tmpfs options beyond size and mode are kept in the order written; an
// unknown one is refused where it is written.
func TestComposeTmpfsOptions(t *testing.T) {
	a := loadtest.MustLoadCompose(t, loadtest.Web("tmpfs: ['/config:exec,uid=1000,gid=1000,mode=0750,size=16m', '/run:rw,noexec,nosuid,nodev,noatime,nr_inodes=4096', /tmp]"), load.Options{})
	got := a.Service("web").Spec.Tmpfs
	want := []manifest.TmpfsMount{
		{MountPath: "/config", SizeBytes: 16 << 20, Mode: 0o750, Options: []string{"exec", "uid=1000", "gid=1000"}},
		{MountPath: "/run", Options: []string{"rw", "noexec", "nosuid", "nodev", "noatime", "nr_inodes=4096"}},
		{MountPath: "/tmp"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tmpfs:\n got %+v\nwant %+v", got, want)
	}
	if o := got[0].DockerOptions(); o != "exec,uid=1000,gid=1000,size=16777216,mode=750" {
		t.Errorf("Docker's options: %q", o)
	}
	errs := loadtest.ComposeErrors(t, loadtest.Web("tmpfs: ['/a:uid=www', '/b:remount']"), load.Options{})
	want2 := []string{
		`compose.yaml:4:13: services.web.tmpfs[0]: uid must be a numeric id, got "www"`,
		`compose.yaml:4:27: services.web.tmpfs[1]: tmpfs option "remount" is not supported: use size=, mode=, uid=, gid=, nr_inodes=, rw, ro, exec, noexec, suid, nosuid, dev, nodev, sync, async, dirsync or an atime flag (noatime, relatime, ...)`,
	}
	if strings.Join(errs, "\n") != strings.Join(want2, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(want2, "\n"))
	}
}

// The scheduler and OOM settings compose passes as written are mapped;
// values Docker would refuse are refused at their position.
func TestComposeTuning(t *testing.T) {
	a := loadtest.MustLoadCompose(t, loadtest.Web(
		"cpu_shares: 512", "cpuset: '0-1'", "cpu_period: 100000", "cpu_quota: 50000",
		"mem_limit: 128m", "memswap_limit: 256m", "mem_swappiness: 10",
		"oom_score_adj: 200", "oom_kill_disable: true", "platform: linux/amd64",
	), load.Options{})
	spec := a.Service("web").Spec
	want := manifest.Resources{MemoryBytes: 128 << 20, CPUShares: 512, CPUSet: "0-1", CPUPeriod: 100000, CPUQuota: 50000,
		MemorySwapBytes: 256 << 20, MemorySwappiness: 10, OOMScoreAdj: 200, OOMKillDisable: true}
	if spec.Resources != want {
		t.Errorf("resources:\n got %+v\nwant %+v", spec.Resources, want)
	}
	if spec.Platform != "linux/amd64" {
		t.Errorf("platform %q", spec.Platform)
	}
	errs := loadtest.ComposeErrors(t, loadtest.Web("cpu_shares: 300000", "cpuset: 'a-b'", "memswap_limit: 1g", "platform: arm64"), load.Options{})
	want2 := []string{
		"compose.yaml:4:17: services.web.cpu_shares: must be between 0 and 262144, got 300000",
		`compose.yaml:5:13: services.web.cpuset: invalid CPU list "a-b": write CPU numbers and ranges such as 0-3 or 0,2`,
		"compose.yaml:6:20: services.web.memswap_limit: needs a memory limit: Docker sets swap only with one",
		`compose.yaml:7:15: services.web.platform: invalid platform "arm64": write os/arch or os/arch/variant, such as linux/arm64`,
	}
	if strings.Join(errs, "\n") != strings.Join(want2, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(want2, "\n"))
	}
}

// blkio_config is passed on as compose passes it: the weight and each
// device's weight and limits, rates in bytes read with compose's units.
func TestComposeBlkio(t *testing.T) {
	a := loadtest.MustLoadCompose(t, loadtest.Web(`blkio_config:
      weight: 300
      weight_device: [{path: /dev/sda, weight: 400}]
      device_read_bps: [{path: /dev/sda, rate: 12mb}]
      device_write_bps: [{path: /dev/sdb, rate: "1024k"}]
      device_read_iops: [{path: /dev/sda, rate: 120}]
      device_write_iops: [{path: /dev/sda, rate: 30}]`), load.Options{})
	want := &manifest.Blkio{
		Weight:          300,
		WeightDevice:    []manifest.WeightDevice{{Path: "/dev/sda", Weight: 400}},
		DeviceReadBps:   []manifest.ThrottleDevice{{Path: "/dev/sda", Rate: 12 << 20}},
		DeviceWriteBps:  []manifest.ThrottleDevice{{Path: "/dev/sdb", Rate: 1 << 20}},
		DeviceReadIOps:  []manifest.ThrottleDevice{{Path: "/dev/sda", Rate: 120}},
		DeviceWriteIOps: []manifest.ThrottleDevice{{Path: "/dev/sda", Rate: 30}},
	}
	if got := a.Service("web").Spec.Resources.Blkio; !reflect.DeepEqual(got, want) {
		t.Errorf("blkio:\n got %+v\nwant %+v", got, want)
	}
	errs := loadtest.ComposeErrors(t, loadtest.Web("blkio_config: {weight: 5, weight_device: [{path: sda, weight: 2000}], device_read_bps: [{path: /dev/../etc/x, rate: 1mb}]}"), load.Options{})
	want2 := []string{
		"compose.yaml:4:28: services.web.blkio_config.weight: must be between 10 and 1000, got 5",
		`compose.yaml:4:54: services.web.blkio_config.weight_device[0].path: device "sda" must be a block device's path under /dev, such as /dev/sda`,
		"compose.yaml:4:67: services.web.blkio_config.weight_device[0].weight: must be between 10 and 1000, got 2000",
		`compose.yaml:4:100: services.web.blkio_config.device_read_bps[0].path: device "/dev/../etc/x" must be a block device's path under /dev, such as /dev/sda`,
	}
	if strings.Join(errs, "\n") != strings.Join(want2, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(want2, "\n"))
	}
}

// Links name a service (and an alias); the linked service starts first,
// as compose adds it to depends_on.
func TestComposeLinks(t *testing.T) {
	files := map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    links: [db, 'cache_1:kv']\n  db:\n    image: shop/db:1\n  cache_1:\n    image: shop/cache:1\n"}
	a := loadtest.MustLoadCompose(t, files, load.Options{})
	spec := a.Service("web").Spec
	if want := []string{"cache-1:kv", "db:db"}; !reflect.DeepEqual(spec.Links, want) {
		t.Errorf("links %q, want %q", spec.Links, want)
	}
	if want := []string{"cache-1", "db"}; !reflect.DeepEqual(spec.DependsOn, want) {
		t.Errorf("dependsOn %q, want %q", spec.DependsOn, want)
	}
	if spec.DependsCondition("db") != manifest.DependsStarted {
		t.Errorf("condition %q, want started", spec.DependsCondition("db"))
	}
	errs := loadtest.ComposeErrors(t, loadtest.Web("links: [nope, web]"), load.Options{})
	want := []string{
		`compose.yaml:4:13: services.web.links[0]: service "nope" is not declared (or its profiles are not active)`,
		"compose.yaml:4:19: services.web.links[1]: a service cannot link to itself",
	}
	if strings.Join(errs, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
	}
}

// Swarm-only keys compose does not pass to an engine are accepted with a
// warning that says so.
func TestComposeSwarmOnlyKeysWarn(t *testing.T) {
	a := loadtest.MustLoadCompose(t, loadtest.Web(
		"deploy:",
		"  labels: {team: a}",
		"  placement: {constraints: [node.role==manager]}",
		"  rollback_config: {parallelism: 1}",
		"  restart_policy: {condition: on-failure, delay: 5s, window: 2m}",
		"  endpoint_mode: dnsrr",
	), load.Options{})
	got := a.Warnings.Error()
	for _, want := range []string{
		"compose.yaml:5:7: services.web.deploy.labels: has no effect on one engine (as in compose)",
		"compose.yaml:6:7: services.web.deploy.placement: has no effect on one engine (as in compose)",
		"compose.yaml:7:7: services.web.deploy.rollback_config: has no effect on one engine (as in compose)",
		"compose.yaml:8:54: services.web.deploy.restart_policy.delay: has no effect on one engine (as in compose)",
		"compose.yaml:8:66: services.web.deploy.restart_policy.window: has no effect on one engine (as in compose)",
		"compose.yaml:9:22: services.web.deploy.endpoint_mode: has no effect on one engine (as in compose)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	if r := a.Service("web").Spec.Restart; r != manifest.RestartOnFailure {
		t.Errorf("restart %q", r)
	}
}

// A CPU reservation (Zabbix's compose files give one to every service) is
// Swarm's scheduling: compose passes only the memory reservation to a
// container, so on one engine it is accepted with a warning; on a Swarm
// target, which driftless does not map it for yet, it is refused.
func TestComposeCPUReservation(t *testing.T) {
	files := loadtest.Web(
		"deploy:",
		"  resources:",
		"    limits: {cpus: '0.70', memory: 1G}",
		"    reservations: {cpus: '0.5', memory: 512M}",
	)
	a := loadtest.MustLoadCompose(t, files, load.Options{})
	want := "compose.yaml:7:30: services.web.deploy.resources.reservations.cpus: has no effect on one engine (as in compose)"
	if got := a.Warnings.Error(); !strings.Contains(got, want) {
		t.Errorf("warnings lack %q:\n%s", want, got)
	}
	if r := a.Service("web").Spec.Resources; r.NanoCPUs != 700_000_000 || r.MemoryBytes != 1<<30 || r.MemoryReservationBytes != 512<<20 {
		t.Errorf("resources %+v, want the limits and the memory reservation", r)
	}
	got := loadtest.ComposeErrors(t, files, load.Options{Target: manifest.TargetSwarm})
	if want := "compose.yaml:7:30: services.web.deploy.resources.reservations.cpus: CPU reservations are not supported yet on Swarm: set a limit"; strings.Join(got, "\n") != want {
		t.Errorf("swarm: got %q, want %q", got, want)
	}
}

// A repository file is one shared read-only copy: Z (a private label)
// is applied as z, with a warning; cpus and a CFS quota together are
// refused, as Docker refuses them.
func TestComposeRepoSELinuxAndCPUConflict(t *testing.T) {
	files := loadtest.Web("volumes: ['./conf:/etc/app:Z']")
	files["conf/app.conf"] = "x=1\n"
	a := loadtest.MustLoadCompose(t, files, load.Options{})
	if b := a.Service("web").Spec.Binds; len(b) != 1 || b[0].SELinux != "z" {
		t.Errorf("binds %+v, want the repository copy labelled z", b)
	}
	if want := "compose.yaml:4:15: services.web.volumes[0]: Z on a file of the repository is applied as z"; !strings.HasPrefix(a.Warnings.Error(), want) {
		t.Errorf("warnings %q, want %q...", a.Warnings.Error(), want)
	}
	errs := loadtest.ComposeErrors(t, loadtest.Web("cpus: 0.5", "cpu_quota: 50000"), load.Options{})
	if want := "compose.yaml:5:16: services.web.cpu_quota: cannot be combined with a cpus limit (Docker refuses both): keep one of them"; len(errs) != 1 || errs[0] != want {
		t.Errorf("got %q, want %q", errs, want)
	}
}

// uts, userns_mode, cgroup, runtime and device_cgroup_rules reach the
// model as compose passes them to Docker; what would take the host needs
// the app's policy, and a malformed value is refused where it is written.
func TestComposeNamespaceModesRuntimeAndDeviceRules(t *testing.T) {
	files := loadtest.Web("uts: host", "userns_mode: host", "cgroup: private", "runtime: runc", `device_cgroup_rules: ["c 189:* rmw", "a *:* r"]`)
	a := loadtest.MustLoadCompose(t, files, load.Options{Policy: policy.Policy{Allow: []string{policy.AllowHostUserns, policy.AllowDevices, policy.AllowRuntimes}}})
	s := a.Service("web").Spec
	if s.UTS != "host" || s.UsernsMode != "host" || s.CgroupNS != "private" || s.Runtime != "runc" ||
		!reflect.DeepEqual(s.DeviceCgroupRules, []string{"c 189:* rmw", "a *:* r"}) {
		t.Errorf("spec: uts %q userns %q cgroupns %q runtime %q rules %q", s.UTS, s.UsernsMode, s.CgroupNS, s.Runtime, s.DeviceCgroupRules)
	}

	errs := strings.Join(loadtest.ComposeErrors(t, files, load.Options{}), "\n")
	for _, want := range []string{
		"compose.yaml:5:18: services.web.userns_mode: outside the engine's user namespace remapping",
		"compose.yaml:8:27: services.web.device_cgroup_rules[0]: device rule \"c 189:* rmw\" lets the container use host devices",
		"compose.yaml:7:14: services.web.runtime: runtime \"runc\" replaces the engine's default runtime",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("without the policy's allowances: errors %q lack %q", errs, want)
		}
	}
	if strings.Contains(errs, "services.web.uts") || strings.Contains(errs, "services.web.cgroup:") {
		t.Errorf("uts and cgroup need no allowance: %q", errs)
	}

	for _, tc := range []struct{ line, want string }{
		{"uts: private", `compose.yaml:4:10: services.web.uts: must be host (or absent for the container's own), got "private"`},
		{"cgroup: shared", `compose.yaml:4:13: services.web.cgroup: value must be one of 'host', 'private'`},
		{"uts: host\n    hostname: web1", `compose.yaml:4:10: services.web.uts: cannot be combined with hostname`},
		{"runtime: 'run c'", `compose.yaml:4:14: services.web.runtime: invalid runtime name "run c"`},
		{`device_cgroup_rules: ["c 189 rmw"]`, `compose.yaml:4:27: services.web.device_cgroup_rules[0]: invalid device cgroup rule "c 189 rmw"`},
	} {
		got := strings.Join(loadtest.ComposeErrors(t, loadtest.Web(tc.line), load.Options{Policy: policy.Policy{Allow: []string{policy.AllowDevices}}}), "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.line, got, tc.want)
		}
	}
}
