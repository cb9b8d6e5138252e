package loop

import (
	"maps"
	"slices"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/manifest"
)

// jobScheduler decides when an app's scheduled jobs run. It is pure: the
// caller passes the time in, launches what due returns and reports each
// run's end with finished. The agent drives it with a real timer
// (runSchedules); tests with a fake clock.
type jobScheduler struct {
	jobs    map[string]*scheduledJob // by job name
	running map[string]int           // runs under way, by job name
	lastRun map[string]time.Time     // start of each job's last run
}

// scheduledJob is one scheduled job of the enforced revision.
type scheduledJob struct {
	job   *manifest.Job
	app   *manifest.App
	rev   gitsource.Revision
	sched cron.Schedule
	next  time.Time
}

func newJobScheduler(lastRun map[string]time.Time) *jobScheduler {
	s := &jobScheduler{jobs: map[string]*scheduledJob{}, running: map[string]int{}, lastRun: maps.Clone(lastRun)}
	if s.lastRun == nil {
		s.lastRun = map[string]time.Time{}
	}
	return s
}

// set makes app's scheduled jobs (at rev) the ones that run. A job that
// was scheduled already with the same hash keeps its next time; a new one
// (or a changed one) is due at its schedule's next time after now, or now
// when it has catchUp and its last run, before the agent started, missed
// a time.
func (s *jobScheduler) set(app *manifest.App, rev gitsource.Revision, now time.Time) {
	next := map[string]*scheduledJob{}
	if app != nil {
		for _, j := range app.JobsOf(manifest.JobScheduled) {
			if old, ok := s.jobs[j.Name]; ok && old.job.Hash == j.Hash {
				old.job, old.app, old.rev = j, app, rev
				next[j.Name] = old
				continue
			}
			sched, err := manifest.ParseJobSchedule(j.Schedule, j.TimeZone)
			if err != nil {
				continue // refused at load; cannot happen
			}
			sj := &scheduledJob{job: j, app: app, rev: rev, sched: sched, next: sched.Next(now)}
			_, known := s.jobs[j.Name]
			if last, ok := s.lastRun[j.Name]; ok && !known && j.CatchUp && !sched.Next(last).After(now) {
				sj.next = now
			}
			next[j.Name] = sj
		}
	}
	s.jobs = next
}

// due returns the jobs to launch at now, marks them running and records
// their start as their last run. A job with concurrency forbid whose last
// run is still going is skipped this time (returned in skipped). Each due
// job's next time moves past now.
func (s *jobScheduler) due(now time.Time) (launch []*scheduledJob, skipped []string) {
	for _, name := range slices.Sorted(maps.Keys(s.jobs)) {
		sj := s.jobs[name]
		if sj.next.IsZero() || sj.next.After(now) {
			continue
		}
		sj.next = sj.sched.Next(now)
		if s.running[name] > 0 && sj.job.Concurrency != manifest.ConcurrencyAllow {
			skipped = append(skipped, name)
			continue
		}
		s.running[name]++
		s.lastRun[name] = now
		launch = append(launch, sj)
	}
	return launch, skipped
}

// skip moves every due job's next time past now without a run: the app
// is suspended.
func (s *jobScheduler) skip(now time.Time) (skipped []string) {
	for _, name := range slices.Sorted(maps.Keys(s.jobs)) {
		if sj := s.jobs[name]; !sj.next.IsZero() && !sj.next.After(now) {
			sj.next = sj.sched.Next(now)
			skipped = append(skipped, name)
		}
	}
	return skipped
}

// finished records the end of one run of name.
func (s *jobScheduler) finished(name string) {
	if s.running[name] > 0 {
		s.running[name]--
	}
}

// nextDue is the earliest next time of any job; zero when none.
func (s *jobScheduler) nextDue() time.Time {
	var t time.Time
	for _, sj := range s.jobs {
		if t.IsZero() || sj.next.Before(t) {
			t = sj.next
		}
	}
	return t
}
