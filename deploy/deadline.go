package deploy

import (
	"context"
	"time"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
)

// DefaultRequestTimeout is Options.RequestTimeout's default. An engine
// that answers at all answers a create, start or inspect in well under a
// second; a loaded two-core machine took tens of seconds. Two minutes
// leaves that room and still ends a pass that would otherwise wait for
// ever on a daemon that accepts connections and never answers (a
// deadlock in dockerd, a remote host whose link went silent).
const DefaultRequestTimeout = 2 * time.Minute

// boundedAPI gives each request that answers at once (lists, inspects,
// creates, starts, removes, renames, network and volume changes) a
// deadline of its own, on top of the caller's context. A request that
// misses it fails as the engine not answering (drift.ErrEngineUnreachable),
// so the loop retries the pass soon and the status says which request the
// engine left unanswered. Streams (events, logs, pulls, imports) have no
// deadline: they last as long as they carry data. A stop gets its grace
// period on top: the engine answers it once the container has stopped.
type boundedAPI struct {
	dockerAPI
	timeout time.Duration
}

// bounded calls f with a deadline of the engine's timeout plus extra.
func bounded[T any](b *boundedAPI, ctx context.Context, op string, extra time.Duration, f func(context.Context) (T, error)) (T, error) {
	return engineerr.Bounded(ctx, b.timeout+extra, b.DaemonHost, op, f)
}

func (b *boundedAPI) ContainerList(ctx context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	return bounded(b, ctx, "GET /containers/json", 0, func(ctx context.Context) (client.ContainerListResult, error) {
		return b.dockerAPI.ContainerList(ctx, o)
	})
}

func (b *boundedAPI) ContainerInspect(ctx context.Context, id string, o client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	return bounded(b, ctx, "GET /containers/{id}/json", 0, func(ctx context.Context) (client.ContainerInspectResult, error) {
		return b.dockerAPI.ContainerInspect(ctx, id, o)
	})
}

func (b *boundedAPI) ContainerCreate(ctx context.Context, o client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	return bounded(b, ctx, "POST /containers/create", 0, func(ctx context.Context) (client.ContainerCreateResult, error) {
		return b.dockerAPI.ContainerCreate(ctx, o)
	})
}

func (b *boundedAPI) ContainerStart(ctx context.Context, id string, o client.ContainerStartOptions) (client.ContainerStartResult, error) {
	return bounded(b, ctx, "POST /containers/{id}/start", 0, func(ctx context.Context) (client.ContainerStartResult, error) {
		return b.dockerAPI.ContainerStart(ctx, id, o)
	})
}

// ContainerStop waits for the grace period on top; with none given (the
// container's own stop timeout, unknown here) or a negative one (wait for
// ever), the stop is not bounded.
func (b *boundedAPI) ContainerStop(ctx context.Context, id string, o client.ContainerStopOptions) (client.ContainerStopResult, error) {
	if o.Timeout == nil || *o.Timeout < 0 {
		return b.dockerAPI.ContainerStop(ctx, id, o)
	}
	return bounded(b, ctx, "POST /containers/{id}/stop", time.Duration(*o.Timeout)*time.Second, func(ctx context.Context) (client.ContainerStopResult, error) {
		return b.dockerAPI.ContainerStop(ctx, id, o)
	})
}

func (b *boundedAPI) ContainerRemove(ctx context.Context, id string, o client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	return bounded(b, ctx, "DELETE /containers/{id}", 0, func(ctx context.Context) (client.ContainerRemoveResult, error) {
		return b.dockerAPI.ContainerRemove(ctx, id, o)
	})
}

func (b *boundedAPI) ContainerRename(ctx context.Context, id string, o client.ContainerRenameOptions) (client.ContainerRenameResult, error) {
	return bounded(b, ctx, "POST /containers/{id}/rename", 0, func(ctx context.Context) (client.ContainerRenameResult, error) {
		return b.dockerAPI.ContainerRename(ctx, id, o)
	})
}

func (b *boundedAPI) ContainerUpdate(ctx context.Context, id string, o client.ContainerUpdateOptions) (client.ContainerUpdateResult, error) {
	return bounded(b, ctx, "POST /containers/{id}/update", 0, func(ctx context.Context) (client.ContainerUpdateResult, error) {
		return b.dockerAPI.ContainerUpdate(ctx, id, o)
	})
}

func (b *boundedAPI) CopyToContainer(ctx context.Context, id string, o client.CopyToContainerOptions) (client.CopyToContainerResult, error) {
	return bounded(b, ctx, "PUT /containers/{id}/archive", 0, func(ctx context.Context) (client.CopyToContainerResult, error) {
		return b.dockerAPI.CopyToContainer(ctx, id, o)
	})
}

func (b *boundedAPI) NetworkList(ctx context.Context, o client.NetworkListOptions) (client.NetworkListResult, error) {
	return bounded(b, ctx, "GET /networks", 0, func(ctx context.Context) (client.NetworkListResult, error) {
		return b.dockerAPI.NetworkList(ctx, o)
	})
}

func (b *boundedAPI) NetworkInspect(ctx context.Context, id string, o client.NetworkInspectOptions) (client.NetworkInspectResult, error) {
	return bounded(b, ctx, "GET /networks/{id}", 0, func(ctx context.Context) (client.NetworkInspectResult, error) {
		return b.dockerAPI.NetworkInspect(ctx, id, o)
	})
}

func (b *boundedAPI) NetworkCreate(ctx context.Context, name string, o client.NetworkCreateOptions) (client.NetworkCreateResult, error) {
	return bounded(b, ctx, "POST /networks/create", 0, func(ctx context.Context) (client.NetworkCreateResult, error) {
		return b.dockerAPI.NetworkCreate(ctx, name, o)
	})
}

func (b *boundedAPI) NetworkConnect(ctx context.Context, id string, o client.NetworkConnectOptions) (client.NetworkConnectResult, error) {
	return bounded(b, ctx, "POST /networks/{id}/connect", 0, func(ctx context.Context) (client.NetworkConnectResult, error) {
		return b.dockerAPI.NetworkConnect(ctx, id, o)
	})
}

func (b *boundedAPI) NetworkDisconnect(ctx context.Context, id string, o client.NetworkDisconnectOptions) (client.NetworkDisconnectResult, error) {
	return bounded(b, ctx, "POST /networks/{id}/disconnect", 0, func(ctx context.Context) (client.NetworkDisconnectResult, error) {
		return b.dockerAPI.NetworkDisconnect(ctx, id, o)
	})
}

func (b *boundedAPI) NetworkRemove(ctx context.Context, id string, o client.NetworkRemoveOptions) (client.NetworkRemoveResult, error) {
	return bounded(b, ctx, "DELETE /networks/{id}", 0, func(ctx context.Context) (client.NetworkRemoveResult, error) {
		return b.dockerAPI.NetworkRemove(ctx, id, o)
	})
}

func (b *boundedAPI) VolumeList(ctx context.Context, o client.VolumeListOptions) (client.VolumeListResult, error) {
	return bounded(b, ctx, "GET /volumes", 0, func(ctx context.Context) (client.VolumeListResult, error) {
		return b.dockerAPI.VolumeList(ctx, o)
	})
}

func (b *boundedAPI) VolumeInspect(ctx context.Context, id string, o client.VolumeInspectOptions) (client.VolumeInspectResult, error) {
	return bounded(b, ctx, "GET /volumes/{name}", 0, func(ctx context.Context) (client.VolumeInspectResult, error) {
		return b.dockerAPI.VolumeInspect(ctx, id, o)
	})
}

func (b *boundedAPI) VolumeCreate(ctx context.Context, o client.VolumeCreateOptions) (client.VolumeCreateResult, error) {
	return bounded(b, ctx, "POST /volumes/create", 0, func(ctx context.Context) (client.VolumeCreateResult, error) {
		return b.dockerAPI.VolumeCreate(ctx, o)
	})
}

func (b *boundedAPI) VolumeRemove(ctx context.Context, id string, o client.VolumeRemoveOptions) (client.VolumeRemoveResult, error) {
	return bounded(b, ctx, "DELETE /volumes/{name}", 0, func(ctx context.Context) (client.VolumeRemoveResult, error) {
		return b.dockerAPI.VolumeRemove(ctx, id, o)
	})
}

func (b *boundedAPI) ImageInspect(ctx context.Context, ref string, o ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	return bounded(b, ctx, "GET /images/{name}/json", 0, func(ctx context.Context) (client.ImageInspectResult, error) {
		return b.dockerAPI.ImageInspect(ctx, ref, o...)
	})
}

func (b *boundedAPI) ImageRemove(ctx context.Context, ref string, o client.ImageRemoveOptions) (client.ImageRemoveResult, error) {
	return bounded(b, ctx, "DELETE /images/{name}", 0, func(ctx context.Context) (client.ImageRemoveResult, error) {
		return b.dockerAPI.ImageRemove(ctx, ref, o)
	})
}
