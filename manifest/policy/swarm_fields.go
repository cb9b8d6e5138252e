package policy

import (
	"slices"

	"github.com/driftless-dev/driftless/manifest"
)

// checkSwarmTuning refuses, on a Swarm target, the container settings a
// Swarm service spec cannot carry (links, SELinux labels on volumes,
// tmpfs options beyond size and mode, the scheduler, OOM and block IO
// settings),
// rather than drop them.
func checkSwarmTuning(s *manifest.ServiceSpec, refuse denyFunc) {
	r := s.Resources
	switch {
	case len(s.Links) > 0:
		refuse("links", "links are not supported for Swarm services: services on an overlay network reach each other by name")
	case slices.ContainsFunc(s.Volumes, func(v manifest.VolumeMount) bool { return v.SELinux != "" }):
		refuse("volumes", "SELinux labels (z, Z) on volumes are not supported for Swarm services")
	case slices.ContainsFunc(s.Tmpfs, func(t manifest.TmpfsMount) bool {
		// rw is what a tmpfs is anyway: dropping it changes nothing.
		return slices.ContainsFunc(t.Options, func(o string) bool { return o != "rw" })
	}):
		refuse("tmpfs", "Swarm services take tmpfs size and mode only")
	case r.CPUShares != 0 || r.CPUSet != "" || r.CPUPeriod != 0 || r.CPUQuota != 0:
		refuse("resources", "cpu_shares, cpuset, cpu_period and cpu_quota are not supported for Swarm services: use deploy.resources.limits.cpus")
	case r.MemorySwapBytes != 0 || r.MemorySwappiness != 0 || r.OOMScoreAdj != 0 || r.OOMKillDisable:
		refuse("resources", "memswap_limit, mem_swappiness, oom_score_adj and oom_kill_disable are not supported for Swarm services")
	case !r.Blkio.Empty():
		refuse("resources", "blkio_config (block IO weight and limits) is not supported for Swarm services")
	case s.Platform != "":
		refuse("platform", "platform is not supported for Swarm services: constrain the nodes with deploy.placement (node.platform.arch)")
	}
}
