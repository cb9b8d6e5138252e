package deploy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/api/types/events"
	"github.com/prometheus/client_golang/prometheus"
)

// ViewReport is the outcome of one check of the view against the engine.
type ViewReport struct {
	Compared    int // objects in the fresh list
	Divergences []Divergence
	Err         error
}

// viewCheck is a check under way in the watch goroutine: suspects wait out
// the grace period while events keep flowing, then are judged.
type viewCheck struct {
	timer <-chan time.Time
	// listed is when the check's list (or last round's fetches) returned;
	// lastEvent is the engine time of the newest event applied, and
	// lastArrival when it was applied. The verdict waits until the view
	// has caught up with the stream past listed, or the stream is quiet:
	// an event still queued behind others is not a miss.
	listed, lastEvent, lastArrival time.Time
	since                          time.Time // when the check started
	suspects                       []suspect
	compared                       int
	rounds                         int
	divs                           []Divergence
	waiting                        []chan ViewReport
}

// maxCheckRounds bounds how often an object that keeps changing without
// its events is looked at again before the check gives up on judging it.
const maxCheckRounds = 3

// Collector exports driftless_observation_divergence_total and
// driftless_docker_requests_total.
func (e *Engine) Collector() prometheus.Collector {
	cs := collectors{e.divergence}
	if e.requests != nil {
		cs = append(cs, e.requests)
	}
	return cs
}

// collectors exports several collectors as one.
type collectors []prometheus.Collector

func (cs collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

func (cs collectors) Collect(ch chan<- prometheus.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}

// CheckView compares the view with a fresh list now, waits for the
// verdict (a grace period for events on the way, about a second) and
// returns it. Differences are counted, logged and repaired as on the
// resync timer. It fails when Watch is not running.
func (e *Engine) CheckView(ctx context.Context) (ViewReport, error) {
	reply := make(chan ViewReport, 1)
	select {
	case e.viewChecks <- reply:
	case <-ctx.Done():
		return ViewReport{}, fmt.Errorf("check view: %w (is Watch running?)", ctx.Err())
	}
	select {
	case r := <-reply:
		return r, r.Err
	case <-ctx.Done():
		return ViewReport{}, fmt.Errorf("check view: %w", ctx.Err())
	}
}

// ViewLive reports whether Observe currently reads the view.
func (e *Engine) ViewLive() bool { return e.view.isLive() }

// rebuildView fills the view from a full list when the stream (re)connects.
// After a gap, whatever the old view held that the list contradicts was
// missed while the stream was down: it is counted and logged, and the list
// replaces it at once.
func (e *Engine) rebuildView(ctx context.Context) error {
	t := e.view.ticket()
	l, err := e.list(ctx, nil)
	if err != nil {
		return engineErr(fmt.Errorf("build engine view: %w", err))
	}
	if s := e.view.snapshot(); len(s.containers)+len(s.networks)+len(s.volumes) > 0 {
		var divs []Divergence
		for _, sp := range e.view.compare(t, l) {
			before, had, _ := e.view.viewSlot(sp.kind, sp.key)
			divs = append(divs, Divergence{Kind: sp.kind, Key: sp.key, Name: objName(firstNonNil(sp.listed, before, sp.present), sp.key),
				What: describe(before, had, sp.listed, sp.present)})
		}
		e.recordDivergences("after the event stream reconnected", divs)
	}
	e.view.replace(t, l)
	e.log.Info("engine view built from one list; observations read it until the event stream breaks",
		"containers", len(l.containers), "networks", len(l.networks), "volumes", len(l.volumes))
	return nil
}

// startCheck takes the full list of a check and notes the suspects; the
// verdict comes from judgeCheck after the grace period. A check already
// under way absorbs the request.
func (e *Engine) startCheck(ctx context.Context, chk *viewCheck) error {
	if chk.timer != nil {
		return nil
	}
	t := e.view.ticket()
	l, err := e.list(ctx, nil)
	if err != nil {
		chk.reply(ViewReport{Err: err})
		return engineErr(fmt.Errorf("check engine view: %w", err))
	}
	chk.suspects = e.view.compare(t, l)
	chk.compared = len(l.containers) + len(l.networks) + len(l.volumes)
	chk.rounds, chk.divs = 0, nil
	chk.listed, chk.since = time.Now(), time.Now()
	chk.timer = time.After(e.viewGrace)
	return nil
}

// maxCatchUp bounds how long a check waits for the view to catch up with
// a busy stream (or one whose engine clock is behind ours).
const maxCatchUp = 30 * time.Second

// caughtUp reports whether every event emitted before the check's list
// has been applied: an event stamped after it was, or none arrived for
// a grace period.
func (chk *viewCheck) caughtUp(grace time.Duration) bool {
	return !chk.lastEvent.Before(chk.listed) || time.Since(chk.lastArrival) >= grace || time.Since(chk.since) > maxCatchUp
}

func (e *Engine) judgeCheck(ctx context.Context, chk *viewCheck) error {
	chk.timer = nil
	if !chk.caughtUp(e.viewGrace) {
		chk.timer = time.After(max(e.viewGrace/4, time.Millisecond))
		return nil
	}
	divs, retry, err := e.judge(ctx, chk.suspects)
	chk.divs = append(chk.divs, divs...)
	if err != nil {
		chk.reply(ViewReport{Err: err})
		return engineErr(fmt.Errorf("check engine view: %w", err))
	}
	chk.rounds++
	if len(retry) > 0 && chk.rounds < maxCheckRounds {
		chk.suspects = retry
		chk.listed = time.Now()
		chk.timer = time.After(e.viewGrace)
		return nil
	}
	for _, s := range retry {
		// Repaired by judge's fetch already; not counted: the object kept
		// changing, so whether the view missed an event cannot be told.
		e.log.Debug("engine view: object kept changing during the check", "kind", s.kind, "key", shortID(s.key))
	}
	e.recordDivergences("on the periodic check", chk.divs)
	chk.reply(ViewReport{Compared: chk.compared, Divergences: chk.divs})
	return nil
}

func (chk *viewCheck) reply(r ViewReport) {
	for _, w := range chk.waiting {
		w <- r
	}
	chk.waiting = nil
}

func (e *Engine) recordDivergences(when string, divs []Divergence) {
	for _, d := range divs {
		e.divergence.WithLabelValues(d.Kind).Inc()
		e.log.Warn("engine view diverged from the engine; repaired", "when", when, "object", d.String())
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

// viewEvent brings the view up to date with one event: the object it names
// is listed again (or, destroyed, marked gone). An event that names no
// object cannot be interpreted: the whole view is checked instead.
func (e *Engine) viewEvent(ctx context.Context, m events.Message) error {
	action, _, _ := strings.Cut(string(m.Action), ":")
	action = strings.TrimSpace(action)
	if action == "destroy" && m.Actor.ID != "" {
		// Final: IDs are never reused, and a volume name used again
		// comes with its own create event. Not re-listed, because the
		// engine's list can still show the object just after the event.
		e.view.markGone(string(m.Type), m.Actor.ID)
		return nil
	}
	var err error
	switch m.Type {
	case events.ContainerEventType:
		if containerIgnored[action] {
			return nil
		}
		if m.Actor.ID == "" {
			return e.rebuildView(ctx)
		}
		_, _, err = e.fetchContainer(ctx, m.Actor.ID)
		if name := m.Actor.Attributes["name"]; err == nil && action == "rename" && name != "" {
			e.view.renamed(m.Actor.ID, strings.TrimPrefix(name, "/"))
		}
	case events.NetworkEventType:
		if m.Actor.ID == "" {
			return e.rebuildView(ctx)
		}
		if c := m.Actor.Attributes["container"]; c != "" {
			// connect, disconnect: what changes is the container's
			// networks, not the network's summary.
			_, _, err = e.fetchContainer(ctx, c)
		} else {
			_, _, err = e.fetchNetwork(ctx, m.Actor.ID)
		}
	case events.VolumeEventType:
		if action == "mount" || action == "unmount" {
			return nil
		}
		if m.Actor.ID == "" {
			return e.rebuildView(ctx)
		}
		_, _, err = e.fetchVolume(ctx, m.Actor.ID)
	default:
		return nil
	}
	if err != nil {
		// The engine hiccupped: the view may now be behind. Break the
		// stream; reconnecting rebuilds the view from a full list.
		return engineErr(fmt.Errorf("update engine view after %s %s: %w", m.Type, action, err))
	}
	return nil
}

// renamed applies the name a rename event carries. Under churn the view
// kept a container's old name after its rename event with no later event
// to correct it: the engine's list apparently can still answer the old
// name just after the event. The event's name is the one to keep; a later
// rename brings its own event.
func (v *view) renamed(id, name string) {
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
func (v *view) markGone(kind, key string) {
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
