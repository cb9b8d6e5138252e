package deploy

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
	"github.com/driftless-dev/driftless/deploy/logstream"
	"github.com/driftless-dev/driftless/drift"
)

// LogTargets resolves what to show logs of: a container name, or a
// service name (all its replicas), among the app's own containers; "" =
// every container of the app. Names are sorted.
func (e *Engine) LogTargets(ctx context.Context, app, name string) ([]string, error) {
	res, err := e.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", drift.LabelApp+"="+app)})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	cs := make([]drift.Container, 0, len(res.Items))
	for _, s := range res.Items {
		cs = append(cs, dockerspec.ContainerFromSummary(s))
	}
	return logstream.MatchTargets(cs, app, name)
}

// StreamLogs writes the last lines of one of app's containers to emit, then,
// with Follow, new lines as they come until ctx ends or the container
// stops. The container must carry the app's label (logstream.ErrNotOwned
// otherwise). Values of the keys its spec marks secretEnv are redacted.
// emit returning an error ends the stream with it.
func (e *Engine) StreamLogs(ctx context.Context, app, container string, opts logstream.Options, emit func(logstream.Line) error) error {
	res, err := e.api.ContainerInspect(ctx, container, client.ContainerInspectOptions{})
	if err != nil {
		if engineerr.IsNotFound(err) {
			return fmt.Errorf("container %q of app %s: %w", container, app, logstream.ErrNotOwned)
		}
		return fmt.Errorf("inspect %s: %w", container, err)
	}
	c := res.Container
	if c.Config == nil || c.Config.Labels[drift.LabelApp] != app {
		return fmt.Errorf("container %q of app %s: %w", container, app, logstream.ErrNotOwned)
	}
	var secretKeys []string
	if spec := dockerspec.ParseSpecLabel(c.Config.Labels[drift.LabelSpec]); spec != nil {
		secretKeys = spec.SecretEnv
	}
	red := logstream.NewRedactor(c.Config.Env, secretKeys)
	tail := opts.Tail
	if tail <= 0 {
		tail = logstream.DefaultTail
	}
	tail = min(tail, logstream.MaxTail)
	rc, err := e.api.ContainerLogs(ctx, c.ID, client.ContainerLogsOptions{
		ShowStdout: true, ShowStderr: true, Follow: opts.Follow, Tail: strconv.Itoa(tail),
	})
	if err != nil {
		return fmt.Errorf("logs of %s: %w", container, err)
	}
	// Closing the stream when ctx ends unblocks the demultiplexer.
	stop := context.AfterFunc(ctx, func() { rc.Close() })
	defer stop()
	defer rc.Close()
	return logstream.DemuxLines(rc, func(stream, text string) error {
		return emit(logstream.Line{Container: strings.TrimPrefix(c.Name, "/"), Stream: stream, Text: red.Line(text)})
	}, ctx.Err)
}
