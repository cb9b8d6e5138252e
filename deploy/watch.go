package deploy

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/deploy/view"
	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// ownedActions are the container events on driftless's containers that can
// mean drift or a readiness change: removal, stopping, dying, a restart by
// policy, health, and changes made with `docker update` or `docker rename`.
var ownedActions = map[string]bool{
	"die": true, "stop": true, "destroy": true, "kill": true, "oom": true, "start": true, "health_status": true,
	"update": true, "rename": true, "pause": true, "unpause": true,
}

// foreignActions are the events on other containers that can free a name
// or host port an app waits for.
var foreignActions = map[string]bool{"destroy": true, "die": true, "stop": true, "rename": true}

// networkActions are network events that can mean drift: one of our
// containers disconnected from (or connected to) a network, or a network
// holding one of our names removed.
var networkActions = map[string]bool{"connect": true, "disconnect": true, "destroy": true}

// Watch also keeps the engine view current; see the view package.

// Watch streams Docker events that may concern driftless and calls onEvent
// for each: every watched event of its own containers (with their app),
// network connects and disconnects (the loop finds the app by container),
// and foreign containers and networks going away (which may clear a
// conflict). Each time the stream is connected, first and again after a
// break (the engine restarted, its socket went away; it reconnects with
// backoff), it reports drift.EventConnected, since events may have been
// missed before. It returns when ctx is done. onEvent is called from one
// goroutine.
func (e *Engine) Watch(ctx context.Context, onEvent func(drift.EngineEvent)) error {
	return FollowStream(ctx, e.log, "Docker event stream", e.watchBackoff, func(ctx context.Context) error { return e.watchOnce(ctx, onEvent) }, onEvent)
}

// FollowStream runs once (one connection of an event stream) until ctx
// ends, reporting EventDisconnected after each break and reconnecting with
// a backoff from first doubling to 30s, back to first after a connection
// that lasted over a minute. It returns nil when ctx ends.
func FollowStream(ctx context.Context, log *slog.Logger, what string, first time.Duration, once func(context.Context) error, onEvent func(drift.EngineEvent)) error {
	const maxBackoff = 30 * time.Second
	backoff := first
	for {
		connected := time.Now()
		err := once(ctx)
		if ctx.Err() != nil {
			return nil
		}
		onEvent(drift.EngineEvent{Action: drift.EventDisconnected})
		if time.Since(connected) > time.Minute {
			backoff = first // the stream was healthy for a while
		}
		log.Warn(what+" broke; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// watchOnce follows one event stream until it breaks. Once the engine
// answers a ping it opens the stream, (re)builds the view from a full list,
// then reports EventConnected. The stream is opened before that list, so no
// change between the two is lost.
func (e *Engine) watchOnce(ctx context.Context, onEvent func(drift.EngineEvent)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A bounded ping first, whose answer passes share: an engine that
	// never answers is known down after Options.PingTimeout. Opening the
	// stream first would let its request negotiate the API version with
	// no deadline, under the client's lock that every later request
	// (pings included) waits on whatever its own deadline.
	if err := e.Ping(ctx); err != nil {
		return err
	}
	filters := make(client.Filters).
		Add("type", string(events.ContainerEventType), string(events.NetworkEventType), string(events.VolumeEventType), string(events.ImageEventType))
	stream := e.api.Events(ctx, client.EventsListOptions{Filters: filters})
	// Events may have been missed while the stream was down: look at
	// every container's settings again.
	e.prober.MarkAllDirty()
	if err := e.view.Rebuild(ctx); err != nil {
		return engineErr(err)
	}
	defer e.view.SetLive(false)
	onEvent(drift.EngineEvent{Action: drift.EventConnected})
	resync := time.NewTicker(e.opts.ViewResync)
	defer resync.Stop()
	var chk view.Check
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-stream.Err:
			return err
		case m, ok := <-stream.Messages:
			if !ok {
				return nil
			}
			if err := e.view.Event(ctx, m); err != nil {
				return engineErr(err)
			}
			chk.Arrived(time.Unix(0, m.TimeNano))
			if ev, ok := watchedEvent(m); ok {
				e.noteEvent(ev)
				onEvent(ev)
			}
		case <-resync.C:
			if err := e.view.StartCheck(ctx, &chk, nil); err != nil {
				return engineErr(err)
			}
		case reply := <-e.view.Requests():
			if err := e.view.StartCheck(ctx, &chk, reply); err != nil {
				return engineErr(err)
			}
		case <-chk.Timer():
			if err := e.view.JudgeCheck(ctx, &chk); err != nil {
				return engineErr(err)
			}
		}
	}
}

// noteEvent makes the next observation inspect a container whose settings
// an event says changed, or that started again: a restart between two
// observations leaves the state "running", so without the event the start
// time and restart count would wait for the periodic inspect.
func (e *Engine) noteEvent(ev drift.EngineEvent) {
	switch ev.Action {
	case "update", "rename", "connect", "disconnect", "oom", "start":
		if ev.ID != "" {
			e.prober.MarkDirty(ev.ID)
		}
	}
	if ev.ID != "" {
		// A readiness wait on this container looks again at once instead
		// of at its next poll.
		e.wake(ev.ID)
	}
}

// watchedEvent turns a Docker event into an EngineEvent, or reports it
// does not concern driftless.
func watchedEvent(m events.Message) (drift.EngineEvent, bool) {
	action, _, _ := strings.Cut(string(m.Action), ":")
	action = strings.TrimSpace(action)
	attrs := m.Actor.Attributes
	switch m.Type {
	case events.NetworkEventType:
		if !networkActions[action] {
			return drift.EngineEvent{}, false
		}
		// A network event names the container by ID in "container".
		return drift.EngineEvent{Action: action, ID: attrs["container"], Network: attrs["name"]}, true
	case events.ImageEventType:
		// A tag moved onto another image (a pull, a build, docker tag):
		// the containers of a service that names it run what it named.
		if action == "tag" && attrs["name"] != "" {
			return drift.EngineEvent{Action: action, Image: attrs["name"]}, true
		}
	case events.ContainerEventType, "":
		ev := drift.EngineEvent{App: attrs[drift.LabelApp], Container: attrs["name"], ID: m.Actor.ID, Action: action}
		if attrs[drift.LabelJob] != "" {
			// A job's container starting and exiting is no drift: it
			// concerns the job's runner, not the app's pass.
			return drift.EngineEvent{}, false
		}
		if ev.App != "" && ownedActions[action] || ev.App == "" && foreignActions[action] {
			return ev, true
		}
	}
	return drift.EngineEvent{}, false
}

// ViewLive reports whether Observe currently reads the view.
func (e *Engine) ViewLive() bool { return e.view.IsLive() }

// CheckView compares the view with a fresh list now, waits for the
// verdict (a grace period for events on the way, about a second) and
// returns it. Differences are counted, logged and repaired as on the
// resync timer. It fails when Watch is not running.
func (e *Engine) CheckView(ctx context.Context) (view.Report, error) {
	return e.view.CheckNow(ctx)
}
