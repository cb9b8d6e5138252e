// Package notify tells people and Git hosts what the loop did: messages to
// chat, push and webhook destinations through shoutrrr, and commit
// statuses. It watches the loop through loop.Observer and never blocks it.
package notify

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/loop"
	"github.com/driftless-dev/driftless/sync/status"
)

// Kind is what happened, and what a destination filters on.
type Kind string

// Event kinds.
const (
	KindSynced            Kind = "synced"             // a new revision was applied
	KindRolloutFailed     Kind = "rollout-failed"     // a rollout failed, or the app became Degraded
	KindRecovered         Kind = "recovered"          // healthy again after a failure, or a source/engine came back
	KindRefused           Kind = "refused"            // a revision was refused (errors with file:line)
	KindDriftRepaired     Kind = "drift-repaired"     // batched: changes made outside Git were repaired
	KindFlapping          Kind = "flapping"           // something outside Git keeps undoing the agent
	KindSourceUnreachable Kind = "source-unreachable" // the Git source failed for longer than the threshold
	KindEngineUnreachable Kind = "engine-unreachable" // the Docker engine could not be reached
	KindPinned            Kind = "pinned"             // rolled back to an earlier revision
	KindUnpinned          Kind = "unpinned"           // following the branch again
	KindRollback          Kind = "rollback"           // a release regressed in its watch window: quarantined, rolled back
	KindJobFailed         Kind = "job-failed"         // a job's run failed (history entry job, result failed)
)

// Kinds are all event kinds, in the order the docs list them.
var Kinds = []Kind{KindSynced, KindRolloutFailed, KindRecovered, KindRefused, KindDriftRepaired, KindFlapping,
	KindSourceUnreachable, KindEngineUnreachable, KindPinned, KindUnpinned, KindRollback, KindJobFailed}

// ParseKinds checks a destination's event filter; empty means every kind.
func ParseKinds(names []string) ([]Kind, error) {
	if len(names) == 0 {
		return slices.Clone(Kinds), nil
	}
	var out []Kind
	for _, n := range names {
		k := Kind(n)
		if n == "degraded" {
			k = KindRolloutFailed // the word for the same transition
		}
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("event %q is not known: use %s", n, kindList())
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// Event is one thing worth telling people.
type Event struct {
	Kind     Kind
	App      string
	Source   string // the source that generated App; "" for an app under apps:
	Time     time.Time
	Revision *gitsource.Revision
	What     string   // one line: what happened
	Errors   []string // refused: file:line: field: message
	EntryID  uint64   // the history entry it comes from; 0 = none
	Count    int      // drift-repaired: repairs in the batch
	// PreviewURL is the app's preview URL when it previews a branch.
	PreviewURL string
}

// detector turns reports into events. It keeps, per app, what has
// already been said, so a state that lasts is announced once: one
// message when a thing breaks, one when it recovers. It does no I/O and
// reads no clock.
type detector struct {
	sourceAfter  time.Duration
	repairWindow time.Duration
	apps         map[string]*appMemory
}

type appMemory struct {
	source        string // the source that generated the app, for its repair batches
	brokenSHA     string // revision whose failure was announced; "" = not broken
	broken        bool
	sourceDown    bool // announced as unreachable
	engineDown    bool
	repairs       int // repairs in the open batch
	repairEntry   uint64
	batchDeadline time.Time // zero: no batch open
}

func newDetector(sourceAfter, repairWindow time.Duration) *detector {
	return &detector{sourceAfter: sourceAfter, repairWindow: repairWindow, apps: map[string]*appMemory{}}
}

func (d *detector) app(name string) *appMemory {
	m, ok := d.apps[name]
	if !ok {
		m = &appMemory{}
		d.apps[name] = m
	}
	return m
}

// events returns what r says that has not been said, and opens or grows
// the app's repair batch (flushed by due).
func (d *detector) events(r loop.Report, now time.Time) []Event {
	m := d.app(r.App)
	var out []Event
	add := func(k Kind, rev *gitsource.Revision, what string, id uint64) {
		out = append(out, Event{Kind: k, App: r.App, Time: now, Revision: rev, What: what, EntryID: id})
	}
	for _, e := range r.Entries {
		switch e.Kind {
		case status.KindSync:
			if e.Result == "succeeded" {
				add(KindSynced, e.Revision, e.Summary, e.ID)
				continue
			}
			if e.Result == "stopped for something newer" {
				continue
			}
			sha := ""
			if e.Revision != nil {
				sha = e.Revision.SHA
			}
			if !m.broken || m.brokenSHA != sha {
				add(KindRolloutFailed, e.Revision, e.Summary, e.ID)
			}
			m.broken, m.brokenSHA = true, sha
		case status.KindRefused:
			ev := Event{Kind: KindRefused, App: r.App, Time: now, Revision: e.Revision, What: e.Summary, Errors: e.Errors, EntryID: e.ID}
			out = append(out, ev)
		case status.KindRepair:
			if m.repairs == 0 {
				m.repairEntry = e.ID
				m.batchDeadline = now.Add(d.repairWindow)
			}
			m.repairs++
		case status.KindFlapping:
			add(KindFlapping, e.Revision, e.Summary, e.ID)
		case status.KindJob:
			if e.Result == "failed" {
				ev := Event{Kind: KindJobFailed, App: r.App, Time: now, Revision: e.Revision, What: e.Summary, Errors: e.Errors, EntryID: e.ID}
				out = append(out, ev)
			}
		case status.KindRollback:
			if k, ok := rollbackKind(e); ok {
				add(k, e.Revision, e.Summary, e.ID)
			}
		}
	}
	if r.Applying == nil {
		out = append(out, d.health(r, m, now)...)
	}
	out = append(out, d.reachability(r, m, now)...)
	m.source = r.Next.FromSource
	for i := range out {
		out[i].Source = r.Next.FromSource
		if p := r.Next.Preview; p != nil {
			out[i].PreviewURL = p.URL
		}
	}
	return out
}

// health announces Degraded once per revision and Healthy once after it.
func (d *detector) health(r loop.Report, m *appMemory, now time.Time) []Event {
	applied := r.Next.Applied
	switch r.Next.Health {
	case drift.HealthDegraded:
		sha := ""
		if applied != nil {
			sha = applied.SHA
		}
		if m.broken {
			return nil
		}
		m.broken, m.brokenSHA = true, sha
		return []Event{{Kind: KindRolloutFailed, App: r.App, Time: now, Revision: applied, What: "Degraded: " + r.Next.Message}}
	case drift.HealthHealthy:
		if !m.broken {
			return nil
		}
		m.broken, m.brokenSHA = false, ""
		what := "Healthy again"
		if applied != nil {
			what = "Healthy again, running " + applied.Short()
		}
		return []Event{{Kind: KindRecovered, App: r.App, Time: now, Revision: applied, What: what}}
	}
	return nil
}

// reachability announces a source that failed for longer than the
// threshold, and an engine that could not be reached, once each, and
// their return.
func (d *detector) reachability(r loop.Report, m *appMemory, now time.Time) []Event {
	var out []Event
	src := r.Next.Source
	switch {
	case src.Error != "" && !m.sourceDown && !src.ErrorSince.IsZero() && now.Sub(src.ErrorSince) >= d.sourceAfter:
		m.sourceDown = true
		out = append(out, Event{Kind: KindSourceUnreachable, App: r.App, Time: now,
			What: fmt.Sprintf("Git source unreachable for %s: %s", now.Sub(src.ErrorSince).Round(time.Second), src.Error)})
	case src.Error == "" && m.sourceDown:
		m.sourceDown = false
		out = append(out, Event{Kind: KindRecovered, App: r.App, Time: now, What: "Git source reachable again"})
	}
	engine := ""
	for _, c := range r.Next.Errors {
		if c.Kind == "engine" {
			engine = c.Message
		}
	}
	switch {
	case engine != "" && !m.engineDown:
		m.engineDown = true
		out = append(out, Event{Kind: KindEngineUnreachable, App: r.App, Time: now, What: "Docker engine unreachable: " + engine})
	case engine == "" && m.engineDown && r.Applying == nil:
		m.engineDown = false
		out = append(out, Event{Kind: KindRecovered, App: r.App, Time: now, What: "Docker engine reachable again"})
	}
	return out
}

// nextDue is when the earliest open repair batch closes.
func (d *detector) nextDue() (time.Time, bool) {
	var next time.Time
	for _, m := range d.apps {
		if !m.batchDeadline.IsZero() && (next.IsZero() || m.batchDeadline.Before(next)) {
			next = m.batchDeadline
		}
	}
	return next, !next.IsZero()
}

// due returns the repair batches whose window has ended, and closes them.
func (d *detector) due(now time.Time) []Event {
	var out []Event
	for _, name := range sortedApps(d.apps) {
		m := d.apps[name]
		if m.repairs == 0 || m.batchDeadline.IsZero() || now.Before(m.batchDeadline) {
			continue
		}
		what := "1 change made outside Git was repaired"
		if m.repairs > 1 {
			what = fmt.Sprintf("%d changes made outside Git were repaired", m.repairs)
		}
		out = append(out, Event{Kind: KindDriftRepaired, App: name, Source: m.source, Time: now, What: what, Count: m.repairs, EntryID: m.repairEntry})
		m.repairs, m.repairEntry, m.batchDeadline = 0, 0, time.Time{}
	}
	return out
}

func sortedApps(m map[string]*appMemory) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// rollbackKind is the event a rollback entry makes: a person's pin or
// unpin, a quarantine after a regression (one event says the commit is
// quarantined and what it rolls back to), or an automatic rollback that
// failed; false for the automatic rollback the quarantine announced.
func rollbackKind(e status.HistoryEntry) (Kind, bool) {
	switch {
	case e.Result == "quarantined":
		return KindRollback, true
	case status.AutomaticRollback(e) && (e.Result == "failed" || e.Result == "partial"):
		return KindRolloutFailed, true
	case status.AutomaticRollback(e):
		return "", false
	case strings.HasPrefix(e.Summary, "unpinned"):
		return KindUnpinned, true
	}
	return KindPinned, true
}
