// Package status holds what the loop tells people about each app: its
// status, the history entries it records and how they read. The dashboard,
// the CLI and notifications read these types; only the loop writes them.
package status

import (
	"fmt"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/config"
)

// Sync and health are drift's judgements (drift.SyncStatus, drift.Health).
// The loop adds only what it alone knows, as values of the same types.
const (
	// SyncUnknown: the engine could not be observed, or nothing valid was
	// ever fetched.
	SyncUnknown drift.SyncStatus = "Unknown"
	// HealthSuspended: a person suspended the app; nothing is applied.
	HealthSuspended drift.Health = "Suspended"
	// HealthUnknown: the engine could not be observed.
	HealthUnknown drift.Health = "Unknown"
)

// AppStatus is everything a person needs to know about one app. It is
// written once at the end of every pass.
type AppStatus struct {
	Name   string       `json:"name"`
	Source SourceStatus `json:"source"`
	// FromSource is the sources: entry that generated the app ("" for an
	// app listed under apps:); LeftGit is set once it no longer declares it.
	FromSource string   `json:"fromSource,omitempty"`
	LeftGit    *LeftGit `json:"leftGit,omitempty"`
	Preview    *Preview `json:"preview,omitempty"`
	// Engine is the engines: entry the app runs on; "" for the agent's
	// own engine.
	Engine  string           `json:"engine,omitempty"`
	Sync    drift.SyncStatus `json:"sync"`
	Health  drift.Health     `json:"health"`
	Message string           `json:"message"` // one line a user can act on

	Suspended bool `json:"suspended"`
	SelfHeal  bool `json:"selfHeal"`
	Prune     bool `json:"prune"`
	// Pinned is set while the app is rolled back to an earlier revision and
	// does not follow its branch.
	Pinned *gitsource.Revision `json:"pinned,omitempty"`

	Fetched *gitsource.Revision `json:"fetched,omitempty"` // head of the tracked ref
	Applied *gitsource.Revision `json:"applied,omitempty"` // last good revision, the one running

	Services []ServiceStatus `json:"services"`
	// Volumes are the Docker volumes the app owns (see VolumeStatus).
	Volumes  []VolumeStatus `json:"volumes,omitempty"`
	Drift    *drift.Plan    `json:"drift,omitempty"` // the current gap; nil before the first observation
	Errors   []Condition    `json:"errors,omitempty"`
	Refused  *Refusal       `json:"refused,omitempty"`
	Flapping []Flap         `json:"flapping,omitempty"`
	// Held are changes of the current plan that are shown but not applied
	// (suspended, self-heal off), with the reason.
	Held []drift.HeldChange `json:"held,omitempty"`
	// Warnings are problems of the enforced revision that did not refuse
	// it (a compose variable that is not set).
	Warnings []string `json:"warnings,omitempty"`
	// StateDirs are the enforced revision's state directories, where the
	// app keeps its data on the host (back them up like volumes).
	StateDirs []StateDir `json:"stateDirs,omitempty"`
	// ForcePush is set from a head that did not descend from the applied
	// revision until a later fast-forward.
	ForcePush *ForcePush `json:"forcePush,omitempty"`
	// Release is set for apps with a watch window (release:).
	Release *ReleaseStatus `json:"release,omitempty"`
	// Jobs are the enforced revision's jobs (see JobStatus).
	Jobs []JobStatus `json:"jobs,omitempty"`

	Reconciling bool      `json:"reconciling"`
	LastPass    time.Time `json:"lastPass,omitzero"`
	LastSuccess time.Time `json:"lastSuccess,omitzero"`
}

// StateDir is a state directory of the app and where it is on the host
// ("" when the agent was not told its state root).
type StateDir struct {
	manifest.StateDir
	HostPath string `json:"hostPath,omitempty"`
}

// SourceStatus describes the Git source of an app.
type SourceStatus struct {
	URL        string    `json:"url"` // credentials removed
	Ref        string    `json:"ref"`
	Path       string    `json:"path"`
	LastFetch  time.Time `json:"lastFetch,omitzero"`
	Error      string    `json:"error,omitempty"`
	ErrorSince time.Time `json:"errorSince,omitzero"`
}

// ServiceStatus is one declared service.
type ServiceStatus struct {
	Name       string            `json:"name"`
	Image      string            `json:"image"`
	Desired    int               `json:"desired"`
	Running    int               `json:"running"`
	Ready      int               `json:"ready"`
	Health     drift.Health      `json:"health"`
	Message    string            `json:"message,omitempty"`
	Containers []ContainerStatus `json:"containers"`
}

// ContainerStatus is one replica.
type ContainerStatus struct {
	Name         string `json:"name"`
	ID           string `json:"id"`
	Slot         int    `json:"slot"`
	State        string `json:"state"`
	Status       string `json:"status"`
	Ready        bool   `json:"ready"`
	ReadyReason  string `json:"readyReason,omitempty"`
	RestartCount int    `json:"restartCount"`
	Image        string `json:"image"`
	// ImageDigest is the digest of the image the replica runs
	// ("sha256:…"), or its image ID when it has no registry digest.
	ImageDigest string    `json:"imageDigest,omitempty"`
	Revision    string    `json:"revision"`
	Created     time.Time `json:"created"`
	// Node is the Swarm node a task runs on (target swarm).
	Node string `json:"node,omitempty"`
	// Status above is Docker's words at the observation ("Up 2
	// seconds"), stale a minute later; these are what StateAt words the
	// state from at any later moment. StartedAt and FinishedAt are zero
	// when unknown (not yet inspected; Swarm tasks).
	ExitCode   int       `json:"exitCode,omitempty"`
	Health     string    `json:"health,omitempty"` // Docker healthcheck: starting, healthy, unhealthy
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// StateAt words the replica's state as docker ps would at now ("Up 5
// minutes (healthy)", "Exited (1) 3 minutes ago"), from its timestamps, so
// a page rendered long after the observation does not repeat the
// observation's "Up 2 seconds". Without the timestamp a state needs, it is
// the observed Status (a Swarm task's words, which carry no age).
func (c ContainerStatus) StateAt(now time.Time) string {
	switch drift.ContainerState(c.State) {
	case drift.StateRunning:
		if !c.StartedAt.IsZero() {
			up := "Up " + humanSince(now, c.StartedAt)
			switch c.Health {
			case "":
				return up
			case "starting":
				return up + " (health: starting)"
			}
			return up + " (" + c.Health + ")"
		}
	case drift.StatePaused:
		if !c.StartedAt.IsZero() {
			return "Up " + humanSince(now, c.StartedAt) + " (Paused)"
		}
	case drift.StateRestarting:
		if !c.FinishedAt.IsZero() {
			return fmt.Sprintf("Restarting (%d) %s ago", c.ExitCode, humanSince(now, c.FinishedAt))
		}
	case drift.StateExited:
		if !c.FinishedAt.IsZero() {
			return fmt.Sprintf("Exited (%d) %s ago", c.ExitCode, humanSince(now, c.FinishedAt))
		}
	case drift.StateCreated:
		return "Created"
	case drift.StateDead:
		return "Dead"
	case drift.StateRemoving:
		return "Removal In Progress"
	}
	return c.Status
}

// humanSince is Docker's wording of the time from t to now ("Less than a
// second", "About a minute", "3 hours"); a t after now (clocks apart) is
// now.
func humanSince(now, t time.Time) string {
	return units.HumanDuration(max(now.Sub(t), 0))
}

// Condition is an active problem and how long it has lasted.
type Condition struct {
	Kind    string    `json:"kind"` // source, validation, engine, apply, conflict, flapping, history
	Message string    `json:"message"`
	Since   time.Time `json:"since"`
}

// Refusal is a revision that was not applied, and why.
type Refusal struct {
	Revision gitsource.Revision `json:"revision"`
	Reason   string             `json:"reason"`
	Errors   []string           `json:"errors,omitempty"` // file:line:column: field: message
}

// ForcePush is a tracked ref that moved to a commit that does not descend
// from the applied revision: history was rewritten (a force-push, a tag
// moved sideways), or the clone no longer holds the applied commit and
// cannot tell.
type ForcePush struct {
	Ref  string             `json:"ref"`  // "branch main", "tag v1"
	From string             `json:"from"` // SHA of the applied revision
	To   gitsource.Revision `json:"to"`   // the head it moved to
	// Missing: the clone no longer holds From (it was cloned again), so
	// ancestry could not be checked and the move counts as a force-push.
	Missing bool `json:"missing,omitempty"`
	Refused bool `json:"refused"` // onForcePush: refuse
	// VerifyDefault: refused by the default that verify sets, not by an
	// explicit onForcePush: refuse.
	VerifyDefault bool      `json:"verifyDefault,omitempty"`
	Since         time.Time `json:"since"`
}

// Summary says what moved: "branch main moved from 1a2b3c4 to 5d6e7f8,
// not a fast-forward".
func (f ForcePush) Summary() string {
	from := drift.ShortRevision(f.From)
	if f.Missing {
		return fmt.Sprintf("%s moved from %s to %s, and the clone no longer holds %s, so it counts as not a fast-forward", f.Ref, from, f.To.Short(), from)
	}
	return fmt.Sprintf("%s moved from %s to %s, not a fast-forward", f.Ref, from, f.To.Short())
}

// Setting names the onForcePush that decided, and why when it is
// verify's default.
func (f ForcePush) Setting() string {
	switch {
	case !f.Refused:
		return "onForcePush: " + config.ForcePushFollow
	case f.VerifyDefault:
		return "onForcePush: " + config.ForcePushRefuse + ", the default with verify on: a replayed older signed commit is not accepted"
	}
	return "onForcePush: " + config.ForcePushRefuse
}

// Remedy says how to get a refused force-push deployed.
func (f ForcePush) Remedy() string {
	return fmt.Sprintf("to accept it, push a commit that descends from %s, or set onForcePush: %s", drift.ShortRevision(f.From), config.ForcePushFollow)
}

// Flap is a field repaired again and again: something outside Git is
// fighting the agent.
type Flap struct {
	Container string    `json:"container"`
	Field     string    `json:"field"`
	Count     int       `json:"count"`
	Since     time.Time `json:"since"`
}

// HistoryKind classifies history entries so the UI can filter them.
type HistoryKind string

const (
	KindSync     HistoryKind = "sync"     // a revision was applied (revert commits are syncs whose revision has Revert set)
	KindRepair   HistoryKind = "repair"   // drift repaired without a new commit
	KindRefused  HistoryKind = "refused"  // a revision was refused
	KindRollback HistoryKind = "rollback" // pinned to an earlier revision, or unpinned
	KindFlapping HistoryKind = "flapping"
	KindSource   HistoryKind = "source" // source failed or recovered
	KindAction   HistoryKind = "action" // suspend, resume, self-heal toggled
	// KindForcePush: the tracked ref moved to a commit that does not
	// descend from the applied one (result "followed" or "refused").
	KindForcePush HistoryKind = "force-push"
	KindImage     HistoryKind = "image" // a followed image tag moved to a new digest
	// KindRelease: a release passed its watch window (release.watch).
	KindRelease HistoryKind = "release"
	// KindNotification: a notification or commit status could not be
	// delivered (result "failed"), or was delivered again (result
	// "recovered").
	KindNotification HistoryKind = "notification"
)

// HistoryEntry is one recorded event. Entries are kept in the data
// directory and survive restarts.
type HistoryEntry struct {
	ID       uint64              `json:"id"`
	Time     time.Time           `json:"time"`
	App      string              `json:"app"`
	Kind     HistoryKind         `json:"kind"`
	Trigger  string              `json:"trigger,omitempty"` // poll, commit, docker-event, resync, api, webhook, startup
	Revision *gitsource.Revision `json:"revision,omitempty"`
	Summary  string              `json:"summary"`          // "web-2 was removed outside Git; recreated"
	Result   string              `json:"result,omitempty"` // succeeded, failed, partial
	Plan     *drift.Plan         `json:"plan,omitempty"`
	Outcomes []drift.Outcome     `json:"outcomes,omitempty"`
	Errors   []string            `json:"errors,omitempty"`
	Duration time.Duration       `json:"duration,omitempty"`
	// Digests are, for a sync, the image digest each replica runs after
	// it, by container name.
	Digests map[string]string `json:"digests,omitempty"`
	// Job is, for a job entry, the run.
	Job *JobRun `json:"job,omitempty"`
}

// HistoryQuery selects history entries, newest first.
type HistoryQuery struct {
	App    string        // "" = all apps
	Kinds  []HistoryKind // empty = all kinds
	Before uint64        // page cursor: only entries with ID < Before; 0 = from the newest
	Limit  int           // default 50, max 500
}

// Event tells subscribers (the UI's live updates) that something changed.
type Event struct {
	App  string `json:"app"`
	Kind string `json:"kind"` // status, history
}

// ReleaseStatus is the release lifecycle of an app with a watch window
// (release: in driftless.yaml): the release under watch, the last one
// that passed its window, and the commits quarantined after a regression.
type ReleaseStatus struct {
	// Watching is the release whose window is open, nil when none is.
	Watching *Watching `json:"watching,omitempty"`
	// LastGood is the last revision that passed its window: what a
	// regression rolls back to.
	LastGood string `json:"lastGood,omitempty"`
	// Quarantined are commits rolled back after a regression; none is
	// applied again unless a person asks (Sync now, sync --force,
	// unquarantine). Newest first.
	Quarantined []Quarantine `json:"quarantined,omitempty"`
}

// Watching is a release inside its watch window.
type Watching struct {
	Revision string    `json:"revision"`
	Services []string  `json:"services"`
	Since    time.Time `json:"since"`
	Until    time.Time `json:"until"`
}

// Quarantine is a commit that regressed inside its watch window.
type Quarantine struct {
	Revision gitsource.Revision `json:"revision"`
	Reason   string             `json:"reason"`
	At       time.Time          `json:"at"`
	// RolledBackTo is the revision the rollback went to ("" when there
	// was none to go to).
	RolledBackTo string `json:"rolledBackTo,omitempty"`
	// RollbackError is why the rollback failed too, until one succeeds.
	RollbackError string `json:"rollbackError,omitempty"`
}

// Summary is the quarantine as people read it.
func (q Quarantine) Summary() string {
	s := "quarantined " + q.Revision.Short() + ": " + q.Reason
	switch {
	case q.RollbackError != "":
		s += "; the rollback to " + drift.ShortRevision(q.RolledBackTo) + " failed too: " + q.RollbackError + "; fix forward with a new commit"
	case q.RolledBackTo != "":
		s += "; running " + drift.ShortRevision(q.RolledBackTo) + ", rolled back automatically"
	default:
		s += "; no earlier release passed its watch window, so nothing was rolled back"
	}
	return s
}

// AutomaticRollbackPrefix starts the summary of the sync that rolls a
// quarantined release back.
const AutomaticRollbackPrefix = "automatic rollback from "

// AutomaticRollback reports whether e is the agent's own rollback after a
// regression, not a person's pin.
func AutomaticRollback(e HistoryEntry) bool {
	return e.Kind == KindRollback && strings.HasPrefix(e.Summary, AutomaticRollbackPrefix)
}
