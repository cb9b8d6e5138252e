package loop

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/sync/store"
)

// statusInput is what nextStatus judges: the app before the pass, and
// what the pass found and did.
type statusInput struct {
	prev    status.AppStatus
	mem     memory
	cfg     config.AppConfig
	pinned  *gitsource.Revision
	trigger string
	now     time.Time
	out     passOutcome
	// stateDir is the engine's state root, for the host paths of state
	// directories; "" shows none.
	stateDir string
}

// statusUpdate is the app after the pass, and what to record about it.
type statusUpdate struct {
	status  status.AppStatus
	mem     memory
	history []status.HistoryEntry
	// persist changes the app's durable state; nil when nothing durable
	// changed.
	persist func(*store.App)
	repairs int      // drift repairs made, for metrics
	errors  []string // kinds of failure in this pass, for metrics
	// requeue: run the next pass at once (a canary passed: roll the rest).
	requeue bool
}

// nextStatus is the one place where a pass's outcome becomes status,
// history and memory. It is pure: the clock is in.now, and in.prev and
// in.mem are not changed. Every other status write is marked "status
// exception" with its reason: progress shown during a pass, a person's
// action shown before the pass it enqueues, and what only the caller knows.
func nextStatus(in statusInput) statusUpdate {
	u := &statusUpdate{mem: in.mem.clone()}
	o := in.out
	if o.accepted != nil && o.accepted.app != nil {
		in.cfg.Release = effectiveRelease(in.cfg.Release, o.accepted.app.Release)
	}
	if o.accepted != nil && (u.mem.accepted == nil || u.mem.accepted.rev.SHA != o.accepted.rev.SHA) {
		u.mem.accepted = o.accepted
		rev := o.accepted.rev
		u.addPersist(func(pa *store.App) { pa.Accepted = &rev })
	}
	if o.refusal != nil {
		u.noteRefusal(in, *o.refusal)
	}
	var released []string // services a new release changed; nil: no release
	if o.apply != nil {
		released = u.noteApply(in, o.apply)
	} else if o.gap != nil && o.accepted != nil && !in.cfg.Suspend && revisionChanged(u.mem, o.accepted) &&
		len(o.gap.Changes) == 0 && len(o.gap.Deferred) == 0 {
		// A commit that changes nothing the engine runs (say, a README)
		// still becomes the applied revision.
		u.markApplied(in, o.accepted, *o.gap, true)
		released = []string{}
	}
	u.noteRelease(in, released)
	if !o.cancelled {
		u.noteSource(in)
		u.noteForcePush(in)
	}
	u.noteErrors(o)
	conds := u.conditions(in)
	u.status = buildStatus(in, u.mem, conds)
	if !o.cancelled {
		// Followed tags that moved come first: they led to the sync, if any.
		u.history = append(tagHistory(in.cfg.Name, o.tagMoves, in.now), u.history...)
	}
	return *u
}

func (u *statusUpdate) addPersist(f func(*store.App)) {
	prev := u.persist
	u.persist = func(pa *store.App) {
		if prev != nil {
			prev(pa)
		}
		f(pa)
	}
}

func (u *statusUpdate) record(in statusInput, e status.HistoryEntry) {
	e.App, e.Trigger = in.cfg.Name, in.trigger
	u.history = append(u.history, e)
}

func revisionChanged(m memory, rs *revisionState) bool {
	return m.appliedRev == nil || m.appliedRev.SHA != rs.rev.SHA
}

// noteRefusal records a refused revision once, however often it is seen.
func (u *statusUpdate) noteRefusal(in statusInput, r status.Refusal) {
	if u.mem.lastRefused == r.Revision.SHA {
		return
	}
	u.mem.lastRefused = r.Revision.SHA
	sha := r.Revision.SHA
	u.addPersist(func(pa *store.App) { pa.LastRefused = sha })
	if fp := in.out.forcePush; fp != nil && fp.Refused && fp.To.SHA == sha {
		return // the force-push entry says it, with the remedy
	}
	rev := r.Revision
	// "Still running" names what runs: the last applied revision, not
	// one that was accepted but never came up.
	u.record(in, status.HistoryEntry{Kind: status.KindRefused, Revision: &rev, Summary: status.RefusedSummary(r, u.mem.appliedRev),
		Result: "refused", Errors: r.Errors})
}

// noteApply records what an apply did: repairs, interference, failed
// rollouts, the sync itself, and the new applied revision. It returns the
// services a successful sync changed because Git asked (nil when the
// apply was not a sync), for the release's watch window.
func (u *statusUpdate) noteApply(in statusInput, a *applyReport) []string {
	desired := in.out.accepted
	rev := desired.rev
	res := a.result
	for _, o := range res.Outcomes {
		switch {
		case o.Change.Cause == drift.CauseDrift && o.Result == drift.ResultDone:
			u.noteRepair(in, o)
		case o.Result == drift.ResultFailed && o.Failure != nil && o.Failure.Cause == drift.FailureInterference:
			r := rev
			u.record(in, status.HistoryEntry{Kind: status.KindRepair, Revision: &r, Summary: status.InterferenceSummary(o), Result: "interrupted",
				Outcomes: []drift.Outcome{o}, Duration: o.Duration})
			u.noteFlapOf(in, o.Change)
		}
	}
	noteRolloutFailures(&u.mem, desired.app, res, in.now)

	hasGit := slices.ContainsFunc(a.plan.Changes, func(c drift.Change) bool { return c.Cause != drift.CauseDrift })
	if revisionChanged(u.mem, desired) || hasGit {
		r := rev
		planCopy := clonePlan(a.plan)
		entry := status.HistoryEntry{Kind: status.KindSync, Revision: &r, Plan: &planCopy, Outcomes: res.Outcomes,
			Duration: a.elapsed, Result: status.ResultWord(res)}
		entry.Summary = status.SyncSummary(rev, a.plan, entry.Result)
		if q := in.out.rollback; q != nil {
			entry.Kind = status.KindRollback
			entry.Summary = status.AutomaticRollbackPrefix + q.Revision.Short() + " (" + q.Reason + "): " + entry.Summary
		}
		entry.Digests = replicaDigests(in.out.actual)
		if res.Err != nil {
			entry.Errors = append(entry.Errors, res.Err.Error())
		}
		for _, svc := range slices.Sorted(maps.Keys(res.Degraded)) {
			entry.Errors = append(entry.Errors, svc+": "+res.Degraded[svc].Error())
		}
		u.record(in, entry)
	}
	if res.Err != nil {
		return nil
	}
	released := revisionChanged(u.mem, desired) || hasGit
	u.markApplied(in, desired, a.plan, false)
	if !released {
		return nil
	}
	return changedServices(a.plan)
}

func (u *statusUpdate) noteRepair(in statusInput, o drift.Outcome) {
	c := o.Change
	u.repairs++
	rev := in.out.accepted.rev
	u.record(in, status.HistoryEntry{Kind: status.KindRepair, Revision: &rev, Summary: status.RepairSummary(c), Result: "succeeded",
		Outcomes: []drift.Outcome{o}, Duration: o.Duration})
	// Only a container that stopped again counts towards the crash
	// backoff: one removed by hand is recreated at once every time.
	if c.Kind == drift.KindContainer && c.Action == drift.ActionStart {
		noteCrash(&u.mem, c.Name, in.now)
	}
	u.noteFlapOf(in, c)
}

func (u *statusUpdate) noteFlapOf(in statusInput, c drift.Change) {
	for _, field := range status.RepairFields(c) {
		if f, started := noteFlap(&u.mem, flapKey{c.Name, field}, in.now); started {
			u.record(in, status.HistoryEntry{Kind: status.KindFlapping, Summary: flapEntry(f)})
		}
	}
}

// markApplied records that the desired revision now runs. Services the
// plan could not converge (held back by a conflict, a backoff or a
// dependency) keep what they were converged to before: a replica that was
// never created must not later count as "removed outside Git".
func (u *statusUpdate) markApplied(in statusInput, desired *revisionState, plan drift.Plan, entry bool) {
	rev := desired.rev
	held := map[string]bool{}
	for _, c := range plan.Conflicts {
		held[c.Service] = true
	}
	for _, c := range plan.Deferred {
		held[c.Service] = true
	}
	state := map[string]drift.AppliedService{}
	for _, s := range desired.app.Services {
		if held[s.Name] {
			if prev, ok := u.mem.appliedState[s.Name]; ok {
				state[s.Name] = prev
			}
			continue
		}
		state[s.Name] = drift.AppliedService{Hash: s.Hash, Replicas: s.Spec.Replicas}
	}
	prev := u.mem.appliedRev
	from := in.cfg.SourceIdentity()
	u.mem.appliedRev = &rev
	u.mem.appliedState = state
	u.mem.appliedFrom = from
	u.addPersist(func(pa *store.App) {
		pa.Applied = &rev
		pa.AppliedState = state
		pa.AppliedFrom = from
	})
	if entry && prev != nil && prev.SHA != rev.SHA {
		r := rev
		u.record(in, status.HistoryEntry{Kind: status.KindSync, Revision: &r, Result: "succeeded", Summary: status.SyncSummary(rev, drift.Plan{}, "succeeded")})
	}
}

// noteSource records source transitions once, not on every failed poll.
func (u *statusUpdate) noteSource(in statusInput) {
	o := in.out
	switch {
	case o.sourceErr != nil && !u.mem.sourceFail:
		u.mem.sourceFail = true
		keeping := "nothing is deployed yet"
		if u.mem.accepted != nil {
			keeping = "keeping " + u.mem.accepted.rev.Short() + " running"
		}
		u.record(in, status.HistoryEntry{Kind: status.KindSource, Result: "failed",
			Summary: fmt.Sprintf("source failed: %v; %s and retrying with backoff", o.sourceErr, keeping)})
	case o.sourceErr == nil && o.fetched != nil && u.mem.sourceFail:
		u.mem.sourceFail = false
		u.record(in, status.HistoryEntry{Kind: status.KindSource, Result: "succeeded", Revision: cloneRev(o.fetched),
			Summary: "source recovered: fetched " + o.fetched.Short()})
	}
}

// noteForcePush records a force-push once, and forgets it at the first
// fetched head after it that is not one: a fast-forward, or the old
// history pushed back.
func (u *statusUpdate) noteForcePush(in statusInput) {
	o := in.out
	old := u.mem.forcePush
	switch {
	case o.forcePush != nil:
		if old != nil && old.From == o.forcePush.From && old.To.SHA == o.forcePush.To.SHA && old.Refused == o.forcePush.Refused && old.VerifyDefault == o.forcePush.VerifyDefault {
			return
		}
		fp := *o.forcePush
		fp.Since = in.now
		u.mem.forcePush = &fp
		u.addPersist(func(pa *store.App) { c := fp; pa.ForcePush = &c })
		to := fp.To
		e := status.HistoryEntry{Kind: status.KindForcePush, Revision: &to, Result: "followed",
			Summary: fp.Summary() + "; following it (" + fp.Setting() + ")"}
		if fp.Refused {
			e.Result = "refused"
			e.Summary = fp.Summary() + "; refused (" + fp.Setting() + "), still running " + shortSHA(fp.From) + "; " + fp.Remedy()
		}
		u.record(in, e)
	case old != nil && o.fetched != nil && o.sourceErr == nil && o.fetched.SHA != old.To.SHA:
		u.mem.forcePush = nil
		u.addPersist(func(pa *store.App) { pa.ForcePush = nil })
	}
}

// forcePushCondition is the force-push as an active condition.
func forcePushCondition(fp status.ForcePush) string {
	if fp.Refused {
		return fp.Summary() + "; refused (" + fp.Setting() + "), still running " + shortSHA(fp.From) + "; " + fp.Remedy()
	}
	return fp.Summary() + "; followed (" + fp.Setting() + "); this notice clears at the next fast-forward"
}

func (u *statusUpdate) noteErrors(o passOutcome) {
	if o.cancelled {
		return
	}
	if o.sourceErr != nil {
		u.errors = append(u.errors, "source")
	}
	if o.engineErr != nil {
		u.errors = append(u.errors, "engine")
	} else if kind := applyFailureKind(o); kind != "" {
		u.errors = append(u.errors, kind)
	}
	if o.refusal != nil {
		u.errors = append(u.errors, "validation")
	}
}

// applyFailureKind is the condition an apply that did not complete is
// listed under: "engine" when the engine failed under it (unreachable, a
// request left unanswered, a 5xx), retried by passResult as an engine
// down at observe, since the manifest is not at fault; else "apply"; ""
// when it completed or only stopped for something newer.
func applyFailureKind(o passOutcome) string {
	switch r := o.apply; {
	case r == nil || r.result.Err == nil || r.result.OnlyCause(drift.FailureStopped):
		return ""
	case r.result.Causes()[drift.FailureEngine] > 0:
		return "engine"
	}
	return "apply"
}

// conditionOrder is how active problems are listed, most fundamental first.
var conditionOrder = []string{"engine", "source", "force-push", "validation", "release", "apply", "conflict", "flapping", "history", "notification"}

// conditions are the active problems; each keeps its Since while the same
// kind of problem lasts.
func (u *statusUpdate) conditions(in statusInput) map[string]status.Condition {
	o := in.out
	active := map[string]string{}
	if o.sourceErr != nil {
		active["source"] = o.sourceErr.Error()
	}
	if o.refusal != nil {
		active["validation"] = fmt.Sprintf("revision %s refused: %s", o.refusal.Revision.Short(), o.refusal.Reason)
	}
	if o.engineErr != nil {
		active["engine"] = engineMessage(o.engineErr)
	}
	if fp := u.mem.forcePush; fp != nil {
		active["force-push"] = forcePushCondition(*fp)
	}
	if msg := releaseCondition(in, u.mem); msg != "" {
		active["release"] = msg
	}
	if kind := applyFailureKind(o); kind != "" && active[kind] == "" {
		active[kind] = fmt.Sprintf("apply %s: %v", o.accepted.rev.Short(), o.apply.result.Err)
	}
	if o.gap != nil && len(o.gap.Conflicts) > 0 {
		active["conflict"] = conflictCondition(o.gap.Conflicts)
	}
	if len(u.mem.flapping) > 0 {
		active["flapping"] = flappingCondition(u.mem.flapping)
	}
	// Set outside the pass, they last until the next success: "history"
	// by the caller when the store fails (until a write succeeds),
	// "notification" by RecordNotification (until a delivery succeeds).
	for _, kind := range []string{"history", "notification"} {
		if c, ok := u.mem.conditions[kind]; ok {
			active[kind] = c.Message
		}
	}
	if o.cancelled {
		// A cancelled pass says nothing new about the world.
		for kind := range active {
			if _, had := u.mem.conditions[kind]; !had {
				delete(active, kind)
			}
		}
	}
	conds := map[string]status.Condition{}
	for kind, msg := range active {
		since := in.now
		if old, ok := u.mem.conditions[kind]; ok {
			since = old.Since
		}
		conds[kind] = status.Condition{Kind: kind, Message: msg, Since: since}
	}
	u.mem.conditions = conds
	return conds
}

func conflictCondition(conflicts []drift.Conflict) string {
	var msgs []string
	for _, c := range conflicts {
		msgs = append(msgs, c.Name+": "+c.Reason)
	}
	return strings.Join(msgs, "; ")
}

func flappingCondition(flapping map[flapKey]status.Flap) string {
	var msgs []string
	for _, f := range sortedFlaps(flapping) {
		msgs = append(msgs, fmt.Sprintf("%s %s repaired %d times", f.Container, f.Field, f.Count))
	}
	return "something outside Git keeps changing the app: " + strings.Join(msgs, "; ")
}

// buildStatus writes the status every field at once from the pass.
func buildStatus(in statusInput, mem memory, conds map[string]status.Condition) status.AppStatus {
	o := in.out
	s := cloneStatus(in.prev)
	s.Reconciling = false
	s.LastPass = in.now
	if success(o) && !o.cancelled {
		s.LastSuccess = in.now
	}
	s.Suspended, s.SelfHeal, s.Prune = in.cfg.Suspend, in.cfg.SelfHeal, in.cfg.Prune
	// A pass runs only while the app's source declares it.
	s.FromSource, s.LeftGit, s.Preview, s.Engine = in.cfg.Source, nil, previewStatus(in.cfg), in.cfg.Engine
	s.Pinned = cloneRev(in.pinned)
	sourceStatus(&s, in, conds)
	s.Applied = cloneRev(mem.appliedRev)
	s.ForcePush = cloneForcePush(mem.forcePush)
	if o.refusal != nil {
		r := *o.refusal
		s.Refused = &r
	} else if o.accepted != nil && (o.fetched != nil || in.pinned != nil) {
		s.Refused = nil
	}
	s.Errors = nil
	for _, kind := range conditionOrder {
		if c, ok := conds[kind]; ok {
			s.Errors = append(s.Errors, c)
		}
	}
	s.Flapping = sortedFlaps(mem.flapping)
	s.Warnings = nil
	if o.accepted != nil && o.accepted.app != nil {
		for _, w := range o.accepted.app.Warnings {
			s.Warnings = append(s.Warnings, w.Error())
		}
		s.StateDirs = stateDirs(o.accepted.app, in.stateDir)
	}
	switch {
	case o.engineErr != nil && !o.cancelled:
		s.Sync, s.Health, s.Drift, s.Held = status.SyncUnknown, status.HealthUnknown, nil, nil
	case o.gap != nil:
		plan := clonePlan(*o.gap)
		s.Drift = &plan
		s.Sync = drift.SyncOf(*o.gap, s.Refused != nil || headQuarantined(&s, mem))
		s.Health = o.health.Health
		s.Services = serviceStatuses(o.accepted, o.input.Desired, o.health, o.actual)
		s.Volumes = status.Volumes(s.Name, o.actual)
		s.Held = slices.Clone(o.decision.Held)
	case o.accepted == nil && !o.cancelled:
		s.Sync, s.Health, s.Drift, s.Services, s.Held = status.SyncUnknown, drift.HealthMissing, nil, nil, nil
		s.Volumes = nil
	}
	if s.Suspended {
		s.Health = status.HealthSuspended
	}
	s.Message = message(o, mem, &s)
	s.Release = releaseStatus(in.cfg, mem)
	if failureMessage(o, mem, &s) == "" {
		s.Message = releaseMessage(&s, mem, in.now, s.Message)
	}
	return s
}

// success: the pass did what it could; a refused revision is not a failed
// pass (the last good one is enforced), a failed source or engine is.
func success(o passOutcome) bool {
	if o.engineErr != nil || o.sourceErr != nil {
		return false
	}
	if o.apply != nil && o.apply.result.Err != nil {
		return o.apply.result.OnlyCause(drift.FailureInterference, drift.FailureStopped, drift.FailureDependency)
	}
	return true
}

func sourceStatus(s *status.AppStatus, in statusInput, conds map[string]status.Condition) {
	o := in.out
	if o.fetched != nil {
		s.Fetched = cloneRev(o.fetched)
		s.Source.LastFetch = in.now
	}
	if o.sourceErr != nil {
		s.Source.Error = o.sourceErr.Error()
		s.Source.ErrorSince = conds["source"].Since
	} else if o.fetched != nil || in.pinned != nil {
		s.Source.Error = ""
		s.Source.ErrorSince = time.Time{}
	}
}

// message is the one line a user reads first: the most pressing problem,
// what it means, and what the loop does next.
func message(o passOutcome, mem memory, s *status.AppStatus) string {
	if m := failureMessage(o, mem, s); m != "" {
		return m
	}
	switch {
	case o.gap != nil && o.decision.HeldReason() != "":
		return o.decision.HeldReason() + " (" + o.gap.Summary() + ")"
	case o.gap != nil && len(o.gap.Conflicts) > 0:
		return fmt.Sprintf("%d conflict(s) with objects driftless does not own; remove or rename them", len(o.gap.Conflicts))
	case o.health != nil && o.health.Health != drift.HealthHealthy:
		for _, svc := range o.health.Services {
			if svc.Health != drift.HealthHealthy && svc.Message != "" {
				return svc.Service + ": " + svc.Message
			}
		}
	}
	if s.Applied != nil && s.Sync == drift.SyncSynced {
		if fp := mem.forcePush; fp != nil && !fp.Refused && fp.To.SHA == s.Applied.SHA {
			return "synced to " + s.Applied.Short() + " after a force-push: " + fp.Summary()
		}
		return "synced to " + s.Applied.Short()
	}
	if o.gap != nil {
		return o.gap.Summary()
	}
	return s.Message
}

// failureMessage is the message of a pass that could not do its work, or
// "".
func failureMessage(o passOutcome, mem memory, s *status.AppStatus) string {
	running := "nothing deployed yet"
	if mem.appliedRev != nil {
		running = "still running " + mem.appliedRev.Short()
	}
	switch {
	case o.engineErr != nil:
		return engineMessage(o.engineErr) + "; retrying"
	case o.refusal != nil:
		return fmt.Sprintf("revision %s refused: %s; %s", o.refusal.Revision.Short(), o.refusal.Reason, running)
	case o.sourceErr != nil:
		return fmt.Sprintf("cannot read the Git source: %v; %s, retrying", o.sourceErr, running)
	case applyFailureKind(o) == "engine":
		return fmt.Sprintf("apply %s: %v; retrying", o.accepted.rev.Short(), o.apply.result.Err)
	case o.apply != nil && o.apply.result.Err != nil && !success(o):
		return fmt.Sprintf("apply %s: %v; retrying with backoff", o.accepted.rev.Short(), o.apply.result.Err)
	case s.Refused != nil:
		// A pass that looked only at the engine leaves the refusal
		// standing; it is still the news.
		return fmt.Sprintf("revision %s refused: %s; %s", s.Refused.Revision.Short(), s.Refused.Reason, running)
	case len(s.Flapping) > 0:
		for _, c := range s.Errors {
			if c.Kind == "flapping" {
				return c.Message
			}
		}
	}
	return ""
}

// serviceStatuses are the services of the revision as the pass enforced
// it: pinned (followed tags pinned to their digests), nil to show the
// revision's.
func serviceStatuses(desired *revisionState, pinned *manifest.App, h *drift.AppHealth, actual *drift.Actual) []status.ServiceStatus {
	if desired == nil || desired.app == nil {
		return nil
	}
	app := desired.app
	if pinned != nil && len(pinned.Services) == len(app.Services) {
		app = pinned
	}
	return status.Services(app, h, actual)
}

func sortedFlaps(m map[flapKey]status.Flap) []status.Flap {
	out := make([]status.Flap, 0, len(m))
	for _, f := range m {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b status.Flap) int {
		if c := strings.Compare(a.Container, b.Container); c != 0 {
			return c
		}
		return strings.Compare(a.Field, b.Field)
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

// withStorageError adds (or clears) the condition that history could not
// be written: enforcement goes on, but the record of it does not.
func withStorageError(s status.AppStatus, mem *memory, err error, now time.Time) status.AppStatus {
	if err == nil {
		if _, had := mem.conditions["history"]; !had {
			return s
		}
		delete(mem.conditions, "history")
		s.Errors = slices.DeleteFunc(slices.Clone(s.Errors), func(c status.Condition) bool { return c.Kind == "history" })
		return s
	}
	c := status.Condition{Kind: "history", Message: "history and state could not be written to the data directory (" + err.Error() + "); healing goes on, but is not recorded", Since: now}
	if old, ok := mem.conditions["history"]; ok {
		c.Since = old.Since
	}
	mem.conditions["history"] = c
	s.Errors = append(slices.DeleteFunc(slices.Clone(s.Errors), func(c status.Condition) bool { return c.Kind == "history" }), c)
	return s
}

// stateDirs lists the app's state directories with their host paths.
func stateDirs(app *manifest.App, root string) []status.StateDir {
	var out []status.StateDir
	for _, d := range app.StateDirs() {
		sd := status.StateDir{StateDir: d}
		if root != "" {
			sd.HostPath = manifest.StateHostPath(root, app.Name, d.Path)
		}
		out = append(out, sd)
	}
	return out
}
