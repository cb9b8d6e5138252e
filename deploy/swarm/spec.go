// Package swarm is driftless's second back end: it deploys an app as
// Docker Swarm services on a Swarm manager, observes them (services,
// tasks, nodes, overlay networks) as drift.Actual, and carries out the
// Swarm section of a drift.Plan. Swarm schedules and rolls the tasks;
// this package never touches a container.
//
// Like deploy it executes and decides nothing: the plan comes from drift.
package swarm

import (
	"cmp"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	swarmtypes "github.com/moby/moby/api/types/swarm"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// LabelTaskApp marks a Swarm task's container with its app. It is not
// drift.LabelApp: the single-engine back end owns containers with that
// label, and must never take a task for one of its replicas.
const LabelTaskApp = drift.LabelPrefix + "swarm-app"

// ServiceSpec is the Swarm service spec of a declared service: the same
// manifest.App both front ends produce, mapped to what `docker service
// create` takes. Identity and the spec hash are labels on the service, as
// on one engine's containers. It is pure.
func ServiceSpec(app *manifest.App, svc *manifest.Service, revision string) swarmtypes.ServiceSpec {
	s := &svc.Spec
	labels := maps.Clone(svc.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[drift.LabelApp] = app.Name
	labels[drift.LabelService] = svc.Name
	labels[drift.LabelSpecHash] = svc.Hash
	if revision != "" {
		labels[drift.LabelRevision] = revision
	}
	if len(s.SecretEnv) > 0 {
		labels[LabelSecretEnv] = strings.Join(slices.Sorted(slices.Values(s.SecretEnv)), ",")
	}
	spec := swarmtypes.ServiceSpec{
		Annotations: swarmtypes.Annotations{Name: drift.ServiceName(app.Name, svc.Name), Labels: labels},
		TaskTemplate: swarmtypes.TaskSpec{
			ContainerSpec: containerSpec(app, svc),
			Resources:     resources(s),
			RestartPolicy: restartPolicy(s),
			Placement:     placement(s),
			Networks:      networks(app, svc),
		},
		Mode:         mode(s),
		UpdateConfig: updateConfig(s),
		EndpointSpec: endpoint(s),
	}
	if s.Logging != nil {
		spec.TaskTemplate.LogDriver = &swarmtypes.Driver{Name: s.Logging.Driver, Options: maps.Clone(s.Logging.Options)}
	}
	if w := s.Swarm; w != nil && w.Rollback != nil {
		spec.RollbackConfig = swarmUpdate(*w.Rollback, swarmtypes.UpdateConfig{Parallelism: 1, Order: swarmtypes.UpdateOrderStopFirst})
	}
	return spec
}

func containerSpec(app *manifest.App, svc *manifest.Service) *swarmtypes.ContainerSpec {
	s := &svc.Spec
	env := make([]string, 0, len(s.Env))
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		env = append(env, k+"="+s.Env[k])
	}
	grace := time.Duration(s.StopGracePeriodSeconds) * time.Second
	c := &swarmtypes.ContainerSpec{
		Image:           s.Image,
		Labels:          map[string]string{LabelTaskApp: app.Name, drift.LabelService: svc.Name},
		Command:         slices.Clone(s.Command),
		Args:            slices.Clone(s.Args),
		Hostname:        s.Hostname,
		Env:             env,
		Dir:             s.WorkingDir,
		User:            s.User,
		Groups:          slices.Clone(s.GroupAdd),
		StopSignal:      s.StopSignal,
		TTY:             s.TTY,
		OpenStdin:       s.StdinOpen,
		ReadOnly:        s.ReadOnlyRootfs,
		Mounts:          mounts(app, s),
		StopGracePeriod: &grace,
		Healthcheck:     healthcheck(s.Healthcheck),
		Sysctls:         maps.Clone(s.Sysctls),
		CapabilityAdd:   capNames(s.CapAdd),
		CapabilityDrop:  capNames(s.CapDrop),
	}
	if s.Build != nil {
		// An image driftless built carries its app's label, which a
		// container inherits: cleared, so that a task is never taken for
		// one of the app's containers on this engine (see LabelTaskApp).
		c.Labels[drift.LabelApp] = ""
	}
	if s.Init {
		init := true
		c.Init = &init
	}
	c.Configs, c.Secrets = fileObjects(app, s)
	for _, h := range s.ExtraHosts {
		// "host:ip" in the model, "ip host" in a Swarm spec (hosts(5)).
		if i := strings.Index(h, ":"); i > 0 {
			c.Hosts = append(c.Hosts, h[i+1:]+" "+h[:i])
		}
	}
	if len(s.DNSSearch) > 0 || len(s.DNSOptions) > 0 {
		c.DNSConfig = &swarmtypes.DNSConfig{Search: slices.Clone(s.DNSSearch), Options: slices.Clone(s.DNSOptions)}
	}
	for _, u := range s.Ulimits {
		c.Ulimits = append(c.Ulimits, &container.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	return c
}

// fileObjects refer to the versions of the compose secrets and configs
// the service uses, by name, at their mount path (read-only, like the
// bind mount on one engine). Apply fills in their IDs.
func fileObjects(app *manifest.App, s *manifest.ServiceSpec) ([]*swarmtypes.ConfigReference, []*swarmtypes.SecretReference) {
	var configs []*swarmtypes.ConfigReference
	var secrets []*swarmtypes.SecretReference
	for _, b := range s.Binds {
		if b.Object == nil {
			continue
		}
		name := drift.SwarmObjectName(app.Name, b.Object.Name, b.ContentHash)
		if b.Object.Kind == manifest.FileSecret {
			secrets = append(secrets, &swarmtypes.SecretReference{SecretName: name,
				File: &swarmtypes.SecretReferenceFileTarget{Name: b.MountPath, UID: "0", GID: "0", Mode: 0o444}})
			continue
		}
		mode := os.FileMode(0o444)
		if t := app.Content[b.ContentHash]; t != nil && len(t.Files) == 1 && t.Files[0].Exec {
			mode = 0o555 // a script from the repository stays runnable
		}
		configs = append(configs, &swarmtypes.ConfigReference{ConfigName: name,
			File: &swarmtypes.ConfigReferenceFileTarget{Name: b.MountPath, UID: "0", GID: "0", Mode: mode}})
	}
	for _, ref := range s.Secrets {
		secrets = append(secrets, &swarmtypes.SecretReference{SecretName: drift.SwarmObjectName(app.Name, ref.Name, ref.Digest),
			File: &swarmtypes.SecretReferenceFileTarget{Name: ref.Target, UID: cmp.Or(ref.UID, "0"), GID: cmp.Or(ref.GID, "0"), Mode: os.FileMode(ref.Mode)}})
	}
	return configs, secrets
}

// capNames are capabilities as Swarm takes them: with the CAP_ prefix.
func capNames(caps []string) []string {
	var out []string
	for _, c := range caps {
		if c != "ALL" && !strings.HasPrefix(c, "CAP_") {
			c = "CAP_" + c
		}
		out = append(out, c)
	}
	return out
}

func healthcheck(h *manifest.Healthcheck) *container.HealthConfig {
	if h == nil {
		return nil
	}
	if h.Disabled() {
		return &container.HealthConfig{Test: []string{"NONE"}}
	}
	return &container.HealthConfig{Test: slices.Clone(h.Test), Interval: h.Interval, Timeout: h.Timeout,
		StartPeriod: h.StartPeriod, StartInterval: h.StartInterval, Retries: h.Retries}
}

// mounts are the app's volumes (created by Swarm on each node a task
// lands on, with the declared driver), host binds and tmpfs.
func mounts(app *manifest.App, s *manifest.ServiceSpec) []mount.Mount {
	var out []mount.Mount
	for _, v := range s.Volumes {
		m := mount.Mount{Type: mount.TypeVolume, Source: app.VolumeDockerName(v.Name), Target: v.MountPath, ReadOnly: v.ReadOnly}
		if d := app.Volume(v.Name); d != nil && !d.Spec.External {
			m.VolumeOptions = &mount.VolumeOptions{
				Labels:       map[string]string{drift.LabelApp: app.Name, drift.LabelResource: d.Name, drift.LabelSpecHash: d.Hash},
				DriverConfig: &mount.Driver{Name: d.Spec.Driver, Options: maps.Clone(d.Spec.DriverOpts)},
			}
		}
		if v.NoCopy {
			if m.VolumeOptions == nil {
				m.VolumeOptions = &mount.VolumeOptions{}
			}
			m.VolumeOptions.NoCopy = true
		}
		out = append(out, m)
	}
	for _, b := range s.Binds {
		if b.Object != nil {
			continue // a Swarm secret or config, see fileObjects
		}
		m := mount.Mount{Type: mount.TypeBind, Source: b.HostPath, Target: b.MountPath, ReadOnly: b.ReadOnly}
		if b.Propagation != "" {
			m.BindOptions = &mount.BindOptions{Propagation: mount.Propagation(b.Propagation)}
		}
		out = append(out, m)
	}
	for _, t := range s.Tmpfs {
		out = append(out, mount.Mount{Type: mount.TypeTmpfs, Target: t.MountPath,
			TmpfsOptions: &mount.TmpfsOptions{SizeBytes: t.SizeBytes, Mode: os.FileMode(t.Mode)}})
	}
	return out
}

func resources(s *manifest.ServiceSpec) *swarmtypes.ResourceRequirements {
	r := s.Resources
	if r == (manifest.Resources{}) {
		return nil
	}
	out := &swarmtypes.ResourceRequirements{}
	if r.MemoryBytes != 0 || r.NanoCPUs != 0 || r.PidsLimit != 0 {
		out.Limits = &swarmtypes.Limit{MemoryBytes: r.MemoryBytes, NanoCPUs: r.NanoCPUs, Pids: r.PidsLimit}
	}
	if r.MemoryReservationBytes != 0 {
		out.Reservations = &swarmtypes.Resources{MemoryBytes: r.MemoryReservationBytes}
	}
	return out
}

func restartPolicy(s *manifest.ServiceSpec) *swarmtypes.RestartPolicy {
	switch s.Restart {
	case manifest.RestartNever:
		if s.RestartNeverDeclared {
			return &swarmtypes.RestartPolicy{Condition: swarmtypes.RestartPolicyConditionNone}
		}
		// compose's default "no": Swarm's default, as docker stack
		// deploy does, so Swarm replaces the tasks of a drained or lost
		// node (it replaces none under condition none).
	case manifest.RestartOnFailure:
		p := &swarmtypes.RestartPolicy{Condition: swarmtypes.RestartPolicyConditionOnFailure}
		if s.RestartMaxRetries > 0 {
			n := uint64(s.RestartMaxRetries)
			p.MaxAttempts = &n
		}
		return p
	}
	return &swarmtypes.RestartPolicy{Condition: swarmtypes.RestartPolicyConditionAny}
}

func placement(s *manifest.ServiceSpec) *swarmtypes.Placement {
	w := s.Swarm
	if w == nil || (len(w.Constraints) == 0 && len(w.Preferences) == 0 && w.MaxReplicasPerNode == 0) {
		return nil
	}
	p := &swarmtypes.Placement{Constraints: slices.Clone(w.Constraints), MaxReplicas: w.MaxReplicasPerNode}
	for _, d := range w.Preferences {
		p.Preferences = append(p.Preferences, swarmtypes.PlacementPreference{Spread: &swarmtypes.SpreadOver{SpreadDescriptor: d}})
	}
	return p
}

// networks attach the service to the app's overlay networks, with the
// service name and the declared aliases as DNS names.
func networks(app *manifest.App, svc *manifest.Service) []swarmtypes.NetworkAttachmentConfig {
	var out []swarmtypes.NetworkAttachmentConfig
	for _, n := range svc.Spec.Networks {
		aliases := append([]string{svc.Name}, svc.Spec.Aliases[n]...)
		out = append(out, swarmtypes.NetworkAttachmentConfig{Target: app.NetworkDockerName(n), Aliases: aliases})
	}
	return out
}

func mode(s *manifest.ServiceSpec) swarmtypes.ServiceMode {
	if s.Swarm != nil && s.Swarm.Global {
		return swarmtypes.ServiceMode{Global: &swarmtypes.GlobalService{}}
	}
	n := uint64(max(s.Replicas, 0))
	return swarmtypes.ServiceMode{Replicated: &swarmtypes.ReplicatedService{Replicas: &n}}
}

// updateConfig is the model's rolling update (maxSurge > 0 starts new
// tasks first, like compose's start-first) with Swarm's failure handling
// from update_config on top.
func updateConfig(s *manifest.ServiceSpec) *swarmtypes.UpdateConfig {
	u := s.Update
	base := swarmtypes.UpdateConfig{Parallelism: uint64(max(u.MaxSurge, u.MaxUnavailable, 1)), Delay: u.Delay, Order: swarmtypes.UpdateOrderStopFirst}
	if u.MaxSurge > 0 {
		base.Order = swarmtypes.UpdateOrderStartFirst
	}
	if u.Strategy == manifest.StrategyRecreate {
		base.Parallelism = 0 // all at once
	}
	if s.Swarm == nil {
		return &base
	}
	su := s.Swarm.Update
	su.Parallelism, su.Delay, su.Order = 0, 0, "" // the model's Update holds them
	return swarmUpdate(su, base)
}

func swarmUpdate(u manifest.SwarmUpdate, base swarmtypes.UpdateConfig) *swarmtypes.UpdateConfig {
	out := base
	if u.Parallelism != 0 {
		out.Parallelism = u.Parallelism
	}
	if u.Delay != 0 {
		out.Delay = u.Delay
	}
	if u.Order != "" {
		out.Order = swarmtypes.UpdateOrder(u.Order)
	}
	out.FailureAction = swarmtypes.FailureAction(u.FailureAction)
	out.Monitor = u.Monitor
	out.MaxFailureRatio = u.MaxFailureRatio
	return &out
}

func endpoint(s *manifest.ServiceSpec) *swarmtypes.EndpointSpec {
	var ports []swarmtypes.PortConfig
	for _, p := range s.Ports {
		if !p.Published() {
			continue // expose only: reachable on the overlay networks anyway
		}
		// PublishedPort 0 (AnyHostPort): Swarm picks one from 30000-32767.
		ports = append(ports, swarmtypes.PortConfig{Protocol: network.IPProtocol(p.Protocol), TargetPort: uint32(p.ContainerPort),
			PublishedPort: uint32(p.HostPort), PublishMode: swarmtypes.PortConfigPublishModeIngress})
	}
	if len(ports) == 0 {
		return nil
	}
	return &swarmtypes.EndpointSpec{Mode: swarmtypes.ResolutionModeVIP, Ports: ports}
}
