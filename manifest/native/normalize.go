package native

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
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
func normalizeService(raw *rawServiceSpec) manifest.ServiceSpec {
	spec := manifest.ServiceSpec{
		Image:                  raw.Image,
		Replicas:               orDefault(raw.Replicas, manifest.DefaultReplicas),
		Command:                nonEmpty(raw.Command),
		Args:                   nonEmpty(raw.Args),
		ClearEntrypoint:        raw.ClearEntrypoint,
		Env:                    copyMap(raw.Env),
		SecretEnv:              sortedSet(raw.SecretEnv),
		Secrets:                slices.Clone(raw.Secrets),
		EnvFrom:                slices.Clone(raw.EnvFrom),
		Networks:               sortedSet(raw.Networks),
		Restart:                orDefaultString(raw.Restart, manifest.RestartAlways),
		RestartNeverDeclared:   raw.Restart == manifest.RestartNever,
		DependsOn:              sortedSet(raw.DependsOn),
		StopGracePeriodSeconds: orDefault(raw.StopGracePeriodSeconds, manifest.DefaultStopGrace),
		Update:                 normalizeUpdate(raw.Update),
		Readiness:              NormalizeReadiness(raw.Readiness),
	}
	if v := raw.MinReadySeconds; v != nil {
		d := time.Duration(*v) * time.Second
		spec.MinReady = &d
	}
	if b := raw.Build; b != nil {
		spec.Build = &manifest.Build{
			Context:          orDefaultString(b.Context, "."),
			Dockerfile:       b.Dockerfile,
			DockerfileInline: b.DockerfileInline,
			Args:             copyMap(b.Args),
			Target:           b.Target,
			Image:            raw.Image,
			Labels:           copyMap(b.Labels),
			Tags:             slices.Clone(b.Tags),
			NoCache:          b.NoCache,
			Pull:             b.Pull,
		}
		if b.DockerfileInline == "" {
			spec.Build.Dockerfile = orDefaultString(b.Dockerfile, manifest.DefaultDockerfile)
		}
	}
	if len(spec.Networks) == 0 && raw.NetworkMode == "" {
		spec.Networks = []string{manifest.DefaultNetwork}
	}
	for _, p := range raw.Ports {
		spec.Ports = append(spec.Ports, normalizePort(p))
	}
	for _, v := range raw.Volumes {
		spec.Volumes = append(spec.Volumes, manifest.VolumeMount(v))
	}
	if res := raw.Resources; res != nil {
		normalizeTuning(res, &spec.Resources)
	}
	if res := raw.Resources; res != nil {
		if res.Memory != nil {
			spec.Resources.MemoryBytes, _ = manifest.ParseMemory(string(*res.Memory))
		}
		if res.CPUs != nil {
			spec.Resources.NanoCPUs, _ = manifest.ParseCPUs(string(*res.CPUs))
		}
		if res.Pids != nil {
			spec.Resources.PidsLimit = int64(*res.Pids)
		}
		if res.MemoryReservation != nil {
			spec.Resources.MemoryReservationBytes, _ = manifest.ParseMemory(string(*res.MemoryReservation))
		}
	}
	normalizeProcess(raw, &spec)
	normalizeNetworking(raw, &spec)
	normalizeMounts(raw, &spec)
	normalizeSecurity(raw, &spec)
	normalizeDeviceRequests(raw, &spec)
	normalizeVolumesFrom(raw, &spec)
	normalizeLimits(raw, &spec)
	return manifest.CanonicalService(spec)
}

// normalizeProcess maps what the container's process runs as and how it
// is started, stopped and checked.
func normalizeProcess(raw *rawServiceSpec, spec *manifest.ServiceSpec) {
	spec.DependsOnCondition = copyMap(raw.DependsOnCondition)
	spec.DependsOnRestart = sortedSet(raw.DependsOnRestart)
	spec.RestartMaxRetries = orDefault(raw.RestartMaxRetries, 0)
	spec.User = raw.User
	spec.WorkingDir = raw.WorkingDir
	spec.Hostname = raw.Hostname
	spec.Domainname = raw.Domainname
	spec.Init = raw.Init
	spec.TTY = raw.TTY
	spec.StdinOpen = raw.StdinOpen
	if raw.StopSignal != nil {
		spec.StopSignal, _ = manifest.ParseSignal(string(*raw.StopSignal))
	}
	spec.Healthcheck = normalizeHealthcheck(raw.Healthcheck)
	if raw.Update != nil && raw.Update.Delay != nil {
		spec.Update.Delay, _ = manifest.ParseDuration(string(*raw.Update.Delay))
	}
	if raw.Update != nil {
		spec.Update.Canary, spec.Update.CanaryWatch = NormalizeCanary(raw.Update.Canary, raw.Update.CanaryWatch)
	}
	if l := raw.Logging; l != nil {
		spec.Logging = &manifest.Logging{Driver: l.Driver, Options: copyMap(l.Options)}
	}
}

func normalizeHealthcheck(h *rawHealthcheck) *manifest.Healthcheck {
	if h == nil {
		return nil
	}
	if h.Disable {
		return &manifest.Healthcheck{Test: []string{"NONE"}}
	}
	d := func(v *yamlpos.Duration) time.Duration {
		if v == nil {
			return 0
		}
		out, _ := manifest.ParseDuration(string(*v))
		return out
	}
	return &manifest.Healthcheck{
		Test:          slices.Clone(h.Test),
		Interval:      d(h.Interval),
		Timeout:       d(h.Timeout),
		StartPeriod:   d(h.StartPeriod),
		StartInterval: d(h.StartInterval),
		Retries:       orDefault(h.Retries, 0),
	}
}

func normalizeNetworking(raw *rawServiceSpec, spec *manifest.ServiceSpec) {
	spec.NetworkMode = raw.NetworkMode
	if len(raw.Addresses) > 0 {
		spec.Addresses = make(map[string]manifest.Address, len(raw.Addresses))
		maps.Copy(spec.Addresses, raw.Addresses)
	}
	for net, p := range raw.NetworkPriority {
		if p == 0 {
			continue // the default: kept out, so the spec hashes as without it
		}
		if spec.NetworkPriority == nil {
			spec.NetworkPriority = map[string]int{}
		}
		spec.NetworkPriority[net] = p
	}
	// The namespace's owner starts first, as compose's implicit dependency.
	if owner := spec.NetworkService(); owner != "" && !slices.Contains(spec.DependsOn, owner) {
		spec.DependsOn = sortedSet(append(slices.Clone(spec.DependsOn), owner))
		if _, ok := spec.DependsOnCondition[owner]; !ok {
			if spec.DependsOnCondition == nil {
				spec.DependsOnCondition = map[string]string{}
			}
			spec.DependsOnCondition[owner] = manifest.DependsStarted
		}
	}
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
func normalizeMounts(raw *rawServiceSpec, spec *manifest.ServiceSpec) {
	for _, b := range raw.Binds {
		m := manifest.BindMount{
			HostPath:       b.HostPath,
			MountPath:      b.MountPath,
			ReadOnly:       orDefault(b.ReadOnly, false),
			CreateHostPath: b.CreateHostPath,
			Propagation:    b.Propagation,
			SELinux:        b.SELinux,
		}
		if b.RepoPath != "" {
			m.RepoPath, _ = manifest.CleanRepoPath(b.RepoPath)
			m.ReadOnly = true
		}
		if b.StatePath != "" {
			m.StatePath, _ = manifest.CleanStatePath(b.StatePath)
		}
		spec.Binds = append(spec.Binds, m)
	}
	for _, t := range raw.Tmpfs {
		m := manifest.TmpfsMount{MountPath: t.MountPath}
		if t.Size != nil {
			m.SizeBytes, _ = manifest.ParseMemory(string(*t.Size))
		}
		if t.Mode != nil {
			m.Mode, _ = parseMode(string(*t.Mode))
		}
		for _, o := range t.Options {
			if opt, err := manifest.CheckTmpfsOption(o); err == nil {
				m.Options = append(m.Options, opt)
			}
		}
		spec.Tmpfs = append(spec.Tmpfs, m)
	}
	for _, v := range raw.AnonymousVolumes {
		spec.AnonymousVolumes = append(spec.AnonymousVolumes, manifest.AnonymousVolume(v))
	}
}

// normalizeSecurity maps privileges, capabilities and namespaces.
func normalizeSecurity(raw *rawServiceSpec, spec *manifest.ServiceSpec) {
	spec.Privileged = raw.Privileged
	spec.ReadOnlyRootfs = raw.ReadOnlyRootfs
	spec.PostStart, spec.PreStop = raw.PostStart, raw.PreStop
	for _, c := range raw.CapAdd {
		spec.CapAdd = append(spec.CapAdd, manifest.NormalizeCapability(c))
	}
	for _, c := range raw.CapDrop {
		spec.CapDrop = append(spec.CapDrop, manifest.NormalizeCapability(c))
	}
	spec.SecurityOpt = slices.Clone(raw.SecurityOpt)
	for _, d := range raw.Devices {
		spec.Devices = append(spec.Devices, manifest.Device{
			HostPath:      d.HostPath,
			ContainerPath: orDefaultString(d.ContainerPath, d.HostPath),
			Permissions:   orDefaultString(d.Permissions, manifest.DefaultDevicePermissions),
		})
	}
	for _, g := range raw.GroupAdd {
		spec.GroupAdd = append(spec.GroupAdd, string(g))
	}
	spec.PID = raw.PID
	spec.IPC = raw.IPC
	spec.UTS = raw.UTS
	spec.UsernsMode = raw.UsernsMode
	spec.CgroupNS = raw.CgroupNS
	spec.Runtime = raw.Runtime
	spec.DeviceCgroupRules = slices.Clone(raw.DeviceCgroupRules)
	spec.Platform = raw.Platform
	spec.Links = slices.Clone(raw.Links)
}

// normalizeLimits maps kernel parameters and resource limits.
func normalizeLimits(raw *rawServiceSpec, spec *manifest.ServiceSpec) {
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
		spec.Ulimits = append(spec.Ulimits, manifest.Ulimit{Name: u.Name, Soft: soft, Hard: hard})
	}
	if raw.ShmSize != nil {
		spec.ShmSizeBytes, _ = manifest.ParseMemory(string(*raw.ShmSize))
	}
}

func normalizePort(p rawPort) manifest.Port {
	return manifest.Port{
		ContainerPort: orDefault(p.ContainerPort, 0),
		HostPort:      orDefault(p.HostPort, 0),
		Protocol:      orDefaultString(p.Protocol, manifest.DefaultProtocol),
		HostIP:        p.HostIP,
		// hostPort: 0 asks Docker for a free port, as `docker run -p 0:80`.
		AnyHostPort: p.HostPort != nil && *p.HostPort == 0,
	}
}

func normalizeUpdate(u *rawUpdate) manifest.Update {
	if u == nil {
		u = &rawUpdate{}
	}
	if u.Strategy == manifest.StrategyRecreate {
		// Surge and unavailability mean nothing when every replica is
		// stopped before the new ones start.
		return manifest.Update{Strategy: manifest.StrategyRecreate}
	}
	return manifest.Update{
		Strategy:       orDefaultString(u.Strategy, manifest.StrategyRolling),
		MaxSurge:       orDefault(u.MaxSurge, manifest.DefaultMaxSurge),
		MaxUnavailable: orDefault(u.MaxUnavailable, manifest.DefaultMaxUnavailable),
	}
}

func NormalizeReadiness(r *RawReadiness) *manifest.Readiness {
	if r == nil {
		return nil
	}
	n := &manifest.Readiness{
		InitialDelaySeconds: orDefault(r.InitialDelaySeconds, 0),
		PeriodSeconds:       orDefault(r.PeriodSeconds, manifest.DefaultPeriodSeconds),
		TimeoutSeconds:      orDefault(r.TimeoutSeconds, manifest.DefaultTimeoutSeconds),
		SuccessThreshold:    orDefault(r.SuccessThreshold, manifest.DefaultSuccessThreshold),
		FailureThreshold:    orDefault(r.FailureThreshold, manifest.DefaultFailureThreshold),
	}
	if r.HTTPGet != nil {
		n.HTTPGet = &manifest.HTTPGetProbe{Path: orDefaultString(r.HTTPGet.Path, manifest.DefaultHTTPPath), Port: orDefault(r.HTTPGet.Port, 0)}
	}
	if r.TCPSocket != nil {
		n.TCPSocket = &manifest.TCPSocketProbe{Port: orDefault(r.TCPSocket.Port, 0)}
	}
	if r.Exec != nil {
		n.Exec = &manifest.ExecProbe{Command: slices.Clone(r.Exec.Command), Shell: r.Exec.Shell}
	}
	return n
}

func normalizeNetwork(raw *rawNetworkSpec) manifest.NetworkSpec {
	if raw == nil {
		raw = &rawNetworkSpec{}
	}
	if raw.External {
		// An external network is Docker's, not ours: only its name counts.
		return manifest.NetworkSpec{External: true, ExternalName: raw.Name}
	}
	return manifest.NetworkSpec{
		Driver:     orDefaultString(raw.Driver, manifest.DefaultNetworkDriver),
		Internal:   raw.Internal,
		Attachable: raw.Attachable,
		EnableIPv6: raw.EnableIPv6,
		DriverOpts: copyMap(raw.DriverOpts),
		Subnet:     raw.Subnet,
		SubnetV6:   raw.SubnetV6,
		Gateway:    raw.Gateway,
		IPRange:    raw.IPRange,
		Name:       raw.Name,
	}
}

func normalizeVolume(raw *rawVolumeSpec) manifest.VolumeSpec {
	if raw == nil {
		raw = &rawVolumeSpec{}
	}
	if raw.External {
		return manifest.VolumeSpec{External: true, ExternalName: raw.Name}
	}
	return manifest.VolumeSpec{Driver: orDefaultString(raw.Driver, manifest.DefaultVolumeDriver), DriverOpts: copyMap(raw.DriverOpts), Name: raw.Name}
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

// parseMode reads a permission mode as chmod does: always octal ("1777",
// "0755", "0o755").
func parseMode(s string) (uint32, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "0o"), "0O")
	n, err := strconv.ParseUint(t, 8, 32)
	if err != nil || n > 0o7777 {
		return 0, fmt.Errorf("invalid mode %q: use octal permission bits such as 1777 or 0755", s)
	}
	return uint32(n), nil
}

// DefaultCanaryWatch is how long canary replicas are watched when
// update.canaryWatch is not given.
const DefaultCanaryWatch = time.Minute

// NormalizeCanary reads update.canary and update.canaryWatch.
func NormalizeCanary(canary *int, watch *yamlpos.Duration) (int, time.Duration) {
	if canary == nil || *canary <= 0 {
		return 0, 0
	}
	d := DefaultCanaryWatch
	if watch != nil {
		if v, err := manifest.ParseDuration(string(*watch)); err == nil && v > 0 {
			d = v
		}
	}
	return *canary, d
}

// ValidateCanary checks update.canary against the replicas (a canary of
// every replica is no canary) and update.canaryWatch; prefix is where the
// update settings are ("spec.update").
func ValidateCanary(r yamlpos.Reporter, prefix string, canary *int, watch *yamlpos.Duration, replicas int, rolling bool) {
	if canary == nil {
		if watch != nil {
			r.Errorf(prefix+".canaryWatch", "needs canary: the number of replicas that get a new spec first")
		}
		return
	}
	if !rolling {
		r.Errorf(prefix+".canary", "only applies to strategy rolling")
		return
	}
	if *canary < 0 || (*canary > 0 && *canary >= replicas) {
		r.Errorf(prefix+".canary", "must be between 0 and replicas-1 (%d): a canary of every replica is no canary", max(replicas-1, 0))
	}
	r.Duration(prefix+".canaryWatch", watch, time.Second)
}

// normalizeVolumesFrom copies spec.volumesFrom; each service named starts
// first (condition started unless dependsOn says otherwise), as compose's
// implicit dependency.
func normalizeVolumesFrom(raw *rawServiceSpec, spec *manifest.ServiceSpec) {
	spec.VolumesFrom = slices.Clone(raw.VolumesFrom)
	for _, v := range raw.VolumesFrom {
		if slices.Contains(spec.DependsOn, v.Service) {
			continue
		}
		spec.DependsOn = sortedSet(append(slices.Clone(spec.DependsOn), v.Service))
		if _, ok := spec.DependsOnCondition[v.Service]; !ok {
			if spec.DependsOnCondition == nil {
				spec.DependsOnCondition = map[string]string{}
			}
			spec.DependsOnCondition[v.Service] = manifest.DependsStarted
		}
	}
}
