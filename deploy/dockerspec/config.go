// Package dockerspec owns the mapping between driftless's model and
// Docker's API types, both ways and pure: a service spec becomes the create
// call of one replica (config, host config, mounts, networking, labels),
// and a list or inspect answer becomes drift's plain data (identity from
// labels, exit code, health, uptime). No Docker call is made here, so the
// mapping is tested without an engine and shared by everything that talks
// to one.
package dockerspec

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/deploy/hostfiles"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// replicaConfig is everything needed to create one replica: the create
// call, plus the networks to connect before start (Docker attaches only
// one network at create time on API 1.41).
type ReplicaConfig struct {
	Create        client.ContainerCreateOptions
	ExtraNetworks []ExtraNetwork
}

// extraNetwork is a network joined after create, with the replica's
// aliases on it.
type ExtraNetwork struct {
	Name    string // Docker name
	Aliases []string
	Links   []string                    // legacy links, "CONTAINER:ALIAS"
	IPAM    *network.EndpointIPAMConfig // the fixed addresses, or nil
}

// replicaInput is what one replica's create call is made from.
type ReplicaInput struct {
	App      *manifest.App // the desired state: Docker names of networks and volumes, repository content
	Service  *manifest.Service
	Slot     int
	Revision string
	// FilesDir is where repository bind mounts are materialized (see
	// materializedPath); the create call only names the paths.
	FilesDir string
	// SecretsDir is where secret files are written (see secretPath).
	SecretsDir string
	// StateDir holds the apps' state directories (hostfiles.StatePath).
	StateDir string
	// Remote: the engine may be on another host, where the agent's
	// directories are not. Repository binds and secret files are left out
	// of the create call (deploy/internal/copyin writes them into the
	// created container), and a state directory is a named volume on that host
	// (manifest.StateVolumeName).
	Remote bool
	// ImageVolumes are the targets the image declares volumes at
	// (Dockerfile VOLUME). Those the spec mounts nothing at get the
	// slot's anonymous volume too (see anonymousMounts).
	ImageVolumes []string
}

// containerLabels are the labels on every replica: the service's metadata
// labels first, so driftless's own labels cannot be overridden by them.
func ContainerLabels(app string, key manifest.SecretKey, svc *manifest.Service, slot int, revision string) (map[string]string, error) {
	spec, err := json.Marshal(svc.Spec.Redacted(key))
	if err != nil {
		return nil, fmt.Errorf("encode spec of %s: %w", svc.Name, err)
	}
	labels := maps.Clone(svc.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[drift.LabelApp] = app
	labels[drift.LabelService] = svc.Name
	labels[drift.LabelSlot] = strconv.Itoa(slot)
	labels[drift.LabelSpecHash] = svc.Hash
	labels[drift.LabelRevision] = revision
	labels[drift.LabelSpec] = string(spec)
	return labels, nil
}

// resourceLabels are the labels on networks and volumes.
func ResourceLabels(app, resource, hash, revision string, meta map[string]string) map[string]string {
	labels := maps.Clone(meta)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[drift.LabelApp] = app
	labels[drift.LabelResource] = resource
	labels[drift.LabelSpecHash] = hash
	labels[drift.LabelRevision] = revision
	return labels
}

// restartPolicy is the spec's Docker restart policy (see
// manifest.ServiceSpec.DockerRestartPolicy, the one mapping).
func RestartPolicy(spec *manifest.ServiceSpec) *container.RestartPolicy {
	name, retries := spec.DockerRestartPolicy()
	return &container.RestartPolicy{Name: container.RestartPolicyMode(name), MaximumRetryCount: retries}
}

// buildReplicaConfig turns a service spec into the Docker create call for
// one replica, setting each field the way docker compose v2 does for the
// same setting. It is pure.
func BuildReplicaConfig(in ReplicaInput) (ReplicaConfig, error) {
	svc := in.Service
	labels, err := ContainerLabels(in.App.Name, in.App.SecretKey, svc, in.Slot, in.Revision)
	if err != nil {
		return ReplicaConfig{}, err
	}
	cfg := containerConfig(&svc.Spec, labels)
	host := hostConfig(&svc.Spec)
	if err := publishPorts(&svc.Spec, cfg, host); err != nil {
		return ReplicaConfig{}, fmt.Errorf("service %s: %w", svc.Name, err)
	}
	if err := mounts(in, host); err != nil {
		return ReplicaConfig{}, fmt.Errorf("service %s: %w", svc.Name, err)
	}
	rc := ReplicaConfig{}
	netCfg, err := networking(in, host, &rc)
	if err != nil {
		return ReplicaConfig{}, fmt.Errorf("service %s: %w", svc.Name, err)
	}
	rc.Create = client.ContainerCreateOptions{
		Name:             manifest.ContainerName(in.App.Name, svc.Name, in.Slot),
		Config:           cfg,
		HostConfig:       host,
		NetworkingConfig: netCfg,
		Platform:         Platform(&svc.Spec),
	}
	return rc, nil
}

// containerConfig is the process: image, command, environment, identity,
// terminal, stop signal and healthcheck.
func containerConfig(spec *manifest.ServiceSpec, labels map[string]string) *container.Config {
	cfg := &container.Config{
		Image:      spec.Image,
		Labels:     labels,
		Env:        envList(spec.Env),
		User:       spec.User,
		WorkingDir: spec.WorkingDir,
		Hostname:   spec.Hostname,
		Domainname: spec.Domainname,
		StopSignal: spec.StopSignal,
		Tty:        spec.TTY,
		OpenStdin:  spec.StdinOpen,
	}
	switch {
	case len(spec.Command) > 0:
		cfg.Entrypoint = slices.Clone(spec.Command)
	case spec.ClearEntrypoint:
		// An empty list, not none: Docker then runs no entrypoint
		// instead of the image's.
		cfg.Entrypoint = []string{}
	}
	if len(spec.Args) > 0 {
		cfg.Cmd = slices.Clone(spec.Args)
	}
	grace := spec.StopGracePeriodSeconds
	cfg.StopTimeout = &grace
	cfg.Healthcheck = HealthConfig(spec)
	return cfg
}

// healthConfig is the Docker healthcheck: exec readiness (driftless reads
// Docker's verdict instead of exec-ing into containers itself) or the
// declared healthcheck; nil keeps the image's.
func HealthConfig(spec *manifest.ServiceSpec) *container.HealthConfig {
	if r := spec.Readiness; r != nil && r.Exec != nil {
		test := append([]string{"CMD"}, r.Exec.Command...)
		if r.Exec.Shell {
			test = []string{"CMD-SHELL", strings.Join(r.Exec.Command, " ")}
		}
		return &container.HealthConfig{
			Test:        test,
			Interval:    SecondsOr(r.PeriodSeconds, 10),
			Timeout:     SecondsOr(r.TimeoutSeconds, 1),
			Retries:     max(r.FailureThreshold, 1),
			StartPeriod: time.Duration(r.InitialDelaySeconds) * time.Second,
		}
	}
	h := spec.Healthcheck
	if h == nil {
		return nil
	}
	if h.Disabled() {
		return &container.HealthConfig{Test: []string{"NONE"}}
	}
	return &container.HealthConfig{
		Test:          slices.Clone(h.Test),
		Interval:      h.Interval,
		Timeout:       h.Timeout,
		StartPeriod:   h.StartPeriod,
		StartInterval: h.StartInterval, // Docker API 1.44+; older engines ignore it
		Retries:       h.Retries,
	}
}

// hostConfig is what the host grants: restart policy, resources,
// privileges, namespaces, kernel parameters, limits and logging.
func hostConfig(spec *manifest.ServiceSpec) *container.HostConfig {
	host := &container.HostConfig{
		RestartPolicy: *RestartPolicy(spec),
		Resources: container.Resources{
			Memory:            spec.Resources.MemoryBytes,
			NanoCPUs:          spec.Resources.NanoCPUs,
			MemoryReservation: spec.Resources.MemoryReservationBytes,
			DeviceCgroupRules: slices.Clone(spec.DeviceCgroupRules),
		},
		Privileged:     spec.Privileged,
		ReadonlyRootfs: spec.ReadOnlyRootfs,
		CapAdd:         slices.Clone(spec.CapAdd),
		CapDrop:        slices.Clone(spec.CapDrop),
		SecurityOpt:    slices.Clone(spec.SecurityOpt),
		GroupAdd:       slices.Clone(spec.GroupAdd),
		PidMode:        container.PidMode(spec.PID),
		IpcMode:        container.IpcMode(spec.IPC),
		UTSMode:        container.UTSMode(spec.UTS),
		UsernsMode:     container.UsernsMode(spec.UsernsMode),
		CgroupnsMode:   container.CgroupnsMode(spec.CgroupNS),
		Runtime:        spec.Runtime,
		Sysctls:        maps.Clone(spec.Sysctls),
		ShmSize:        spec.ShmSizeBytes,
		ExtraHosts:     slices.Clone(spec.ExtraHosts),
		DNSOptions:     slices.Clone(spec.DNSOptions),
		DNSSearch:      slices.Clone(spec.DNSSearch),
	}
	if spec.Resources.PidsLimit != 0 {
		pids := spec.Resources.PidsLimit
		host.PidsLimit = &pids
	}
	if spec.Init {
		init := true
		host.Init = &init
	}
	for _, d := range spec.DNS {
		if a, err := netip.ParseAddr(d); err == nil {
			host.DNS = append(host.DNS, a)
		}
	}
	for _, d := range spec.Devices {
		host.Devices = append(host.Devices, container.DeviceMapping{PathOnHost: d.HostPath, PathInContainer: d.ContainerPath, CgroupPermissions: d.Permissions})
	}
	host.DeviceRequests = deviceRequests(spec.DeviceRequests)
	for _, u := range spec.Ulimits {
		host.Ulimits = append(host.Ulimits, &container.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	if l := spec.Logging; l != nil {
		host.LogConfig = container.LogConfig{Type: l.Driver, Config: maps.Clone(l.Options)}
	}
	tuning(spec, host)
	return host
}

// publishPorts exposes every container port and publishes those with a
// host port, on HostIP or every address.
func publishPorts(spec *manifest.ServiceSpec, cfg *container.Config, host *container.HostConfig) error {
	for _, p := range spec.Ports {
		proto := network.IPProtocol(p.Protocol)
		if proto == "" {
			proto = network.TCP
		}
		port, ok := network.PortFrom(uint16(p.ContainerPort), proto)
		if !ok {
			return fmt.Errorf("invalid port %s", p)
		}
		if cfg.ExposedPorts == nil {
			cfg.ExposedPorts = network.PortSet{}
		}
		cfg.ExposedPorts[port] = struct{}{}
		if !p.Published() {
			continue
		}
		// No host IP, as `docker run -p` and compose leave it: Docker
		// publishes on every address, IPv4 and IPv6.
		var hostIP netip.Addr
		if p.HostIP != "" {
			a, err := netip.ParseAddr(p.HostIP)
			if err != nil {
				return fmt.Errorf("port %s: invalid host IP: %w", p, err)
			}
			hostIP = a
		}
		if host.PortBindings == nil {
			host.PortBindings = network.PortMap{}
		}
		hostPort := "" // Docker picks one
		if !p.AnyHostPort {
			hostPort = strconv.Itoa(p.HostPort)
		}
		host.PortBindings[port] = append(host.PortBindings[port], network.PortBinding{HostIP: hostIP, HostPort: hostPort})
	}
	return nil
}

// mounts adds volumes, binds and tmpfs mounts. A host bind that may create
// its missing source goes through the legacy Binds form, as compose does:
// the mounts API refuses a missing source and cannot relabel (z/Z) on API
// 1.41. A repository bind mounts its materialized content, read-only, and
// a secret its file under SecretsDir (neither with Remote: both are
// copied into the container).
func mounts(in ReplicaInput, host *container.HostConfig) error {
	host.VolumesFrom = volumesFrom(in)
	spec := &in.Service.Spec
	for _, v := range spec.Volumes {
		if v.SELinux != "" {
			host.Binds = append(host.Binds, volumeBind(in.App.VolumeDockerName(v.Name), v))
			continue
		}
		m := mount.Mount{
			Type:     mount.TypeVolume,
			Source:   in.App.VolumeDockerName(v.Name),
			Target:   v.MountPath,
			ReadOnly: v.ReadOnly,
		}
		if v.NoCopy {
			m.VolumeOptions = &mount.VolumeOptions{NoCopy: true}
		}
		host.Mounts = append(host.Mounts, m)
	}
	for _, b := range spec.Binds {
		switch {
		case b.RepoPath != "":
			if err := repoBind(in, b, host); err != nil {
				return err
			}
		case b.StatePath != "" && in.Remote:
			host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeVolume, Source: manifest.StateVolumeName(in.App.Name, b.StatePath), Target: b.MountPath, ReadOnly: b.ReadOnly})
		case b.StatePath != "":
			src, err := hostfiles.StatePath(in.StateDir, in.App.Name, b)
			if err != nil {
				return err
			}
			host.Mounts, host.Binds = appendBind(host.Mounts, host.Binds, src, b)
		case b.CreateHostPath || b.SELinux != "":
			host.Binds = append(host.Binds, bindString(b))
		default:
			m := mount.Mount{Type: mount.TypeBind, Source: b.HostPath, Target: b.MountPath, ReadOnly: b.ReadOnly}
			if b.Propagation != "" {
				m.BindOptions = &mount.BindOptions{Propagation: mount.Propagation(b.Propagation)}
			}
			host.Mounts = append(host.Mounts, m)
		}
	}
	if err := secretBinds(in, host); err != nil {
		return err
	}
	anonymousMounts(in, host)
	for _, t := range spec.Tmpfs {
		if len(t.Options) > 0 {
			// Options beyond size and mode exist only in this form on
			// API 1.41, the one compose uses for the short syntax.
			if host.Tmpfs == nil {
				host.Tmpfs = map[string]string{}
			}
			host.Tmpfs[t.MountPath] = t.DockerOptions()
			continue
		}
		m := mount.Mount{Type: mount.TypeTmpfs, Target: t.MountPath}
		if t.SizeBytes != 0 || t.Mode != 0 {
			m.TmpfsOptions = &mount.TmpfsOptions{SizeBytes: t.SizeBytes, Mode: os.FileMode(t.Mode)}
		}
		host.Mounts = append(host.Mounts, m)
	}
	return nil
}

// secretBinds mounts each secret's file under SecretsDir, read-only; with
// Remote, nothing (the values are copied into the container).
func secretBinds(in ReplicaInput, host *container.HostConfig) error {
	if in.Remote {
		return nil
	}
	for _, ref := range in.Service.Spec.Secrets {
		src, err := hostfiles.SecretPath(in.SecretsDir, in.App.Name, in.Service.Name, ref)
		if err != nil {
			return err
		}
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: src, Target: ref.Target, ReadOnly: true})
	}
	return nil
}

// repoBind mounts a repository bind's materialized content, read-only;
// with Remote, nothing (the content is copied into the container).
func repoBind(in ReplicaInput, b manifest.BindMount, host *container.HostConfig) error {
	if in.Remote {
		return nil
	}
	src, err := hostfiles.MaterializedPath(in.App, in.FilesDir, b)
	if err != nil {
		return err
	}
	if b.SELinux != "" {
		// Relabelled as compose relabels the project's files; the
		// copy is content-addressed and read-only.
		host.Binds = append(host.Binds, src+":"+b.MountPath+":ro,"+b.SELinux)
		return nil
	}
	host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: src, Target: b.MountPath, ReadOnly: true})
	return nil
}

// appendBind adds a bind of src that exists: in the legacy form when it
// relabels (the Mounts API has no SELinux option on API 1.41), else as a
// mount.
func appendBind(mounts []mount.Mount, binds []string, src string, b manifest.BindMount) ([]mount.Mount, []string) {
	if b.SELinux != "" {
		b.HostPath = src
		return mounts, append(binds, bindString(b))
	}
	m := mount.Mount{Type: mount.TypeBind, Source: src, Target: b.MountPath, ReadOnly: b.ReadOnly}
	if b.Propagation != "" {
		m.BindOptions = &mount.BindOptions{Propagation: mount.Propagation(b.Propagation)}
	}
	return append(mounts, m), binds
}

// bindString is the legacy bind form "source:target:options", as compose
// writes it (access, SELinux label, propagation).
func bindString(b manifest.BindMount) string {
	opts := []string{"rw"}
	if b.ReadOnly {
		opts[0] = "ro"
	}
	if b.SELinux != "" {
		opts = append(opts, b.SELinux)
	}
	if b.Propagation != "" {
		opts = append(opts, b.Propagation)
	}
	return b.HostPath + ":" + b.MountPath + ":" + strings.Join(opts, ",")
}

// networking attaches the replica: to its first network (by priority, then
// name) at create, with the service name and its aliases there, the others
// after create in that order; or to
// Docker's bridge, the host's network or none, without aliases.
func networking(in ReplicaInput, host *container.HostConfig, rc *ReplicaConfig) (*network.NetworkingConfig, error) {
	spec := &in.Service.Spec
	var mac network.HardwareAddr
	if spec.MacAddress != "" {
		hw, err := net.ParseMAC(spec.MacAddress)
		if err != nil {
			return nil, fmt.Errorf("invalid MAC address %q", spec.MacAddress)
		}
		mac = network.HardwareAddr(hw)
	}
	if owner := spec.NetworkService(); owner != "" {
		// Docker resolves the name to the container holding it now: the
		// owner's replica, created before this one (dependency order).
		host.NetworkMode = container.NetworkMode("container:" + manifest.ContainerName(in.App.Name, owner, 1))
		return &network.NetworkingConfig{}, nil
	}
	switch spec.NetworkMode {
	case manifest.NetworkHost, manifest.NetworkNone:
		host.NetworkMode = container.NetworkMode(spec.NetworkMode)
		return &network.NetworkingConfig{}, nil
	case manifest.NetworkBridge, manifest.NetworkDefault:
		host.NetworkMode = container.NetworkMode(spec.NetworkMode)
		ep := map[string]*network.EndpointSettings{}
		if mac != nil {
			ep[manifest.NetworkBridge] = &network.EndpointSettings{MacAddress: mac}
		}
		return &network.NetworkingConfig{EndpointsConfig: ep}, nil
	}
	networks := spec.NetworksInOrder()
	if len(networks) == 0 {
		networks = []string{manifest.DefaultNetwork}
	}
	aliases := func(n string) []string {
		return append([]string{in.Service.Name}, spec.Aliases[n]...)
	}
	first := in.App.NetworkDockerName(networks[0])
	host.NetworkMode = container.NetworkMode(first)
	// Links go on each network's endpoint, as docker-compose 1.29 sends
	// them (and as Docker applies links on a user-defined network).
	links := Links(in.App, in.Service)
	ep := &network.EndpointSettings{Aliases: aliases(networks[0]), MacAddress: mac, Links: links, IPAMConfig: EndpointIPAM(spec, networks[0])}
	for _, n := range networks[1:] {
		rc.ExtraNetworks = append(rc.ExtraNetworks, ExtraNetwork{Name: in.App.NetworkDockerName(n), Aliases: aliases(n), Links: links, IPAM: EndpointIPAM(spec, n)})
	}
	return &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{first: ep}}, nil
}

// EndpointIPAM is the replica's fixed addresses on network n (manifest
// name), as Docker takes them, or nil. The front ends checked them.
func EndpointIPAM(spec *manifest.ServiceSpec, n string) *network.EndpointIPAMConfig {
	a, ok := spec.Addresses[n]
	if !ok {
		return nil
	}
	cfg := &network.EndpointIPAMConfig{}
	if ip, err := netip.ParseAddr(a.IPv4); err == nil {
		cfg.IPv4Address = ip
	}
	if ip, err := netip.ParseAddr(a.IPv6); err == nil {
		cfg.IPv6Address = ip
	}
	return cfg
}

// envList renders env as sorted KEY=VALUE, so identical specs give
// identical containers.
func envList(env map[string]string) []string {
	keys := slices.Sorted(maps.Keys(env))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

// SecondsOr is s seconds, or def seconds when s is not set.
func SecondsOr(s, def int) time.Duration {
	if s <= 0 {
		s = def
	}
	return time.Duration(s) * time.Second
}

// volumesFrom names, for Docker, the containers whose mounts a replica
// takes: each service's first replica. Docker resolves a name to the
// container holding it at create, which dependency order made before this
// one.
func volumesFrom(in ReplicaInput) []string {
	var out []string
	for _, v := range in.Service.Spec.VolumesFrom {
		from := manifest.ContainerName(in.App.Name, v.Service, 1)
		if v.ReadOnly {
			from += ":ro"
		}
		out = append(out, from)
	}
	return out
}
