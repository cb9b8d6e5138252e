package view

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/api/types/events"
)

// Report is the outcome of one check of the view against the engine.
type Report struct {
	Compared    int // objects in the fresh list
	Divergences []Divergence
	Err         error
}

// Check is a check under way in the watch goroutine: suspects wait out
// the grace period while events keep flowing, then are judged.
type Check struct {
	timer <-chan time.Time
	// listed is when the check's list (or last round's fetches) returned;
	// lastEvent is the engine time of the newest event applied, and
	// lastArrival when it was applied. The verdict waits until the view
	// has caught up with the stream past listed, or the stream is quiet:
	// an event still queued behind others is not a miss.
	listed, lastEvent, lastArrival time.Time
	since                          time.Time // when the check started
	suspects                       []suspect
	gone                           []suspect // waiting for their destroy event
	compared                       int
	rounds                         int
	divs                           []Divergence
	waiting                        []chan Report
}

// maxCheckRounds bounds how often an object that keeps changing without
// its events is looked at again before the check gives up on judging it.
const maxCheckRounds = 3

// CheckNow compares the view with a fresh list now, waits for the
// verdict (a grace period for events on the way, about a second) and
// returns it. Differences are counted, logged and repaired as on the
// resync timer. It fails when no watch goroutine serves Requests.
func (v *View) CheckNow(ctx context.Context) (Report, error) {
	reply := make(chan Report, 1)
	select {
	case v.checks <- reply:
	case <-ctx.Done():
		return Report{}, fmt.Errorf("check view: %w (is Watch running?)", ctx.Err())
	}
	select {
	case r := <-reply:
		return r, r.Err
	case <-ctx.Done():
		return Report{}, fmt.Errorf("check view: %w", ctx.Err())
	}
}

// Requests are the checks CheckNow asks for; the watch goroutine starts
// each with StartCheck.
func (v *View) Requests() <-chan chan Report { return v.checks }

// Timer fires when the check under way is due to be judged (JudgeCheck);
// nil when none is under way.
func (chk *Check) Timer() <-chan time.Time { return chk.timer }

// Arrived notes that an event stamped at (engine time) was applied now.
func (chk *Check) Arrived(at time.Time) { chk.lastEvent, chk.lastArrival = at, time.Now() }

// Rebuild fills the view from a full list when the stream (re)connects.
// After a gap, whatever the old view held that the list contradicts was
// missed while the stream was down: it is counted and logged, and the list
// replaces it at once.
func (v *View) Rebuild(ctx context.Context) error {
	t := v.ticket()
	l, err := List(ctx, v.api, nil)
	if err != nil {
		return fmt.Errorf("build engine view: %w", err)
	}
	if s := v.Snapshot(); len(s.Containers)+len(s.Networks)+len(s.Volumes) > 0 {
		var divs []Divergence
		for _, sp := range v.compare(t, l) {
			before, had, _ := v.viewSlot(sp.kind, sp.key)
			divs = append(divs, Divergence{Kind: sp.kind, Key: sp.key, Name: objName(firstNonNil(sp.listed, before, sp.present), sp.key),
				What: describe(before, had, sp.listed, sp.present)})
		}
		v.recordDivergences("after the event stream reconnected", divs)
	}
	v.replace(t, l)
	v.log.Info("engine view built from one list; observations read it until the event stream breaks",
		"containers", len(l.Containers), "networks", len(l.Networks), "volumes", len(l.Volumes))
	return nil
}

// StartCheck takes the full list of a check and notes the suspects; the
// verdict comes from JudgeCheck after the grace period. A check already
// under way absorbs the request.
func (v *View) StartCheck(ctx context.Context, chk *Check, reply chan Report) error {
	if reply != nil {
		chk.waiting = append(chk.waiting, reply)
	}
	if chk.timer != nil {
		return nil
	}
	t := v.ticket()
	l, err := List(ctx, v.api, nil)
	if err != nil {
		chk.reply(Report{Err: err})
		return fmt.Errorf("check engine view: %w", err)
	}
	chk.suspects = v.compare(t, l)
	chk.compared = len(l.Containers) + len(l.Networks) + len(l.Volumes)
	chk.rounds, chk.divs, chk.gone = 0, nil, nil
	chk.listed, chk.since = time.Now(), time.Now()
	chk.timer = time.After(v.Grace)
	return nil
}

// maxCatchUp bounds how long a check waits for the view to catch up with
// a busy stream (or one whose engine clock is behind ours).
const maxCatchUp = 30 * time.Second

// caughtUp reports whether every event emitted before the check's list
// has been applied: an event stamped after it was, or none arrived for
// a grace period.
func (chk *Check) caughtUp(grace time.Duration) bool {
	return !chk.lastEvent.Before(chk.listed) || time.Since(chk.lastArrival) >= grace || time.Since(chk.since) > maxCatchUp
}

// JudgeCheck judges the suspects of the check under way once the view has
// caught up with the stream, looks again at those that kept changing (up
// to maxCheckRounds), then records and reports the divergences.
func (v *View) JudgeCheck(ctx context.Context, chk *Check) error {
	chk.timer = nil
	if !chk.caughtUp(v.Grace) {
		chk.timer = time.After(max(v.Grace/4, time.Millisecond))
		return nil
	}
	divs, retry, gone, err := v.judge(ctx, chk.suspects)
	chk.divs = append(chk.divs, divs...)
	if err != nil {
		chk.reply(Report{Err: err})
		return fmt.Errorf("check engine view: %w", err)
	}
	waiting, missed := v.awaitDestroy(append(chk.gone, gone...))
	chk.gone, chk.divs = waiting, append(chk.divs, missed...)
	chk.rounds++
	if chk.rounds >= maxCheckRounds {
		for _, s := range retry {
			// Repaired by judge's fetch already; not counted: the object
			// kept changing, so whether the view missed an event cannot
			// be told.
			v.log.Debug("engine view: object kept changing during the check", "kind", s.kind, "key", shortID(s.key))
		}
		retry = nil
	}
	if len(retry) > 0 || len(chk.gone) > 0 {
		chk.suspects = retry
		chk.listed = time.Now()
		chk.timer = time.After(max(v.Grace, 50*time.Millisecond))
		return nil
	}
	slices.SortFunc(chk.divs, func(a, b Divergence) int { return strings.Compare(a.Kind+a.Key, b.Kind+b.Key) })
	v.recordDivergences("on the periodic check", chk.divs)
	chk.reply(Report{Compared: chk.compared, Divergences: chk.divs})
	return nil
}

func (chk *Check) reply(r Report) {
	for _, w := range chk.waiting {
		w <- r
	}
	chk.waiting = nil
}

func (v *View) recordDivergences(when string, divs []Divergence) {
	for _, d := range divs {
		v.divergence.WithLabelValues(d.Kind).Inc()
		v.log.Warn("engine view diverged from the engine; repaired", "when", when, "object", d.String())
	}
}

// containerRefetch are container actions that can change what a list
// says of it; containerIgnored cannot. Any other action is refetched too:
// one cheap list call is the safe answer to an action the view does not
// know.
var containerIgnored = map[string]bool{
	"exec_create": true, "exec_start": true, "exec_die": true, "exec_detach": true, "attach": true, "detach": true,
	"resize": true, "top": true, "export": true, "commit": true, "copy": true, "archive-path": true, "extract-to-dir": true,
	"mount": true, "unmount": true,
}

// Event brings the view up to date with one event: the object it names
// is listed again (or, destroyed, marked gone). An event that names no
// object cannot be interpreted: the whole view is checked instead.
func (v *View) Event(ctx context.Context, m events.Message) error {
	action, _, _ := strings.Cut(string(m.Action), ":")
	action = strings.TrimSpace(action)
	if action == "destroy" && m.Actor.ID != "" {
		// Final: IDs are never reused, and a volume name used again
		// comes with its own create event. Not re-listed, because the
		// engine's list can still show the object just after the event.
		v.markGone(string(m.Type), m.Actor.ID)
		return nil
	}
	var err error
	switch m.Type {
	case events.ContainerEventType:
		if containerIgnored[action] {
			return nil
		}
		if m.Actor.ID == "" {
			return v.Rebuild(ctx)
		}
		_, _, err = v.fetchContainer(ctx, m.Actor.ID)
		if name := m.Actor.Attributes["name"]; err == nil && action == "rename" && name != "" {
			v.renamed(m.Actor.ID, strings.TrimPrefix(name, "/"))
		}
	case events.NetworkEventType:
		if m.Actor.ID == "" {
			return v.Rebuild(ctx)
		}
		if c := m.Actor.Attributes["container"]; c != "" {
			// connect, disconnect: what changes is the container's
			// networks, not the network's summary.
			_, _, err = v.fetchContainer(ctx, c)
		} else {
			_, _, err = v.fetchNetwork(ctx, m.Actor.ID)
		}
	case events.ImageEventType:
		err = v.imageEvent(ctx, action)
	case events.VolumeEventType:
		if action == "mount" || action == "unmount" {
			return nil
		}
		if m.Actor.ID == "" {
			return v.Rebuild(ctx)
		}
		_, _, err = v.fetchVolume(ctx, m.Actor.ID)
	default:
		return nil
	}
	if err != nil {
		// The engine hiccupped: the view may now be behind. Break the
		// stream; reconnecting rebuilds the view from a full list.
		return fmt.Errorf("update engine view after %s %s: %w", m.Type, action, err)
	}
	return nil
}

// imageEvent re-lists the containers after an image is tagged, untagged
// or deleted. A list shows a container's image by its tag while the tag
// names the container's image, else by ID: a tag moved (by a pull or a
// build, with no event for the image it left) or removed changes
// containers that get no event of their own.
func (v *View) imageEvent(ctx context.Context, action string) error {
	if action != "tag" && action != "untag" && action != "delete" {
		return nil
	}
	return v.refreshContainers(ctx)
}

// renamed applies the name a rename event carries. Under churn the view
// kept a container's old name after its rename event with no later event
// to correct it: the engine's list apparently can still answer the old
// name just after the event. The event's name is the one to keep; a later
// rename brings its own event.
func (v *View) renamed(id, name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s, ok := v.containers[id]
	if !ok || s.gone || s.val.c.Name == name {
		return
	}
	obs := *s.val
	obs.c.Name = name
	s.val = &obs
	v.containers[id] = s
}

// markGone records a destroy event's object as removed.
func (v *View) markGone(kind, key string) {
	t := v.ticket()
	v.mu.Lock()
	defer v.mu.Unlock()
	switch events.Type(kind) {
	case events.ContainerEventType:
		v.containers.put(t, key, nil, false)
	case events.NetworkEventType:
		v.networks.put(t, key, drift.Network{}, false)
	case events.VolumeEventType:
		v.volumes.put(t, key, drift.Volume{}, false)
	}
}
