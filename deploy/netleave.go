package deploy

import (
	"context"
	"maps"
	"slices"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// holdNetworks holds the networks of a container about to be stopped,
// removed or disconnected (see netleave): until release, no other such
// call of this engine makes a container leave them. On an engine without
// the deadlock it returns at once.
func (e *Engine) holdNetworks(ctx context.Context, ns *container.NetworkSettings) (release func(), err error) {
	if ns == nil {
		return func() {}, nil
	}
	return e.leave.Hold(ctx, slices.Collect(maps.Keys(ns.Networks)))
}

// forceRemove removes a running container by id, holding its networks;
// the inspect that names them is sent only on an engine with the deadlock.
func (e *Engine) forceRemove(ctx context.Context, id string) error {
	release := func() {}
	if e.leave.Affected(ctx) {
		if c, err := e.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil {
			if release, err = e.holdNetworks(ctx, c.Container.NetworkSettings); err != nil {
				return err
			}
		}
	}
	defer release()
	_, err := e.api.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	return err
}

// disconnect disconnects a container from a network (by ID or name),
// holding the network by name.
func (e *Engine) disconnect(ctx context.Context, network, name, containerID string) error {
	release, err := e.leave.Hold(ctx, []string{name})
	if err != nil {
		return err
	}
	defer release()
	_, err = e.api.NetworkDisconnect(ctx, network, client.NetworkDisconnectOptions{Container: containerID, Force: true})
	return err
}
