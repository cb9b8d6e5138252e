package swarm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	swarmtypes "github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy"
	deployregistry "github.com/driftless-dev/driftless/deploy/registry"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// Builder builds and pushes images on the manager's own engine (the one
// DOCKER_HOST names); *deploy.Engine is one. The Swarm back end reuses
// the one engine's content-addressed builds: an unchanged context is
// never rebuilt.
type Builder interface {
	EnsureImages(ctx context.Context, app *manifest.App, progress func(drift.BuildEvent)) error
	PushImage(ctx context.Context, app, ref string, progress deploy.PullProgress) error
}

// EnsureImages builds the images the app declares with build: on the
// manager, and pushes each one whose image: names a registry, so that
// every node can pull it. A Swarm of one node runs what the manager
// built; with several nodes a build that has no registry to go to is
// refused (a *drift.BuildError saying what to set) before anything is
// built, since the other nodes could never pull it. A push is made once
// per image and agent run: the tag is content-addressed, so an image
// pushed once stays right.
func (e *Engine) EnsureImages(ctx context.Context, app *manifest.App, progress func(drift.BuildEvent)) error {
	if len(app.Builds) == 0 {
		return nil
	}
	if progress == nil {
		progress = func(drift.BuildEvent) {}
	}
	if e.opts.Builder == nil {
		return &drift.BuildError{Image: "(all)", Err: errors.New("this connection to the Swarm manager has no engine to build on")}
	}
	nodes, err := e.api.NodeList(ctx, client.NodeListOptions{})
	if err != nil {
		return e.unreachable(err)
	}
	if err := buildsReachNodes(app, activeNodes(nodes.Items)); err != nil {
		return err
	}
	if err := e.opts.Builder.EnsureImages(ctx, app, progress); err != nil {
		return err
	}
	for _, ref := range slices.Sorted(maps.Keys(app.Builds)) {
		if err := e.push(ctx, app.Name, app.Builds[ref], progress); err != nil {
			return err
		}
	}
	return nil
}

// push pushes a built image to the registry its image: names, unless it
// has none or this agent pushed it already. A registry that refused the
// push (credentials, a certificate) refuses the revision with what to
// fix; one that cannot be reached is retried.
func (e *Engine) push(ctx context.Context, app string, bc *manifest.BuildContext, progress func(drift.BuildEvent)) error {
	registry := bc.PushRegistry()
	if registry == "" {
		return nil
	}
	e.mu.Lock()
	done := e.pushed[bc.Ref]
	e.mu.Unlock()
	if done {
		return nil
	}
	ev := drift.BuildEvent{Image: bc.Ref, Services: bc.Services, Phase: drift.BuildPush, Line: "to " + registry}
	progress(ev)
	err := e.opts.Builder.PushImage(ctx, app, bc.Ref, func(line string) {
		ev.Line = line
		progress(ev)
	})
	var pe *deployregistry.PushError
	switch {
	case errors.As(err, &pe) && pe.Kind != deployregistry.PullUnreachable:
		return &drift.BuildError{Image: bc.Ref, Services: bc.Services, Step: "push to " + registry, Err: err,
			Hint: "the other nodes of the Swarm pull the image from " + registry + ": fix the registry or the credentials driftless pushes with, then push a new commit or restart the agent"}
	case err != nil:
		return err
	}
	e.log.Info("pushed image so every node can pull it", "app", app, "image", bc.Ref, "registry", registry)
	e.mu.Lock()
	e.pushed[bc.Ref] = true
	e.mu.Unlock()
	return nil
}

// activeNodes counts the nodes Swarm may place tasks on (availability
// active), down or not: a node that is down now may come back and be
// given a task. At least one, the manager itself.
func activeNodes(nodes []swarmtypes.Node) int {
	n := 0
	for _, nd := range nodes {
		if nd.Spec.Availability == swarmtypes.NodeAvailabilityActive {
			n++
		}
	}
	return max(n, 1)
}

// buildsReachNodes refuses, with a Swarm of several nodes, the first
// build whose image has no registry to be pushed to: only the manager
// would have it, and a task placed on another node would never start.
func buildsReachNodes(app *manifest.App, nodes int) error {
	if nodes <= 1 {
		return nil
	}
	for _, ref := range slices.Sorted(maps.Keys(app.Builds)) {
		bc := app.Builds[ref]
		if bc.PushRegistry() != "" {
			continue
		}
		svc := bc.Services[0]
		example := "registry.example.com/" + app.Name + "/" + svc
		if bc.Build.Image != "" {
			example = "registry.example.com/" + strings.TrimPrefix(bc.Build.Image, "docker.io/")
		}
		return &drift.BuildError{Image: ref, Services: bc.Services,
			Err: fmt.Errorf("the Swarm has %d nodes that can run tasks, and an image built on the manager exists only there", nodes),
			Hint: fmt.Sprintf("name a registry in the image: of %s (for example image: %s) so that driftless pushes each build there and every node pulls it",
				strings.Join(bc.Services, ", "), example)}
	}
	return nil
}
