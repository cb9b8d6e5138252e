package swarm

import (
	"context"
	"strings"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
)

// Watch streams the Swarm events that may concern driftless's apps and
// calls onEvent for each, with the app found from the service's labels
// (remembered by Observe, or looked up): service create, update and
// remove (a `docker service scale` or `update` by hand, a rollback Swarm
// made), secrets and configs (named after their app), node changes (a
// node gone down moves tasks: every app is looked at), and the containers
// of tasks starting, dying or changing health on this node. Every (re)connection is reported as drift.EventConnected.
// It returns when ctx is done.
func (e *Engine) Watch(ctx context.Context, onEvent func(drift.EngineEvent)) error {
	return deploy.FollowStream(ctx, e.log, "Swarm event stream", time.Second, func(ctx context.Context) error { return e.watchOnce(ctx, onEvent) }, onEvent)
}

func (e *Engine) watchOnce(ctx context.Context, onEvent func(drift.EngineEvent)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	filters := make(client.Filters).Add("type", string(events.ServiceEventType), string(events.NodeEventType),
		string(events.ContainerEventType), string(events.ConfigEventType), string(events.SecretEventType))
	stream := e.api.Events(ctx, client.EventsListOptions{Filters: filters})
	if err := e.Ping(ctx); err != nil {
		return err
	}
	onEvent(drift.EngineEvent{Action: drift.EventConnected})
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
			for _, ev := range e.eventsOf(ctx, m) {
				onEvent(ev)
			}
		}
	}
}

// taskActions are container events of a task that change what status
// shows: it started, died, or its health changed.
var taskActions = map[string]bool{"start": true, "die": true, "destroy": true, "oom": true}

// eventsOf maps one engine event to the apps it concerns.
func (e *Engine) eventsOf(ctx context.Context, m events.Message) []drift.EngineEvent {
	action := string(m.Action)
	switch m.Type {
	case events.ServiceEventType:
		app := e.appOf(ctx, m.Actor.ID)
		if app == "" {
			return nil
		}
		if action == "remove" {
			action = "destroy" // the loop's word for "gone": looked at at once
		}
		return []drift.EngineEvent{{App: app, Action: action, Container: m.Actor.Attributes["name"], ID: m.Actor.ID}}
	case events.ConfigEventType, events.SecretEventType:
		// <app>_<name>_<hash8>: an app name has no '_'.
		app, _, ok := strings.Cut(m.Actor.Attributes["name"], "_")
		if !ok || app == "" {
			return nil
		}
		return []drift.EngineEvent{{App: app, Action: action, Container: m.Actor.Attributes["name"], ID: m.Actor.ID}}
	case events.NodeEventType:
		// A node that went down or was drained moves its tasks: look at
		// every app this engine runs.
		return e.allApps("update")
	case events.ContainerEventType:
		app := m.Actor.Attributes[LabelTaskApp]
		if app == "" || !(taskActions[action] || strings.HasPrefix(action, "health_status")) {
			return nil
		}
		if strings.HasPrefix(action, "health_status") {
			action = "health_status"
		}
		return []drift.EngineEvent{{App: app, Action: action, Container: m.Actor.Attributes["name"], ID: m.Actor.ID}}
	}
	return nil
}

// appOf is the app of a service, from what Observe saw or an inspect.
func (e *Engine) appOf(ctx context.Context, serviceID string) string {
	e.mu.Lock()
	app, ok := e.apps[serviceID]
	e.mu.Unlock()
	if ok {
		return app
	}
	s, err := e.api.ServiceInspect(ctx, serviceID, client.ServiceInspectOptions{})
	if err != nil {
		return ""
	}
	app = s.Service.Spec.Labels[drift.LabelApp]
	if app != "" {
		e.mu.Lock()
		e.apps[serviceID] = app
		e.mu.Unlock()
	}
	return app
}

func (e *Engine) allApps(action string) []drift.EngineEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[string]bool{}
	var out []drift.EngineEvent
	for _, app := range e.apps {
		if !seen[app] {
			seen[app] = true
			out = append(out, drift.EngineEvent{App: app, Action: action})
		}
	}
	return out
}
