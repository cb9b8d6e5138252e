package swarm

import (
	"context"
	"time"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
)

// boundedAPI gives each request to the manager a deadline of its own (as
// deploy's engine does for one engine): one left unanswered fails the pass
// as the engine not answering, naming the request, instead of holding the
// app for as long as the connection stays open. The event stream has
// none; a rollout's wait is Options.RolloutTimeout, made of such requests.
type boundedAPI struct {
	api
	timeout time.Duration
}

func (b *boundedAPI) Ping(ctx context.Context, o client.PingOptions) (client.PingResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "HEAD /_ping", func(ctx context.Context) (client.PingResult, error) {
		return b.api.Ping(ctx, o)
	})
}

func (b *boundedAPI) Info(ctx context.Context, o client.InfoOptions) (client.SystemInfoResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "GET /info", func(ctx context.Context) (client.SystemInfoResult, error) {
		return b.api.Info(ctx, o)
	})
}

func (b *boundedAPI) ServiceList(ctx context.Context, o client.ServiceListOptions) (client.ServiceListResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "GET /services", func(ctx context.Context) (client.ServiceListResult, error) {
		return b.api.ServiceList(ctx, o)
	})
}

func (b *boundedAPI) ServiceInspect(ctx context.Context, id string, o client.ServiceInspectOptions) (client.ServiceInspectResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "GET /services/{id}", func(ctx context.Context) (client.ServiceInspectResult, error) {
		return b.api.ServiceInspect(ctx, id, o)
	})
}

func (b *boundedAPI) ServiceCreate(ctx context.Context, o client.ServiceCreateOptions) (client.ServiceCreateResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "POST /services/create", func(ctx context.Context) (client.ServiceCreateResult, error) {
		return b.api.ServiceCreate(ctx, o)
	})
}

func (b *boundedAPI) ServiceUpdate(ctx context.Context, id string, o client.ServiceUpdateOptions) (client.ServiceUpdateResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "POST /services/{id}/update", func(ctx context.Context) (client.ServiceUpdateResult, error) {
		return b.api.ServiceUpdate(ctx, id, o)
	})
}

func (b *boundedAPI) ServiceRemove(ctx context.Context, id string, o client.ServiceRemoveOptions) (client.ServiceRemoveResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "DELETE /services/{id}", func(ctx context.Context) (client.ServiceRemoveResult, error) {
		return b.api.ServiceRemove(ctx, id, o)
	})
}

func (b *boundedAPI) TaskList(ctx context.Context, o client.TaskListOptions) (client.TaskListResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "GET /tasks", func(ctx context.Context) (client.TaskListResult, error) {
		return b.api.TaskList(ctx, o)
	})
}

func (b *boundedAPI) NodeList(ctx context.Context, o client.NodeListOptions) (client.NodeListResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "GET /nodes", func(ctx context.Context) (client.NodeListResult, error) {
		return b.api.NodeList(ctx, o)
	})
}

func (b *boundedAPI) ConfigList(ctx context.Context, o client.ConfigListOptions) (client.ConfigListResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "GET /configs", func(ctx context.Context) (client.ConfigListResult, error) {
		return b.api.ConfigList(ctx, o)
	})
}

func (b *boundedAPI) ConfigCreate(ctx context.Context, o client.ConfigCreateOptions) (client.ConfigCreateResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "POST /configs/create", func(ctx context.Context) (client.ConfigCreateResult, error) {
		return b.api.ConfigCreate(ctx, o)
	})
}

func (b *boundedAPI) ConfigRemove(ctx context.Context, id string, o client.ConfigRemoveOptions) (client.ConfigRemoveResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "DELETE /configs/{id}", func(ctx context.Context) (client.ConfigRemoveResult, error) {
		return b.api.ConfigRemove(ctx, id, o)
	})
}

func (b *boundedAPI) SecretList(ctx context.Context, o client.SecretListOptions) (client.SecretListResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "GET /secrets", func(ctx context.Context) (client.SecretListResult, error) {
		return b.api.SecretList(ctx, o)
	})
}

func (b *boundedAPI) SecretCreate(ctx context.Context, o client.SecretCreateOptions) (client.SecretCreateResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "POST /secrets/create", func(ctx context.Context) (client.SecretCreateResult, error) {
		return b.api.SecretCreate(ctx, o)
	})
}

func (b *boundedAPI) SecretRemove(ctx context.Context, id string, o client.SecretRemoveOptions) (client.SecretRemoveResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "DELETE /secrets/{id}", func(ctx context.Context) (client.SecretRemoveResult, error) {
		return b.api.SecretRemove(ctx, id, o)
	})
}

func (b *boundedAPI) NetworkList(ctx context.Context, o client.NetworkListOptions) (client.NetworkListResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "GET /networks", func(ctx context.Context) (client.NetworkListResult, error) {
		return b.api.NetworkList(ctx, o)
	})
}

func (b *boundedAPI) NetworkCreate(ctx context.Context, name string, o client.NetworkCreateOptions) (client.NetworkCreateResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "POST /networks/create", func(ctx context.Context) (client.NetworkCreateResult, error) {
		return b.api.NetworkCreate(ctx, name, o)
	})
}

func (b *boundedAPI) NetworkRemove(ctx context.Context, id string, o client.NetworkRemoveOptions) (client.NetworkRemoveResult, error) {
	return engineerr.Bounded(ctx, b.timeout, b.DaemonHost, "DELETE /networks/{id}", func(ctx context.Context) (client.NetworkRemoveResult, error) {
		return b.api.NetworkRemove(ctx, id, o)
	})
}
