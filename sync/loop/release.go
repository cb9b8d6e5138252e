package loop

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/sync/store"
)

// The release lifecycle: after a sync that changed services, the release is
// watched for release.watch; a regression inside the window quarantines the
// commit and rolls back to the last revision that passed its window. The
// judgement is drift.WatchRelease (pure); this file feeds it and turns its
// verdict into passes:
//
//	pass N:   regression found → nextStatus quarantines the commit → requeue
//	pass N+1: the quarantined target is diverted to the last good revision,
//	          which is applied like any revision (readiness-gated rollout)
//
// A quarantined commit stays quarantined while the branch names it; a newer
// commit is tried as usual, and a person's "Sync now" (or sync --force,
// or unquarantine) retries it on purpose.

// watchPoll is how often a pass looks at a release under watch when no
// event comes: a replica that stays unready, or an HTTP check, has no
// Docker event. Crashes are seen at once through events.
const watchPoll = 2 * time.Second

// maxQuarantined bounds the quarantine list kept per app.
const maxQuarantined = 10

// checkTimeout bounds one HTTP check of a release.
const checkTimeout = 5 * time.Second

// quarantineOf returns the quarantine of sha, or nil.
func quarantineOf(m memory, sha string) *status.Quarantine {
	for i := range m.quarantined {
		if m.quarantined[i].Revision.SHA == sha {
			return &m.quarantined[i]
		}
	}
	return nil
}

// divert replaces a quarantined target with the revision the rollback goes
// to. A person's pass ("Sync now") lifts the quarantine instead: it retries
// the commit on purpose. nil target means "keep enforcing the accepted
// revision", which may itself be the quarantined one.
func (p *pass) divert(ctx context.Context, target *gitsource.Revision, o *passOutcome) *gitsource.Revision {
	mem := p.in.mem
	if len(mem.quarantined) == 0 || p.in.pinned != nil {
		return target
	}
	sha := ""
	switch {
	case target != nil:
		sha = target.SHA
	case mem.accepted != nil:
		sha = mem.accepted.rev.SHA
	default:
		sha = mem.restoreSHA
	}
	q := quarantineOf(mem, sha)
	if q == nil {
		return target
	}
	if p.in.manual() {
		o.unquarantine = sha
		if target == nil && mem.accepted != nil {
			rev := mem.accepted.rev
			return &rev
		}
		return target
	}
	if q.RolledBackTo == "" {
		// Nothing passed a window before: what runs keeps running.
		return target
	}
	if mem.accepted != nil && mem.accepted.rev.SHA == q.RolledBackTo {
		// Rolling back already: enforce it. Until it has been applied,
		// this pass's apply is still the rollback.
		if mem.appliedRev == nil || mem.appliedRev.SHA != q.RolledBackTo {
			o.rollback = q
		}
		return nil
	}
	rev, err := p.st.source.Revision(ctx, q.RolledBackTo)
	if err != nil {
		o.sourceErr = fmt.Errorf("read %s to roll back to: %w", drift.ShortRevision(q.RolledBackTo), err)
		return nil
	}
	o.rollback = q
	return &rev
}

// watchRelease judges the release under watch from the pass's first
// observation. true: a regression was found and the pass ends, so that the
// next pass rolls back.
func (p *pass) watchRelease(ctx context.Context, cand *revisionState, o *passOutcome) bool {
	w := p.in.mem.watch
	if w == nil || cand != nil || o.accepted == nil || o.accepted.rev.SHA != w.Revision || o.actual == nil {
		return false
	}
	cfg := p.in.cfg
	cfg.Release = effectiveRelease(cfg.Release, o.accepted.app.Release)
	rules := watchRules(cfg, w)
	if rules.Watch == 0 {
		return false
	}
	now := p.a.now()
	obs := drift.ReleaseObservation{Desired: p.appFor(o.accepted, *o.actual), Actual: *o.actual, Now: now}
	if rules.Check.Due(w.LastCheck, now) {
		r := runCheck(ctx, rules.Check)
		obs.Check = &r
	}
	next, reg := drift.WatchRelease(*w, rules, obs)
	o.watch, o.regression = &next, reg
	return reg != nil
}

// effectiveRelease is the app's release rules: the local release:
// settings, overridden field by field by what the enforced revision says
// (compose x-driftless.release, a native App document). The HTTP check
// stays local.
func effectiveRelease(local drift.ReleaseRules, repo *manifest.ReleaseSettings) drift.ReleaseRules {
	r := local
	if repo == nil {
		return r
	}
	if repo.Watch > 0 {
		r.Watch = repo.Watch
	}
	if repo.UnreadyFor > 0 {
		r.UnreadyFor = repo.UnreadyFor
	}
	if repo.MaxRestarts != nil {
		r.MaxRestarts = *repo.MaxRestarts
	}
	if r.Watch > 0 && r.UnreadyFor == 0 {
		r.UnreadyFor = drift.DefaultUnreadyFor
	}
	return r
}

// watchRules are the rules a window is judged by: the app's release
// settings, or for a canary step without them, the defaults.
func watchRules(cfg config.AppConfig, w *drift.ReleaseWatch) drift.ReleaseRules {
	r := cfg.Release
	if w != nil && w.Canary {
		r.Watch = w.Until.Sub(w.Started)
		if r.UnreadyFor == 0 {
			r.UnreadyFor = drift.DefaultUnreadyFor
		}
	}
	return r
}

// runCheck GETs the release's check URL once.
func runCheck(ctx context.Context, c *drift.HTTPCheck) drift.CheckResult {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		return drift.CheckResult{Detail: err.Error()}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return drift.CheckResult{Detail: err.Error()}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	ok := resp.StatusCode == c.ExpectStatus || (c.ExpectStatus == 0 && resp.StatusCode/100 == 2)
	return drift.CheckResult{OK: ok, Detail: resp.Status}
}

// noteRelease moves the release lifecycle on: a lifted quarantine, a
// regression (quarantine), a window that closed without one (the release
// passed), and a new window after a sync that changed services.
func (u *statusUpdate) noteRelease(in statusInput, changed []string) {
	o := in.out
	if o.unquarantine != "" {
		u.liftQuarantine(in, o.unquarantine)
	}
	u.noteRollback(in)
	if o.cancelled {
		return
	}
	open := u.mem.watch
	u.judgeWindow(in)
	if changed != nil {
		u.openWindow(in, changed, open)
	}
	if f := o.postSyncFailure; f != nil && u.mem.watch != nil && o.rollback == nil {
		// A failed smoke test is a regression of the release it tested.
		u.quarantine(in, drift.Regression{Reason: postSyncReason(f)})
		u.requeue = true
	}
}

// postSyncReason is a failed post-sync run as a regression's reason.
func postSyncReason(f *status.JobRun) string {
	what := "exit " + strconv.Itoa(f.ExitCode)
	switch {
	case f.Error != "":
		what = f.Error
	case f.TimedOut:
		what = "timed out after " + f.Duration.Round(time.Second).String()
	}
	s := "post-sync job " + f.Job + " failed (" + what + ")"
	if n := len(f.LastLines); n > 0 {
		s += "; last line: " + f.LastLines[n-1]
	}
	return s
}

// judgeWindow moves the open window on from this pass's look: a
// regression, the window's end, or a window that no longer applies.
func (u *statusUpdate) judgeWindow(in statusInput) {
	o, w := in.out, u.mem.watch
	switch {
	case w == nil:
	case o.regression != nil:
		u.quarantine(in, *o.regression)
	case o.watch != nil && o.watch.Revision == w.Revision:
		next := *o.watch
		if !in.now.Before(next.Until) {
			u.passWatch(in)
		} else {
			u.mem.watch = &next
		}
	case (in.cfg.Release.Watch == 0 && !w.Canary) || (u.mem.appliedRev != nil && u.mem.appliedRev.SHA != w.Revision && o.rollback == nil):
		// Watching was turned off, or a newer revision was applied (its
		// own window, if any, opens next).
		u.setWatch(nil)
	}
}

// openWindow starts what follows a sync that changed the services named
// (none: a commit that changed no service): a canary's window, the
// release's window, or, without one, the release is good at once.
func (u *statusUpdate) openWindow(in statusInput, changed []string, open *drift.ReleaseWatch) {
	o, rules := in.out, in.cfg.Release
	rev := u.mem.appliedRev.SHA
	switch {
	case o.rollback != nil:
		// The rollback target passed its window before; it is not
		// watched again, so a failing rollback cannot ping-pong.
	case len(o.canary) > 0:
		u.startCanary(in, rev, changed, open)
	case len(changed) == 0 && open != nil && o.regression == nil && rules.Watch > 0:
		// A commit that changes no service (a README) on top of a release
		// under watch: the same replicas run, so the window goes on.
		w := *open
		w.Revision = rev
		u.setWatch(&w)
	case rules.Watch == 0 || len(changed) == 0:
		u.setLastGood(rev)
	default:
		back := u.mem.lastGood
		if back == rev {
			back = ""
		}
		w := drift.StartWatch(rev, back, changed, rules, o.accepted.app, actualOrEmpty(o.actual), applyStartOf(in), in.now)
		u.setWatch(&w)
	}
}

// applyStartOf is when the pass's apply began (now when it made none).
func applyStartOf(in statusInput) time.Time {
	if in.out.apply != nil {
		return in.now.Add(-in.out.apply.elapsed)
	}
	return in.now
}

func actualOrEmpty(a *drift.Actual) drift.Actual {
	if a == nil {
		return drift.Actual{}
	}
	return *a
}

func (u *statusUpdate) setWatch(w *drift.ReleaseWatch) {
	u.mem.watch = w
	u.addPersist(func(pa *store.App) { pa.Watch = w })
}

func (u *statusUpdate) setLastGood(sha string) {
	if u.mem.lastGood == sha {
		return
	}
	u.mem.lastGood = sha
	u.addPersist(func(pa *store.App) { pa.LastGood = sha })
}

// startCanary opens the window of a canary step: the canary replicas are
// watched for update.canaryWatch before the rest are replaced.
func (u *statusUpdate) startCanary(in statusInput, rev string, changed []string, open *drift.ReleaseWatch) {
	o := in.out
	rules := watchRules(in.cfg, &drift.ReleaseWatch{Canary: true})
	rules.Watch = 0
	for _, c := range o.canary {
		if svc := o.accepted.app.Service(c.Service); svc != nil {
			rules.Watch = max(rules.Watch, svc.Spec.Update.CanaryWatch)
		}
	}
	back := u.mem.lastGood
	if open != nil && open.Revision != rev && back == "" {
		back = open.RollbackTo
	}
	if back == rev {
		back = ""
	}
	w := drift.StartWatch(rev, back, changed, rules, o.accepted.app, actualOrEmpty(o.actual), applyStartOf(in), in.now)
	w.Canary = true
	u.setWatch(&w)
}

// passWatch: the window closed without a regression.
func (u *statusUpdate) passWatch(in statusInput) {
	w := u.mem.watch
	u.setWatch(nil)
	if w.Canary {
		u.passCanary(in, w)
		return
	}
	u.setLastGood(w.Revision)
	rev := in.out.accepted.rev
	u.record(in, status.HistoryEntry{Kind: status.KindRelease, Revision: &rev, Result: "passed", Duration: in.now.Sub(w.Started),
		Summary: fmt.Sprintf("release %s passed its %s watch window (%s); it is what a regression rolls back to", rev.Short(),
			in.cfg.Release.Watch, strings.Join(w.Services, ", "))})
}

// passCanary: the canary replicas passed their window; the next pass,
// at once, replaces the rest.
func (u *statusUpdate) passCanary(in statusInput, w *drift.ReleaseWatch) {
	passed := maps.Clone(u.mem.canaryPassed)
	if passed == nil {
		passed = map[string]string{}
	}
	for _, name := range w.Services {
		if svc := in.out.accepted.app.Service(name); svc != nil && svc.Spec.Update.Canary > 0 {
			passed[name] = svc.Hash
		}
	}
	u.mem.canaryPassed = passed
	u.addPersist(func(pa *store.App) { pa.CanaryPassed = passed })
	u.requeue = true
	rev := in.out.accepted.rev
	u.record(in, status.HistoryEntry{Kind: status.KindRelease, Revision: &rev, Result: "canary passed", Duration: in.now.Sub(w.Started),
		Summary: fmt.Sprintf("canary of %s passed its %s watch (%s); rolling out the rest", rev.Short(), w.Until.Sub(w.Started).Round(time.Second), strings.Join(w.Services, ", "))})
}

// quarantine records a regression: the commit is quarantined and the next
// pass rolls back.
func (u *statusUpdate) quarantine(in statusInput, reg drift.Regression) {
	w := u.mem.watch
	rev := in.out.accepted.rev
	q := status.Quarantine{Revision: rev, Reason: reg.Reason, At: in.now, RolledBackTo: w.RollbackTo}
	list := append([]status.Quarantine{q}, slices.DeleteFunc(slices.Clone(u.mem.quarantined), func(x status.Quarantine) bool { return x.Revision.SHA == rev.SHA })...)
	if len(list) > maxQuarantined {
		list = list[:maxQuarantined]
	}
	u.mem.quarantined = list
	u.setWatch(nil)
	u.addPersist(func(pa *store.App) { pa.Quarantined = list })
	what := "regression in "
	if w.Canary {
		what = "canary regression in "
	}
	summary := what + rev.Short() + ": " + reg.Reason + "; quarantined it"
	if w.RollbackTo != "" {
		summary += ", rolling back to " + drift.ShortRevision(w.RollbackTo)
	} else {
		summary += "; no earlier release passed its watch window, so there is nothing to roll back to: fix forward with a new commit"
	}
	// Duration is the window up to the regression: the timeline's band.
	u.record(in, status.HistoryEntry{Kind: status.KindRollback, Revision: &rev, Result: "quarantined", Summary: summary, Errors: []string{reg.Reason},
		Duration: in.now.Sub(w.Started)})
}

// liftQuarantine: a person retries a quarantined commit on purpose.
func (u *statusUpdate) liftQuarantine(in statusInput, sha string) {
	q := quarantineOf(u.mem, sha)
	if q == nil {
		return
	}
	rev := q.Revision
	list := slices.DeleteFunc(slices.Clone(u.mem.quarantined), func(x status.Quarantine) bool { return x.Revision.SHA == sha })
	u.mem.quarantined = list
	u.addPersist(func(pa *store.App) { pa.Quarantined = list })
	u.record(in, status.HistoryEntry{Kind: status.KindAction, Revision: &rev, Result: "succeeded",
		Summary: "quarantine of " + rev.Short() + " lifted by a person: retrying it"})
}

// changedServices are the services a plan changed because Git asked (not
// drift repairs): what a release's window watches.
func changedServices(plan drift.Plan) []string {
	out := []string{}
	for _, c := range plan.Changes {
		if c.Cause != drift.CauseDrift && c.Service != "" && !slices.Contains(out, c.Service) {
			out = append(out, c.Service)
		}
	}
	return out
}

// releaseStatus is what status shows of the release lifecycle; nil for an
// app without a watch window and with nothing quarantined.
func releaseStatus(cfg config.AppConfig, m memory) *status.ReleaseStatus {
	if cfg.Release.Watch == 0 && len(m.quarantined) == 0 {
		return nil
	}
	r := &status.ReleaseStatus{LastGood: m.lastGood, Quarantined: slices.Clone(m.quarantined)}
	if w := m.watch; w != nil {
		r.Watching = &status.Watching{Revision: w.Revision, Services: slices.Clone(w.Services), Since: w.Started, Until: w.Until}
	}
	return r
}

// releaseMessage is what the status line says of the release lifecycle
// when nothing more pressing does: the head's quarantine, or the window.
func releaseMessage(s *status.AppStatus, m memory, now time.Time, base string) string {
	if s.Fetched != nil {
		if q := quarantineOf(m, s.Fetched.SHA); q != nil {
			return q.Summary()
		}
	}
	if w := m.watch; w != nil && s.Applied != nil && s.Applied.SHA == w.Revision {
		left := w.Remaining(now).Round(time.Second).String()
		if w.Canary {
			return "canary of " + s.Applied.Short() + " (" + strings.Join(w.Services, ", ") + "): watching the first replica(s), " + left +
				" left before the rest are replaced"
		}
		return base + "; watching (" + left + " left)"
	}
	return base
}

// headQuarantined reports whether the tracked head is quarantined: the app
// is then out of sync with its branch on purpose.
func headQuarantined(s *status.AppStatus, m memory) bool {
	return s.Fetched != nil && quarantineOf(m, s.Fetched.SHA) != nil
}

// releaseCondition is the active release problem: the head's quarantine,
// and a rollback that failed too (both reasons, and no retry of the
// quarantined commit: fix forward).
func releaseCondition(in statusInput, m memory) string {
	o := in.out
	head := o.fetched
	if head == nil {
		head = in.prev.Fetched
	}
	var q *status.Quarantine
	if head != nil {
		q = quarantineOf(m, head.SHA)
	}
	if q == nil {
		return ""
	}
	return q.Summary()
}

// noteRollback keeps whether the automatic rollback failed, on the
// quarantine, until a rollback apply succeeds: a failed rollback is shown
// with both reasons and the quarantined commit is not tried again.
func (u *statusUpdate) noteRollback(in statusInput) {
	o := in.out
	if o.rollback == nil || o.apply == nil || o.apply.result.OnlyCause(drift.FailureStopped, drift.FailureInterference) {
		return
	}
	msg := ""
	if err := o.apply.result.Err; err != nil {
		msg = err.Error()
	}
	list := slices.Clone(u.mem.quarantined)
	for i := range list {
		if list[i].Revision.SHA == o.rollback.Revision.SHA && list[i].RollbackError != msg {
			list[i].RollbackError = msg
			u.mem.quarantined = list
			u.addPersist(func(pa *store.App) { pa.Quarantined = list })
		}
	}
}
