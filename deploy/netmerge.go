package deploy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
	"github.com/driftless-dev/driftless/drift"
)

// mergeNetwork removes a duplicate of one of the app's networks: a second
// network with the same Docker name, which makes every container start
// fail ("network … is ambiguous"). The differ chose the one to keep (the
// oldest, Change.MergeInto). Each container attached to the duplicate,
// running or not, is disconnected from it and connected to the kept one
// with the same aliases; then the duplicate is removed.
func (r *run) mergeNetwork(ctx context.Context, s *step) error {
	name, dupID, keptID := s.change.Name, s.change.ID, s.change.MergeInto
	dup, err := r.e.api.NetworkInspect(ctx, dupID, client.NetworkInspectOptions{})
	if engineerr.IsNotFound(err) {
		r.emit(s, drift.PhaseRemoved, "was already gone", nil)
		return nil
	} else if err != nil {
		return fmt.Errorf("inspect network %s (%s): %w", name, shortID(dupID), err)
	}
	kept, err := r.e.api.NetworkInspect(ctx, keptID, client.NetworkInspectOptions{})
	if err != nil {
		return fmt.Errorf("inspect network %s (%s), the one kept: %w", name, shortID(keptID), err)
	}
	for _, n := range []network.Inspect{dup.Network, kept.Network} {
		if n.Labels[drift.LabelApp] != r.app || n.Name != name {
			return fmt.Errorf("network %s (%s) is not driftless app %s's network %s; leaving it alone", n.Name, shortID(n.ID), r.app, name)
		}
	}
	moved, err := r.moveEndpoints(ctx, dup.Network, keptID)
	if err != nil {
		return err
	}
	r.e.probe.Detach(ctx, dupID)
	if _, err := r.e.api.NetworkRemove(ctx, dupID, client.NetworkRemoveOptions{}); err != nil && !engineerr.IsNotFound(err) {
		return fmt.Errorf("remove network %s (%s), a duplicate of %s: %w", name, shortID(dupID), shortID(keptID), err)
	}
	msg := "duplicate " + shortID(dupID) + " removed, " + shortID(keptID) + " kept"
	if len(moved) > 0 {
		msg += "; moved to it: " + strings.Join(moved, ", ")
	}
	r.e.log.Warn("removed a duplicate network", "network", name, "removed", shortID(dupID), "kept", shortID(keptID), "moved", moved)
	r.emit(s, drift.PhaseRemoved, msg, nil)
	return nil
}

// moveEndpoints moves every container on network dup to network keptID and
// returns their names. A running container shows in the network's
// endpoints; one that is not running has the network only in its config,
// where the list's network filter finds it by ID (it would fail to start
// once the duplicate is gone: Docker resolves its network by that ID).
func (r *run) moveEndpoints(ctx context.Context, dup network.Inspect, keptID string) ([]string, error) {
	ids := map[string]bool{}
	for id := range dup.Containers {
		ids[id] = true
	}
	res, err := r.e.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("network", dup.ID)})
	if err != nil {
		return nil, fmt.Errorf("list containers on network %s (%s): %w", dup.Name, shortID(dup.ID), err)
	}
	for _, c := range res.Items {
		ids[c.ID] = true
	}
	var moved []string
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		name, err := r.moveEndpoint(ctx, id, dup, keptID)
		if err != nil {
			return moved, err
		}
		if name != "" {
			moved = append(moved, name)
		}
	}
	return moved, nil
}

// moveEndpoint disconnects one container from dup and connects it to
// keptID with the aliases it had on dup; "" if the container is gone.
func (r *run) moveEndpoint(ctx context.Context, id string, dup network.Inspect, keptID string) (string, error) {
	res, err := r.e.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if engineerr.IsNotFound(err) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("inspect container %s on network %s: %w", shortID(id), dup.Name, err)
	}
	c := res.Container
	name := strings.TrimPrefix(c.Name, "/")
	var aliases []string
	if c.NetworkSettings != nil {
		for _, ep := range c.NetworkSettings.Networks {
			if ep != nil && ep.NetworkID == dup.ID {
				// Docker adds the container's short ID as an alias itself.
				aliases = slices.DeleteFunc(slices.Clone(ep.Aliases), func(a string) bool { return a == shortID(c.ID) })
			}
		}
	}
	if err := r.e.disconnect(ctx, dup.ID, dup.Name, c.ID); err != nil && !engineerr.IsNotFound(err) {
		return "", fmt.Errorf("disconnect %s from network %s (%s), a duplicate: %w", name, dup.Name, shortID(dup.ID), err)
	}
	ep := &network.EndpointSettings{Aliases: aliases}
	if _, err := r.e.api.NetworkConnect(ctx, keptID, client.NetworkConnectOptions{Container: c.ID, EndpointConfig: ep}); err != nil {
		return "", fmt.Errorf("connect %s to network %s (%s), moved from its duplicate: %w", name, dup.Name, shortID(keptID), err)
	}
	return name, nil
}
