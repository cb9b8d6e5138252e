package native

import (
	"slices"
	"strings"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// normalizeTuning maps the scheduler and OOM settings of resources.
func normalizeTuning(res *rawResources, out *manifest.Resources) {
	out.CPUShares = int64(orDefault(res.CPUShares, 0))
	out.CPUSet = res.CPUSet
	out.CPUPeriod = int64(orDefault(res.CPUPeriod, 0))
	out.CPUQuota = int64(orDefault(res.CPUQuota, 0))
	if res.MemorySwap != nil {
		out.MemorySwapBytes, _ = parseSwap(string(*res.MemorySwap))
	}
	out.MemorySwappiness = int64(orDefault(res.MemorySwappiness, 0))
	out.OOMScoreAdj = orDefault(res.OOMScoreAdj, 0)
	out.OOMKillDisable = res.OOMKillDisable
	out.Blkio = normalizeBlkio(res.Blkio)
}

// parseSwap reads memorySwap: a memory quantity, or -1 for unlimited swap.
func parseSwap(s string) (int64, error) {
	if strings.TrimSpace(s) == "-1" {
		return -1, nil
	}
	return manifest.ParseMemory(s)
}

// validateTuning checks the scheduler and OOM settings against the
// ranges Docker and the kernel take.
func validateTuning(r yamlpos.Reporter, res *rawResources) {
	r.IntRange("spec.resources.cpuShares", res.CPUShares, 0, 262144)
	r.IntRange("spec.resources.cpuPeriod", res.CPUPeriod, 0, 1000000)
	r.IntRange("spec.resources.cpuQuota", res.CPUQuota, 0, 1<<31-1)
	r.IntRange("spec.resources.memorySwappiness", res.MemorySwappiness, 0, 100)
	r.IntRange("spec.resources.oomScoreAdj", res.OOMScoreAdj, -1000, 1000)
	validateBlkio(r, res.Blkio)
	if res.CPUSet != "" && !manifest.ValidCPUSet(res.CPUSet) {
		r.Errorf("spec.resources.cpuset", "invalid CPU list %q: write CPU numbers and ranges such as 0-3 or 0,2", res.CPUSet)
	}
	if res.CPUs != nil && (orDefault(res.CPUPeriod, 0) != 0 || orDefault(res.CPUQuota, 0) != 0) {
		r.Errorf("spec.resources.cpuQuota", "cannot be combined with resources.cpus (Docker refuses both): keep one of them")
	}
	if res.MemorySwap == nil {
		return
	}
	swap, err := parseSwap(string(*res.MemorySwap))
	if err != nil {
		r.Errorf("spec.resources.memorySwap", "%v (or -1 for unlimited swap)", err)
		return
	}
	var mem int64
	if res.Memory != nil {
		mem, _ = manifest.ParseMemory(string(*res.Memory))
	}
	if msg := manifest.CheckMemorySwap(mem, swap); msg != "" {
		r.Errorf("spec.resources.memorySwap", "%s", msg)
	}
}

// validatePlatformLinks checks platform and links; each link's service
// must be a dependency, so that its replicas exist when this service's
// are created (Docker resolves a link's container at create).
func validatePlatformLinks(r yamlpos.Reporter, raw *rawServiceSpec) {
	if raw.Platform != "" {
		if _, _, _, err := manifest.ParsePlatform(raw.Platform); err != nil {
			r.Errorf("spec.platform", "%v", err)
		}
	}
	for i, l := range raw.Links {
		field := yamlpos.IndexPath("spec.links", i)
		target, alias, _ := strings.Cut(l, ":")
		switch {
		case !manifest.ValidObjectName(target) || (alias != "" && !manifest.ValidDockerName(alias)):
			r.Errorf(field, "invalid link %q: write SERVICE or SERVICE:ALIAS", l)
		case !slices.Contains(raw.DependsOn, target):
			r.Errorf(field, "service %q must be listed in dependsOn too: a link needs its target's replicas to exist first", target)
		}
	}
	for i, v := range raw.Volumes {
		if v.SELinux != "" && v.SELinux != "z" && v.SELinux != "Z" {
			r.Errorf(yamlpos.IndexPath("spec.volumes", i)+".selinux", "must be z (shared label) or Z (private label), got %q", v.SELinux)
		}
	}
}
