package native_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

const tunedService = loadtest.Svc + `  image: x
  platform: linux/arm64
  links: [db, "db:database"]
  dependsOn: [db]
  volumes: [{name: data, mountPath: /data, selinux: Z, noCopy: true}]
  anonymousVolumes: [{mountPath: /scratch, noCopy: true}]
  tmpfs: [{mountPath: /config, size: 16Mi, options: [exec, uid=1000]}]
  resources: {memory: 128Mi, memorySwap: -1, cpuShares: 512, cpuset: "0-1", cpuPeriod: 100000, cpuQuota: 50000,
    memorySwappiness: 10, oomScoreAdj: -100, oomKillDisable: true,
    blkio: {weight: 300, weightDevice: [{path: /dev/sda, weight: 400}], deviceReadBps: [{path: /dev/sda, rate: 10Mi}],
      deviceWriteIOps: [{path: /dev/sdb, rate: 50}]}}
---
apiVersion: driftless.dev/v1
kind: Service
metadata: {name: db}
spec: {image: db}
---
apiVersion: driftless.dev/v1
kind: Volume
metadata: {name: data}
`

// The native spellings of the round-two fields.
func TestLoadTuningFields(t *testing.T) {
	app, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": tunedService})
	if err != nil {
		t.Fatal(err)
	}
	got := app.Service("web").Spec
	if got.Platform != "linux/arm64" || !reflect.DeepEqual(got.Links, []string{"db", "db:database"}) {
		t.Errorf("platform %q, links %q", got.Platform, got.Links)
	}
	if want := []manifest.VolumeMount{{Name: "data", MountPath: "/data", SELinux: "Z", NoCopy: true}}; !reflect.DeepEqual(got.Volumes, want) {
		t.Errorf("volumes %+v", got.Volumes)
	}
	if want := []manifest.AnonymousVolume{{MountPath: "/scratch", NoCopy: true}}; !reflect.DeepEqual(got.AnonymousVolumes, want) {
		t.Errorf("anonymous volumes %+v", got.AnonymousVolumes)
	}
	if want := []manifest.TmpfsMount{{MountPath: "/config", SizeBytes: 16 << 20, Options: []string{"exec", "uid=1000"}}}; !reflect.DeepEqual(got.Tmpfs, want) {
		t.Errorf("tmpfs %+v", got.Tmpfs)
	}
	want := manifest.Resources{MemoryBytes: 128 << 20, MemorySwapBytes: -1, CPUShares: 512, CPUSet: "0-1", CPUPeriod: 100000, CPUQuota: 50000,
		MemorySwappiness: 10, OOMScoreAdj: -100, OOMKillDisable: true, Blkio: &manifest.Blkio{
			Weight:          300,
			WeightDevice:    []manifest.WeightDevice{{Path: "/dev/sda", Weight: 400}},
			DeviceReadBps:   []manifest.ThrottleDevice{{Path: "/dev/sda", Rate: 10 << 20}},
			DeviceWriteIOps: []manifest.ThrottleDevice{{Path: "/dev/sdb", Rate: 50}},
		}}
	if !reflect.DeepEqual(got.Resources, want) {
		t.Errorf("resources\n got %+v\nwant %+v", got.Resources, want)
	}

	bad := strings.NewReplacer(
		"platform: linux/arm64", "platform: arm64",
		"links: [db, \"db:database\"]", "links: [cache]",
		"selinux: Z", "selinux: shared",
		"uid=1000", "uid=me",
		"memorySwap: -1", "memorySwap: 64Mi",
		"oomScoreAdj: -100", "oomScoreAdj: -2000",
		"weight: 300", "weight: 5",
		"path: /dev/sdb", "path: /etc/passwd",
		"rate: 10Mi", "rate: lots",
	).Replace(tunedService)
	_, err = loadtest.LoadFiles(t, map[string]string{"a.yaml": bad})
	lines := strings.Join(loadtest.ErrorLines(t, err), "\n")
	for _, want := range []string{
		`spec.platform: invalid platform "arm64"`,
		`spec.links[0]: service "cache" must be listed in dependsOn too`,
		`spec.volumes[0].selinux: must be z (shared label) or Z (private label), got "shared"`,
		`spec.tmpfs[0].options[1]: uid must be a numeric id, got "me"`,
		"spec.resources.memorySwap: must be at least the memory limit (128Mi)",
		"spec.resources.oomScoreAdj: must be >= -1000",
		"spec.resources.blkio.weight: must be between 10 and 1000, got 5",
		`spec.resources.blkio.deviceWriteIOps[0].path: device "/etc/passwd" must be a block device's path under /dev`,
		"spec.resources.blkio.deviceReadBps[0].rate: ",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("errors lack %q:\n%s", want, lines)
		}
	}
}

// minReadySeconds: how long a replica must run without restarting to count
// as ready; 0 is kept (ready once running), unset is left to the engine.
func TestLoadMinReadySeconds(t *testing.T) {
	for _, tt := range []struct {
		line string
		want string
	}{{"  minReadySeconds: 0\n", "0s"}, {"  minReadySeconds: 30\n", "30s"}, {"", "unset"}} {
		app, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc + "  image: x\n" + tt.line})
		if err != nil {
			t.Fatal(err)
		}
		got := "unset"
		if d := app.Service("web").Spec.MinReady; d != nil {
			got = d.String()
		}
		if got != tt.want {
			t.Errorf("%q: minReady %s, want %s", tt.line, got, tt.want)
		}
	}
	_, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  minReadySeconds: -1\n"})
	if lines := strings.Join(loadtest.ErrorLines(t, err), "\n"); !strings.Contains(lines, "spec.minReadySeconds: must be >= 0") {
		t.Errorf("errors: %s", lines)
	}
}

// uts, usernsMode, cgroupns, runtime and deviceCgroupRules in a native
// manifest: checked values, and the policy's allowances where they would
// take the host.
func TestLoadNamespaceModesRuntimeAndDeviceRules(t *testing.T) {
	app, err := loadtest.LoadSecretApp(t, map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  uts: host\n  cgroupns: host\n  runtime: runc\n"},
		load.Options{Policy: policy.Policy{Allow: []string{policy.AllowRuntimes}}})
	if err != nil {
		t.Fatal(err)
	}
	if s := app.Service("web").Spec; s.UTS != "host" || s.CgroupNS != "host" || s.Runtime != "runc" {
		t.Errorf("uts %q, cgroupns %q, runtime %q", s.UTS, s.CgroupNS, s.Runtime)
	}
	_, err = loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  uts: private\n  runtime: \"a/b\"\n  deviceCgroupRules: [\"x 1:2 r\"]\n"})
	lines := strings.Join(loadtest.ErrorLines(t, err), "\n")
	_, err = loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  uts: host\n  hostname: web1\n"})
	lines += "\n" + strings.Join(loadtest.ErrorLines(t, err), "\n")
	for _, want := range []string{
		`spec.uts: must be host (or absent for the container's own), got "private"`,
		`spec.runtime: invalid runtime name "a/b"`,
		`spec.deviceCgroupRules[0]: invalid device cgroup rule "x 1:2 r"`,
		"spec.uts: cannot be combined with hostname",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("errors lack %q:\n%s", want, lines)
		}
	}
	_, err = loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  usernsMode: host\n  deviceCgroupRules: [\"c 189:* rmw\"]\n  runtime: runsc\n"})
	lines = strings.Join(loadtest.ErrorLines(t, err), "\n")
	for _, want := range []string{"spec.usernsMode: outside the engine's user namespace remapping", "allow: [host-userns]", `spec.deviceCgroupRules[0]: device rule "c 189:* rmw" lets the container use host devices`,
		`spec.runtime: runtime "runsc" replaces the engine's default runtime`, "allow: [runtimes]"} {
		if !strings.Contains(lines, want) {
			t.Errorf("without allowances, errors lack %q:\n%s", want, lines)
		}
	}
}
