package deploy

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/drift/manifest"
)

// Phase is a step of one change, as reported to progress.
type Phase string

const (
	PhaseStart   Phase = "start"
	PhaseCreated Phase = "created"
	PhaseStarted Phase = "started"
	PhaseWaiting Phase = "waiting"
	PhaseReady   Phase = "ready"
	PhaseRemoved Phase = "removed"
	PhaseDone    Phase = "done"
	PhaseFailed  Phase = "failed"
	PhaseSkipped Phase = "skipped"
)

// Event is one step of one change. Elapsed is the time since the change
// started. Message adds detail for people and does not repeat the object's
// name (the Change carries it); it may be empty.
type Event struct {
	Time    time.Time
	Change  drift.Change
	Phase   Phase
	Message string
	Elapsed time.Duration
	Err     error
}

// Outcome is how one change ended: Phase is done, failed or skipped.
type Outcome struct {
	Change   drift.Change  `json:"change"`
	Err      string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration"`
	Phase    Phase         `json:"phase"`
}

// Result is what Apply did.
type Result struct {
	// Outcomes are in plan order, one per change.
	Outcomes []Outcome `json:"outcomes"`
	// Degraded names services whose rollout stopped, with the reason
	// (probe output, exit code, last log lines).
	Degraded map[string]string `json:"degraded,omitempty"`
	// Err is nil when every change succeeded and every touched replica
	// became ready.
	Err error `json:"-"`
}

// Apply carries out the plan's Changes (not Deferred or Conflicts) in a
// safe order: networks and volumes first; then services in the plan's
// (dependsOn) order, a service starting only once the services it depends
// on that have changes here are done and ready; independent services run
// concurrently; removed services' containers next; networks and volumes
// removed last. progress may be nil; calls to it are serialized.
func (e *Engine) Apply(ctx context.Context, desired *manifest.App, plan drift.Plan, progress func(Event)) Result {
	r := &run{
		e:        e,
		app:      plan.App,
		desired:  desired,
		revision: plan.Revision,
		progress: progress,
		sem:      make(chan struct{}, e.opts.Parallelism),
		outcomes: make([]Outcome, len(plan.Changes)),
		degraded: map[string]string{},
		images:   map[string]*imageCheck{},
	}
	if r.app == "" && desired != nil {
		r.app = desired.Name
	}
	if r.desired == nil {
		r.desired = &manifest.App{Name: r.app}
	}
	for i, c := range plan.Changes {
		r.outcomes[i] = Outcome{Change: c, Phase: PhaseSkipped, Err: "not attempted"}
	}
	r.execute(ctx, plan.Changes)
	return r.result()
}

// run is the state of one Apply.
type run struct {
	e        *Engine
	app      string
	desired  *manifest.App
	revision string
	progress func(Event)
	sem      chan struct{}

	progressMu sync.Mutex

	mu       sync.Mutex
	outcomes []Outcome
	degraded map[string]string

	imagesMu sync.Mutex
	images   map[string]*imageCheck
}

// step is one change being carried out.
type step struct {
	index  int
	change drift.Change
	start  time.Time
}

func (r *run) emit(s *step, phase Phase, msg string, err error) {
	if r.progress == nil {
		return
	}
	now := time.Now()
	ev := Event{Time: now, Change: s.change, Phase: phase, Message: msg, Elapsed: now.Sub(s.start), Err: err}
	r.progressMu.Lock()
	defer r.progressMu.Unlock()
	r.progress(ev)
}

func (r *run) begin(index int, c drift.Change) *step {
	s := &step{index: index, change: c, start: time.Now()}
	r.emit(s, PhaseStart, c.Reason, nil)
	return s
}

// finish records the outcome of a step: done when err is nil.
func (r *run) finish(s *step, err error) {
	d := time.Since(s.start)
	out := Outcome{Change: s.change, Duration: d, Phase: PhaseDone}
	if err != nil {
		out.Phase, out.Err = PhaseFailed, err.Error()
		r.emit(s, PhaseFailed, err.Error(), err)
	} else {
		r.emit(s, PhaseDone, "", nil)
	}
	r.mu.Lock()
	r.outcomes[s.index] = out
	r.mu.Unlock()
}

func (r *run) skip(index int, c drift.Change, why string) {
	s := &step{index: index, change: c, start: time.Now()}
	r.emit(s, PhaseSkipped, why, nil)
	r.mu.Lock()
	r.outcomes[index] = Outcome{Change: c, Phase: PhaseSkipped, Err: why}
	r.mu.Unlock()
}

func (r *run) markDegraded(service, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.degraded[service]; !ok {
		r.degraded[service] = reason
	}
}

func (r *run) result() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := Result{Outcomes: r.outcomes}
	if len(r.degraded) > 0 {
		res.Degraded = r.degraded
	}
	var failed []string
	for _, o := range r.outcomes {
		if o.Phase != PhaseDone {
			failed = append(failed, fmt.Sprintf("%s %s: %s", o.Change.Action, o.Change.Name, o.Err))
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
}

func (r *run) execute(ctx context.Context, changes []drift.Change) {
	var resourceCreates, resourceRemoves []indexed
	groups := map[string]*serviceGroup{}
	var order []*serviceGroup
	for i, c := range changes {
		switch {
		case c.Kind == drift.KindContainer:
			g, ok := groups[c.Service]
			if !ok {
				g = &serviceGroup{name: c.Service, svc: r.desired.Service(c.Service), done: make(chan struct{})}
				groups[c.Service] = g
				order = append(order, g)
			}
			g.changes = append(g.changes, indexed{i, c})
		case c.Action == drift.ActionRemove:
			resourceRemoves = append(resourceRemoves, indexed{i, c})
		default:
			resourceCreates = append(resourceCreates, indexed{i, c})
		}
	}

	// 1. Networks and volumes the containers need.
	r.parallel(ctx, resourceCreates, r.applyResource)

	// 2. Declared services, each after its dependencies are ready.
	var wg sync.WaitGroup
	var pruned []indexed
	for _, g := range order {
		if g.svc == nil {
			pruned = append(pruned, g.changes...)
			close(g.done)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(g.done)
			for _, dep := range g.svc.Spec.DependsOn {
				dg, ok := groups[dep]
				if !ok || dg.svc == nil {
					continue // nothing changes in the dependency: it is as ready as it was
				}
				select {
				case <-dg.done:
				case <-ctx.Done():
				}
				if ctx.Err() != nil {
					r.skipAll(g.changes, "apply cancelled: "+ctx.Err().Error())
					return
				}
				if !dg.ok {
					r.skipAll(g.changes, fmt.Sprintf("waits for service %s, which did not become ready", dep))
					return
				}
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

func (r *run) skipAll(changes []indexed, why string) {
	for _, ic := range changes {
		r.skip(ic.index, ic.change, why)
	}
}

// parallel runs fn for each change, at most Parallelism at a time.
func (r *run) parallel(ctx context.Context, changes []indexed, fn func(context.Context, indexed)) {
	var wg sync.WaitGroup
	for _, ic := range changes {
		if err := r.acquire(ctx); err != nil {
			r.skip(ic.index, ic.change, "apply cancelled: "+err.Error())
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
	var bring, removes, replaces []indexed
	for _, ic := range g.changes {
		switch ic.change.Action {
		case drift.ActionCreate, drift.ActionStart:
			bring = append(bring, ic)
		case drift.ActionRemove:
			removes = append(removes, ic)
		case drift.ActionReplace:
			replaces = append(replaces, ic)
		default:
			r.skip(ic.index, ic.change, fmt.Sprintf("unknown action %q", ic.change.Action))
		}
	}
	var mu sync.Mutex
	ok := true
	fail := func() { mu.Lock(); ok = false; mu.Unlock() }

	var wg sync.WaitGroup
	for _, ic := range bring {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := r.begin(ic.index, ic.change)
			var err error
			if ic.change.Action == drift.ActionCreate {
				_, err = r.createAndWait(ctx, s, g.svc, ic.change.Slot)
			} else {
				err = r.startAndWait(ctx, s, g.svc)
			}
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

// noteNotReady marks the service degraded when a replica failed to become
// ready (as opposed to a Docker call failing).
func (r *run) noteNotReady(service string, err error) {
	var nr *notReadyError
	if errors.As(err, &nr) {
		r.markDegraded(service, nr.Error())
	}
}
