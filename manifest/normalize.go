package manifest

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Defaults. Every default is applied here and nowhere else.
const (
	defaultReplicas         = 1
	defaultProtocol         = "tcp"
	defaultHTTPPath         = "/"
	defaultPeriodSeconds    = 2
	defaultTimeoutSeconds   = 1
	defaultSuccessThreshold = 1
	defaultFailureThreshold = 3
	defaultMaxSurge         = 1
	defaultMaxUnavailable   = 0
	defaultStopGrace        = 10
	defaultNetworkDriver    = "bridge"
	defaultVolumeDriver     = "local"
	// defaultDevicePermissions is Docker's: read, write, mknod.
	defaultDevicePermissions = "rwm"
)

func orDefault[T comparable](v *T, def T) T {
	if v == nil {
		return def
	}
	return *v
}

func orDefaultString(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// normalizeService applies defaults and puts set-like lists in a canonical
// order. It tolerates invalid input (validation reports it separately).
func normalizeService(raw *rawServiceSpec) ServiceSpec {
	spec := ServiceSpec{
		Image:                  raw.Image,
		Replicas:               orDefault(raw.Replicas, defaultReplicas),
		Command:                nonEmpty(raw.Command),
		Args:                   nonEmpty(raw.Args),
		Env:                    copyMap(raw.Env),
		SecretEnv:              sortedSet(raw.SecretEnv),
		Secrets:                slices.Clone(raw.Secrets),
		EnvFrom:                slices.Clone(raw.EnvFrom),
		Networks:               sortedSet(raw.Networks),
		Restart:                orDefaultString(raw.Restart, RestartAlways),
		RestartNeverDeclared:   raw.Restart == RestartNever,
		DependsOn:              sortedSet(raw.DependsOn),
		StopGracePeriodSeconds: orDefault(raw.StopGracePeriodSeconds, defaultStopGrace),
		Update:                 normalizeUpdate(raw.Update),
		Readiness:              normalizeReadiness(raw.Readiness),
	}
	if b := raw.Build; b != nil {
		spec.Build = &Build{
			Context:    orDefaultString(b.Context, "."),
			Dockerfile: orDefaultString(b.Dockerfile, DefaultDockerfile),
			Args:       copyMap(b.Args),
			Target:     b.Target,
			Image:      raw.Image,
		}
	}
	if len(spec.Networks) == 0 && raw.NetworkMode == "" {
		spec.Networks = []string{DefaultNetwork}
	}
	for _, p := range raw.Ports {
		spec.Ports = append(spec.Ports, normalizePort(p))
	}
	for _, v := range raw.Volumes {
		spec.Volumes = append(spec.Volumes, VolumeMount(v))
	}
	if res := raw.Resources; res != nil {
		if res.Memory != nil {
			spec.Resources.MemoryBytes, _ = ParseMemory(string(*res.Memory))
		}
		if res.CPUs != nil {
			spec.Resources.NanoCPUs, _ = ParseCPUs(string(*res.CPUs))
		}
		if res.Pids != nil {
			spec.Resources.PidsLimit = int64(*res.Pids)
		}
		if res.MemoryReservation != nil {
			spec.Resources.MemoryReservationBytes, _ = ParseMemory(string(*res.MemoryReservation))
		}
	}
	normalizeProcess(raw, &spec)
	normalizeNetworking(raw, &spec)
	normalizeMounts(raw, &spec)
	normalizeSecurity(raw, &spec)
	normalizeLimits(raw, &spec)
	return canonicalService(spec)
}

// normalizeProcess maps what the container's process runs as and how it
// is started, stopped and checked.
func normalizeProcess(raw *rawServiceSpec, spec *ServiceSpec) {
	spec.DependsOnCondition = copyMap(raw.DependsOnCondition)
	spec.RestartMaxRetries = orDefault(raw.RestartMaxRetries, 0)
	spec.User = raw.User
	spec.WorkingDir = raw.WorkingDir
	spec.Hostname = raw.Hostname
	spec.Domainname = raw.Domainname
	spec.Init = raw.Init
	spec.TTY = raw.TTY
	spec.StdinOpen = raw.StdinOpen
	if raw.StopSignal != nil {
		spec.StopSignal, _ = ParseSignal(string(*raw.StopSignal))
	}
	spec.Healthcheck = normalizeHealthcheck(raw.Healthcheck)
	if raw.Update != nil && raw.Update.Delay != nil {
		spec.Update.Delay, _ = ParseDuration(string(*raw.Update.Delay))
	}
	if l := raw.Logging; l != nil {
		spec.Logging = &Logging{Driver: l.Driver, Options: copyMap(l.Options)}
	}
}

func normalizeHealthcheck(h *rawHealthcheck) *Healthcheck {
	if h == nil {
		return nil
	}
	if h.Disable {
		return &Healthcheck{Test: []string{"NONE"}}
	}
	d := func(v *duration) time.Duration {
		if v == nil {
			return 0
		}
		out, _ := ParseDuration(string(*v))
		return out
	}
	return &Healthcheck{
		Test:          slices.Clone(h.Test),
		Interval:      d(h.Interval),
		Timeout:       d(h.Timeout),
		StartPeriod:   d(h.StartPeriod),
		StartInterval: d(h.StartInterval),
		Retries:       orDefault(h.Retries, 0),
	}
}

func normalizeNetworking(raw *rawServiceSpec, spec *ServiceSpec) {
	spec.NetworkMode = raw.NetworkMode
	if len(raw.Aliases) > 0 {
		spec.Aliases = make(map[string][]string, len(raw.Aliases))
		for n, a := range raw.Aliases {
			if len(a) > 0 {
				spec.Aliases[n] = slices.Clone(a)
			}
		}
	}
	spec.ExtraHosts = slices.Clone(raw.ExtraHosts)
	spec.DNS = slices.Clone(raw.DNS)
	spec.DNSSearch = slices.Clone(raw.DNSSearch)
	spec.DNSOptions = slices.Clone(raw.DNSOptions)
	spec.MacAddress = strings.ToLower(raw.MacAddress)
}

// normalizeMounts maps binds and tmpfs mounts. A repository bind is always
// read-only: its source is content-addressed and shared.
func normalizeMounts(raw *rawServiceSpec, spec *ServiceSpec) {
	for _, b := range raw.Binds {
		m := BindMount{
			HostPath:       b.HostPath,
			MountPath:      b.MountPath,
			ReadOnly:       orDefault(b.ReadOnly, false),
			CreateHostPath: b.CreateHostPath,
			Propagation:    b.Propagation,
			SELinux:        b.SELinux,
		}
		if b.RepoPath != "" {
			m.RepoPath, _ = CleanRepoPath(b.RepoPath)
			m.ReadOnly = true
		}
		spec.Binds = append(spec.Binds, m)
	}
	for _, t := range raw.Tmpfs {
		m := TmpfsMount{MountPath: t.MountPath}
		if t.Size != nil {
			m.SizeBytes, _ = ParseMemory(string(*t.Size))
		}
		if t.Mode != nil {
			m.Mode, _ = parseMode(string(*t.Mode))
		}
		spec.Tmpfs = append(spec.Tmpfs, m)
	}
}

// normalizeSecurity maps privileges, capabilities and namespaces.
func normalizeSecurity(raw *rawServiceSpec, spec *ServiceSpec) {
	spec.Privileged = raw.Privileged
	spec.ReadOnlyRootfs = raw.ReadOnlyRootfs
	for _, c := range raw.CapAdd {
		spec.CapAdd = append(spec.CapAdd, NormalizeCapability(c))
	}
	for _, c := range raw.CapDrop {
		spec.CapDrop = append(spec.CapDrop, NormalizeCapability(c))
	}
	spec.SecurityOpt = slices.Clone(raw.SecurityOpt)
	for _, d := range raw.Devices {
		spec.Devices = append(spec.Devices, Device{
			HostPath:      d.HostPath,
			ContainerPath: orDefaultString(d.ContainerPath, d.HostPath),
			Permissions:   orDefaultString(d.Permissions, defaultDevicePermissions),
		})
	}
	for _, g := range raw.GroupAdd {
		spec.GroupAdd = append(spec.GroupAdd, string(g))
	}
	spec.PID = raw.PID
	spec.IPC = raw.IPC
}

// normalizeLimits maps kernel parameters and resource limits.
func normalizeLimits(raw *rawServiceSpec, spec *ServiceSpec) {
	if len(raw.Sysctls) > 0 {
		spec.Sysctls = make(map[string]string, len(raw.Sysctls))
		for k, v := range raw.Sysctls {
			spec.Sysctls[k] = string(v)
		}
	}
	for _, u := range raw.Ulimits {
		soft := int64(orDefault(u.Soft, 0))
		hard := soft
		if u.Hard != nil {
			hard = int64(*u.Hard)
		}
		spec.Ulimits = append(spec.Ulimits, Ulimit{Name: u.Name, Soft: soft, Hard: hard})
	}
	if raw.ShmSize != nil {
		spec.ShmSizeBytes, _ = ParseMemory(string(*raw.ShmSize))
	}
}

func normalizePort(p rawPort) Port {
	return Port{
		ContainerPort: orDefault(p.ContainerPort, 0),
		HostPort:      orDefault(p.HostPort, 0),
		Protocol:      orDefaultString(p.Protocol, defaultProtocol),
		HostIP:        p.HostIP,
	}
}

func normalizeUpdate(u *rawUpdate) Update {
	if u == nil {
		u = &rawUpdate{}
	}
	if u.Strategy == StrategyRecreate {
		// Surge and unavailability mean nothing when every replica is
		// stopped before the new ones start.
		return Update{Strategy: StrategyRecreate}
	}
	return Update{
		Strategy:       orDefaultString(u.Strategy, StrategyRolling),
		MaxSurge:       orDefault(u.MaxSurge, defaultMaxSurge),
		MaxUnavailable: orDefault(u.MaxUnavailable, defaultMaxUnavailable),
	}
}

func normalizeReadiness(r *rawReadiness) *Readiness {
	if r == nil {
		return nil
	}
	n := &Readiness{
		InitialDelaySeconds: orDefault(r.InitialDelaySeconds, 0),
		PeriodSeconds:       orDefault(r.PeriodSeconds, defaultPeriodSeconds),
		TimeoutSeconds:      orDefault(r.TimeoutSeconds, defaultTimeoutSeconds),
		SuccessThreshold:    orDefault(r.SuccessThreshold, defaultSuccessThreshold),
		FailureThreshold:    orDefault(r.FailureThreshold, defaultFailureThreshold),
	}
	if r.HTTPGet != nil {
		n.HTTPGet = &HTTPGetProbe{Path: orDefaultString(r.HTTPGet.Path, defaultHTTPPath), Port: orDefault(r.HTTPGet.Port, 0)}
	}
	if r.TCPSocket != nil {
		n.TCPSocket = &TCPSocketProbe{Port: orDefault(r.TCPSocket.Port, 0)}
	}
	if r.Exec != nil {
		n.Exec = &ExecProbe{Command: slices.Clone(r.Exec.Command), Shell: r.Exec.Shell}
	}
	return n
}

func normalizeNetwork(raw *rawNetworkSpec) NetworkSpec {
	if raw == nil {
		raw = &rawNetworkSpec{}
	}
	if raw.External {
		// An external network is Docker's, not ours: only its name counts.
		return NetworkSpec{External: true, ExternalName: raw.Name}
	}
	return NetworkSpec{
		Driver:     orDefaultString(raw.Driver, defaultNetworkDriver),
		Internal:   raw.Internal,
		Attachable: raw.Attachable,
		EnableIPv6: raw.EnableIPv6,
		DriverOpts: copyMap(raw.DriverOpts),
		Subnet:     raw.Subnet,
	}
}

func normalizeVolume(raw *rawVolumeSpec) VolumeSpec {
	if raw == nil {
		raw = &rawVolumeSpec{}
	}
	if raw.External {
		return VolumeSpec{External: true, ExternalName: raw.Name}
	}
	return VolumeSpec{Driver: orDefaultString(raw.Driver, defaultVolumeDriver), DriverOpts: copyMap(raw.DriverOpts)}
}

// canonicalService returns a deep copy of spec with set-like lists sorted
// and empty collections nil, so equal specs marshal identically.
func canonicalService(spec ServiceSpec) ServiceSpec {
	out := cloneService(spec)
	out.SecretEnv = sortedSet(out.SecretEnv)
	out.Networks = sortedSet(out.Networks)
	out.DependsOn = sortedSet(out.DependsOn)
	slices.SortFunc(out.Ports, func(a, b Port) int {
		return cmp.Or(cmp.Compare(a.ContainerPort, b.ContainerPort), cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.HostPort, b.HostPort))
	})
	slices.SortFunc(out.Volumes, func(a, b VolumeMount) int {
		return cmp.Or(cmp.Compare(a.MountPath, b.MountPath), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(out.Binds, func(a, b BindMount) int {
		return cmp.Or(cmp.Compare(a.MountPath, b.MountPath), cmp.Compare(a.HostPath, b.HostPath), cmp.Compare(a.RepoPath, b.RepoPath))
	})
	slices.SortFunc(out.Tmpfs, func(a, b TmpfsMount) int { return cmp.Compare(a.MountPath, b.MountPath) })
	slices.SortFunc(out.Devices, func(a, b Device) int {
		return cmp.Or(cmp.Compare(a.ContainerPath, b.ContainerPath), cmp.Compare(a.HostPath, b.HostPath))
	})
	slices.SortFunc(out.Ulimits, func(a, b Ulimit) int { return cmp.Compare(a.Name, b.Name) })
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
	out.ExtraHosts = nonEmpty(spec.ExtraHosts)
	out.DNS = nonEmpty(spec.DNS)
	out.DNSSearch = nonEmpty(spec.DNSSearch)
	out.DNSOptions = nonEmpty(spec.DNSOptions)
	out.Binds = nonEmpty(spec.Binds)
	out.Tmpfs = nonEmpty(spec.Tmpfs)
	out.CapAdd = nonEmpty(spec.CapAdd)
	out.CapDrop = nonEmpty(spec.CapDrop)
	out.SecurityOpt = nonEmpty(spec.SecurityOpt)
	out.Devices = nonEmpty(spec.Devices)
	out.GroupAdd = nonEmpty(spec.GroupAdd)
	out.Sysctls = copyMap(spec.Sysctls)
	out.Ulimits = nonEmpty(spec.Ulimits)
	if spec.Build != nil {
		b := *spec.Build
		b.Args = copyMap(b.Args)
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

// copyMap copies m, returning nil for an empty map.
func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// CheckSubnet checks a declared network subnet: an IPv4 CIDR without host
// bits, small enough to hold a gateway and a container.
func CheckSubnet(s string) error {
	if s == "" {
		return nil
	}
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil || !p.Addr().Is4():
		return fmt.Errorf("subnet %q must be an IPv4 CIDR such as 10.20.0.0/24", s)
	case p.Masked() != p:
		return fmt.Errorf("subnet %s has host bits set; did you mean %s?", s, p.Masked())
	case p.Bits() > 30:
		return fmt.Errorf("subnet %s is too small for a gateway and a container: use /30 or larger", s)
	}
	return nil
}
