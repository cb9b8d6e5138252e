// Package engineapi is the part of the Docker client deploy uses, and the
// decorator that gives each of its requests that answers at once a
// deadline of its own (deploy's --request-timeout).
package engineapi

import (
	"context"
	"time"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
	"github.com/driftless-dev/driftless/deploy/jobrun"
)

// API is the part of the Docker client deploy uses. It is kept narrow
// so the pure parts can be tested without an engine; *client.Client
// satisfies it. It embeds what a job run needs (jobrun.API: container
// list, inspect, create, start, stop, remove and logs, network connect).
type API interface {
	jobrun.API

	Ping(ctx context.Context, options client.PingOptions) (client.PingResult, error)
	DaemonHost() string
	Close() error

	ContainerRename(ctx context.Context, id string, options client.ContainerRenameOptions) (client.ContainerRenameResult, error)
	ContainerUpdate(ctx context.Context, id string, options client.ContainerUpdateOptions) (client.ContainerUpdateResult, error)

	NetworkList(ctx context.Context, options client.NetworkListOptions) (client.NetworkListResult, error)
	NetworkCreate(ctx context.Context, name string, options client.NetworkCreateOptions) (client.NetworkCreateResult, error)
	NetworkDisconnect(ctx context.Context, networkID string, options client.NetworkDisconnectOptions) (client.NetworkDisconnectResult, error)
	NetworkInspect(ctx context.Context, networkID string, options client.NetworkInspectOptions) (client.NetworkInspectResult, error)
	NetworkRemove(ctx context.Context, networkID string, options client.NetworkRemoveOptions) (client.NetworkRemoveResult, error)

	VolumeList(ctx context.Context, options client.VolumeListOptions) (client.VolumeListResult, error)
	VolumeCreate(ctx context.Context, options client.VolumeCreateOptions) (client.VolumeCreateResult, error)
	VolumeInspect(ctx context.Context, volumeID string, options client.VolumeInspectOptions) (client.VolumeInspectResult, error)
	VolumeRemove(ctx context.Context, volumeID string, options client.VolumeRemoveOptions) (client.VolumeRemoveResult, error)

	ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ImagePull(ctx context.Context, ref string, options client.ImagePullOptions) (client.ImagePullResponse, error)
	ImageImport(ctx context.Context, source client.ImageImportSource, ref string, options client.ImageImportOptions) (client.ImageImportResult, error)
	ImageRemove(ctx context.Context, ref string, options client.ImageRemoveOptions) (client.ImageRemoveResult, error)
	DistributionInspect(ctx context.Context, ref string, options client.DistributionInspectOptions) (client.DistributionInspectResult, error)

	Events(ctx context.Context, options client.EventsListOptions) client.EventsResult

	// Lifecycle hooks (deploy/hookrun).
	ExecCreate(ctx context.Context, containerID string, options client.ExecCreateOptions) (client.ExecCreateResult, error)
	ExecAttach(ctx context.Context, execID string, options client.ExecAttachOptions) (client.ExecAttachResult, error)
	ExecInspect(ctx context.Context, execID string, options client.ExecInspectOptions) (client.ExecInspectResult, error)
}

// Bounded gives each request that answers at once (lists, inspects,
// creates, starts, removes, renames, network and volume changes) a
// deadline of its own, on top of the caller's context. A request that
// misses it fails as the engine not answering (drift.ErrEngineUnreachable),
// so the loop retries the pass soon and the status says which request the
// engine left unanswered. Streams (events, logs, pulls, imports) have no
// deadline: they last as long as they carry data. A stop gets its grace
// period on top: the engine answers it once the container has stopped.
type Bounded struct {
	API
	timeout time.Duration
}

// Bound wraps api with a deadline of timeout on each request that answers
// at once.
func Bound(api API, timeout time.Duration) *Bounded {
	return &Bounded{API: api, timeout: timeout}
}

// bounded calls f with a deadline of the engine's timeout plus extra.
func bounded[T any](b *Bounded, ctx context.Context, op string, extra time.Duration, f func(context.Context) (T, error)) (T, error) {
	return engineerr.Bounded(ctx, b.timeout+extra, b.DaemonHost, op, f)
}

func (b *Bounded) ContainerList(ctx context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	return bounded(b, ctx, "GET /containers/json", 0, func(ctx context.Context) (client.ContainerListResult, error) {
		return b.API.ContainerList(ctx, o)
	})
}

func (b *Bounded) ContainerInspect(ctx context.Context, id string, o client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	return bounded(b, ctx, "GET /containers/{id}/json", 0, func(ctx context.Context) (client.ContainerInspectResult, error) {
		return b.API.ContainerInspect(ctx, id, o)
	})
}

func (b *Bounded) ContainerCreate(ctx context.Context, o client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	return bounded(b, ctx, "POST /containers/create", 0, func(ctx context.Context) (client.ContainerCreateResult, error) {
		return b.API.ContainerCreate(ctx, o)
	})
}

func (b *Bounded) ContainerStart(ctx context.Context, id string, o client.ContainerStartOptions) (client.ContainerStartResult, error) {
	return bounded(b, ctx, "POST /containers/{id}/start", 0, func(ctx context.Context) (client.ContainerStartResult, error) {
		return b.API.ContainerStart(ctx, id, o)
	})
}

// ContainerStop waits for the grace period on top; with none given (the
// container's own stop timeout, unknown here) or a negative one (wait for
// ever), the stop is not bounded.
func (b *Bounded) ContainerStop(ctx context.Context, id string, o client.ContainerStopOptions) (client.ContainerStopResult, error) {
	if o.Timeout == nil || *o.Timeout < 0 {
		return b.API.ContainerStop(ctx, id, o)
	}
	return bounded(b, ctx, "POST /containers/{id}/stop", time.Duration(*o.Timeout)*time.Second, func(ctx context.Context) (client.ContainerStopResult, error) {
		return b.API.ContainerStop(ctx, id, o)
	})
}

func (b *Bounded) ContainerRemove(ctx context.Context, id string, o client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	return bounded(b, ctx, "DELETE /containers/{id}", 0, func(ctx context.Context) (client.ContainerRemoveResult, error) {
		return b.API.ContainerRemove(ctx, id, o)
	})
}

func (b *Bounded) ExecCreate(ctx context.Context, id string, o client.ExecCreateOptions) (client.ExecCreateResult, error) {
	return bounded(b, ctx, "POST /containers/{id}/exec", 0, func(ctx context.Context) (client.ExecCreateResult, error) {
		return b.API.ExecCreate(ctx, id, o)
	})
}

func (b *Bounded) ExecInspect(ctx context.Context, id string, o client.ExecInspectOptions) (client.ExecInspectResult, error) {
	return bounded(b, ctx, "GET /exec/{id}/json", 0, func(ctx context.Context) (client.ExecInspectResult, error) {
		return b.API.ExecInspect(ctx, id, o)
	})
}

func (b *Bounded) ContainerRename(ctx context.Context, id string, o client.ContainerRenameOptions) (client.ContainerRenameResult, error) {
	return bounded(b, ctx, "POST /containers/{id}/rename", 0, func(ctx context.Context) (client.ContainerRenameResult, error) {
		return b.API.ContainerRename(ctx, id, o)
	})
}

func (b *Bounded) ContainerUpdate(ctx context.Context, id string, o client.ContainerUpdateOptions) (client.ContainerUpdateResult, error) {
	return bounded(b, ctx, "POST /containers/{id}/update", 0, func(ctx context.Context) (client.ContainerUpdateResult, error) {
		return b.API.ContainerUpdate(ctx, id, o)
	})
}

func (b *Bounded) CopyToContainer(ctx context.Context, id string, o client.CopyToContainerOptions) (client.CopyToContainerResult, error) {
	return bounded(b, ctx, "PUT /containers/{id}/archive", 0, func(ctx context.Context) (client.CopyToContainerResult, error) {
		return b.API.CopyToContainer(ctx, id, o)
	})
}

func (b *Bounded) NetworkList(ctx context.Context, o client.NetworkListOptions) (client.NetworkListResult, error) {
	return bounded(b, ctx, "GET /networks", 0, func(ctx context.Context) (client.NetworkListResult, error) {
		return b.API.NetworkList(ctx, o)
	})
}

func (b *Bounded) NetworkInspect(ctx context.Context, id string, o client.NetworkInspectOptions) (client.NetworkInspectResult, error) {
	return bounded(b, ctx, "GET /networks/{id}", 0, func(ctx context.Context) (client.NetworkInspectResult, error) {
		return b.API.NetworkInspect(ctx, id, o)
	})
}

func (b *Bounded) NetworkCreate(ctx context.Context, name string, o client.NetworkCreateOptions) (client.NetworkCreateResult, error) {
	return bounded(b, ctx, "POST /networks/create", 0, func(ctx context.Context) (client.NetworkCreateResult, error) {
		return b.API.NetworkCreate(ctx, name, o)
	})
}

func (b *Bounded) NetworkConnect(ctx context.Context, id string, o client.NetworkConnectOptions) (client.NetworkConnectResult, error) {
	return bounded(b, ctx, "POST /networks/{id}/connect", 0, func(ctx context.Context) (client.NetworkConnectResult, error) {
		return b.API.NetworkConnect(ctx, id, o)
	})
}

func (b *Bounded) NetworkDisconnect(ctx context.Context, id string, o client.NetworkDisconnectOptions) (client.NetworkDisconnectResult, error) {
	return bounded(b, ctx, "POST /networks/{id}/disconnect", 0, func(ctx context.Context) (client.NetworkDisconnectResult, error) {
		return b.API.NetworkDisconnect(ctx, id, o)
	})
}

func (b *Bounded) NetworkRemove(ctx context.Context, id string, o client.NetworkRemoveOptions) (client.NetworkRemoveResult, error) {
	return bounded(b, ctx, "DELETE /networks/{id}", 0, func(ctx context.Context) (client.NetworkRemoveResult, error) {
		return b.API.NetworkRemove(ctx, id, o)
	})
}

func (b *Bounded) VolumeList(ctx context.Context, o client.VolumeListOptions) (client.VolumeListResult, error) {
	return bounded(b, ctx, "GET /volumes", 0, func(ctx context.Context) (client.VolumeListResult, error) {
		return b.API.VolumeList(ctx, o)
	})
}

func (b *Bounded) VolumeInspect(ctx context.Context, id string, o client.VolumeInspectOptions) (client.VolumeInspectResult, error) {
	return bounded(b, ctx, "GET /volumes/{name}", 0, func(ctx context.Context) (client.VolumeInspectResult, error) {
		return b.API.VolumeInspect(ctx, id, o)
	})
}

func (b *Bounded) VolumeCreate(ctx context.Context, o client.VolumeCreateOptions) (client.VolumeCreateResult, error) {
	return bounded(b, ctx, "POST /volumes/create", 0, func(ctx context.Context) (client.VolumeCreateResult, error) {
		return b.API.VolumeCreate(ctx, o)
	})
}

func (b *Bounded) VolumeRemove(ctx context.Context, id string, o client.VolumeRemoveOptions) (client.VolumeRemoveResult, error) {
	return bounded(b, ctx, "DELETE /volumes/{name}", 0, func(ctx context.Context) (client.VolumeRemoveResult, error) {
		return b.API.VolumeRemove(ctx, id, o)
	})
}

func (b *Bounded) ImageInspect(ctx context.Context, ref string, o ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	return bounded(b, ctx, "GET /images/{name}/json", 0, func(ctx context.Context) (client.ImageInspectResult, error) {
		return b.API.ImageInspect(ctx, ref, o...)
	})
}

func (b *Bounded) ImageRemove(ctx context.Context, ref string, o client.ImageRemoveOptions) (client.ImageRemoveResult, error) {
	return bounded(b, ctx, "DELETE /images/{name}", 0, func(ctx context.Context) (client.ImageRemoveResult, error) {
		return b.API.ImageRemove(ctx, ref, o)
	})
}
