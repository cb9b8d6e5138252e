package loop

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/loop/internal/jobschedule"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/sync/store"
)

// JobRunner runs one job's container to completion (see manifest.Job);
// *deploy.Engine satisfies it. An agent without one reports every job run
// as failed with that reason.
type JobRunner interface {
	RunJob(ctx context.Context, app *manifest.App, job *manifest.Job, revision string) drift.JobRun
	// RemoveJobRuns removes the kept runs of the app's jobs that keep
	// says are no longer declared.
	RemoveJobRuns(ctx context.Context, app string, keep func(job string) bool)
}

// jobRegistry holds the job state of every app.
type jobRegistry struct {
	mu   sync.Mutex
	apps map[string]*jobState
	// wake tells runSchedules that a schedule changed.
	wake chan struct{}
	runs sync.WaitGroup // scheduled runs under way
}

func newJobRegistry() *jobRegistry {
	return &jobRegistry{apps: map[string]*jobState{}, wake: make(chan struct{}, 1)}
}

// forget drops the jobs of an app that is gone.
func (r *jobRegistry) forget(app string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.apps, app)
}

// jobState is what the loop knows of one app's jobs. It outlives passes;
// done is persisted in the store so a restart never reruns a migration.
type jobState struct {
	mu sync.Mutex
	// done holds the keys (jobKey) of pre-sync and post-sync runs that
	// succeeded, or that ran, for post-sync.
	done map[string]bool
	// failed is the failed pre-sync run by key, retried only by "Sync
	// now" (or a new commit, which is another key).
	failed   map[string]drift.JobRun
	last     map[string]drift.JobRun // latest run by job name
	running  map[string]int          // runs under way by job name
	declared []manifest.Job          // the enforced revision's jobs
	sched    *jobschedule.Scheduler
}

// jobKey identifies a job of a revision: "pre-sync:<sha>/<job hash>".
func jobKey(j *manifest.Job, sha string) string { return j.Type + ":" + sha + "/" + j.Hash }

// jobState returns app's job state, loaded from the store the first time.
func (a *Agent) jobState(app string) *jobState {
	a.jobs.mu.Lock()
	defer a.jobs.mu.Unlock()
	if js, ok := a.jobs.apps[app]; ok {
		return js
	}
	kept, err := a.store.LoadJobs(app)
	if err != nil {
		a.log.Error("job state not read; pre-sync jobs may run again", "app", app, "err", err)
	}
	js := &jobState{done: map[string]bool{}, failed: map[string]drift.JobRun{}, last: map[string]drift.JobRun{}, running: map[string]int{}, sched: jobschedule.New(kept.LastRun)}
	for _, k := range kept.Done {
		js.done[k] = true
	}
	a.jobs.apps[app] = js
	return js
}

// runJob makes one run of j and records it: the app's job status and a
// history entry of kind job. Status exception: a run is recorded when it
// ends, which for a scheduled job is outside any pass.
func (a *Agent) runJob(ctx context.Context, app string, m *manifest.App, j *manifest.Job, rev gitsource.Revision) drift.JobRun {
	js := a.jobState(app)
	js.mu.Lock()
	js.running[j.Name]++
	js.mu.Unlock()
	a.publishJobs(app)
	var run drift.JobRun
	if jobs, _ := a.placed(app); jobs == nil {
		run = drift.JobRun{Job: j.Name, Type: j.Type, Revision: rev.SHA, JobHash: j.Hash, Started: a.now(), ExitCode: -1, Error: "this agent has no job runner"}
	} else {
		run = jobs.RunJob(ctx, m, j, rev.SHA)
	}
	js.mu.Lock()
	js.running[j.Name]--
	js.last[j.Name] = run
	js.mu.Unlock()
	entry := status.JobEntry(app, run)
	r := rev
	entry.Revision = &r
	stored, err := a.recordStored(entry)
	if err != nil {
		a.log.Error("job run not recorded in history", "app", app, "job", j.Name, "err", err)
	}
	level := a.log.Info
	if run.Failed() {
		level = a.log.Warn
	}
	level("job", "app", app, "job", j.Name, "type", j.Type, "result", status.JobResult(run), "summary", run.Summary())
	a.publishJobs(app)
	if len(stored) > 0 {
		// Notifications (job-failed) are derived from the entry.
		if snap, ok := a.App(app); ok {
			a.observe(Report{App: app, Prev: snap, Next: snap, Entries: stored})
		}
	}
	return run
}

// markJobDone remembers, in memory and in the store, that key ran.
func (a *Agent) markJobDone(app, key string) {
	js := a.jobState(app)
	js.mu.Lock()
	js.done[key] = true
	delete(js.failed, key)
	js.mu.Unlock()
	if err := a.store.UpdateJobs(app, func(j *store.Jobs) {
		if !slices.Contains(j.Done, key) {
			j.Done = append(j.Done, key)
		}
	}); err != nil {
		a.log.Error("job state not saved; the job may run again after a restart", "app", app, "key", key, "err", err)
	}
}

// changesServices reports whether a plan creates, replaces, updates or
// removes a replica because of Git: a pre-sync job runs only before such a
// plan, never before a drift repair alone.
func changesServices(plan drift.Plan) bool {
	return slices.ContainsFunc(plan.Changes, func(c drift.Change) bool {
		return c.Cause == drift.CauseGit && c.Service != "" && (c.Kind == drift.KindContainer || c.Kind == drift.KindService)
	})
}

// preSync runs the new revision's pre-sync jobs before its plan changes
// any service. It runs only for a candidate revision accepted in this pass
// whose plan changes a service, and each job once per revision (a success
// is remembered across restarts). A failure or timeout refuses the
// revision like an invalid one: the previous revision keeps running and
// healing, and the failed job is not run again until "Sync now" or a new
// commit. It returns what the pass enforces then.
func (p *pass) preSync(ctx context.Context, cand, desired *revisionState, plan drift.Plan, dec drift.Decision, o *passOutcome) (*revisionState, drift.Plan, drift.Decision) {
	if cand == nil || desired != cand || !changesServices(dec.Apply) {
		return desired, plan, dec
	}
	jobs := cand.app.JobsOf(manifest.JobPreSync)
	if len(jobs) == 0 {
		return desired, plan, dec
	}
	name := p.in.cfg.Name
	js := p.a.jobState(name)
	js.mu.Lock()
	// Only the candidate's failures matter now: an earlier bad commit's
	// are forgotten.
	maps.DeleteFunc(js.failed, func(_ string, r drift.JobRun) bool { return r.Revision != cand.rev.SHA })
	js.mu.Unlock()
	for _, j := range jobs {
		key := jobKey(j, cand.rev.SHA)
		js.mu.Lock()
		done := js.done[key]
		run, failed := js.failed[key]
		js.mu.Unlock()
		if done {
			continue
		}
		if !failed || p.in.manual() {
			if run = p.prepareJob(ctx, cand, dec.Apply, j); run.Error == "" {
				run = p.a.runJob(ctx, name, cand.app, j, cand.rev)
			}
			if ctx.Err() != nil {
				return nil, drift.Plan{}, drift.Decision{}
			}
			if !run.Failed() {
				p.a.markJobDone(name, key)
				continue
			}
			js.mu.Lock()
			js.failed[key] = run
			js.mu.Unlock()
		}
		o.refusal = &status.Refusal{Revision: cand.rev, Reason: run.FailureReason() + "; fix the job in a new commit, or retry with Sync now"}
		o.accepted = p.previousAccepted(ctx)
		return p.decide(ctx, nil, o)
	}
	return desired, plan, dec
}

// prepareJob creates the networks and volumes of the plan before a
// pre-sync job runs, so the job can join them on an app's first revision;
// they change no service. A failure is the job's.
func (p *pass) prepareJob(ctx context.Context, cand *revisionState, plan drift.Plan, j *manifest.Job) drift.JobRun {
	res := drift.Plan{App: plan.App, Revision: plan.Revision}
	for _, c := range plan.Changes {
		if c.Service == "" && c.Action == drift.ActionCreate && (c.Kind == drift.KindNetwork || c.Kind == drift.KindVolume) {
			res.Changes = append(res.Changes, c)
		}
	}
	if res.Empty() {
		return drift.JobRun{}
	}
	r := p.a.engineFor(p.in.cfg).Apply(ctx, cand.app, res, drift.ApplyOptions{Stop: p.in.stop})
	if r.Err == nil {
		return drift.JobRun{}
	}
	return drift.JobRun{Job: j.Name, Type: j.Type, Revision: cand.rev.SHA, JobHash: j.Hash, Started: p.a.now(), ExitCode: -1, Error: "create its networks and volumes: " + r.Err.Error()}
}

// previousAccepted is the revision enforced before this pass's candidate:
// the one in memory, or after a restart the one the store names.
func (p *pass) previousAccepted(ctx context.Context) *revisionState {
	if p.in.mem.accepted != nil || p.in.mem.restoreSHA == "" {
		return p.in.mem.accepted
	}
	if rs, err := p.st.revisions.loadSHA(ctx, p.st.source, p.in.cfg, p.in.mem.restoreSHA); err == nil && rs.refusal == nil {
		return rs
	}
	return nil
}

// postSync runs the enforced revision's post-sync jobs after an apply
// that succeeded, once per revision. A failed run is recorded in history
// and put in the outcome (postSyncFailure) for the release watch.
func (p *pass) postSync(ctx context.Context, desired *revisionState, o *passOutcome) {
	if desired == nil || o.apply == nil || o.apply.result.Err != nil || ctx.Err() != nil || len(o.canary) > 0 {
		// (A canary step is not the whole rollout: post-sync jobs run
		// after the rest.)
		return
	}
	name := p.in.cfg.Name
	js := p.a.jobState(name)
	for _, j := range desired.app.JobsOf(manifest.JobPostSync) {
		key := jobKey(j, desired.rev.SHA)
		js.mu.Lock()
		done := js.done[key]
		js.mu.Unlock()
		if done {
			continue
		}
		run := p.a.runJob(ctx, name, desired.app, j, desired.rev)
		if ctx.Err() != nil {
			return
		}
		p.a.markJobDone(name, key)
		if run.Failed() && o.postSyncFailure == nil {
			o.postSyncFailure = &run
		}
	}
}

// jobStatuses is the status of the enforced revision's jobs, and of the
// pre-sync jobs that refused the revision refused now (nil: none).
func (a *Agent) jobStatuses(app string, refused *status.Refusal) []status.JobStatus {
	js := a.jobState(app)
	js.mu.Lock()
	defer js.mu.Unlock()
	var out []status.JobStatus
	for _, j := range js.declared {
		s := status.JobStatus{Name: j.Name, Type: j.Type, Schedule: j.Schedule, TimeZone: j.TimeZone, Running: js.running[j.Name] > 0}
		if run, ok := js.last[j.Name]; ok {
			r := run
			s.LastRun = &r
		}
		if next, ok := js.sched.NextRun(j.Name); ok {
			s.NextRun = next
		}
		out = append(out, s)
	}
	for _, key := range slices.Sorted(maps.Keys(js.failed)) {
		run := js.failed[key]
		if refused == nil || run.Revision != refused.Revision.SHA || slices.ContainsFunc(out, func(s status.JobStatus) bool { return s.Name == run.Job }) {
			continue
		}
		out = append(out, status.JobStatus{Name: run.Job, Type: run.Type, LastRun: &run})
	}
	return out
}

// withJobErrors is errs with one "job" condition per declared job whose
// last run failed (a failed pre-sync job is the revision's refusal
// instead), in place of the previous ones.
func withJobErrors(errs []status.Condition, jobs []status.JobStatus) []status.Condition {
	prev := map[string]status.Condition{}
	out := slices.DeleteFunc(slices.Clone(errs), func(c status.Condition) bool {
		if c.Kind == conditionJob {
			prev[c.Message] = c
		}
		return c.Kind == conditionJob
	})
	for _, j := range jobs {
		r := j.LastRun
		if !j.Failed() || r.Type == manifest.JobPreSync || j.Running {
			continue
		}
		c := status.Condition{Kind: conditionJob, Message: status.JobSummary(*r), Since: r.Started.Add(r.Duration)}
		if old, ok := prev[c.Message]; ok {
			c.Since = old.Since
		}
		out = append(out, c)
	}
	return out
}

// conditionJob is the kind of the condition a failed job run shows as.
const conditionJob = "job"

// setJobs makes the enforced revision's jobs the app's: its status lists
// them and its scheduled jobs run on their schedules. finishPass calls it
// with the pass's accepted revision.
func (a *Agent) setJobs(app string, accepted *revisionState) {
	js := a.jobState(app)
	js.mu.Lock()
	var m *manifest.App
	var rev gitsource.Revision
	if accepted != nil {
		m, rev = accepted.app, accepted.rev
	}
	var declared []manifest.Job
	if m != nil {
		declared = m.Jobs
	}
	changed := !slices.EqualFunc(js.declared, declared, func(x, y manifest.Job) bool { return x.Hash == y.Hash && x.Name == y.Name })
	js.declared = declared
	js.sched.Set(m, rev, a.now())
	js.mu.Unlock()
	if jobs, _ := a.placed(app); changed && m != nil && jobs != nil {
		// The runs kept for docker logs of jobs the revision dropped.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		jobs.RemoveJobRuns(ctx, a.nameOnEngine(app), func(job string) bool { return m.Job(job) != nil })
		cancel()
	}
	if changed {
		select {
		case a.jobs.wake <- struct{}{}:
		default:
		}
	}
}

// publishJobs writes the app's job status. Status exception: a job's run
// changes it outside a pass.
func (a *Agent) publishJobs(app string) {
	a.mu.Lock()
	st, ok := a.apps[app]
	var refused *status.Refusal
	if ok && st.status.Refused != nil {
		r := *st.status.Refused
		refused = &r
	}
	a.mu.Unlock()
	if !ok {
		return
	}
	jobs := a.jobStatuses(app, refused)
	a.mu.Lock()
	st.status.Jobs = jobs
	st.status.Errors = withJobErrors(st.status.Errors, jobs)
	a.mu.Unlock()
	a.notify(app, "status")
}

// runSchedules launches scheduled jobs when they are due until ctx ends,
// then waits for the runs under way (cancelled with ctx).
func (a *Agent) runSchedules(ctx context.Context) {
	defer a.jobs.runs.Wait()
	for {
		wait := a.launchDue(ctx)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-a.jobs.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// maxScheduleWait bounds how long runSchedules sleeps, so a clock that
// jumps is noticed.
const maxScheduleWait = time.Minute

// launchDue starts every due scheduled run and returns how long to wait
// for the next one.
func (a *Agent) launchDue(ctx context.Context) time.Duration {
	now := a.now()
	wait := maxScheduleWait
	a.jobs.mu.Lock()
	apps := make(map[string]*jobState, len(a.jobs.apps))
	for k, v := range a.jobs.apps {
		apps[k] = v
	}
	a.jobs.mu.Unlock()
	for app, js := range apps {
		a.mu.Lock()
		suspended := a.apps[app] != nil && a.apps[app].cfg.Suspend
		a.mu.Unlock()
		js.mu.Lock()
		var launch []*jobschedule.Job
		var skipped []string
		if suspended {
			for _, name := range js.sched.Skip(now) {
				a.log.Info("app suspended; scheduled job not run", "app", app, "job", name)
			}
		} else {
			launch, skipped = js.sched.Due(now)
		}
		next := js.sched.NextDue()
		last := map[string]time.Time{}
		for k, v := range js.sched.LastRun() {
			last[k] = v
		}
		js.mu.Unlock()
		for _, name := range skipped {
			a.log.Info("scheduled job still running; this run is skipped (concurrency: forbid)", "app", app, "job", name)
		}
		if len(launch) > 0 {
			if err := a.store.UpdateJobs(app, func(j *store.Jobs) { j.LastRun = last }); err != nil {
				a.log.Error("job state not saved", "app", app, "err", err)
			}
		}
		for _, sj := range launch {
			a.jobs.runs.Go(func() {
				a.runJob(ctx, app, sj.App, sj.Job, sj.Rev)
				js.mu.Lock()
				js.sched.Finished(sj.Job.Name)
				js.mu.Unlock()
			})
		}
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(now), 10*time.Millisecond))
		}
	}
	return wait
}
