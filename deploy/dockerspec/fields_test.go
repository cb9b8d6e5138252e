package dockerspec

import (
	"reflect"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The round-two settings reach Docker in the form compose uses: labelled
// volumes and tmpfs options through the legacy forms API 1.41 has for
// them, links on every network's endpoint, the rest as written.
func TestReplicaConfigRoundTwoFields(t *testing.T) {
	web := manifest.Service{Name: "web", Spec: manifest.ServiceSpec{
		Image: "shop/web:1", Replicas: 1, Networks: []string{"back", "default"},
		Volumes: []manifest.VolumeMount{
			{Name: "data", MountPath: "/data", SELinux: "Z"},
			{Name: "logs", MountPath: "/logs", ReadOnly: true, SELinux: "z"},
			{Name: "plain", MountPath: "/plain"},
		},
		Tmpfs: []manifest.TmpfsMount{
			{MountPath: "/config", SizeBytes: 16 << 20, Mode: 0o750, Options: []string{"exec", "uid=1000"}},
			{MountPath: "/tmp", SizeBytes: 1 << 20},
		},
		Links:    []string{"db:database"},
		Platform: "linux/arm/v7",
		Resources: manifest.Resources{MemoryBytes: 64 << 20, CPUShares: 512, CPUSet: "0", CPUPeriod: 100000, CPUQuota: 50000,
			MemorySwapBytes: 128 << 20, MemorySwappiness: 10, OOMScoreAdj: -200, OOMKillDisable: true,
			Blkio: &manifest.Blkio{Weight: 300, WeightDevice: []manifest.WeightDevice{{Path: "/dev/sda", Weight: 400}},
				DeviceReadBps: []manifest.ThrottleDevice{{Path: "/dev/sda", Rate: 1 << 20}}, DeviceWriteIOps: []manifest.ThrottleDevice{{Path: "/dev/sdb", Rate: 50}}}},
	}}
	db := manifest.Service{Name: "db", Spec: manifest.ServiceSpec{Image: "shop/db:1", Replicas: 2}}
	app := &manifest.App{Name: "shop", Services: []manifest.Service{db, web}}
	rc, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[1], Slot: 1, Revision: "r"})
	if err != nil {
		t.Fatal(err)
	}
	host := rc.Create.HostConfig
	if want := []string{"shop-data:/data:rw,Z", "shop-logs:/logs:ro,z"}; !reflect.DeepEqual(host.Binds, want) {
		t.Errorf("binds %q, want %q", host.Binds, want)
	}
	if len(host.Mounts) != 2 || host.Mounts[0].Source != "shop-plain" || host.Mounts[1].Type != mount.TypeTmpfs || host.Mounts[1].Target != "/tmp" {
		t.Errorf("mounts %+v, want the unlabelled volume and the plain tmpfs", host.Mounts)
	}
	if want := map[string]string{"/config": "exec,uid=1000,size=16777216,mode=750"}; !reflect.DeepEqual(host.Tmpfs, want) {
		t.Errorf("tmpfs %q, want %q", host.Tmpfs, want)
	}
	links := []string{"shop-db-1:database", "shop-db-2:database"}
	if host.Links != nil {
		t.Errorf("host config links %q, want them on the endpoints only", host.Links)
	}
	if ep := rc.Create.NetworkingConfig.EndpointsConfig["shop-back"]; ep == nil || !reflect.DeepEqual(ep.Links, links) {
		t.Errorf("first network's links: %+v", ep)
	}
	if len(rc.ExtraNetworks) != 1 || !reflect.DeepEqual(rc.ExtraNetworks[0].Links, links) {
		t.Errorf("extra networks %+v, want the links there too", rc.ExtraNetworks)
	}
	if p := rc.Create.Platform; p == nil || !reflect.DeepEqual(*p, ocispec.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}) {
		t.Errorf("platform %+v", p)
	}
	checkTuning(t, host)
	checkBlkio(t, host)
}

func checkBlkio(t *testing.T, host *container.HostConfig) {
	t.Helper()
	if host.BlkioWeight != 300 || len(host.BlkioWeightDevice) != 1 || host.BlkioWeightDevice[0].String() != "/dev/sda:400" ||
		len(host.BlkioDeviceReadBps) != 1 || host.BlkioDeviceReadBps[0].String() != "/dev/sda:1048576" ||
		len(host.BlkioDeviceWriteIOps) != 1 || host.BlkioDeviceWriteIOps[0].String() != "/dev/sdb:50" ||
		host.BlkioDeviceWriteBps != nil || host.BlkioDeviceReadIOps != nil {
		t.Errorf("blkio: weight %d, weight devices %v, read bps %v, write iops %v, write bps %v, read iops %v", host.BlkioWeight,
			host.BlkioWeightDevice, host.BlkioDeviceReadBps, host.BlkioDeviceWriteIOps, host.BlkioDeviceWriteBps, host.BlkioDeviceReadIOps)
	}
}

func checkTuning(t *testing.T, host *container.HostConfig) {
	t.Helper()
	type tuning struct {
		Shares, Period, Quota, Swap, Swappiness int64
		CPUSet                                  string
		OOMKillDisable                          bool
		OOMScoreAdj                             int
	}
	r := host.Resources
	got := tuning{Shares: r.CPUShares, Period: r.CPUPeriod, Quota: r.CPUQuota, Swap: r.MemorySwap, CPUSet: r.CpusetCpus, OOMScoreAdj: host.OomScoreAdj}
	if r.MemorySwappiness != nil {
		got.Swappiness = *r.MemorySwappiness
	}
	if r.OomKillDisable != nil {
		got.OOMKillDisable = *r.OomKillDisable
	}
	want := tuning{Shares: 512, Period: 100000, Quota: 50000, Swap: 128 << 20, Swappiness: 10, CPUSet: "0", OOMKillDisable: true, OOMScoreAdj: -200}
	if got != want {
		t.Errorf("tuning\n got %+v\nwant %+v", got, want)
	}
}

// Unset, the round-two settings stay Docker's defaults.
func TestReplicaConfigRoundTwoDefaults(t *testing.T) {
	app := &manifest.App{Name: "shop", Services: []manifest.Service{{Name: "db", Spec: manifest.ServiceSpec{Image: "shop/db:1", Replicas: 1,
		Volumes: []manifest.VolumeMount{{Name: "data", MountPath: "/data"}}, Tmpfs: []manifest.TmpfsMount{{MountPath: "/tmp"}}}}}}
	rc, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: 1, Revision: "r"})
	if err != nil {
		t.Fatal(err)
	}
	h := rc.Create.HostConfig
	if rc.Create.Platform != nil || h.Tmpfs != nil || h.Binds != nil || h.MemorySwappiness != nil || h.OomKillDisable != nil || h.CPUShares != 0 || len(h.Mounts) != 2 {
		t.Errorf("defaults changed: platform %v, host %+v", rc.Create.Platform, h)
	}
	if ep := rc.Create.NetworkingConfig.EndpointsConfig["shop-default"]; ep == nil || ep.Links != nil {
		t.Errorf("endpoint %+v, want no links", ep)
	}
}

// nocopy goes to Docker as compose sends it: in the volume options of a
// mount, as ",nocopy" in the legacy form of a labelled volume, and in the
// options of a slot's anonymous volume.
func TestReplicaConfigVolumeNoCopy(t *testing.T) {
	web := manifest.Service{Name: "web", Spec: manifest.ServiceSpec{
		Image: "shop/web:1", Replicas: 1,
		Volumes: []manifest.VolumeMount{
			{Name: "data", MountPath: "/data", NoCopy: true},
			{Name: "logs", MountPath: "/logs", ReadOnly: true, SELinux: "Z", NoCopy: true},
			{Name: "plain", MountPath: "/plain"},
		},
		AnonymousVolumes: []manifest.AnonymousVolume{{MountPath: "/scratch", NoCopy: true}, {MountPath: "/seeded"}},
	}}
	app := &manifest.App{Name: "shop", Services: []manifest.Service{web}}
	rc, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: 1, Revision: "r"})
	if err != nil {
		t.Fatal(err)
	}
	host := rc.Create.HostConfig
	if want := []string{"shop-logs:/logs:ro,Z,nocopy"}; !reflect.DeepEqual(host.Binds, want) {
		t.Errorf("binds %q, want %q", host.Binds, want)
	}
	noCopy := map[string]bool{}
	for _, m := range host.Mounts {
		noCopy[m.Target] = m.VolumeOptions != nil && m.VolumeOptions.NoCopy
	}
	if want := map[string]bool{"/data": true, "/plain": false, "/scratch": true, "/seeded": false}; !reflect.DeepEqual(noCopy, want) {
		t.Errorf("nocopy by mount target %v, want %v", noCopy, want)
	}
}
