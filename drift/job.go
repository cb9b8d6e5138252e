package drift

import (
	"fmt"
	"strings"
	"time"
)

// LabelJob marks a job's container with the job's name. A container with
// it belongs to no service: observation leaves it out of the app's
// replicas, so the differ neither counts, heals nor prunes it.
const LabelJob = LabelPrefix + "job"

// LabelJobType is the job's type (pre-sync, post-sync, scheduled) on its
// container.
const LabelJobType = LabelPrefix + "job-type"

// JobRun is one run of a job, as the runner reports it and history keeps
// it.
type JobRun struct {
	Job      string    `json:"job"`
	Type     string    `json:"type"`
	Revision string    `json:"revision,omitempty"`
	JobHash  string    `json:"jobHash,omitempty"`
	Started  time.Time `json:"started"`
	// Duration is how long the container ran (0 when it never started).
	Duration time.Duration `json:"duration"`
	// ExitCode is the container's; -1 when it did not exit by itself
	// (timed out, or never started).
	ExitCode int  `json:"exitCode"`
	TimedOut bool `json:"timedOut,omitempty"`
	// Attempts counts the runs backoffLimit allowed; the last one is
	// what the other fields describe.
	Attempts int `json:"attempts,omitempty"`
	// Error is why the run could not be made (image, engine, name), "" when
	// the container ran.
	Error string `json:"error,omitempty"`
	// Container is the last attempt's container name (kept for docker
	// logs until newer runs replace it).
	Container string `json:"container,omitempty"`
	// LastLines are the last lines the container wrote, secrets redacted.
	LastLines []string `json:"lastLines,omitempty"`
}

// Failed reports whether the run did not exit 0.
func (r JobRun) Failed() bool { return r.ExitCode != 0 || r.TimedOut || r.Error != "" }

// Summary says how the run ended, for status and history:
// "exit 3 after 1.2s", "timed out after 10m0s", "could not start: ...".
func (r JobRun) Summary() string {
	d := r.Duration.Round(100 * time.Millisecond)
	switch {
	case r.Error != "":
		return "could not run: " + r.Error
	case r.TimedOut:
		return fmt.Sprintf("timed out after %s", d)
	}
	return fmt.Sprintf("exit %d after %s", r.ExitCode, d)
}

// FailureReason is the reason a failed pre-sync job gives for refusing a
// revision: "pre-sync job migrate failed: exit 3 after 1.2s; last lines: ...".
func (r JobRun) FailureReason() string {
	msg := fmt.Sprintf("%s job %s failed: %s", r.Type, r.Job, r.Summary())
	if n := len(r.LastLines); n > 0 {
		msg += "; last lines: " + strings.Join(r.LastLines[max(0, n-5):], " | ")
	}
	return msg
}
