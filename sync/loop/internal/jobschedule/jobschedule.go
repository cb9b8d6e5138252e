// Package jobschedule decides when an app's scheduled jobs run. It is
// pure: the caller passes the time in, launches what Due returns and
// reports each run's end with Finished. The loop drives it with a real
// timer; tests with a fake clock.
package jobschedule

import (
	"maps"
	"slices"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/manifest"
)

// Scheduler holds one app's scheduled jobs and their runs.
type Scheduler struct {
	jobs    map[string]*Job      // by job name
	running map[string]int       // runs under way, by job name
	lastRun map[string]time.Time // start of each job's last run
}

// Job is one scheduled job of the enforced revision.
type Job struct {
	Job   *manifest.Job
	App   *manifest.App
	Rev   gitsource.Revision
	sched cron.Schedule
	next  time.Time
}

// New makes a scheduler; lastRun are the jobs' last starts before the
// agent started (for catchUp).
func New(lastRun map[string]time.Time) *Scheduler {
	s := &Scheduler{jobs: map[string]*Job{}, running: map[string]int{}, lastRun: maps.Clone(lastRun)}
	if s.lastRun == nil {
		s.lastRun = map[string]time.Time{}
	}
	return s
}

// Set makes app's scheduled jobs (at rev) the ones that run. A job that
// was scheduled already with the same hash keeps its next time; a new one
// (or a changed one) is due at its schedule's next time after now, or now
// when it has catchUp and its last run, before the agent started, missed
// a time.
func (s *Scheduler) Set(app *manifest.App, rev gitsource.Revision, now time.Time) {
	next := map[string]*Job{}
	if app != nil {
		for _, j := range app.JobsOf(manifest.JobScheduled) {
			if old, ok := s.jobs[j.Name]; ok && old.Job.Hash == j.Hash {
				old.Job, old.App, old.Rev = j, app, rev
				next[j.Name] = old
				continue
			}
			sched, err := manifest.ParseJobSchedule(j.Schedule, j.TimeZone)
			if err != nil {
				continue // refused at load; cannot happen
			}
			sj := &Job{Job: j, App: app, Rev: rev, sched: sched, next: sched.Next(now)}
			_, known := s.jobs[j.Name]
			if last, ok := s.lastRun[j.Name]; ok && !known && j.CatchUp && !sched.Next(last).After(now) {
				sj.next = now
			}
			next[j.Name] = sj
		}
	}
	s.jobs = next
}

// Due returns the jobs to launch at now, marks them running and records
// their start as their last run. A job with concurrency forbid whose last
// run is still going is skipped this time (returned in skipped). Each due
// job's next time moves past now.
func (s *Scheduler) Due(now time.Time) (launch []*Job, skipped []string) {
	for _, name := range slices.Sorted(maps.Keys(s.jobs)) {
		sj := s.jobs[name]
		if sj.next.IsZero() || sj.next.After(now) {
			continue
		}
		sj.next = sj.sched.Next(now)
		if s.running[name] > 0 && sj.Job.Concurrency != manifest.ConcurrencyAllow {
			skipped = append(skipped, name)
			continue
		}
		s.running[name]++
		s.lastRun[name] = now
		launch = append(launch, sj)
	}
	return launch, skipped
}

// Skip moves every due job's next time past now without a run: the app
// is suspended.
func (s *Scheduler) Skip(now time.Time) (skipped []string) {
	for _, name := range slices.Sorted(maps.Keys(s.jobs)) {
		if sj := s.jobs[name]; !sj.next.IsZero() && !sj.next.After(now) {
			sj.next = sj.sched.Next(now)
			skipped = append(skipped, name)
		}
	}
	return skipped
}

// Finished records the end of one run of name.
func (s *Scheduler) Finished(name string) {
	if s.running[name] > 0 {
		s.running[name]--
	}
}

// NextDue is the earliest next time of any job; zero when none.
func (s *Scheduler) NextDue() time.Time {
	var t time.Time
	for _, sj := range s.jobs {
		if t.IsZero() || sj.next.Before(t) {
			t = sj.next
		}
	}
	return t
}

// NextRun is the job's next time; false when it is not scheduled.
func (s *Scheduler) NextRun(job string) (time.Time, bool) {
	if sj, ok := s.jobs[job]; ok {
		return sj.next, true
	}
	return time.Time{}, false
}

// LastRun is the start of the job's last run, by job name.
func (s *Scheduler) LastRun() map[string]time.Time { return s.lastRun }
