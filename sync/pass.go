package sync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/drift/manifest"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/robfig/cron/v3"
)

// Tunables of the loop. They are not configurable because the defaults are
// what a person expects; tests do not depend on them being short.
const (
	flapWindow     = 10 * time.Minute
	flapThreshold  = 3
	crashBaseDelay = 10 * time.Second
	crashMaxDelay  = 5 * time.Minute
	// crashWindow: a repair this soon after the previous repair of the same
	// container means the container fails again on its own.
	crashWindow   = 10 * time.Minute
	readyDeadline = 2 * time.Minute
	parseCacheMax = 8
)

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

// revisionState is a parsed revision: valid (App set) or refused.
type revisionState struct {
	rev     gitsource.Revision
	app     *manifest.App
	refusal *Refusal
}

type crashState struct {
	lastRepair time.Time
	delay      time.Duration
	until      time.Time
}

// rolloutFailure is a service whose replicas failed to come up at a spec
// hash (crash loop, never ready, image missing). The same hash is not tried
// again until the backoff ends; a new commit (another hash) is tried at once.
type rolloutFailure struct {
	hash   string
	reason string
	delay  time.Duration
	until  time.Time
}

type flapKey struct{ container, field string }

// appState is one app. The fields up to status are guarded by Agent.mu;
// the rest belong to the pass, and a key is never processed by two workers
// at once. Nothing in the second group is needed for correctness: after a
// restart it is rebuilt from the store, Git and Docker.
type appState struct {
	cfg    AppConfig
	sched  cron.Schedule
	status AppStatus
	pinned *gitsource.Revision

	source       Source
	parsed       map[string]*revisionState
	parsedOrder  []string
	accepted     *revisionState // the valid revision being enforced
	restoreSHA   string         // accepted revision from the store, loaded lazily
	appliedRev   *gitsource.Revision
	appliedState map[string]drift.AppliedService
	lastRefused  string
	sourceFail   bool
	crash        map[string]*crashState
	failed       map[string]*rolloutFailure // by service
	repairs      map[flapKey][]time.Time
	flapping     map[flapKey]*Flap
	conditions   map[string]Condition
}

func newAppState(cfg AppConfig, sched cron.Schedule, src Source) *appState {
	return &appState{
		cfg:    cfg,
		sched:  sched,
		source: src,
		status: AppStatus{
			Name:      cfg.Name,
			Source:    SourceStatus{URL: redactURL(cfg.Repo), Ref: cfg.refName(), Path: cfg.Path},
			Sync:      Unknown,
			Health:    HealthUnknown,
			Message:   "waiting for the first pass",
			Suspended: cfg.Suspend,
			SelfHeal:  cfg.SelfHeal,
			Prune:     cfg.Prune,
		},
		parsed:     map[string]*revisionState{},
		crash:      map[string]*crashState{},
		failed:     map[string]*rolloutFailure{},
		repairs:    map[flapKey][]time.Time{},
		flapping:   map[flapKey]*Flap{},
		conditions: map[string]Condition{},
	}
}

// restore applies what the store remembers; runtime toggles override the
// config once set.
func (st *appState) restore(p persistedApp) {
	if p.Suspended != nil {
		st.cfg.Suspend = *p.Suspended
	}
	if p.SelfHeal != nil {
		st.cfg.SelfHeal = *p.SelfHeal
	}
	st.pinned = p.Pinned
	st.appliedRev = p.Applied
	st.appliedState = p.AppliedState
	st.lastRefused = p.LastRefused
	if p.Accepted != nil {
		st.restoreSHA = p.Accepted.SHA
	}
	st.status.Suspended = st.cfg.Suspend
	st.status.SelfHeal = st.cfg.SelfHeal
	st.status.Pinned = cloneRev(p.Pinned)
	st.status.Applied = cloneRev(p.Applied)
}

// pass is one reconcile of one app: ordered steps, the first failure ends
// it, and finish writes status once whatever happened.
type pass struct {
	a       *Agent
	st      *appState
	cfg     AppConfig
	pinned  *gitsource.Revision
	trigger string
	start   time.Time

	fetched   *gitsource.Revision
	fetchOK   bool
	sourceErr error // fetch or reading the revision failed
	engineErr error
	applyErr  error
	refusal   *Refusal

	desired *revisionState
	actual  *drift.Actual
	input   drift.Input
	plan    *drift.Plan // the gap after the pass
	health  *drift.AppHealth
	skipped string // why the gap was left alone
	applied bool

	history []HistoryEntry
	repairs int
	persist func(*persistedApp) // store update, when something durable changed
}

func (a *Agent) reconcile(ctx context.Context, name, trigger string) (err error) {
	st := a.apps[name]
	a.mu.Lock()
	p := &pass{a: a, st: st, cfg: st.cfg, pinned: cloneRev(st.pinned), trigger: trigger, start: a.now()}
	st.status.Reconciling = true
	a.mu.Unlock()
	a.notify(name, "status")
	defer func() { p.finish(ctx, err) }()
	return p.run(ctx)
}

func (p *pass) run(ctx context.Context) error {
	target := p.pinned
	switch {
	case target != nil:
	case p.trigger == "docker-event" && p.st.accepted != nil:
		// Something changed on the engine, not in Git: repair against the
		// revision being enforced without a round trip to the Git server,
		// since heal latency is what users feel. New commits are found by
		// the poll schedule and webhooks.
	default:
		target = p.fetch(ctx)
	}
	if target != nil && (p.st.accepted == nil || p.st.accepted.rev.SHA != target.SHA) {
		cand, err := p.load(ctx, *target)
		switch {
		case err != nil:
			p.sourceErr = err
		case cand.refusal != nil:
			p.refusal = cand.refusal
		default:
			p.desired = cand
		}
	}
	if p.desired == nil {
		p.desired = p.st.accepted
	}
	if p.desired == nil && p.st.restoreSHA != "" {
		// Restarted while the head is refused or unreachable: keep
		// enforcing what was accepted before the restart.
		if rs, err := p.loadSHA(ctx, p.st.restoreSHA); err == nil && rs.refusal == nil {
			p.st.accepted = rs
			p.desired = rs
		}
	}

	actual, err := p.a.engine.Observe(ctx, p.cfg.Name, true)
	if err != nil {
		p.engineErr = err
		return &waitingError{fmt.Errorf("Docker engine unreachable: %w", err)}
	}
	p.actual = &actual

	if p.desired != nil && p.desired != p.st.accepted {
		if reason := p.guard(p.desired); reason != "" {
			p.refusal = &Refusal{Revision: p.desired.rev, Reason: reason}
			p.desired = p.st.accepted
		} else {
			p.st.accepted = p.desired
			rev := p.desired.rev
			p.addPersist(func(pa *persistedApp) { pa.Accepted = &rev })
		}
	}
	if p.refusal != nil {
		p.recordRefusal()
	}
	if p.desired == nil {
		return p.outcomeErr()
	}

	plan := p.compute(actual)
	if err := p.decideAndApply(ctx, plan); err != nil {
		return err
	}
	return p.outcomeErr()
}

// outcomeErr types what went wrong for the queue.
func (p *pass) outcomeErr() error {
	switch {
	case p.applyErr != nil:
		return p.applyErr
	case p.sourceErr != nil:
		return &waitingError{p.sourceErr}
	case p.refusal != nil:
		return &stalledError{fmt.Errorf("revision %s refused: %s", p.refusal.Revision.Short(), p.refusal.Reason)}
	}
	return nil
}

func (p *pass) addPersist(f func(*persistedApp)) {
	prev := p.persist
	p.persist = func(pa *persistedApp) {
		if prev != nil {
			prev(pa)
		}
		f(pa)
	}
}

// fetch returns the head of the tracked ref, or nil when the source
// failed (the last good revision keeps running).
func (p *pass) fetch(ctx context.Context) *gitsource.Revision {
	t0 := time.Now()
	res, err := p.st.source.Fetch(ctx)
	p.a.metrics.fetchDuration.WithLabelValues(p.cfg.Name).Observe(time.Since(t0).Seconds())
	if err != nil {
		if ctx.Err() == nil {
			p.a.metrics.fetchErrors.WithLabelValues(p.cfg.Name).Inc()
		}
		p.sourceErr = err
		return nil
	}
	p.fetchOK = true
	rev := res.Revision
	p.fetched = &rev
	return &rev
}

// load parses a revision, once per commit.
func (p *pass) load(ctx context.Context, rev gitsource.Revision) (*revisionState, error) {
	if rs, ok := p.st.parsed[rev.SHA]; ok {
		rs.rev = rev
		return rs, nil
	}
	rs := &revisionState{rev: rev}
	fsys, err := p.st.source.Files(ctx, rev.SHA)
	switch {
	case errors.Is(err, gitsource.ErrPathMissing):
		rs.refusal = &Refusal{Revision: rev, Reason: fmt.Sprintf("the manifests path %q does not exist in this commit; fix the path in the config or add it to the repository", displayPath(p.cfg.Path))}
	case err != nil:
		return nil, fmt.Errorf("read revision %s: %w", rev.Short(), err)
	default:
		app, err := manifest.Load(fsys, ".", p.cfg.Name)
		var list manifest.ErrorList
		switch {
		case errors.As(err, &list):
			rs.refusal = &Refusal{Revision: rev, Reason: fmt.Sprintf("%d manifest error(s); fix them in a new commit", len(list))}
			for _, e := range list {
				e2 := *e
				e2.Pos.File = path.Join(p.cfg.Path, e.Pos.File)
				rs.refusal.Errors = append(rs.refusal.Errors, e2.Error())
			}
		case errors.Is(err, fs.ErrNotExist):
			rs.refusal = &Refusal{Revision: rev, Reason: fmt.Sprintf("the manifests path %q does not exist in this commit: %v", displayPath(p.cfg.Path), err)}
		case err != nil:
			return nil, fmt.Errorf("read manifests of %s: %w", rev.Short(), err)
		default:
			rs.app = app
		}
	}
	p.st.parsed[rev.SHA] = rs
	p.st.parsedOrder = append(p.st.parsedOrder, rev.SHA)
	if len(p.st.parsedOrder) > parseCacheMax {
		delete(p.st.parsed, p.st.parsedOrder[0])
		p.st.parsedOrder = p.st.parsedOrder[1:]
	}
	return rs, nil
}

func (p *pass) loadSHA(ctx context.Context, sha string) (*revisionState, error) {
	rev, err := p.st.source.Revision(ctx, sha)
	if err != nil {
		return nil, err
	}
	return p.load(ctx, rev)
}

func displayPath(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// guard refuses a valid revision that would remove too much.
func (p *pass) guard(rs *revisionState) string {
	if len(rs.app.Services) == 0 && !p.cfg.AllowEmpty {
		return "the revision declares no services, so applying it would remove everything the app runs; set allowEmpty: true for this app to allow it"
	}
	if p.cfg.MaxRemovalPercent >= 100 {
		return ""
	}
	running := map[string]bool{}
	for _, c := range p.actual.Containers {
		if c.App == p.cfg.Name && c.Service != "" {
			running[c.Service] = true
		}
	}
	if len(running) == 0 {
		return ""
	}
	plan := drift.Compute(p.inputFor(rs, *p.actual))
	removed := map[string]bool{}
	for _, c := range plan.Changes {
		if c.Kind == drift.KindContainer && c.Action == drift.ActionRemove && running[c.Service] && rs.app.Service(c.Service) == nil {
			removed[c.Service] = true
		}
	}
	if len(removed)*100 > p.cfg.MaxRemovalPercent*len(running) {
		names := sortedKeys(removed)
		return fmt.Sprintf("applying it would remove %d of %d running services (%s), more than maxRemovalPercent %d%%; raise maxRemovalPercent for this app (100 = no limit) to allow it",
			len(removed), len(running), strings.Join(names, ", "), p.cfg.MaxRemovalPercent)
	}
	return ""
}

func (p *pass) inputFor(rs *revisionState, actual drift.Actual) drift.Input {
	now := p.a.now()
	backoff := map[string]time.Time{}
	for name, cs := range p.st.crash {
		if cs.until.After(now) {
			backoff[name] = cs.until
		}
	}
	failed := map[string]drift.RolloutFailure{}
	if rs.app != nil {
		for _, svc := range rs.app.Services {
			f := p.st.failed[svc.Name]
			if f == nil || f.hash != svc.Hash {
				continue
			}
			failed[svc.Name] = drift.RolloutFailure{Hash: f.hash, Reason: f.reason, NotBefore: f.until}
			if !f.until.After(now) {
				continue
			}
			for slot := 1; slot <= svc.Spec.Replicas; slot++ {
				backoff[manifest.ContainerName(p.cfg.Name, svc.Name, slot)] = f.until
			}
		}
	}
	return drift.Input{
		App:     p.cfg.Name,
		Desired: rs.app,
		Actual:  actual,
		Options: drift.Options{
			Revision:       rs.rev.SHA,
			Prune:          p.cfg.Prune,
			Now:            now,
			Backoff:        backoff,
			Applied:        p.st.appliedState,
			ReadyDeadline:  readyDeadline,
			NoSelfHeal:     !p.cfg.SelfHeal,
			FailedRollouts: failed,
		},
	}
}

func (p *pass) compute(actual drift.Actual) drift.Plan {
	p.input = p.inputFor(p.desired, actual)
	plan := drift.Compute(p.input)
	return plan
}

func (p *pass) recordRefusal() {
	r := p.refusal
	if p.st.lastRefused == r.Revision.SHA {
		return
	}
	p.st.lastRefused = r.Revision.SHA
	sha := r.Revision.SHA
	p.addPersist(func(pa *persistedApp) { pa.LastRefused = sha })
	keeping := "nothing was deployed before"
	if p.st.accepted != nil {
		keeping = "still running " + p.st.accepted.rev.Short()
	}
	rev := r.Revision
	p.history = append(p.history, HistoryEntry{
		App: p.cfg.Name, Kind: KindRefused, Trigger: p.trigger, Revision: &rev,
		Summary: fmt.Sprintf("refused %s “%s”: %s; %s", rev.Short(), rev.Subject, r.Reason, keeping),
		Result:  "refused", Errors: r.Errors,
	})
}

// decideAndApply applies the plan unless the app is suspended, or it is
// pure drift and self-heal is off; then observes again for status.
func (p *pass) decideAndApply(ctx context.Context, plan drift.Plan) error {
	revChange := p.st.appliedRev == nil || p.st.appliedRev.SHA != p.desired.rev.SHA
	toApply := plan
	if !p.cfg.SelfHeal {
		toApply.Changes = nil
		for _, c := range plan.Changes {
			if c.Cause != drift.CauseDrift {
				toApply.Changes = append(toApply.Changes, c)
			}
		}
	}
	switch {
	case p.cfg.Suspend:
		if !plan.Empty() {
			p.skipped = "suspended: changes are not applied"
		}
		toApply.Changes = nil
	case !p.cfg.SelfHeal && len(toApply.Changes) < len(plan.Changes):
		p.skipped = "self-heal is off: changes made outside Git are shown, not repaired"
	}

	if len(toApply.Changes) == 0 {
		if revChange && !p.cfg.Suspend && len(plan.Changes) == 0 && len(plan.Deferred) == 0 {
			// A commit that changes nothing the engine runs (say, a README)
			// still becomes the applied revision.
			p.markApplied(plan)
		}
		p.setGap(plan)
		return nil
	}

	p.announceApply(toApply)
	t0 := time.Now()
	res := p.a.engine.Apply(ctx, p.desired.app, toApply, nil)
	elapsed := time.Since(t0)
	p.applied = true
	outcomes := make([]ChangeOutcome, 0, len(res.Outcomes))
	for _, o := range res.Outcomes {
		outcomes = append(outcomes, ChangeOutcome{Change: o.Change, Result: outcomeResult(o), Error: o.Err, Duration: o.Duration})
	}
	p.recordRepairs(outcomes)
	p.noteRolloutFailures(outcomes, res.Degraded)
	if res.Err != nil {
		p.applyErr = fmt.Errorf("apply %s: %w", p.desired.rev.Short(), res.Err)
	}

	hasGit := false
	for _, c := range toApply.Changes {
		if c.Cause != drift.CauseDrift {
			hasGit = true
		}
	}
	if revChange || hasGit {
		rev := p.desired.rev
		planCopy := clonePlan(toApply)
		entry := HistoryEntry{
			App: p.cfg.Name, Kind: KindSync, Trigger: p.trigger, Revision: &rev,
			Plan: &planCopy, Outcomes: outcomes, Duration: elapsed,
			Result: resultWord(outcomes, res.Err),
		}
		entry.Summary = syncSummary(rev, toApply, entry.Result)
		if res.Err != nil {
			entry.Errors = append(entry.Errors, res.Err.Error())
		}
		for _, svc := range sortedKeys(res.Degraded) {
			entry.Errors = append(entry.Errors, fmt.Sprintf("%s: %s", svc, res.Degraded[svc]))
		}
		p.history = append(p.history, entry)
	}
	if res.Err == nil {
		p.markApplied(toApply)
	}

	// Observe again so status shows what runs now, not what ran before.
	actual, err := p.a.engine.Observe(ctx, p.cfg.Name, true)
	if err != nil {
		p.engineErr = err
		return &waitingError{fmt.Errorf("Docker engine unreachable: %w", err)}
	}
	p.actual = &actual
	p.setGap(p.compute(actual))
	return nil
}

// announceApply shows, before a rollout that may take a while, that the app
// is out of sync and progressing towards the plan, so nobody reads the
// previous "Synced" as the new revision being done. The pass's final status
// write replaces it.
func (p *pass) announceApply(plan drift.Plan) {
	planCopy := clonePlan(plan)
	p.a.mu.Lock()
	s := &p.st.status
	s.Sync = OutOfSync
	if s.Health != Degraded {
		s.Health = Progressing
	}
	s.Drift = &planCopy
	s.Message = fmt.Sprintf("applying %s: %s", p.desired.rev.Short(), strings.TrimPrefix(plan.Summary(), "Plan: "))
	p.a.mu.Unlock()
	p.a.notify(p.cfg.Name, "status")
}

func (p *pass) setGap(plan drift.Plan) {
	p.plan = &plan
	h := drift.Assess(p.input, plan)
	p.health = &h
	if len(plan.Deferred) > 0 {
		first := plan.Deferred[0].NotBefore
		for _, c := range plan.Deferred {
			if c.NotBefore.Before(first) {
				first = c.NotBefore
			}
		}
		p.a.queue.AddAfter(p.cfg.Name, "backoff", first.Sub(p.a.now())+100*time.Millisecond)
	}
}

// markApplied records that the desired revision now runs. Services the
// plan could not converge (held back by a conflict or a crash-loop backoff)
// keep what they were converged to before: a replica that was never created
// must not later count as "removed outside Git".
func (p *pass) markApplied(plan drift.Plan) {
	rev := p.desired.rev
	held := map[string]bool{}
	for _, c := range plan.Conflicts {
		held[c.Service] = true
	}
	for _, c := range plan.Deferred {
		held[c.Service] = true
	}
	state := map[string]drift.AppliedService{}
	for _, s := range p.desired.app.Services {
		if held[s.Name] {
			if prev, ok := p.st.appliedState[s.Name]; ok {
				state[s.Name] = prev
			}
			continue
		}
		state[s.Name] = drift.AppliedService{Hash: s.Hash, Replicas: s.Spec.Replicas}
	}
	prev := p.st.appliedRev
	p.st.appliedRev = &rev
	p.st.appliedState = state
	p.addPersist(func(pa *persistedApp) {
		pa.Applied = &rev
		pa.AppliedState = state
	})
	if !p.applied && prev != nil && prev.SHA != rev.SHA {
		r := rev
		p.history = append(p.history, HistoryEntry{
			App: p.cfg.Name, Kind: KindSync, Trigger: p.trigger, Revision: &r, Result: "succeeded",
			Summary: syncSummary(rev, drift.Plan{}, "succeeded"),
		})
	}
}

func outcomeResult(o deploy.Outcome) string {
	switch {
	case o.Err != "" || o.Phase == deploy.PhaseFailed:
		return "failed"
	case o.Phase == deploy.PhaseSkipped:
		return "skipped"
	}
	return "done"
}

func resultWord(outcomes []ChangeOutcome, err error) string {
	if err == nil {
		return "succeeded"
	}
	for _, o := range outcomes {
		if o.Result == "done" {
			return "partial"
		}
	}
	return "failed"
}

func syncSummary(rev gitsource.Revision, plan drift.Plan, result string) string {
	what := "synced"
	if rev.Revert {
		what = "synced revert"
	}
	s := fmt.Sprintf("%s %s “%s”: %s", what, rev.Short(), rev.Subject, strings.TrimPrefix(plan.Summary(), "Plan: "))
	if result != "succeeded" {
		s += " (" + result + ")"
	}
	return s
}

// noteRolloutFailures backs off services whose new replicas failed, so a
// bad image is reported and retried slowly instead of being rolled out in a
// hot loop (each failed attempt causes Docker events that would otherwise
// start the next one at once).
func (p *pass) noteRolloutFailures(outcomes []ChangeOutcome, degraded map[string]string) {
	now := p.a.now()
	failedSvc, okSvc := map[string]string{}, map[string]bool{}
	for _, o := range outcomes {
		c := o.Change
		if c.Kind != drift.KindContainer || c.Action == drift.ActionRemove || c.Service == "" {
			continue
		}
		switch o.Result {
		case "failed":
			if _, ok := failedSvc[c.Service]; !ok {
				failedSvc[c.Service] = o.Error
			}
		case "done":
			okSvc[c.Service] = true
		}
	}
	for svc, why := range degraded {
		failedSvc[svc] = why
	}
	for name := range okSvc {
		if _, bad := failedSvc[name]; !bad {
			delete(p.st.failed, name)
		}
	}
	for name, why := range failedSvc {
		svc := p.desired.app.Service(name)
		if svc == nil {
			continue
		}
		f := p.st.failed[name]
		if f == nil || f.hash != svc.Hash {
			f = &rolloutFailure{hash: svc.Hash, delay: crashBaseDelay}
			p.st.failed[name] = f
		} else {
			f.delay = min(f.delay*2, crashMaxDelay)
		}
		f.reason = why
		f.until = now.Add(f.delay)
	}
}

// recordRepairs turns applied drift changes into repair entries, and
// tracks crash loops and flapping.
func (p *pass) recordRepairs(outcomes []ChangeOutcome) {
	now := p.a.now()
	for _, o := range outcomes {
		c := o.Change
		if c.Cause != drift.CauseDrift || o.Result != "done" {
			continue
		}
		p.repairs++
		p.a.metrics.repairs.WithLabelValues(p.cfg.Name).Inc()
		rev := p.desired.rev
		oc := o
		p.history = append(p.history, HistoryEntry{
			App: p.cfg.Name, Kind: KindRepair, Trigger: p.trigger, Revision: &rev,
			Summary: repairSummary(c), Result: "succeeded", Outcomes: []ChangeOutcome{oc}, Duration: o.Duration,
		})
		// Only a container that stopped again counts towards the crash
		// backoff: one removed by hand is recreated at once every time.
		if c.Kind == drift.KindContainer && c.Action == drift.ActionStart {
			p.noteCrash(c.Name, now)
		}
		for _, field := range repairFields(c) {
			p.noteFlap(flapKey{c.Name, field}, now)
		}
	}
}

// noteCrash doubles a container's repair backoff when it needs repairing
// again soon after the last repair: it keeps failing on its own, and
// repairing it in a hot loop helps nobody.
func (p *pass) noteCrash(name string, now time.Time) {
	cs := p.st.crash[name]
	if cs == nil || now.Sub(cs.lastRepair) > crashWindow {
		p.st.crash[name] = &crashState{lastRepair: now}
		return
	}
	if cs.delay == 0 {
		cs.delay = crashBaseDelay
	} else {
		cs.delay = min(cs.delay*2, crashMaxDelay)
	}
	cs.lastRepair = now
	cs.until = now.Add(cs.delay)
}

// noteFlap counts repairs of the same field. Flapping apps keep being
// repaired: Git stays the source of truth, and stopping would leave the
// app broken; instead the fight is reported so a person can find the other
// party (a cron job, another tool, a colleague).
func (p *pass) noteFlap(k flapKey, now time.Time) {
	times := append(p.st.repairs[k], now)
	p.st.repairs[k] = times
	p.pruneFlaps(now)
	times = p.st.repairs[k]
	if len(times) < flapThreshold {
		return
	}
	if f, ok := p.st.flapping[k]; ok {
		f.Count = len(times)
		return
	}
	p.st.flapping[k] = &Flap{Container: k.container, Field: k.field, Count: len(times), Since: now}
	p.history = append(p.history, HistoryEntry{
		App: p.cfg.Name, Kind: KindFlapping, Trigger: p.trigger,
		Summary: fmt.Sprintf("%s %s was repaired %d times in %s: something outside Git keeps changing it; driftless keeps repairing it", k.container, k.field, len(times), flapWindow),
	})
}

func (p *pass) pruneFlaps(now time.Time) {
	for k, times := range p.st.repairs {
		i := 0
		for i < len(times) && now.Sub(times[i]) > flapWindow {
			i++
		}
		times = times[i:]
		if len(times) == 0 {
			delete(p.st.repairs, k)
		} else {
			p.st.repairs[k] = times
		}
		if len(times) < flapThreshold {
			delete(p.st.flapping, k)
		}
	}
	for k := range p.st.flapping {
		if _, ok := p.st.repairs[k]; !ok {
			delete(p.st.flapping, k)
		}
	}
	for name, cs := range p.st.crash {
		if now.Sub(cs.lastRepair) > crashWindow && !cs.until.After(now) {
			delete(p.st.crash, name)
		}
	}
}

func repairFields(c drift.Change) []string {
	switch c.Action {
	case drift.ActionCreate:
		return []string{"removed"}
	case drift.ActionStart:
		return []string{"state"}
	case drift.ActionRemove:
		return []string{"added"}
	}
	var fields []string
	for _, f := range c.Fields {
		fields = append(fields, f.Path)
	}
	if len(fields) == 0 {
		fields = []string{"spec"}
	}
	return fields
}

// repairSummary says in words what was changed outside Git and what was
// done about it.
func repairSummary(c drift.Change) string {
	what := c.Name
	if c.Kind != drift.KindContainer {
		what = string(c.Kind) + " " + c.Name
	}
	switch c.Action {
	case drift.ActionCreate:
		return what + " was removed outside Git; recreated"
	case drift.ActionStart:
		return what + " was stopped outside Git; started"
	case drift.ActionRemove:
		return what + " was added outside Git; removed"
	}
	var fields []string
	for _, f := range c.Fields {
		fields = append(fields, f.Path)
	}
	if len(fields) == 0 {
		return what + " was changed outside Git; recreated"
	}
	return what + " was changed outside Git (" + strings.Join(fields, ", ") + "); recreated"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
