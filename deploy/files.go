package deploy

import (
	"context"
	"fmt"
	"time"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
)

// driftlessMounts lists, in one call, the host sources of every mount of
// every container of driftless, running or not.
func (e *Engine) driftlessMounts(ctx context.Context) ([]string, error) {
	res, err := e.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", drift.LabelApp)})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	var out []string
	for _, c := range res.Items {
		for _, m := range c.Mounts {
			out = append(out, m.Source)
		}
	}
	return out, nil
}

// RemoveUnusedFiles deletes the materialized repository trees and secret
// files no container of driftless mounts any more (see
// hostfiles.Store.RemoveUnusedFiles). An engine known down is skipped at
// once: the resync timer that calls this serves every engine.
func (e *Engine) RemoveUnusedFiles(ctx context.Context, minAge time.Duration) ([]string, error) {
	if err := e.pingRecent(ctx); err != nil {
		return nil, err
	}
	return e.files.RemoveUnusedFiles(ctx, minAge)
}
