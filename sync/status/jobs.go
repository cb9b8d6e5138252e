package status

import (
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift"
)

// KindJob: a job ran (result "succeeded" or "failed"); the entry's Job
// holds the run.
const KindJob HistoryKind = "job"

// JobRun is one run of a job (the runner's report, kept as it is).
type JobRun = drift.JobRun

// JobStatus is one job of the enforced revision and how it last ran.
type JobStatus struct {
	Name     string `json:"name"`
	Type     string `json:"type"` // pre-sync, post-sync, scheduled
	Schedule string `json:"schedule,omitempty"`
	TimeZone string `json:"timeZone,omitempty"`
	Running  bool   `json:"running,omitempty"`
	// LastRun is the job's latest run this agent knows of; nil before
	// the first.
	LastRun *JobRun `json:"lastRun,omitempty"`
	// NextRun is when a scheduled job runs next.
	NextRun time.Time `json:"nextRun,omitzero"`
}

// Failed reports whether the job's last run failed.
func (j JobStatus) Failed() bool { return j.LastRun != nil && j.LastRun.Failed() }

// JobSummary is a job entry's summary: "pre-sync job migrate failed: exit
// 3 after 1.2s" or "scheduled job backup succeeded in 4.1s".
func JobSummary(r JobRun) string {
	if r.Failed() {
		return r.Type + " job " + r.Job + " failed: " + r.Summary()
	}
	return r.Type + " job " + r.Job + " succeeded in " + r.Duration.Round(100*time.Millisecond).String()
}

// JobResult is a job entry's result word.
func JobResult(r JobRun) string {
	if r.Failed() {
		return "failed"
	}
	return "succeeded"
}

// JobEntry is the history entry of one run: its summary, result, duration
// and, as errors, the last lines of a failed run.
func JobEntry(app string, r JobRun) HistoryEntry {
	e := HistoryEntry{App: app, Kind: KindJob, Trigger: r.Type, Summary: JobSummary(r), Result: JobResult(r), Duration: r.Duration, Time: r.Started.Add(r.Duration)}
	run := r
	e.Job = &run
	if r.Failed() && len(r.LastLines) > 0 {
		e.Errors = []string{"last lines: " + strings.Join(r.LastLines, "\n")}
	}
	return e
}
