package pipeline

import (
	"context"
	"errors"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// Backend is where an app runs, as the pipeline drives it: it builds the
// images the app declares, renders what the differ compares, and carries
// out a plan. Every capability is a method; a back end without one embeds
// the explicit no-op (NoBuilds, NoRender), so that no caller has to find
// it by type assertion and none can forget to.
//
// Observing is not here: the agent looks at everything that runs (its
// status shows other apps' conflicts), a one-shot command only at what
// its plan can run into; each front end declares the method it calls.
type Backend interface {
	Builder
	Renderer
	Apply(ctx context.Context, desired *manifest.App, plan drift.Plan, opts drift.ApplyOptions) drift.ApplyResult
}

// Builder builds the images an app declares with build:.
type Builder interface {
	// EnsureImages builds the app's missing images; a build that fails
	// on its own is a *drift.BuildError.
	EnsureImages(ctx context.Context, app *manifest.App, progress func(drift.BuildEvent)) error
}

// Renderer renders the app's declared services as the back end sends
// them (drift.Options.SwarmSpecs); nil when it has nothing to render.
type Renderer interface {
	SwarmSpecs(app *manifest.App) map[string]drift.SwarmSpec
}

// NoBuilds is a back end that cannot build images: a revision with
// builds is refused, saying so.
type NoBuilds struct{}

// EnsureImages fails as a build does, so that the revision is refused
// rather than retried.
func (NoBuilds) EnsureImages(context.Context, *manifest.App, func(drift.BuildEvent)) error {
	return &drift.BuildError{Image: "(all)", Err: errors.New("this engine cannot build images")}
}

// NoRender is a back end with nothing to render: one engine's containers
// are compared by their spec hash, and for Swarm services without a
// rendering only the image and the replica count are compared.
type NoRender struct{}

// SwarmSpecs is nil.
func (NoRender) SwarmSpecs(*manifest.App) map[string]drift.SwarmSpec { return nil }
