package loop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/loopmetrics"
	"github.com/driftless-dev/driftless/sync/status"
)

// buildCandidate builds the images a new revision needs before it is
// planned. Its images are named after their contexts (see
// manifest.ResolveBuilds), so an unchanged context costs one inspect. A
// build that fails on its own refuses the revision, remembered with the
// parsed revision so that it is not built again until a new commit comes;
// the accepted revision keeps being enforced. false: the engine failed,
// and the pass ends.
func (p *pass) buildCandidate(ctx context.Context, cand *revisionState, o *passOutcome) (*revisionState, bool) {
	if cand == nil || cand.app == nil || len(cand.app.Builds) == 0 {
		return cand, true
	}
	err := p.ensureImages(ctx, cand)
	var be *drift.BuildError
	switch {
	case err == nil:
		return cand, true
	case errors.As(err, &be):
		cand.refusal = buildRefusal(cand, be)
		o.refusal = cand.refusal
		return nil, true
	case ctx.Err() != nil:
		return nil, false
	}
	o.engineErr = err
	return nil, false
}

// buildAccepted makes sure the enforced revision's images still exist
// before changes are applied: someone may have removed one. false: it
// could not be built, the apply is skipped and the pass ends with the
// error; the next pass tries again.
func (p *pass) buildAccepted(ctx context.Context, desired *revisionState, o *passOutcome) bool {
	if desired.app == nil || len(desired.app.Builds) == 0 || desired.built {
		return true
	}
	err := p.ensureImages(ctx, desired)
	var be *drift.BuildError
	switch {
	case err == nil:
		return true
	case errors.As(err, &be):
		// The revision was accepted once; refusing it now would leave
		// nothing to enforce. Retry with backoff, and say why.
		o.sourceErr = fmt.Errorf("revision %s: %w", desired.rev.Short(), err)
	case ctx.Err() == nil:
		o.engineErr = err
	}
	return false
}

// ensureImages builds rs's missing images, showing progress in the app's
// live status.
func (p *pass) ensureImages(ctx context.Context, rs *revisionState) error {
	defer p.a.metrics.ObservePhase(loopmetrics.PhaseBuild, time.Now())
	err := p.a.engineFor(p.in.cfg).EnsureImages(ctx, rs.app, func(ev drift.BuildEvent) { p.a.announceBuild(p.in.cfg.Name, rs, ev) })
	if err == nil {
		rs.built = true
	}
	return err
}

// buildRefusal is a failed build as a refused revision: the step that
// failed in the reason, the end of the build's output as its errors.
func buildRefusal(rs *revisionState, be *drift.BuildError) *status.Refusal {
	hint := cmp.Or(be.Hint, "fix the Dockerfile or its context in a new commit")
	r := &status.Refusal{Revision: rs.rev, Reason: be.Error() + "; " + hint}
	for _, l := range be.Tail {
		r.Errors = append(r.Errors, "build: "+l)
	}
	return r
}

// announceBuild shows a build under way in the app's live status, as
// announceApply does for a rollout: the step being run, then the end.
func (a *Agent) announceBuild(name string, rs *revisionState, ev drift.BuildEvent) {
	services := strings.Join(ev.Services, ", ")
	var msg string
	switch ev.Phase {
	case drift.BuildStart:
		msg = fmt.Sprintf("building %s for %s (revision %s)", ev.Image, services, rs.rev.Short())
		a.log.Info("building image", "app", name, "image", ev.Image, "services", ev.Services, "revision", rs.rev.Short())
	case drift.BuildLog:
		a.log.Debug("build output", "app", name, "image", ev.Image, "line", ev.Line)
		if !strings.HasPrefix(ev.Line, "Step ") {
			return // only the steps: the status is a headline, not a log
		}
		msg = fmt.Sprintf("building %s for %s: %s", ev.Image, services, ev.Line)
	case drift.BuildDone:
		msg = fmt.Sprintf("built %s for %s in %s", ev.Image, services, ev.Elapsed.Round(100_000_000))
		a.log.Info("built image", "app", name, "image", ev.Image, "elapsed", ev.Elapsed)
	case drift.BuildPush:
		msg = fmt.Sprintf("pushing %s for %s: %s", ev.Image, services, ev.Line)
		a.log.Debug("push", "app", name, "image", ev.Image, "line", ev.Line)
	default:
		return // an image that exists says nothing new
	}
	a.mu.Lock()
	st, ok := a.apps[name]
	if ok {
		st.status.Message = msg // status exception: build progress during a pass, replaced by its write
	}
	a.mu.Unlock()
	if ok {
		a.notify(name, "status")
	}
}

// shareBuildContexts makes app use the build contexts cached revisions
// already hold for the same image: a context is named by its content, and
// holding one copy per revision of a context that rarely changes would
// multiply the memory its files take by the cache's size.
func (c *revisionCache) shareBuildContexts(app *manifest.App) {
	if app == nil {
		return
	}
	for ref := range app.Builds {
		for _, other := range c.parsed {
			if other.app == nil {
				continue
			}
			if bc, ok := other.app.Builds[ref]; ok {
				app.Builds[ref] = bc
				break
			}
		}
	}
}
