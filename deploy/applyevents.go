package deploy

import (
	"context"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// readyPoll is how often a readiness wait inspects a replica when nothing
// else tells it that the verdict may have changed.
const readyPoll = 200 * time.Millisecond

// minSettleWait keeps a wait for a settle time that is about to end from
// spinning.
const minSettleWait = 5 * time.Millisecond

// verdictActions are the container events that can change a readiness
// wait's verdict. Not "start": the wait's own start, which it has seen;
// a restart by policy is a die first.
var verdictActions = map[string]bool{"die": true, "destroy": true, "kill": true, "oom": true, "stop": true, "pause": true, "health_status": true}

// followEvents makes this apply's readiness waits wake on the Docker events
// of its app's containers when no agent's Watch does (the one-shot CLI, or
// an agent whose stream is down): one event stream instead of an inspect of
// every waiting replica every readyPoll. It is opened at the first
// container operation, before that container exists; it closes with the
// apply.
func (r *run) followEvents(ctx context.Context) {
	r.eventsOnce.Do(func() {
		if r.e.view.IsLive() {
			return
		}
		ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		r.stopEvents = cancel
		filters := make(client.Filters).Add("type", string(events.ContainerEventType)).Add("label", drift.LabelApp+"="+r.app)
		stream := r.e.api.Events(ctx, client.EventsListOptions{Filters: filters})
		r.eventsLive.Store(true)
		go func() {
			// A broken stream only costs latency: the waits poll again.
			defer r.eventsLive.Store(false)
			for {
				select {
				case <-ctx.Done():
					return
				case <-stream.Err:
					return
				case m, ok := <-stream.Messages:
					if !ok {
						return
					}
					action, _, _ := strings.Cut(string(m.Action), ":")
					if m.Actor.ID != "" && verdictActions[action] {
						r.e.wake(m.Actor.ID)
					}
				}
			}
		}()
	})
}

// closeEvents ends followEvents' stream.
func (r *run) closeEvents() {
	if r.stopEvents != nil {
		r.stopEvents()
	}
}

// nextLook is how long a readiness wait on container id may sleep before
// it inspects again (an event wakes it sooner). A replica ready after a
// settle time cannot become ready before that time has run, and until then
// only an event can change its verdict (exited, restarted, removed,
// paused): with events waking the wait, it sleeps until then instead of
// polling. Anything else — a probe, a healthcheck, no events — is polled.
func (r *run) nextLook(id string) time.Duration {
	if !r.e.view.IsLive() && !r.eventsLive.Load() {
		return readyPoll
	}
	left, ok := r.e.prober.SettleLeft(id)
	if !ok {
		return readyPoll
	}
	// A clock that disagrees with the engine's costs at most one settle
	// time before the next look.
	return min(max(left, minSettleWait), r.e.opts.SettleTime)
}
