package drift

import (
	"errors"
	"strings"
	"time"
)

// The types below are what the applier reports back: plain data shared by
// deploy (which produces it), sync (which records and reacts to it) and
// the CLI (which prints it). They live here, the lowest package all three
// use, so there is one vocabulary and no mapping between copies.

// Phase is a step of one change as it is carried out.
type Phase string

const (
	PhaseStart Phase = "start"
	// PhasePull: a line of an image pull's progress (one per layer state
	// change), before the replica is created.
	PhasePull    Phase = "pull"
	PhaseCreated Phase = "created"
	// PhaseWarned: the engine did what was asked with a warning (a kernel
	// without IO weight discards a blkio weight); Message is its words.
	PhaseWarned  Phase = "warned"
	PhaseStarted Phase = "started"
	PhaseWaiting Phase = "waiting"
	PhaseReady   Phase = "ready"
	PhaseRemoved Phase = "removed"
	PhaseDone    Phase = "done"
	PhaseFailed  Phase = "failed"
	PhaseSkipped Phase = "skipped"
)

// Event is one step of one change, for live progress. Elapsed is the time
// since the change started. Message adds detail for people and does not
// repeat the object's name; it may be empty.
type Event struct {
	Time    time.Time
	Change  Change
	Phase   Phase
	Message string
	Elapsed time.Duration
	Err     error
}

// Results of a change.
const (
	ResultDone    = "done"
	ResultFailed  = "failed"
	ResultSkipped = "skipped"
)

// Outcome is how one change of an applied plan ended.
type Outcome struct {
	Change   Change        `json:"change"`
	Result   string        `json:"result"` // ResultDone, ResultFailed or ResultSkipped
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration"`
	// Failure says why a failed or skipped change did not complete, typed
	// by what the loop should do about it.
	Failure *Failure `json:"failure,omitempty"`
	// Warnings are what the engine warned of while carrying the change
	// out (a kernel without IO weight discards a blkio weight).
	Warnings []string `json:"warnings,omitempty"`
}

// FailureCause classifies a failure by what the loop does next.
type FailureCause string

const (
	// FailureRollout: the new replica exited, crash-looped or stayed not
	// ready on its own, or its image cannot be had. Retrying the same spec
	// soon will fail again: back off, report Degraded, wait for a commit.
	FailureRollout FailureCause = "rollout"
	// FailureInterference: someone removed, stopped or renamed a
	// container while driftless worked on it. That is drift, not a bad
	// release: repair at once, record it as a repair.
	FailureInterference FailureCause = "interference"
	// FailureEngine: the Docker engine was unreachable or failed (5xx,
	// timeout). Retry soon; it is the engine's fault.
	FailureEngine FailureCause = "engine"
	// FailureConflict: a name or port is held by an object driftless does
	// not own. Nothing to retry until a person moves it.
	FailureConflict FailureCause = "conflict"
	// FailureStopped: the apply stopped at a safe point because something
	// newer came (a commit, suspend, pin, shutdown). Nothing is wrong.
	FailureStopped FailureCause = "stopped"
	// FailureDependency: skipped because a service it depends on did not
	// become ready. Follows the dependency's own failure.
	FailureDependency FailureCause = "dependency"
	// FailureOther: anything else; back off.
	FailureOther FailureCause = "error"
)

// Failure is one change's failure as a value: the cause, a one-line
// summary, and for a replica that failed on its own the exit code,
// restarts and last log lines. It is also an error, so deploy can return
// it through its call chain and sync can recognise it with errors.As.
type Failure struct {
	Cause    FailureCause `json:"cause"`
	Summary  string       `json:"summary"`
	ExitCode int          `json:"exitCode,omitempty"`
	Restarts int          `json:"restarts,omitempty"`
	// Logs are the replica's last log lines, oldest first.
	Logs []string `json:"logs,omitempty"`
	// Transient: the cause is outside driftless and may pass by itself
	// (an image registry that cannot be reached). The service is retried
	// at the base delay; the backoff does not grow.
	Transient bool `json:"transient,omitempty"`
}

// Error is the summary followed by the last log lines, if any.
func (f *Failure) Error() string {
	if len(f.Logs) == 0 {
		return f.Summary
	}
	return f.Summary + "; last log lines:\n    " + strings.Join(f.Logs, "\n    ")
}

// Detail is the failure in one line with its exit code and restarts, for
// status messages (the log lines are in history).
func (f *Failure) Detail() string {
	s := f.Summary
	if len(f.Logs) > 0 {
		s += " (last log lines in history)"
	}
	return s
}

// ApplyResult is what an apply did.
type ApplyResult struct {
	// Outcomes are in plan order, one per change.
	Outcomes []Outcome `json:"outcomes"`
	// Degraded names services whose rollout stopped because a new replica
	// failed on its own, with that failure.
	Degraded map[string]*Failure `json:"degraded,omitempty"`
	// Err is nil when every change succeeded and every touched replica
	// became ready. It summarises the failed changes for people.
	Err error `json:"-"`
}

// Causes counts the failed and skipped outcomes by cause.
func (r *ApplyResult) Causes() map[FailureCause]int {
	out := map[FailureCause]int{}
	for _, o := range r.Outcomes {
		if o.Failure != nil && o.Result != ResultDone {
			out[o.Failure.Cause]++
		}
	}
	return out
}

// OnlyCause reports whether every change that did not complete failed
// for one of the given causes (and at least one did not complete).
func (r *ApplyResult) OnlyCause(causes ...FailureCause) bool {
	n := 0
	for cause, k := range r.Causes() {
		found := false
		for _, c := range causes {
			found = found || c == cause
		}
		if !found {
			return false
		}
		n += k
	}
	return n > 0
}

// ApplyOptions tune one apply.
type ApplyOptions struct {
	// Progress, if set, is told every step of every change.
	Progress func(Event)
	// Stop, when closed, ends the apply at its next safe point: changes
	// not yet begun are skipped with FailureStopped, changes under way
	// finish.
	Stop <-chan struct{}
}

// ErrEngineUnreachable is in the chain of every error that means the
// Docker engine could not be reached or failed on its side: the loop
// reports the app Unknown, does nothing destructive, and retries soon.
//
//lint:ignore ST1005 Docker is a name, and the text starts status lines.
var ErrEngineUnreachable = errors.New("Docker engine unreachable")

// EngineEvent is something the engine reported about an object driftless
// may own.
type EngineEvent struct {
	// App is the container's app label; "" for events that do not carry
	// it (network connect and disconnect).
	App       string
	Container string // name, without the leading slash
	ID        string // container ID
	// Action is Docker's: die, stop, destroy, kill, oom, start,
	// health_status, update, rename, connect, disconnect, tag (images); or
	// EventConnected when the event stream (re)connected.
	Action  string
	Network string // connect, disconnect: the network's name
	// Image is the reference an image "tag" event gave a tag to; the
	// services that run that tag should run the image it now names.
	Image string
}

// EventConnected is the action of the event that says the engine's event
// stream is connected, first or again after a break: events before it may
// have been missed.
const EventConnected = "connected"

// EventDisconnected is the action of the event that says the engine's
// event stream broke: the engine may be restarting or gone.
const EventDisconnected = "disconnected"
