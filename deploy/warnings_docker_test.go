package deploy_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
)

// What the engine warns of as it creates a replica is kept in the
// change's outcome (the history entry of a sync), exactly what the engine
// answers a create of the same settings: a kernel without IO weight
// discards a blkio weight with a warning, one with it takes the weight
// without.
func TestApplyKeepsTheEngineWarnings(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	probe, err := f.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: "probe-" + f.app, Image: f.image,
		HostConfig: &container.HostConfig{Resources: container.Resources{BlkioWeight: 300}}})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.cli.ContainerRemove(ctx, probe.ID, client.ContainerRemoveOptions{Force: true})

	desired := f.load(webYAML(1, "  resources: {blkio: {weight: 300}}\n"))
	res, _ := f.apply(desired, f.plan(desired, drift.Options{}))
	if res.Err != nil {
		t.Fatalf("apply: %v", res.Err)
	}
	var got []string
	for _, o := range res.Outcomes {
		if o.Change.Kind == drift.KindContainer {
			got = append(got, o.Warnings...)
		}
	}
	if !slices.Equal(got, probe.Warnings) {
		t.Errorf("outcome warnings %q; the engine's answer to the same create: %q", got, probe.Warnings)
	}
	t.Logf("the engine warned: %q", probe.Warnings)
}
