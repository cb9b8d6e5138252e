package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/policy"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/loopmetrics"
	"github.com/driftless-dev/driftless/sync/pipeline"
	"github.com/driftless-dev/driftless/sync/refusal"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/sync/store"
	"github.com/driftless-dev/driftless/sync/workqueue"
)

// A pass is one reconcile of one app, a short sequence of steps that reads
// like the README's diagram:
//
//	target → candidate → observe → compute+decide → apply → observe → assess
//
// Each step takes values and records what it found in a passOutcome; the
// first step that cannot go on ends the pass. Nothing here writes status:
// nextStatus (pure) turns the outcome into status and history, and
// finishPass (a thin caller) stores, counts and publishes them.

// passInput is what a pass starts from, copied under the lock.
type passInput struct {
	cfg      config.AppConfig
	pinned   *gitsource.Revision
	triggers []string
	start    time.Time
	mem      memory          // read only: the pass never changes memory
	stop     <-chan struct{} // closed: stop at the next safe point
}

func (in passInput) trigger() string { return workqueue.JoinTriggers(in.triggers) }

// engineOnly reports whether only the engine asked for this pass: Docker
// events, or the repair of an interference in the previous pass.
func (in passInput) engineOnly() bool {
	for _, t := range in.triggers {
		if t != TriggerDockerEvent && t != TriggerRepair && t != TriggerWatch {
			return false
		}
	}
	return len(in.triggers) > 0
}

// manual reports whether a person asked for this pass ("Sync now").
func (in passInput) manual() bool { return slices.Contains(in.triggers, TriggerManual) }

// passOutcome is everything a pass found and did.
type passOutcome struct {
	fetched   *gitsource.Revision // head of the tracked ref, when fetched
	sourceErr error               // fetching or reading a revision failed
	refusal   *status.Refusal     // a revision refused in this pass
	accepted  *revisionState      // the revision enforced after the pass
	engineErr error               // the engine could not be observed
	apply     *applyReport        // what was applied, if anything
	// The state after the pass: what runs, the gap left, how the policy
	// sorts it, and how healthy the app is.
	actual   *drift.Actual
	input    drift.Input
	gap      *drift.Plan
	decision drift.Decision
	health   *drift.AppHealth
	// cancelled: the agent is shutting down; the pass says nothing new.
	cancelled bool
	// forcePush: the fetched head does not descend from the applied
	// revision (Since is left for nextStatus to set).
	forcePush *status.ForcePush
	// tagMoves are followed image tags found at a new digest;
	// nextTagCheck is when the next tag is due (zero: none followed).
	tagMoves     []tagMove
	nextTagCheck time.Time
	// before is each service's ready/desired count seen before an apply,
	// so the replica series shows the dip a repair closes.
	before []store.ServiceCount
	// The release lifecycle (release.go): the watch after this pass's
	// look, a regression it found, the rollback this pass applies, and a
	// quarantine a person lifted.
	watch        *drift.ReleaseWatch
	regression   *drift.Regression
	rollback     *status.Quarantine
	unquarantine string
	// canary are the services whose rollout this pass held to their
	// canary replicas (update.canary).
	canary []drift.CanaryStep
	// postSyncFailure is the first post-sync job run of this pass that
	// failed (see postSync), for the release watch to count.
	postSyncFailure *status.JobRun
}

// applyReport is one apply: the plan carried out and its result.
type applyReport struct {
	plan    drift.Plan
	result  drift.ApplyResult
	elapsed time.Duration
}

// pass holds what the steps share; it is not state that outlives the pass.
type pass struct {
	a  *Agent
	st *appState
	in passInput
	// lastActual is the latest observation.
	lastActual *drift.Actual
}

func (p *pass) run(ctx context.Context) (o passOutcome) {
	defer func() { o.cancelled = ctx.Err() != nil }()
	target := p.divert(ctx, p.target(ctx, &o), &o)
	cand, ok := p.buildCandidate(ctx, p.candidate(ctx, target, &o), &o)
	if !ok || !p.observe(ctx, &o) {
		return o
	}
	if p.watchRelease(ctx, cand, &o) {
		return o // quarantined: the next pass rolls back
	}
	if cand != nil {
		p.followTags(ctx, cand.app, *o.actual, &o)
	}
	if o.accepted != nil && o.accepted != cand {
		p.followTags(ctx, o.accepted.app, *o.actual, &o)
	}
	desired, plan, dec := p.decide(ctx, cand, &o)
	desired, plan, dec = p.preSync(ctx, cand, desired, plan, dec, &o)
	if desired == nil {
		return o
	}
	if !dec.Apply.Empty() && o.rollback == nil {
		var held []drift.HeldChange
		dec.Apply, held, o.canary = drift.HoldForCanary(p.appFor(desired, *o.actual), *o.actual, dec.Apply, p.in.mem.canaryPassed)
		dec.Held = append(dec.Held, held...)
	}
	if !dec.Apply.Empty() {
		o.before = store.HealthCounts(drift.Assess(p.computeInput(desired, *o.actual), plan))
		if !p.buildAccepted(ctx, desired, &o) {
			return o
		}
		p.a.announceApply(p.in.cfg.Name, desired, dec.Apply)
		o.apply = p.apply(ctx, desired, dec.Apply)
		if o.apply.result.Err != nil {
			desired.built = false // an image may be what failed: look again
		}
		if o.apply.result.OnlyCause(drift.FailureInterference, drift.FailureStopped) {
			// The next pass runs at once and looks again; heal latency
			// is what matters now, not this pass's picture.
			return o
		}
		if !p.observe(ctx, &o) {
			return o
		}
		plan = drift.Plan{} // recomputed from what runs now
	}
	p.assess(desired, plan, &o)
	p.postSync(ctx, desired, &o)
	return o
}

// target is the revision to enforce: the pinned one, the head of the ref,
// or nil to keep enforcing the accepted one (the source failed, or an
// engine event asks only for a repair).
func (p *pass) target(ctx context.Context, o *passOutcome) *gitsource.Revision {
	switch {
	case p.in.pinned != nil:
		return p.in.pinned
	case p.in.engineOnly() && p.in.mem.accepted != nil:
		// Something changed on the engine, not in Git: repair against the
		// revision being enforced without a round trip to the Git server,
		// since heal latency is what users feel. New commits are found by
		// the poll schedule and webhooks.
		return nil
	}
	t0 := time.Now()
	res, err := p.st.source.Fetch(ctx)
	p.a.metrics.FetchDuration.WithLabelValues(p.in.cfg.Name).Observe(time.Since(t0).Seconds())
	p.a.metrics.ObservePhase(loopmetrics.PhaseFetch, t0)
	if err != nil {
		if ctx.Err() == nil {
			p.a.metrics.FetchErrors.WithLabelValues(p.in.cfg.Name).Inc()
		}
		o.sourceErr = err
		return nil
	}
	rev := res.Revision
	o.fetched = &rev
	if !p.checkForcePush(ctx, rev, o) {
		return nil
	}
	return &rev
}

// checkForcePush judges the fetched head against the last APPLIED
// revision, not the previous fetch: after a refusal the previous fetch is
// the rewritten head itself. false when Git could not answer; the pass
// then keeps enforcing what it has, and retries.
func (p *pass) checkForcePush(ctx context.Context, head gitsource.Revision, o *passOutcome) bool {
	cfg, mem := p.in.cfg, p.in.mem
	applied := mem.appliedRev
	if applied == nil || applied.SHA == head.SHA || cfg.Commit != "" ||
		(mem.appliedFrom != "" && mem.appliedFrom != cfg.SourceIdentity()) {
		// Nothing to compare with, or the config now tracks something
		// else on purpose.
		return true
	}
	refuse, byVerify := cfg.RefusesForcePush()
	if fp := mem.forcePush; fp != nil && fp.From == applied.SHA && fp.To.SHA == head.SHA {
		// Known already: a rewritten history is walked to its roots, so
		// it is not walked again on every poll.
		c := *fp
		c.Refused, c.VerifyDefault = refuse, byVerify
		o.forcePush = &c
		return true
	}
	ok, err := p.st.source.IsAncestor(ctx, applied.SHA, head.SHA)
	missing := errors.Is(err, gitsource.ErrCommitNotFound)
	switch {
	case err != nil && !missing:
		o.sourceErr = fmt.Errorf("check whether %s descends from the applied %s: %w", head.Short(), applied.Short(), err)
		return false
	case ok:
		return true
	}
	o.forcePush = &status.ForcePush{Ref: cfg.RefName(), From: applied.SHA, To: head, Missing: missing, Refused: refuse, VerifyDefault: byVerify}
	return true
}

// candidate parses a target that is not the accepted revision. A refused
// or unreadable one leaves the accepted revision in force.
func (p *pass) candidate(ctx context.Context, target *gitsource.Revision, o *passOutcome) *revisionState {
	o.accepted = p.in.mem.accepted
	if o.accepted == nil && p.in.mem.restoreSHA != "" {
		// Restarted while the head is refused or unreachable: keep
		// enforcing what was accepted before the restart.
		if rs, err := p.st.revisions.loadSHA(ctx, p.st.source, p.in.cfg, p.in.mem.restoreSHA); err == nil && rs.refusal == nil {
			o.accepted = rs
		}
	}
	if target == nil || (o.accepted != nil && o.accepted.rev.SHA == target.SHA) {
		return nil
	}
	if fp := o.forcePush; fp != nil && fp.Refused && fp.To.SHA == target.SHA {
		// Refused like an invalid revision: the applied one keeps
		// running and healing.
		o.refusal = &status.Refusal{Revision: *target, Reason: fp.Summary() + " (" + fp.Setting() + "); " + fp.Remedy()}
		return nil
	}
	p.a.setTarget(p.in.cfg.Name, target.SHA)
	t0 := time.Now()
	cand, err := p.st.revisions.load(ctx, p.st.source, p.in.cfg, *target)
	p.a.metrics.ObservePhase(loopmetrics.PhaseLoad, t0)
	switch {
	case err != nil:
		o.sourceErr = err
	case cand.refusal != nil:
		o.refusal = cand.refusal
	default:
		if o.refusal = p.hostPathRefusal(cand); o.refusal == nil {
			return cand
		}
	}
	return nil
}

// hostPathRefusal judges the revision's host paths where they land now.
// The revision was parsed once, with its paths as written; a symlink on
// the host can change at any time, so every pass looks again before it
// builds, creates or heals anything.
func (p *pass) hostPathRefusal(rs *revisionState) *status.Refusal {
	errs := policy.CheckHostPaths(rs.app, p.in.cfg.Policy, p.a.opts.Host)
	if len(errs) == 0 {
		return nil
	}
	r, _ := refusal.Of(rs.rev, p.in.cfg, errs)
	r.Reason = fmt.Sprintf("%d host path(s) lead where this app may not mount; fix the manifests in a new commit, or the host", len(errs))
	return r
}

// observe lists what runs; false when the engine cannot be reached.
func (p *pass) observe(ctx context.Context, o *passOutcome) bool {
	defer p.a.metrics.ObservePhase(loopmetrics.PhaseObserve, time.Now())
	actual, err := p.a.engineFor(p.in.cfg).Observe(ctx, p.in.cfg.NameOnEngine(), true)
	if err != nil {
		o.engineErr = err
		return false
	}
	o.actual = &actual
	p.lastActual = &actual
	return true
}

// decide computes the candidate's plan and lets the policy judge it, with
// the guard a new revision must pass; refused, the accepted revision's
// plan is judged instead.
func (p *pass) decide(ctx context.Context, cand *revisionState, o *passOutcome) (*revisionState, drift.Plan, drift.Decision) {
	defer p.a.metrics.ObservePhase(loopmetrics.PhaseCompute, time.Now())
	if cand != nil {
		in := p.computeInput(cand, *o.actual)
		plan := drift.Compute(in)
		dec := drift.Decide(in, plan, p.policy(true))
		if dec.Refusal == "" {
			o.accepted = cand
			return cand, plan, dec
		}
		o.refusal = &status.Refusal{Revision: cand.rev, Reason: dec.Refusal}
	}
	if o.accepted == nil {
		return nil, drift.Plan{}, drift.Decision{}
	}
	if r := p.hostPathRefusal(o.accepted); r != nil {
		// What runs keeps running, but nothing is created or healed
		// from a revision whose host paths now lead elsewhere.
		if o.refusal == nil {
			o.refusal = r
		}
		return nil, drift.Plan{}, drift.Decision{}
	}
	p.a.setTarget(p.in.cfg.Name, o.accepted.rev.SHA)
	in := p.computeInput(o.accepted, *o.actual)
	plan := drift.Compute(in)
	return o.accepted, plan, drift.Decide(in, plan, p.policy(false))
}

// apply carries out the decided plan. It stops at a safe point when the
// agent closes the pass's stop channel.
func (p *pass) apply(ctx context.Context, desired *revisionState, plan drift.Plan) *applyReport {
	t0 := time.Now()
	app, rev := p.in.cfg.Name, desired.rev.Short()
	progress := func(ev drift.Event) {
		if ev.Phase == drift.PhasePull {
			p.a.showPull(app, rev, ev.Message)
			return
		}
		// Each change's start, readiness wait and end in the log, as
		// compose prints its steps (the steps between at debug): where an
		// apply waits is the step last logged for its object.
		level := slog.LevelDebug
		switch ev.Phase {
		case drift.PhaseStart, drift.PhaseWaiting, drift.PhaseDone, drift.PhaseFailed, drift.PhaseSkipped:
			level = slog.LevelInfo
		case drift.PhaseWarned:
			level = slog.LevelWarn
		}
		c := ev.Change
		p.a.log.Log(ctx, level, "apply step", "app", app, "revision", rev, "change", c.Action.Symbol()+" "+string(c.Kind)+" "+c.Name,
			"phase", ev.Phase, "message", ev.Message, "elapsed", ev.Elapsed.Round(time.Millisecond))
	}
	res := p.a.engineFor(p.in.cfg).Apply(ctx, p.appFor(desired, *p.lastActual), plan, drift.ApplyOptions{Stop: p.in.stop, Progress: progress})
	p.a.metrics.ObservePhase(loopmetrics.PhaseApply, t0)
	return &applyReport{plan: plan, result: res, elapsed: time.Since(t0)}
}

// assess judges what runs now against the desired revision: the gap left,
// what the policy holds of it, and health. plan is the gap already
// computed from the same observation, or empty to compute it.
func (p *pass) assess(desired *revisionState, plan drift.Plan, o *passOutcome) {
	defer p.a.metrics.ObservePhase(loopmetrics.PhaseCompute, time.Now())
	in := p.computeInput(desired, *o.actual)
	if o.apply != nil || plan.App == "" {
		plan = drift.Compute(in)
	}
	h := drift.Assess(in, plan)
	o.input, o.gap, o.health = in, &plan, &h
	o.decision = drift.Decide(in, plan, p.policy(false))
}

func (p *pass) policy(guard bool) drift.Policy {
	cfg := p.in.cfg
	return drift.Policy{
		SelfHeal:          cfg.SelfHeal,
		Manual:            p.in.manual(),
		Suspended:         cfg.Suspend,
		Guard:             guard,
		AllowEmpty:        cfg.AllowEmpty,
		MaxRemovalPercent: cfg.MaxRemovalPercent,
	}
}

// appFor is the desired app as the differ and the applier see it:
// followed image tags pinned to their resolved digests (the loop's
// memory), then as the pipeline adopts it.
func (p *pass) appFor(rs *revisionState, actual drift.Actual) *manifest.App {
	return pipeline.Desired(pipeline.FromConfig(p.in.cfg), pinTags(rs.app, p.st.tags), actual)
}

// computeInput is the differ's input for rs against actual, prepared by
// the pipeline the CLI shares, with what the loop remembers.
func (p *pass) computeInput(rs *revisionState, actual drift.Actual) drift.Input {
	now := p.a.now()
	backoff, failed := backoffInputs(p.in.mem, rs.app, p.in.cfg.Name, now)
	st := pipeline.State{
		Revision:       rs.rev.SHA,
		Now:            now,
		Backoff:        backoff,
		Applied:        p.in.mem.appliedState,
		FailedRollouts: failed,
		ReadyDeadline:  readyDeadline,
	}
	return pipeline.Prepare(pipeline.FromConfig(p.in.cfg), st, pinTags(rs.app, p.st.tags), actual, p.a.engineFor(p.in.cfg))
}

// Result tells the worker when to run the app again, beyond what its
// error says (controller-runtime's reconcile.Result).
type Result struct {
	// Requeue: run again at once, e.g. someone removed a replica while it
	// was being rolled out and the pass ended early to repair it.
	Requeue bool
	// Preempted: the apply stopped at a safe point because something newer
	// came; the next pass must look at the source again.
	Preempted bool
	// RequeueAfter: run again after this long, e.g. when a backoff ends.
	RequeueAfter time.Duration
	// ImageCheckAfter: a followed image tag is due for a check then.
	ImageCheckAfter time.Duration
	// WatchAfter: a release is under watch; look at it again then.
	WatchAfter time.Duration
}

// stalledError is a failure that retrying cannot fix: the loop waits for a
// new commit (the next poll or webhook) instead of backing off.
type stalledError struct{ err error }

func (e *stalledError) Error() string { return e.err.Error() }
func (e *stalledError) Unwrap() error { return e.err }

// waitingError is a failure of something outside driftless (the Git
// server, the Docker engine) that is retried after a delay.
type waitingError struct{ err error }

func (e *waitingError) Error() string { return e.err.Error() }
func (e *waitingError) Unwrap() error { return e.err }

// passResult types how the pass ended for the queue. It is pure.
func passResult(o passOutcome, now time.Time) (Result, error) {
	var res Result
	if !o.nextTagCheck.IsZero() {
		res.ImageCheckAfter = max(o.nextTagCheck.Sub(now), time.Millisecond)
	}
	if o.gap != nil {
		for _, c := range o.gap.Deferred {
			if c.NotBefore.IsZero() {
				continue
			}
			d := c.NotBefore.Sub(now) + 100*time.Millisecond
			if res.RequeueAfter == 0 || d < res.RequeueAfter {
				res.RequeueAfter = d
			}
		}
	}
	if o.regression != nil {
		res.Requeue = true // roll back at once
	}
	if o.engineErr != nil {
		return res, &waitingError{engineError(o.engineErr)}
	}
	if o.apply != nil && o.apply.result.Err != nil {
		r := o.apply.result
		switch {
		case r.OnlyCause(drift.FailureInterference, drift.FailureStopped, drift.FailureDependency):
			// Drift during the rollout, or something newer: plan again at
			// once from what runs now, without any backoff.
			res.Requeue = true
			res.Preempted = r.Causes()[drift.FailureStopped] > 0
		case applyFailureKind(o) == "engine":
			return res, &waitingError{engineError(r.Err)}
		default:
			return res, fmt.Errorf("apply %s: %w", o.accepted.rev.Short(), r.Err)
		}
	}
	switch {
	case o.sourceErr != nil:
		return res, &waitingError{o.sourceErr}
	case o.refusal != nil:
		return res, &stalledError{fmt.Errorf("revision %s refused: %s", o.refusal.Revision.Short(), o.refusal.Reason)}
	}
	return res, nil
}

// engineError makes sure the error says, and carries, that the engine is
// at fault.
func engineError(err error) error {
	if errors.Is(err, drift.ErrEngineUnreachable) {
		return err
	}
	return fmt.Errorf("%w: %w", drift.ErrEngineUnreachable, err)
}

// engineMessage is the engine error as a status line, without saying
// "unreachable" twice.
func engineMessage(err error) string {
	msg := engineError(err).Error()
	return strings.Replace(msg, drift.ErrEngineUnreachable.Error()+": "+drift.ErrEngineUnreachable.Error(), drift.ErrEngineUnreachable.Error(), 1)
}
