package deploy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/driftless-dev/driftless/deploy/readiness"
	"github.com/driftless-dev/driftless/deploy/view"
	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/client"
)

// Observe lists the app's containers, networks and volumes: one list call
// each, filtered by the app label; no per-container inspect in the steady
// state. Readiness comes from the prober's cache. withForeign lists
// everything instead (still one call per kind), to also find foreign
// objects that may collide with the app's names or host ports, and the
// external networks and volumes the app uses: without it, those look
// missing to the differ.
//
// While the event stream is followed (Watch), Observe reads the engine
// view instead and makes no API call in the steady state. The one-shot
// CLI, which does not watch, uses ObserveForPlan.
//
// Either way a recent ping vouches for the engine first (see liveness.go):
// an engine known down is reported at once, and one that accepts
// connections and never answers costs a pass at most Options.PingTimeout,
// instead of a list that waits for ever.
func (e *Engine) Observe(ctx context.Context, app string, withForeign bool) (drift.Actual, error) {
	if e.view.IsLive() {
		return e.observeFromView(ctx, app, withForeign)
	}
	if err := e.pingRecent(ctx); err != nil {
		return drift.Actual{}, fmt.Errorf("observe app %s: %w", app, err)
	}
	return e.ObserveCold(ctx, app, withForeign)
}

// ObserveCold is Observe by listing the engine, whatever the view holds.
func (e *Engine) ObserveCold(ctx context.Context, app string, withForeign bool) (drift.Actual, error) {
	filters := make(client.Filters).Add("label", drift.LabelApp+"="+app)
	if withForeign {
		filters = nil
	}
	l, err := e.list(ctx, filters)
	if err != nil {
		return drift.Actual{}, engineErr(fmt.Errorf("observe app %s: %w", app, err))
	}
	actual := l.ByApp()[app]
	if withForeign {
		l.Foreign(app, &actual)
	}
	e.fillReadiness(ctx, actual.Containers, l.IPs(), func(c *readiness.Info) bool { return c.App == app })
	e.fillDigests(ctx, actual.Containers)
	return actual, nil
}

// engineErr marks an error that means the engine could not be reached or
// failed, so the loop retries soon instead of judging the app.
func engineErr(err error) error {
	if errors.Is(err, drift.ErrEngineUnreachable) {
		return err
	}
	if isEngineDown(err) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", drift.ErrEngineUnreachable, err)
	}
	return err
}

// ObserveAll lists every driftless-owned object in one call per kind and
// splits them by app.
func (e *Engine) ObserveAll(ctx context.Context) (map[string]drift.Actual, error) {
	l, err := e.list(ctx, make(client.Filters).Add("label", drift.LabelApp))
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	all := l.ByApp()
	var containers []drift.Container
	for _, a := range all {
		containers = append(containers, a.Containers...)
	}
	e.fillReadiness(ctx, containers, l.IPs(), func(*readiness.Info) bool { return true })
	// fillReadiness worked on a copy; write the results back by ID.
	byID := map[string]drift.Container{}
	for _, c := range containers {
		byID[c.ID] = c
	}
	for app, a := range all {
		for i := range a.Containers {
			a.Containers[i] = byID[a.Containers[i].ID]
		}
		all[app] = a
	}
	return all, nil
}

// list makes the three list calls; nil filters list everything.
func (e *Engine) list(ctx context.Context, filters client.Filters) (view.Listing, error) {
	return view.List(ctx, e.api, filters)
}

// firstProbeWait caps how long Observe waits for the first readiness
// answer of containers it has not seen before.
const firstProbeWait = 2 * time.Second

// fillReadiness brings the prober up to date with the listed containers
// (one inspect only for containers it has not seen or whose state changed),
// forgets vanished ones in scope, and copies the cached readiness in.
func (e *Engine) fillReadiness(ctx context.Context, containers []drift.Container, ips map[string]string, inScope func(*readiness.Info) bool) {
	e.fillReadinessFrom(ctx, containers, ips, inScope, true)
}

// fillReadinessFrom is fillReadiness; freshStatus says whether the
// containers' Status strings were just listed, so their uptime can reveal
// a restart whose events were missed.
func (e *Engine) fillReadinessFrom(ctx context.Context, containers []drift.Container, ips map[string]string, inScope func(*readiness.Info) bool, freshStatus bool) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, e.opts.Parallelism)
	keep := map[string]bool{}
	var firstSight []string
	for i := range containers {
		c := &containers[i]
		keep[c.ID] = true
		if !e.prober.Known(c.ID) {
			firstSight = append(firstSight, c.ID)
			e.seedFromMemo(c, ips[c.ID])
		}
		info := readiness.FromContainer(c, ips[c.ID])
		status := c.Status
		if !freshStatus {
			status = ""
		}
		if !e.prober.NeedsInspect(info, status) {
			e.prober.Update(info)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fresh, _, err := e.prober.Inspect(ctx, c.ID)
			if err != nil {
				// Gone between list and inspect, or the engine hiccupped:
				// the summary is still the best we know.
				e.log.Debug("inspect for readiness failed", "container", c.Name, "err", err)
				e.prober.Update(info)
				return
			}
			e.prober.Update(fresh)
		}()
	}
	wg.Wait()
	if len(firstSight) > 0 {
		// Bounded by the probes' own timeouts in practice; the cap keeps
		// a pass from stalling on a misconfigured probe.
		wctx, cancel := context.WithTimeout(ctx, firstProbeWait)
		e.prober.AwaitFirstProbes(wctx, firstSight)
		cancel()
	}
	e.prober.ForgetIf(func(id string, info *readiness.Info) bool { return !keep[id] && inScope(info) })
	for i := range containers {
		c := &containers[i]
		c.Ready, c.ReadyReason, c.RestartCount, _ = e.prober.Result(c.ID)
		c.Config = e.prober.Config(c.ID)
		c.StartedAt, c.FinishedAt = e.prober.Times(c.ID)
	}
}

// observeFromView is Observe's steady-state path: the view's listing, then
// the same grouping, foreign search and readiness as a cold list. Status
// strings in the view are as old as their last event, so readiness does
// not read the uptime from them (start events and the prober's periodic
// inspect catch restarts instead).
func (e *Engine) observeFromView(ctx context.Context, app string, withForeign bool) (drift.Actual, error) {
	// A recent ping, so a pass still finds an engine it can no longer
	// reach (its socket gone, the daemon shutting down) while the event
	// stream's connection, opened before, lives on.
	if err := e.pingRecent(ctx); err != nil {
		return drift.Actual{}, fmt.Errorf("observe app %s: %w", app, err)
	}
	actual, ips := e.view.ActualFor(app, withForeign)
	if refresh := e.view.TakeTouched(app); refresh || view.HasIdle(actual.Containers) {
		// After its own Apply, or with containers whose networks the
		// engine changes silently (see unannounced): one label-filtered
		// list per kind rather than trusting the view for this app.
		if err := e.view.RefreshApp(ctx, app); err != nil {
			return drift.Actual{}, engineErr(fmt.Errorf("observe app %s: %w", app, err))
		}
		actual, ips = e.view.ActualFor(app, withForeign)
	}
	e.fillReadinessFrom(ctx, actual.Containers, ips, func(c *readiness.Info) bool { return c.App == app }, false)
	e.fillDigests(ctx, actual.Containers)
	return actual, nil
}
