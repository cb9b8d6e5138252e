package deploy

import (
	"context"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// watchedActions are the container events that can mean drift or a
// readiness change.
var watchedActions = map[string]bool{
	"die": true, "stop": true, "destroy": true, "kill": true, "oom": true, "start": true, "health_status": true,
}

// Watch streams Docker events for driftless-owned containers and calls
// onEvent(app, containerName, action) for die, stop, destroy, kill, oom,
// start and health_status ("health_status: healthy" is reported as
// "health_status"). It reconnects with backoff when the stream breaks
// (events missed meanwhile are covered by the loop's periodic resync) and
// returns when ctx is done. onEvent is called from one goroutine.
func (e *Engine) Watch(ctx context.Context, onEvent func(app, container, action string)) error {
	const maxBackoff = 30 * time.Second
	backoff := e.watchBackoff
	for {
		connected := time.Now()
		err := e.watchOnce(ctx, onEvent)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(connected) > time.Minute {
			backoff = e.watchBackoff // the stream was healthy for a while
		}
		e.log.Warn("Docker event stream broke; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

func (e *Engine) watchOnce(ctx context.Context, onEvent func(app, container, action string)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	filters := make(client.Filters).
		Add("type", string(events.ContainerEventType)).
		Add("label", drift.LabelApp)
	stream := e.api.Events(ctx, client.EventsListOptions{Filters: filters})
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
			app, name, action, ok := watchedEvent(m)
			if ok {
				onEvent(app, name, action)
			}
		}
	}
}

// watchedEvent picks the app, container name and action out of an event.
func watchedEvent(m events.Message) (app, name, action string, ok bool) {
	if m.Type != "" && m.Type != events.ContainerEventType {
		return "", "", "", false
	}
	action, _, _ = strings.Cut(string(m.Action), ":")
	action = strings.TrimSpace(action)
	app = m.Actor.Attributes[drift.LabelApp]
	if !watchedActions[action] || app == "" {
		return "", "", "", false
	}
	return app, m.Actor.Attributes["name"], action, true
}
