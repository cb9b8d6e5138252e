package dockerspec

import (
	"strings"

	"github.com/moby/moby/api/types/blkiodev"
	"github.com/moby/moby/api/types/container"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/driftless-dev/driftless/manifest"
)

// tuning sets the scheduler and OOM settings compose passes as they are
// written (cpu_shares, cpuset, cpu_period, cpu_quota, memswap_limit,
// mem_swappiness, oom_score_adj, oom_kill_disable); unset ones stay
// Docker's defaults.
func tuning(spec *manifest.ServiceSpec, host *container.HostConfig) {
	r := spec.Resources
	host.CPUShares = r.CPUShares
	host.CpusetCpus = r.CPUSet
	host.CPUPeriod = r.CPUPeriod
	host.CPUQuota = r.CPUQuota
	host.MemorySwap = r.MemorySwapBytes
	if r.MemorySwappiness != 0 {
		s := r.MemorySwappiness
		host.MemorySwappiness = &s
	}
	if r.OOMKillDisable {
		t := true
		host.OomKillDisable = &t
	}
	host.OomScoreAdj = r.OOMScoreAdj
	if b := r.Blkio; b != nil {
		host.BlkioWeight = b.Weight
		for _, d := range b.WeightDevice {
			host.BlkioWeightDevice = append(host.BlkioWeightDevice, &blkiodev.WeightDevice{Path: d.Path, Weight: d.Weight})
		}
		host.BlkioDeviceReadBps = throttles(b.DeviceReadBps)
		host.BlkioDeviceWriteBps = throttles(b.DeviceWriteBps)
		host.BlkioDeviceReadIOps = throttles(b.DeviceReadIOps)
		host.BlkioDeviceWriteIOps = throttles(b.DeviceWriteIOps)
	}
}

// throttles are per-device rate limits as HostConfig takes them.
func throttles(in []manifest.ThrottleDevice) []*blkiodev.ThrottleDevice {
	var out []*blkiodev.ThrottleDevice
	for _, d := range in {
		out = append(out, &blkiodev.ThrottleDevice{Path: d.Path, Rate: d.Rate})
	}
	return out
}

// Links are the legacy links of a replica, "CONTAINER:ALIAS" for every
// replica of each linked service, as compose names them; Docker resolves
// ALIAS for this container only.
func Links(app *manifest.App, svc *manifest.Service) []string {
	var out []string
	for _, l := range svc.Spec.Links {
		target, alias, _ := strings.Cut(l, ":")
		if alias == "" {
			alias = target
		}
		replicas := 1
		if t := app.Service(target); t != nil {
			replicas = t.Spec.Replicas
		}
		for slot := 1; slot <= replicas; slot++ {
			out = append(out, manifest.ContainerName(app.Name, target, slot)+":"+alias)
		}
	}
	return out
}

// Platform is the create call's platform: nil for the engine's own.
func Platform(spec *manifest.ServiceSpec) *ocispec.Platform {
	if spec.Platform == "" {
		return nil
	}
	os, arch, variant, err := manifest.ParsePlatform(spec.Platform)
	if err != nil {
		return nil // refused by the front ends
	}
	return &ocispec.Platform{OS: os, Architecture: arch, Variant: variant}
}

// volumeBind is a volume with an SELinux label in the legacy Binds form
// ("name:/target:rw,Z", ",nocopy" added), as compose sends it: the Mounts API cannot
// relabel on API 1.41.
func volumeBind(name string, v manifest.VolumeMount) string {
	access := "rw"
	if v.ReadOnly {
		access = "ro"
	}
	mode := access + "," + v.SELinux
	if v.NoCopy {
		mode += ",nocopy"
	}
	return name + ":" + v.MountPath + ":" + mode
}
