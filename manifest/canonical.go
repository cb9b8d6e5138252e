package manifest

import (
	"cmp"
	"slices"
)

// CanonicalService returns a deep copy of spec with set-like lists sorted
// and empty collections nil, so equal specs marshal identically.
func CanonicalService(spec ServiceSpec) ServiceSpec {
	out := cloneService(spec)
	out.SecretEnv = sortedSet(out.SecretEnv)
	out.Networks = sortedSet(out.Networks)
	out.DependsOn = sortedSet(out.DependsOn)
	out.DependsOnRestart = sortedSet(out.DependsOnRestart)
	slices.SortFunc(out.Ports, func(a, b Port) int {
		return cmp.Or(cmp.Compare(a.ContainerPort, b.ContainerPort), cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.HostPort, b.HostPort), cmp.Compare(a.HostIP, b.HostIP), compareBool(a.AnyHostPort, b.AnyHostPort))
	})
	slices.SortFunc(out.Volumes, func(a, b VolumeMount) int {
		return cmp.Or(cmp.Compare(a.MountPath, b.MountPath), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(out.Binds, func(a, b BindMount) int {
		return cmp.Or(cmp.Compare(a.MountPath, b.MountPath), cmp.Compare(a.HostPath, b.HostPath), cmp.Compare(a.RepoPath, b.RepoPath))
	})
	slices.SortFunc(out.Tmpfs, func(a, b TmpfsMount) int { return cmp.Compare(a.MountPath, b.MountPath) })
	slices.SortFunc(out.AnonymousVolumes, func(a, b AnonymousVolume) int { return cmp.Compare(a.MountPath, b.MountPath) })
	slices.SortFunc(out.Devices, func(a, b Device) int {
		return cmp.Or(cmp.Compare(a.ContainerPath, b.ContainerPath), cmp.Compare(a.HostPath, b.HostPath))
	})
	slices.SortFunc(out.DeviceRequests, compareDeviceRequests)
	slices.SortFunc(out.Ulimits, func(a, b Ulimit) int { return cmp.Compare(a.Name, b.Name) })
	out.Links = sortedSet(out.Links)
	out.CapAdd = sortedSet(out.CapAdd)
	out.CapDrop = sortedSet(out.CapDrop)
	out.ExtraHosts = sortedSet(out.ExtraHosts)
	out.GroupAdd = sortedSet(out.GroupAdd)
	for n, a := range out.Aliases {
		out.Aliases[n] = sortedSet(a)
	}
	// DNS servers, search domains, options and security options keep their
	// order: it means something to the resolver and the kernel.
	return out
}

// cloneService deep-copies spec, keeping list order; empty collections
// become nil.
func cloneService(spec ServiceSpec) ServiceSpec {
	out := spec
	out.Command = nonEmpty(spec.Command)
	out.Args = nonEmpty(spec.Args)
	out.Env = copyMap(spec.Env)
	out.SecretEnv = nonEmpty(spec.SecretEnv)
	out.Secrets = nonEmpty(spec.Secrets)
	out.EnvFrom = nonEmpty(spec.EnvFrom)
	out.Ports = nonEmpty(spec.Ports)
	out.Networks = nonEmpty(spec.Networks)
	out.Volumes = nonEmpty(spec.Volumes)
	out.DependsOn = nonEmpty(spec.DependsOn)
	out.DependsOnCondition = copyMap(spec.DependsOnCondition)
	out.DependsOnRestart = nonEmpty(spec.DependsOnRestart)
	if spec.Healthcheck != nil {
		h := *spec.Healthcheck
		h.Test = slices.Clone(h.Test)
		out.Healthcheck = &h
	}
	if len(spec.Aliases) > 0 {
		out.Aliases = make(map[string][]string, len(spec.Aliases))
		for n, a := range spec.Aliases {
			out.Aliases[n] = slices.Clone(a)
		}
	} else {
		out.Aliases = nil
	}
	out.NetworkPriority = copyMap(spec.NetworkPriority)
	out.PostStart = cloneHooks(spec.PostStart)
	out.PreStop = cloneHooks(spec.PreStop)
	out.ExtraHosts = nonEmpty(spec.ExtraHosts)
	out.DNS = nonEmpty(spec.DNS)
	out.DNSSearch = nonEmpty(spec.DNSSearch)
	out.DNSOptions = nonEmpty(spec.DNSOptions)
	out.Binds = nonEmpty(spec.Binds)
	out.Tmpfs = nonEmpty(spec.Tmpfs)
	out.AnonymousVolumes = nonEmpty(spec.AnonymousVolumes)
	for i := range out.Tmpfs {
		out.Tmpfs[i].Options = nonEmpty(out.Tmpfs[i].Options)
	}
	out.Links = nonEmpty(spec.Links)
	out.DeviceCgroupRules = nonEmpty(spec.DeviceCgroupRules)
	out.CapAdd = nonEmpty(spec.CapAdd)
	out.CapDrop = nonEmpty(spec.CapDrop)
	out.SecurityOpt = nonEmpty(spec.SecurityOpt)
	out.Devices = nonEmpty(spec.Devices)
	out.DeviceRequests = cloneDeviceRequests(spec.DeviceRequests)
	out.VolumesFrom = nonEmpty(spec.VolumesFrom)
	out.GroupAdd = nonEmpty(spec.GroupAdd)
	out.Sysctls = copyMap(spec.Sysctls)
	out.Ulimits = nonEmpty(spec.Ulimits)
	if spec.Build != nil {
		b := *spec.Build
		b.Args = copyMap(b.Args)
		b.Labels = copyMap(b.Labels)
		b.Tags = nonEmpty(b.Tags)
		out.Build = &b
	}
	if spec.Logging != nil {
		l := *spec.Logging
		l.Options = copyMap(l.Options)
		out.Logging = &l
	}
	if spec.Readiness != nil {
		r := *spec.Readiness
		if r.HTTPGet != nil {
			h := *r.HTTPGet
			r.HTTPGet = &h
		}
		if r.TCPSocket != nil {
			t := *r.TCPSocket
			r.TCPSocket = &t
		}
		if r.Exec != nil {
			r.Exec = &ExecProbe{Command: slices.Clone(r.Exec.Command), Shell: r.Exec.Shell}
		}
		out.Readiness = &r
	}
	return out
}

// nonEmpty copies s, returning nil for an empty list.
func nonEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// sortedSet copies s sorted and deduplicated, nil if empty. Duplicates are
// reported by validation; dropping them here keeps the hash meaningful.
func sortedSet(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(s)))
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// cloneDeviceRequests deep-copies rs, nil if empty.
func cloneDeviceRequests(rs []DeviceRequest) []DeviceRequest {
	if len(rs) == 0 {
		return nil
	}
	out := make([]DeviceRequest, len(rs))
	for i, r := range rs {
		r.DeviceIDs = nonEmpty(r.DeviceIDs)
		caps := make([][]string, len(r.Capabilities))
		for j, c := range r.Capabilities {
			caps[j] = slices.Clone(c)
		}
		r.Capabilities = nonEmpty(caps)
		r.Options = copyMap(r.Options)
		out[i] = r
	}
	return out
}

// compareDeviceRequests orders device requests by driver, then by what
// they ask for; requests are independent of each other, so their order
// means nothing.
func compareDeviceRequests(a, b DeviceRequest) int {
	return cmp.Or(cmp.Compare(a.Driver, b.Driver), cmp.Compare(a.Count, b.Count),
		slices.Compare(a.DeviceIDs, b.DeviceIDs),
		slices.CompareFunc(a.Capabilities, b.Capabilities, slices.Compare[[]string]),
		cmp.Compare(fmtOptions(a.Options), fmtOptions(b.Options)))
}

// NetworksInOrder is the order a replica joins its networks: by
// NetworkPriority, highest first, equal priorities by name (as compose
// orders a service's networks).
func (s *ServiceSpec) NetworksInOrder() []string {
	out := slices.Clone(s.Networks)
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(s.NetworkPriority[b], s.NetworkPriority[a]), cmp.Compare(a, b))
	})
	return out
}

func cloneHooks(hooks []Hook) []Hook {
	if len(hooks) == 0 {
		return nil
	}
	out := make([]Hook, len(hooks))
	for i, h := range hooks {
		h.Command = slices.Clone(h.Command)
		h.Env = copyMap(h.Env)
		out[i] = h
	}
	return out
}
