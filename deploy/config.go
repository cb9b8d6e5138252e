package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/drift/manifest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// replicaConfig is everything needed to create one replica: the create
// call, plus the networks to connect before start (Docker attaches only
// one network at create time on API 1.41).
type replicaConfig struct {
	Create        client.ContainerCreateOptions
	ExtraNetworks []string // Docker network names, joined with the same alias
	Alias         string
}

// containerLabels are the labels on every replica: the service's metadata
// labels first, so driftless's own labels cannot be overridden by them.
func containerLabels(app string, svc *manifest.Service, slot int, revision string) (map[string]string, error) {
	spec, err := json.Marshal(svc.Spec.Redacted())
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
func resourceLabels(app, resource, hash, revision string, meta map[string]string) map[string]string {
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
func restartPolicy(spec *manifest.ServiceSpec) *container.RestartPolicy {
	name, retries := spec.DockerRestartPolicy()
	return &container.RestartPolicy{Name: container.RestartPolicyMode(name), MaximumRetryCount: retries}
}

// buildReplicaConfig turns a service spec into the Docker create call for
// one replica. It is pure.
func buildReplicaConfig(app string, svc *manifest.Service, slot int, revision string) (replicaConfig, error) {
	spec := svc.Spec
	labels, err := containerLabels(app, svc, slot, revision)
	if err != nil {
		return replicaConfig{}, err
	}
	cfg := &container.Config{
		Image:  spec.Image,
		Labels: labels,
		Env:    envList(spec.Env),
	}
	if len(spec.Command) > 0 {
		cfg.Entrypoint = slices.Clone(spec.Command)
	}
	if len(spec.Args) > 0 {
		cfg.Cmd = slices.Clone(spec.Args)
	}
	grace := spec.StopGracePeriodSeconds
	cfg.StopTimeout = &grace

	host := &container.HostConfig{
		RestartPolicy: *restartPolicy(&spec),
		Resources:     container.Resources{Memory: spec.Resources.MemoryBytes, NanoCPUs: spec.Resources.NanoCPUs},
	}
	for _, p := range spec.Ports {
		proto := network.IPProtocol(p.Protocol)
		if proto == "" {
			proto = network.TCP
		}
		port, ok := network.PortFrom(uint16(p.ContainerPort), proto)
		if !ok {
			return replicaConfig{}, fmt.Errorf("service %s: invalid port %s", svc.Name, p)
		}
		if cfg.ExposedPorts == nil {
			cfg.ExposedPorts = network.PortSet{}
		}
		cfg.ExposedPorts[port] = struct{}{}
		if p.HostPort != 0 {
			if host.PortBindings == nil {
				host.PortBindings = network.PortMap{}
			}
			host.PortBindings[port] = append(host.PortBindings[port], network.PortBinding{
				HostIP: netip.IPv4Unspecified(), HostPort: strconv.Itoa(p.HostPort),
			})
		}
	}
	for _, v := range spec.Volumes {
		host.Mounts = append(host.Mounts, mount.Mount{
			Type:     mount.TypeVolume,
			Source:   manifest.ObjectName(app, v.Name),
			Target:   v.MountPath,
			ReadOnly: v.ReadOnly,
		})
	}
	if r := spec.Readiness; r != nil && r.Exec != nil {
		// exec readiness is Docker's own healthcheck; driftless reads its
		// verdict instead of exec-ing into containers itself.
		cfg.Healthcheck = &container.HealthConfig{
			Test:        append([]string{"CMD"}, r.Exec.Command...),
			Interval:    secondsOr(r.PeriodSeconds, 10),
			Timeout:     secondsOr(r.TimeoutSeconds, 1),
			Retries:     max(r.FailureThreshold, 1),
			StartPeriod: time.Duration(r.InitialDelaySeconds) * time.Second,
		}
	}

	rc := replicaConfig{Alias: svc.Name}
	networks := spec.Networks
	if len(networks) == 0 {
		networks = []string{manifest.DefaultNetwork}
	}
	first := manifest.ObjectName(app, networks[0])
	host.NetworkMode = container.NetworkMode(first)
	netCfg := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
		first: {Aliases: []string{svc.Name}},
	}}
	for _, n := range networks[1:] {
		rc.ExtraNetworks = append(rc.ExtraNetworks, manifest.ObjectName(app, n))
	}
	rc.Create = client.ContainerCreateOptions{
		Name:             manifest.ContainerName(app, svc.Name, slot),
		Config:           cfg,
		HostConfig:       host,
		NetworkingConfig: netCfg,
	}
	return rc, nil
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
