// Package inspectmemo is the encoded form of the one-shot CLI's inspect
// memo, and the proof that decides which of its entries still hold.
//
// An inspect memo carries what one CLI process learned by inspecting an
// app's running containers to the next one, so that a no-op `apply` or
// `diff` need not inspect them again. It is used only where it is proven to
// hold, by Docker's own event buffer:
//
//   - The memo records the newest engine event at the start of the
//     observation that wrote it (the anchor). Every change that can alter
//     what an inspect shows of a running container (docker update, a
//     restart, a network connect or disconnect, a health change) is an
//     event after the anchor.
//   - The daemon keeps its last 256 events and answers a since= query by
//     walking them from the newest back, stopping at the first that is
//     older than since. So when the anchor itself comes back, every event
//     logged after it came back too.
//   - A container named by one of those events is inspected again; an
//     anchor that is not in the answer (it left the buffer, the engine
//     restarted, another engine answers) voids the whole memo.
//
// Only running containers whose health is none or healthy, with no secret
// values, are memoized: Docker sends no event for a network connected to a
// stopped container, an unhealthy verdict quotes the check's output, and no
// secret reaches the disk. The answer's cut-off is the local clock, so the
// memo is used only on a local (unix socket) engine.
package inspectmemo

import (
	"strings"
	"time"

	"github.com/moby/moby/api/types/events"

	"github.com/driftless-dev/driftless/drift"
)

// Format changes whenever what a memo holds changes meaning.
const Format = 1

// Memo is the encoded memo.
type Memo struct {
	Format     int
	Build      string
	Host       string
	App        string
	Anchor     Event
	Containers []Container
}

// Event identifies one engine event.
type Event struct {
	TimeNano int64
	Type     string
	Action   string
	Actor    string
}

// EventOf identifies m.
func EventOf(m events.Message) Event {
	return Event{TimeNano: m.TimeNano, Type: string(m.Type), Action: string(m.Action), Actor: m.Actor.ID}
}

// Container is what an inspect told of one running container.
type Container struct {
	ID           string
	Name         string
	Health       string
	StartedAt    time.Time
	RestartCount int
	Config       *drift.RuntimeConfig
}

// Valid returns the entries that past (the engine's buffered events
// since the memo's anchor, oldest first) proves still hold, by container
// ID; false when the anchor is not among them, which voids the memo.
func (m *Memo) Valid(past []events.Message) (map[string]Container, bool) {
	// The anchor and what came before it were in the buffer when the
	// memo's observation began: the memo already shows them.
	touched := map[string]bool{}
	anchored := false
	for _, ev := range past {
		if !anchored {
			anchored = EventOf(ev) == m.Anchor
			continue
		}
		for _, id := range eventContainers(ev) {
			touched[id] = true
		}
	}
	if !anchored {
		return nil, false
	}
	valid := map[string]Container{}
	for _, c := range m.Containers {
		if !touched[c.ID] {
			valid[c.ID] = c
		}
	}
	return valid, true
}

// eventContainers are the containers whose inspect an event may change:
// its actor for a container event (but an exec, as healthchecks run them,
// changes nothing an inspect shows that is memoized), the container
// attribute of network and volume events.
func eventContainers(ev events.Message) []string {
	var ids []string
	if ev.Type == events.ContainerEventType && !strings.HasPrefix(string(ev.Action), "exec_") {
		ids = append(ids, ev.Actor.ID)
	}
	if id := ev.Actor.Attributes["container"]; id != "" {
		ids = append(ids, id)
	}
	return ids
}
