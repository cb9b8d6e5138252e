package deploy

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// Apply carries out the plan's Changes (not Deferred or Conflicts) in a
// safe order: networks and volumes first; then services in the plan's
// (dependsOn) order, a service starting only once the services it depends
// on that have changes here have met its condition; independent services
// run concurrently; removed services' containers next; networks and
// volumes removed last. opts.Progress may be nil; calls to it are
// serialized. When opts.Stop closes, changes not yet begun are skipped
// (FailureStopped) and changes under way finish: a replace completes or
// puts the old replica back, never stops half-way.
func (e *Engine) Apply(ctx context.Context, desired *manifest.App, plan drift.Plan, opts drift.ApplyOptions) drift.ApplyResult {
	r := &run{
		e:        e,
		app:      plan.App,
		desired:  desired,
		revision: plan.Revision,
		progress: opts.Progress,
		stop:     opts.Stop,
		sem:      make(chan struct{}, e.opts.Parallelism),
		outcomes: make([]drift.Outcome, len(plan.Changes)),
		degraded: map[string]*drift.Failure{},
		images:   map[string]*imageCheck{},
	}
	if r.app == "" && desired != nil {
		r.app = desired.Name
	}
	if r.desired == nil {
		r.desired = &manifest.App{Name: r.app}
	} else if r.app != "" {
		images := make([]string, 0, len(desired.Services))
		for _, svc := range desired.Services {
			images = append(images, svc.Spec.Image)
		}
		e.pulls.Desired(r.app, images)
	}
	for i, c := range plan.Changes {
		r.outcomes[i] = drift.Outcome{Change: c, Result: drift.ResultSkipped, Error: "not attempted",
			Failure: &drift.Failure{Cause: drift.FailureOther, Summary: "not attempted"}}
	}
	// The next observation re-lists this app's objects rather than trust
	// the view before the events of these changes arrive.
	defer e.view.Touch(r.app)
	r.execute(ctx, plan.Changes)
	r.closeEvents()
	// A rotated secret's old file goes with its last replica.
	if removed, err := e.files.RemoveUnusedSecrets(ctx, r.app, 0); err != nil {
		e.log.Warn("removing unused secret files", "app", r.app, "err", err)
	} else if len(removed) > 0 {
		e.log.Info("removed secret files no container mounts", "app", r.app, "count", len(removed))
	}
	return r.result()
}

// run is the state of one Apply.
type run struct {
	e        *Engine
	app      string
	desired  *manifest.App
	revision string
	progress func(drift.Event)
	stop     <-chan struct{}
	sem      chan struct{}

	progressMu sync.Mutex

	mu       sync.Mutex
	outcomes []drift.Outcome
	degraded map[string]*drift.Failure

	imagesMu sync.Mutex
	images   map[string]*imageCheck

	// eventsOnce opens followEvents' stream; eventsLive says it runs.
	eventsOnce sync.Once
	eventsLive atomic.Bool
	stopEvents context.CancelFunc
}

// step is one change being carried out.
type step struct {
	index    int
	change   drift.Change
	start    time.Time
	warnings []string // the engine's, for the outcome (under run.mu)
}

// stopped reports whether the apply was asked to stop at its next safe
// point.
func (r *run) stopped() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

var errStopped = &drift.Failure{Cause: drift.FailureStopped, Summary: "apply stopped at a safe point: something newer arrived; the next pass plans again from what runs"}

func (r *run) emit(s *step, phase drift.Phase, msg string, err error) {
	if r.progress == nil {
		return
	}
	now := time.Now()
	ev := drift.Event{Time: now, Change: s.change, Phase: phase, Message: msg, Elapsed: now.Sub(s.start), Err: err}
	r.progressMu.Lock()
	defer r.progressMu.Unlock()
	r.progress(ev)
}

func (r *run) begin(index int, c drift.Change) *step {
	s := &step{index: index, change: c, start: time.Now()}
	r.emit(s, drift.PhaseStart, c.Reason, nil)
	return s
}

// finish records the outcome of a step: done when err is nil, otherwise
// failed with the error classified by its cause.
func (r *run) finish(s *step, err error) {
	d := time.Since(s.start)
	out := drift.Outcome{Change: s.change, Duration: d, Result: drift.ResultDone}
	if err != nil {
		f := classify(err)
		out.Result, out.Error, out.Failure = drift.ResultFailed, err.Error(), f
		r.emit(s, drift.PhaseFailed, err.Error(), err)
	} else {
		r.emit(s, drift.PhaseDone, "", nil)
	}
	r.mu.Lock()
	out.Warnings = s.warnings
	r.outcomes[s.index] = out
	r.mu.Unlock()
}

// warned records the engine's warnings about a step: shown now, and kept
// in its outcome.
func (r *run) warned(s *step, warnings []string) {
	r.mu.Lock()
	s.warnings = append(s.warnings, warnings...)
	r.mu.Unlock()
	r.emit(s, drift.PhaseWarned, "the engine warned: "+strings.Join(warnings, "; "), nil)
}

func (r *run) skip(index int, c drift.Change, why *drift.Failure) {
	s := &step{index: index, change: c, start: time.Now()}
	r.emit(s, drift.PhaseSkipped, why.Summary, nil)
	r.mu.Lock()
	r.outcomes[index] = drift.Outcome{Change: c, Result: drift.ResultSkipped, Error: why.Summary, Failure: why}
	r.mu.Unlock()
}

func (r *run) markDegraded(service string, f *drift.Failure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.degraded[service]; !ok {
		r.degraded[service] = f
	}
}

func (r *run) result() drift.ApplyResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := drift.ApplyResult{Outcomes: r.outcomes}
	if len(r.degraded) > 0 {
		res.Degraded = r.degraded
	}
	var failed []string
	for _, o := range r.outcomes {
		if o.Result != drift.ResultDone {
			failed = append(failed, fmt.Sprintf("%s %s: %s", o.Change.Action, o.Change.Name, o.Error))
		}
	}
	services := make([]string, 0, len(r.degraded))
	for s := range r.degraded {
		services = append(services, s)
	}
	sort.Strings(services)
	if len(failed) > 0 || len(services) > 0 {
		msg := fmt.Sprintf("%d of %d changes did not complete", len(failed), len(r.outcomes))
		if len(services) > 0 {
			msg += "; degraded: " + strings.Join(services, ", ")
		}
		res.Err = fmt.Errorf("%s:\n  %s", msg, strings.Join(failed, "\n  "))
		if len(failed) == 0 {
			res.Err = errors.New(msg)
		}
	}
	return res
}

// acquire takes a slot of the Parallelism bound for one Docker operation.
func (r *run) acquire(ctx context.Context) error {
	select {
	case r.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *run) release() { <-r.sem }

// indexed is a change with its position in the plan.
type indexed struct {
	index  int
	change drift.Change
}

// serviceGroup is every container change of one service.
type serviceGroup struct {
	name    string
	svc     *manifest.Service // nil: the service is no longer declared (prune)
	changes []indexed
	done    chan struct{}
	ok      bool // set before done closes: every change done and ready
	// started closes once the service's replicas run, which is all a
	// dependent with condition "started" waits for: when its changes are
	// only creates and starts, as soon as each was started (before the
	// readiness waits); otherwise with done.
	started     chan struct{}
	startedOnce sync.Once
}

func (g *serviceGroup) markStarted() { g.startedOnce.Do(func() { close(g.started) }) }

// onlyBrings reports whether every change of the group creates or starts
// a replica.
func (g *serviceGroup) onlyBrings() bool {
	for _, ic := range g.changes {
		if ic.change.Action != drift.ActionCreate && ic.change.Action != drift.ActionStart {
			return false
		}
	}
	return true
}

func (r *run) execute(ctx context.Context, changes []drift.Change) {
	var merges, resourceCreates, resourceRemoves []indexed
	groups := map[string]*serviceGroup{}
	var order []*serviceGroup
	for i, c := range changes {
		switch {
		case c.Kind == drift.KindContainer:
			g, ok := groups[c.Service]
			if !ok {
				g = &serviceGroup{name: c.Service, svc: r.desired.Service(c.Service), done: make(chan struct{}), started: make(chan struct{})}
				groups[c.Service] = g
				order = append(order, g)
			}
			g.changes = append(g.changes, indexed{i, c})
		case c.MergeInto != "":
			merges = append(merges, indexed{i, c})
		case c.Action == drift.ActionRemove:
			resourceRemoves = append(resourceRemoves, indexed{i, c})
		default:
			resourceCreates = append(resourceCreates, indexed{i, c})
		}
	}

	// 1. Networks and volumes the containers need: first a duplicate
	// network name made unambiguous, without which no container starts.
	r.parallel(ctx, merges, r.applyResource)
	r.parallel(ctx, resourceCreates, r.applyResource)
	missing := r.failedResources(append(merges, resourceCreates...))

	// 2. Declared services, each after its dependencies are ready.
	var wg sync.WaitGroup
	var pruned []indexed
	for _, g := range order {
		if g.svc == nil {
			pruned = append(pruned, g.changes...)
			close(g.done)
			g.markStarted()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(g.done)
			defer g.markStarted()
			// A replica created without its network or volume would only
			// fail to start (or start without its data).
			if why := missing.blocks(g.svc); why != nil {
				r.skipAll(g.changes, why)
				return
			}
			if why := r.awaitDependencies(ctx, g, groups); why != nil {
				r.skipAll(g.changes, why)
				return
			}
			g.ok = r.applyService(ctx, g)
		}()
	}
	wg.Wait()

	// 3. Containers of services no longer declared.
	r.parallel(ctx, pruned, func(ctx context.Context, ic indexed) {
		s := r.begin(ic.index, ic.change)
		r.finish(s, r.removeContainer(ctx, s, nil))
	})

	// 4. Networks and volumes no longer declared, once nothing uses them.
	r.parallel(ctx, resourceRemoves, r.applyResource)
}

// awaitDependencies waits until each dependency of g that changes in this
// apply has met g's condition on it, each for itself: "started" (compose's
// service_started) until the dependency's replicas run, "healthy" and
// "completed" until its changes are done with its replicas ready or exited
// 0. It returns why g cannot go on, or nil.
func (r *run) awaitDependencies(ctx context.Context, g *serviceGroup, groups map[string]*serviceGroup) *drift.Failure {
	for _, dep := range g.svc.Spec.DependsOn {
		dg, ok := groups[dep]
		if !ok || dg.svc == nil {
			continue // nothing changes in the dependency: it is as ready as it was
		}
		started := g.svc.Spec.DependsCondition(dep) == manifest.DependsStarted
		wait := dg.done
		if started {
			wait = dg.started
		}
		select {
		case <-wait:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			return cancelled(ctx)
		}
		if !started && !dg.ok {
			return &drift.Failure{Cause: drift.FailureDependency,
				Summary: fmt.Sprintf("waits for service %s, which did not become ready", dep)}
		}
	}
	return nil
}

// cancelled is the failure of changes skipped because ctx ended.
func cancelled(ctx context.Context) *drift.Failure {
	return &drift.Failure{Cause: drift.FailureStopped, Summary: "apply cancelled: " + ctx.Err().Error()}
}

// missingResources are the networks and volumes whose create failed in
// this apply, by kind and manifest name, with the failure.
type missingResources map[string]*drift.Failure

// failedResources collects the resource creates that did not succeed.
func (r *run) failedResources(creates []indexed) missingResources {
	r.mu.Lock()
	defer r.mu.Unlock()
	missing := missingResources{}
	for _, ic := range creates {
		out := r.outcomes[ic.index]
		merge := ic.change.MergeInto != ""
		if out.Result == drift.ResultDone || (ic.change.Action != drift.ActionCreate && !merge) {
			continue
		}
		f := drift.Failure{Cause: drift.FailureDependency, Summary: "not attempted"}
		if out.Failure != nil {
			f = *out.Failure
		}
		f.Summary = fmt.Sprintf("%s %s could not be created: %s", ic.change.Kind, ic.change.Name, out.Error)
		if merge {
			f.Summary = fmt.Sprintf("%s %s exists twice and the duplicate could not be removed: %s", ic.change.Kind, ic.change.Name, out.Error)
		}
		missing[resourceKey(ic.change)] = &f
	}
	return missing
}

// blocks is the failure that holds svc back: a network it joins or a
// volume it mounts that could not be created; nil if none.
func (m missingResources) blocks(svc *manifest.Service) *drift.Failure {
	if len(m) == 0 {
		return nil
	}
	for _, n := range svc.Spec.Networks {
		if f := m[string(drift.KindNetwork)+"/"+n]; f != nil {
			return f
		}
	}
	for _, v := range svc.Spec.Volumes {
		if f := m[string(drift.KindVolume)+"/"+v.Name]; f != nil {
			return f
		}
	}
	return m["anonymous/"+svc.Name]
}

func (r *run) skipAll(changes []indexed, why *drift.Failure) {
	for _, ic := range changes {
		r.skip(ic.index, ic.change, why)
	}
}

// parallel runs fn for each change, at most Parallelism at a time.
func (r *run) parallel(ctx context.Context, changes []indexed, fn func(context.Context, indexed)) {
	var wg sync.WaitGroup
	for _, ic := range changes {
		if err := r.acquire(ctx); err != nil {
			r.skip(ic.index, ic.change, cancelled(ctx))
			continue
		}
		if r.stopped() {
			r.release()
			r.skip(ic.index, ic.change, errStopped)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.release()
			fn(ctx, ic)
		}()
	}
	wg.Wait()
}

// applyService carries out one service's changes: new and stopped replicas
// first, then removals, then replacements by the service's update strategy.
// It reports whether every change completed with its replica ready.
func (r *run) applyService(ctx context.Context, g *serviceGroup) bool {
	var bring, removes, replaces, updates []indexed
	for _, ic := range g.changes {
		switch ic.change.Action {
		case drift.ActionCreate, drift.ActionStart:
			bring = append(bring, ic)
		case drift.ActionUpdate:
			updates = append(updates, ic)
		case drift.ActionRemove:
			removes = append(removes, ic)
		case drift.ActionReplace:
			replaces = append(replaces, ic)
		default:
			r.skip(ic.index, ic.change, &drift.Failure{Cause: drift.FailureOther, Summary: fmt.Sprintf("unknown action %q", ic.change.Action)})
		}
	}
	var mu sync.Mutex
	ok := true
	fail := func() { mu.Lock(); ok = false; mu.Unlock() }

	// Dependents on condition "started" go on once every replica is
	// started, while these wait for readiness.
	var wg, starting sync.WaitGroup
	starting.Add(len(bring))
	if g.onlyBrings() {
		go func() { starting.Wait(); g.markStarted() }()
	}
	for _, ic := range bring {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.stopped() {
				starting.Done()
				r.skip(ic.index, ic.change, errStopped)
				fail()
				return
			}
			s := r.begin(ic.index, ic.change)
			err := r.bringUp(ctx, s, g.svc, starting.Done)
			if err != nil {
				fail()
				r.noteNotReady(g.name, err)
			}
			r.finish(s, err)
		}()
	}
	wg.Wait()

	r.parallel(ctx, removes, func(ctx context.Context, ic indexed) {
		s := r.begin(ic.index, ic.change)
		err := r.removeContainer(ctx, s, &g.svc.Spec)
		if err != nil {
			fail()
		}
		r.finish(s, err)
	})

	r.parallel(ctx, updates, func(ctx context.Context, ic indexed) {
		s := r.begin(ic.index, ic.change)
		err := r.updateContainer(ctx, s, g.svc)
		if err != nil {
			fail()
		}
		r.finish(s, err)
	})

	if len(replaces) > 0 {
		var replaced bool
		if g.svc.Spec.Update.Strategy == manifest.StrategyRecreate {
			replaced = r.recreate(ctx, g.svc, replaces)
		} else {
			replaced = r.rolling(ctx, g.svc, replaces)
		}
		if !replaced {
			fail()
		}
	}
	return ok
}

// noteNotReady marks the service degraded when a replica failed on its
// own (as opposed to someone removing it, or a Docker call failing).
func (r *run) noteNotReady(service string, err error) {
	var f *drift.Failure
	if errors.As(err, &f) && f.Cause == drift.FailureRollout {
		r.markDegraded(service, f)
	}
}
