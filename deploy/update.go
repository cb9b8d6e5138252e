package deploy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// updateContainer puts the settings that can change on a running
// container back to the spec, without restarting it: its name, its limits
// and restart policy (docker update), its networks and aliases (connect).
// Every setting is set whatever it is now, so the step is idempotent.
func (r *run) updateContainer(ctx context.Context, s *step, svc *manifest.Service) error {
	c, err := r.ownedContainer(ctx, s.change.ID)
	if err != nil {
		return err
	}
	defer r.e.prober.MarkDirty(c.ID)
	spec := &svc.Spec
	stable := manifest.ContainerName(r.app, svc.Name, s.change.Slot)
	if name := strings.TrimPrefix(c.Name, "/"); name != stable && !strings.HasPrefix(name, stable+"-old-") {
		if _, err := r.e.api.ContainerRename(ctx, c.ID, client.ContainerRenameOptions{NewName: stable}); err != nil {
			return fmt.Errorf("rename %s back to %s: %w", name, stable, err)
		}
		r.emit(s, drift.PhaseStarted, "renamed back from "+name, nil)
	}
	if _, err := r.e.api.ContainerUpdate(ctx, c.ID, client.ContainerUpdateOptions{
		Resources:     updateResources(spec),
		RestartPolicy: dockerspec.RestartPolicy(spec),
	}); err != nil {
		return fmt.Errorf("update %s: %w", stable, err)
	}
	return r.reconnect(ctx, s, c, svc)
}

// updateResources are the limits docker update sets. Swap is set with the
// memory limit to Docker's default at create (twice the limit), so
// lowering memory below a swap limit raised outside Git cannot fail.
func updateResources(spec *manifest.ServiceSpec) *container.Resources {
	res := &container.Resources{
		Memory:            spec.Resources.MemoryBytes,
		NanoCPUs:          spec.Resources.NanoCPUs,
		MemoryReservation: spec.Resources.MemoryReservationBytes,
	}
	if res.Memory > 0 {
		res.MemorySwap = 2 * res.Memory
	}
	if spec.Resources.MemorySwapBytes != 0 {
		res.MemorySwap = spec.Resources.MemorySwapBytes
	}
	res.CPUShares = spec.Resources.CPUShares
	res.CpusetCpus = spec.Resources.CPUSet
	res.CPUPeriod = spec.Resources.CPUPeriod
	res.CPUQuota = spec.Resources.CPUQuota
	pids := spec.Resources.PidsLimit
	if pids <= 0 {
		pids = -1 // unlimited
	}
	res.PidsLimit = &pids
	return res
}

// reconnect attaches the container to every network of the spec with the
// spec's aliases, reattaching where an alias is missing.
func (r *run) reconnect(ctx context.Context, s *step, c container.InspectResponse, svc *manifest.Service) error {
	if svc.Spec.NetworkMode != "" {
		return nil
	}
	for _, n := range svc.Spec.Networks {
		docker := r.desired.NetworkDockerName(n)
		want := append([]string{svc.Name}, svc.Spec.Aliases[n]...)
		var ep *network.EndpointSettings
		if c.NetworkSettings != nil {
			ep = c.NetworkSettings.Networks[docker]
		}
		if ep != nil && containsAll(ep.Aliases, want) {
			continue
		}
		if ep != nil {
			if err := r.e.disconnect(ctx, docker, docker, c.ID); err != nil && !engineerr.IsNotFound(err) {
				return fmt.Errorf("disconnect %s from %s to restore its aliases: %w", s.change.Name, docker, err)
			}
		}
		if _, err := r.e.api.NetworkConnect(ctx, docker, client.NetworkConnectOptions{
			Container:      c.ID,
			EndpointConfig: &network.EndpointSettings{Aliases: want, Links: dockerspec.Links(r.named(), svc), IPAMConfig: dockerspec.EndpointIPAM(&svc.Spec, n)},
		}); err != nil {
			return fmt.Errorf("reconnect %s to network %s: %w", s.change.Name, docker, err)
		}
		r.emit(s, drift.PhaseStarted, "reconnected to network "+docker, nil)
	}
	return nil
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
