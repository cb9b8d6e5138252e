package compose

import (
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// mapTuning maps the attributes compose passes to Docker as they are
// written: the scheduler and OOM settings, platform and links.
func (sm *serviceMap) mapTuning() {
	s := sm.s
	r := &sm.spec.Resources
	r.CPUShares = s.CPUShares
	r.CPUSet = s.CPUSet
	r.CPUPeriod = s.CPUPeriod
	r.CPUQuota = s.CPUQuota
	r.MemorySwapBytes = int64(s.MemSwapLimit)
	r.MemorySwappiness = int64(s.MemSwappiness)
	r.OOMScoreAdj = int(s.OomScoreAdj)
	r.OOMKillDisable = s.OomKillDisable
	checks := []struct {
		attr   string
		v      int64
		lo, hi int64
	}{
		{"cpu_shares", s.CPUShares, 0, 262144},
		{"cpu_period", s.CPUPeriod, 0, 1000000},
		{"cpu_quota", s.CPUQuota, 0, 1<<31 - 1},
		{"mem_swappiness", int64(s.MemSwappiness), 0, 100},
		{"oom_score_adj", s.OomScoreAdj, -1000, 1000},
	}
	for _, c := range checks {
		if c.v < c.lo || c.v > c.hi {
			sm.refuse(c.attr, "must be between %d and %d, got %d", c.lo, c.hi, c.v)
		}
	}
	if s.CPUSet != "" && !manifest.ValidCPUSet(s.CPUSet) {
		sm.refuse("cpuset", "invalid CPU list %q: write CPU numbers and ranges such as 0-3 or 0,2", s.CPUSet)
	}
	if r.NanoCPUs != 0 && (r.CPUPeriod != 0 || r.CPUQuota != 0) {
		sm.refuse(sm.declaredOf("cpu_quota", "cpu_period"), "cannot be combined with a cpus limit (Docker refuses both): keep one of them")
	}
	if msg := manifest.CheckMemorySwap(r.MemoryBytes, r.MemorySwapBytes); msg != "" {
		sm.refuse("memswap_limit", "%s", msg)
	}
	if s.Platform != "" {
		if _, _, _, err := manifest.ParsePlatform(s.Platform); err != nil {
			sm.refuse("platform", "%v", err)
		}
		sm.spec.Platform = s.Platform
	}
	sm.mapBlkio()
	sm.mapLinks()
	sm.mapRuntime()
}

// mapBlkio maps blkio_config as compose passes it to Docker: the weight,
// and each device's weight and rate limits, in the order written.
func (sm *serviceMap) mapBlkio() {
	b := sm.s.BlkioConfig
	if b == nil {
		return
	}
	const attr = "blkio_config"
	out := &manifest.Blkio{Weight: b.Weight}
	if msg := manifest.CheckBlkioWeight(int64(b.Weight)); msg != "" {
		sm.refuse(attr+".weight", "%s", msg)
	}
	for i, d := range b.WeightDevice {
		at := yamlpos.IndexPath(attr+".weight_device", i)
		sm.checkBlkioDevice(at, d.Path)
		if msg := manifest.CheckBlkioWeight(int64(d.Weight)); msg != "" {
			sm.refuse(at+".weight", "%s", msg)
		}
		out.WeightDevice = append(out.WeightDevice, manifest.WeightDevice{Path: d.Path, Weight: d.Weight})
	}
	limits := []struct {
		name string
		in   []types.ThrottleDevice
		out  *[]manifest.ThrottleDevice
	}{
		{"device_read_bps", b.DeviceReadBps, &out.DeviceReadBps},
		{"device_write_bps", b.DeviceWriteBps, &out.DeviceWriteBps},
		{"device_read_iops", b.DeviceReadIOps, &out.DeviceReadIOps},
		{"device_write_iops", b.DeviceWriteIOps, &out.DeviceWriteIOps},
	}
	for _, l := range limits {
		for i, d := range l.in {
			at := yamlpos.IndexPath(attr+"."+l.name, i)
			sm.checkBlkioDevice(at, d.Path)
			if d.Rate < 0 {
				sm.refuse(at+".rate", "must not be negative, got %d", d.Rate)
			}
			*l.out = append(*l.out, manifest.ThrottleDevice{Path: d.Path, Rate: uint64(max(d.Rate, 0))})
		}
	}
	if !out.Empty() {
		sm.spec.Resources.Blkio = out
	}
}

func (sm *serviceMap) checkBlkioDevice(at, p string) {
	if msg := manifest.CheckBlkioDevice(p); msg != "" {
		sm.refuse(at+".path", "%s", msg)
	}
}

// mapRuntime maps the namespace modes, the runtime and the device cgroup
// rules, which compose passes to Docker as written.
func (sm *serviceMap) mapRuntime() {
	s := sm.s
	sm.spec.UTS, sm.spec.UsernsMode, sm.spec.CgroupNS = s.Uts, s.UserNSMode, s.Cgroup
	if s.Uts == "host" && s.Hostname != "" {
		sm.refuse("uts", "cannot be combined with hostname (Docker refuses both): the host's hostname is used")
	}
	for _, m := range []struct {
		model, attr, value string
		modes              manifest.NamespaceModes
	}{{"uts", "uts", s.Uts, manifest.UTSModes}, {"usernsMode", "userns_mode", s.UserNSMode, manifest.UsernsModes}, {"cgroupns", "cgroup", s.Cgroup, manifest.CgroupModes}} {
		if err := m.modes.Check(m.value); err != nil {
			sm.refuse(m.attr, "%v", err)
		}
		if m.value != "" {
			sm.record(m.model, m.attr) // located for the policy's and the back end's refusals
		}
	}
	if s.Runtime != "" {
		sm.record("runtime", "runtime")
		if !manifest.ValidRuntimeName(s.Runtime) {
			sm.refuse("runtime", "invalid runtime name %q: the name the engine's configuration gives a runtime, such as runc", s.Runtime)
		}
		sm.spec.Runtime = s.Runtime
	}
	for i, rule := range s.DeviceCgroupRules {
		attr := yamlpos.IndexPath("device_cgroup_rules", i)
		if err := manifest.CheckDeviceCgroupRule(rule); err != nil {
			sm.refuse(attr, "%v", err)
		}
		sm.spec.DeviceCgroupRules = append(sm.spec.DeviceCgroupRules, rule)
		sm.record(yamlpos.IndexPath("deviceCgroupRules", i), attr)
	}
}

// mapLinks maps links ("SERVICE" or "SERVICE:ALIAS"): the alias resolves
// to the service's replicas for this service only, and, as in compose,
// the linked service starts first.
func (sm *serviceMap) mapLinks() {
	for i, l := range sm.s.Links {
		attr := yamlpos.IndexPath("links", i)
		cname, alias, _ := strings.Cut(l, ":")
		if alias == "" {
			alias = cname
		}
		target, active := sm.m.svcNames[cname]
		_, exists := sm.m.p.Services[cname]
		switch {
		case sm.spec.NetworkMode != "":
			sm.refuse(attr, "links need the app's networks, not network_mode %s (Docker refuses them)", sm.spec.NetworkMode)
			return
		case cname == sm.cname:
			sm.refuse(attr, "a service cannot link to itself")
			continue
		case !exists:
			sm.refuse(attr, "service %q is not declared (or its profiles are not active)", cname)
			continue
		case !active:
			continue // its name was refused
		case !manifest.ValidDockerName(alias):
			sm.refuse(attr, "invalid alias %q", alias)
			continue
		}
		sm.spec.Links = append(sm.spec.Links, target+":"+alias)
		if !slices.Contains(sm.spec.DependsOn, target) {
			sm.spec.DependsOn = append(sm.spec.DependsOn, target)
			if sm.spec.DependsOnCondition == nil {
				sm.spec.DependsOnCondition = map[string]string{}
			}
			sm.spec.DependsOnCondition[target] = manifest.DependsStarted
			sm.depFrom[target] = sm.path(attr)
		}
	}
}
