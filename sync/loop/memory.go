package loop

import (
	"maps"
	"slices"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/sync/store"
	"github.com/robfig/cron/v3"
)

// appState is one app. cfg, sched, status, pinned and running are guarded
// by Agent.mu. mem and revisions belong to the worker processing the app
// (a key is never processed by two workers at once). Nothing here is
// needed for correctness: after a restart it is rebuilt from the store,
// Git and Docker.
type appState struct {
	cfg     config.AppConfig
	sched   cron.Schedule
	status  status.AppStatus
	pinned  *gitsource.Revision
	running *runningPass // the pass under way, if any

	source    Source
	revisions *revisionCache
	mem       memory
	// tags are the image tags followed by services with imageUpdate, by
	// service; owned by the worker like revisions.
	tags map[string]*followedTag

	// For apps a source generated (sources.go), guarded by Agent.mu:
	// cronID is the app's poll in Agent.cron; removing is set once its
	// source dropped it with prune on, leftGit once it dropped it with
	// prune off.
	cronID   cron.EntryID
	removing *removal
	leftGit  *status.LeftGit
	// nextCfg is a configuration its source changed, taken at the start
	// of the app's next pass.
	nextCfg *config.AppConfig
}

// memory is what the loop remembers about an app between passes. A pass
// reads a copy; nextStatus returns the next one.
type memory struct {
	accepted     *revisionState // the valid revision being enforced
	restoreSHA   string         // accepted revision from the store, loaded lazily
	appliedRev   *gitsource.Revision
	appliedState map[string]drift.AppliedService
	lastRefused  string
	appliedFrom  string            // sourceIdentity of appliedRev's source
	forcePush    *status.ForcePush // shown until a later fast-forward
	sourceFail   bool
	crash        map[string]crashState       // by container name
	failed       map[string]rolloutBackoff   // by service
	repairs      map[flapKey][]time.Time     // recent repairs per container field
	flapping     map[flapKey]status.Flap     // fields repaired too often
	conditions   map[string]status.Condition // active problems by kind
	// The release lifecycle (release: in the config): the release under
	// watch, the last revision that passed its window, and the commits
	// quarantined after a regression (newest first).
	watch       *drift.ReleaseWatch
	lastGood    string
	quarantined []status.Quarantine
	// canaryPassed is, per service, the spec hash whose canary passed.
	canaryPassed map[string]string
}

// crashState is the repair backoff of a container that keeps stopping.
type crashState struct {
	lastRepair time.Time
	delay      time.Duration
	until      time.Time
}

// rolloutBackoff is a service whose replicas failed to come up at a spec
// hash (crash loop, never ready, image missing). The same hash is not
// tried again until NotBefore; a new commit (another hash) is tried at once.
type rolloutBackoff struct {
	drift.RolloutFailure
	delay time.Duration
}

type flapKey struct{ container, field string }

func newMemory() memory {
	return memory{
		crash:      map[string]crashState{},
		failed:     map[string]rolloutBackoff{},
		repairs:    map[flapKey][]time.Time{},
		flapping:   map[flapKey]status.Flap{},
		conditions: map[string]status.Condition{},
	}
}

// clone copies the maps, so the next memory never aliases the previous.
func (m memory) clone() memory {
	c := m
	c.appliedState = maps.Clone(m.appliedState)
	c.crash = maps.Clone(m.crash)
	c.failed = maps.Clone(m.failed)
	c.repairs = make(map[flapKey][]time.Time, len(m.repairs))
	for k, v := range m.repairs {
		c.repairs[k] = append([]time.Time(nil), v...)
	}
	c.flapping = maps.Clone(m.flapping)
	c.conditions = maps.Clone(m.conditions)
	c.quarantined = slices.Clone(m.quarantined)
	c.canaryPassed = maps.Clone(m.canaryPassed)
	return c
}

func newAppState(cfg config.AppConfig, sched cron.Schedule, src Source) *appState {
	return &appState{
		cfg:    cfg,
		sched:  sched,
		source: src,
		// Status exception: what shows until the first pass writes.
		status: status.AppStatus{
			Name:       cfg.Name,
			Source:     status.SourceStatus{URL: config.RedactURL(cfg.Repo), Ref: cfg.RefName(), Path: cfg.Path},
			FromSource: cfg.Source,
			Engine:     cfg.Engine,
			Preview:    previewStatus(cfg),
			Sync:       status.SyncUnknown,
			Health:     status.HealthUnknown,
			Message:    "waiting for the first pass",
			Suspended:  cfg.Suspend,
			SelfHeal:   cfg.SelfHeal,
			Prune:      cfg.Prune,
		},
		revisions: newRevisionCache(),
		mem:       newMemory(),
		tags:      map[string]*followedTag{},
	}
}

// restore applies what the store remembers; runtime toggles override the
// config once set. Status exception: before the first pass, the status
// shows what the store kept.
func (st *appState) restore(p store.App) {
	defer func() { st.status.Release = releaseStatus(st.cfg, st.mem) }()
	if p.Suspended != nil {
		st.cfg.Suspend = *p.Suspended
	}
	if p.SelfHeal != nil {
		st.cfg.SelfHeal = *p.SelfHeal
	}
	st.pinned = p.Pinned
	st.mem.appliedRev = p.Applied
	st.mem.appliedState = p.AppliedState
	st.mem.lastRefused = p.LastRefused
	st.mem.appliedFrom = p.AppliedFrom
	st.mem.forcePush = p.ForcePush
	st.mem.watch, st.mem.lastGood, st.mem.quarantined, st.mem.canaryPassed = p.Watch, p.LastGood, p.Quarantined, p.CanaryPassed
	st.status.ForcePush = cloneForcePush(p.ForcePush)
	if p.Accepted != nil {
		st.mem.restoreSHA = p.Accepted.SHA
	}
	st.status.Suspended = st.cfg.Suspend
	st.status.SelfHeal = st.cfg.SelfHeal
	st.status.Pinned = cloneRev(p.Pinned)
	st.status.Applied = cloneRev(p.Applied)
}

// running is the pass under way: what it enforces, and how to ask it to
// stop at its next safe point.
type runningPass struct {
	target   string // SHA of the revision being applied; "" before it is known
	stop     chan struct{}
	stopped  bool
	checking bool // a check for a newer revision is under way
}

// stopNow asks the pass to stop at its next safe point. Callers hold
// Agent.mu.
func (r *runningPass) stopNow() {
	if !r.stopped {
		r.stopped = true
		close(r.stop)
	}
}
