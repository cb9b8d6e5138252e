package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/internal/atomicfile"
	"github.com/driftless-dev/driftless/deploy/readiness"
	"github.com/driftless-dev/driftless/drift"
)

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

// memoFormat changes whenever what a memo holds changes meaning.
const memoFormat = 1

// inspectMemo is the encoded memo.
type inspectMemo struct {
	Format     int
	Build      string
	Host       string
	App        string
	Anchor     memoEvent
	Containers []memoContainer
}

// memoEvent identifies one engine event.
type memoEvent struct {
	TimeNano int64
	Type     string
	Action   string
	Actor    string
}

func memoEventOf(m events.Message) memoEvent {
	return memoEvent{TimeNano: m.TimeNano, Type: string(m.Type), Action: string(m.Action), Actor: m.Actor.ID}
}

// memoContainer is what an inspect told of one running container.
type memoContainer struct {
	ID           string
	Name         string
	Health       string
	StartedAt    time.Time
	RestartCount int
	Config       *drift.RuntimeConfig
}

// memoState is an Engine's use of a memo, for one app.
type memoState struct {
	app   string
	build string
	prev  *inspectMemo
	// checked: the events since prev's anchor were read; valid holds the
	// entries they prove, by container ID; anchor is the newest event then.
	checked   bool
	valid     map[string]memoContainer
	anchor    memoEvent
	checkedAt time.Time
}

// UseInspectMemo turns on the inspect memo for the one-shot CLI's
// observations of app: data is what InspectMemo gave an earlier process
// (nil, stale or garbled data is no memo), build identifies this build of
// driftless, whose memos alone it reads. Off for an engine that is not on
// a local socket.
func (e *Engine) UseInspectMemo(app, build string, data []byte) {
	if !strings.HasPrefix(e.api.DaemonHost(), "unix://") || build == "" {
		return
	}
	m := &memoState{app: app, build: build}
	var prev inspectMemo
	if len(data) > 0 && json.Unmarshal(data, &prev) == nil &&
		prev.Format == memoFormat && prev.Build == build && prev.Host == e.api.DaemonHost() && prev.App == app {
		m.prev = &prev
	}
	e.memo = m
}

// InspectMemo is the memo for the next process: what this one knows of
// app's running containers, valid from the anchor read at the start of its
// first observation. Nil when there is nothing to carry.
func (e *Engine) InspectMemo(app string) []byte {
	m := e.memo
	if m == nil || m.app != app || !m.checked || m.anchor.TimeNano == 0 {
		return nil
	}
	out := inspectMemo{Format: memoFormat, Build: m.build, Host: e.api.DaemonHost(), App: app, Anchor: m.anchor}
	for _, info := range e.prober.Memoizable(app, m.checkedAt) {
		out.Containers = append(out.Containers, memoContainer{ID: info.ID, Name: info.Name, Health: info.Health,
			StartedAt: info.StartedAt, RestartCount: info.RestartCount, Config: info.Config})
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return data
}

// SaveInspectMemo writes InspectMemo(app) to path for the next process, or
// removes the file when there is nothing to carry. A memo that cannot be
// written costs the next run its inspects, nothing else.
func (e *Engine) SaveInspectMemo(app, path string) {
	data := e.InspectMemo(app)
	if data == nil {
		os.Remove(path)
		return
	}
	if err := atomicfile.Write(path, data); err != nil {
		e.log.Debug("inspect memo not written", "path", path, "err", err)
	}
}

// checkMemo reads the events since the memo's anchor (the whole buffer
// without one) and keeps the entries they prove. Any failure leaves the
// memo unused: the observation inspects as it would without one.
func (e *Engine) checkMemo(ctx context.Context) {
	m := e.memo
	if m == nil || m.checked {
		return
	}
	m.checked = true
	m.checkedAt = time.Now()
	since := "1" // Docker ignores since=0: the whole buffer is asked for this way
	if m.prev != nil {
		since = fmt.Sprintf("%d.%09d", m.prev.Anchor.TimeNano/1e9, m.prev.Anchor.TimeNano%1e9)
	}
	until := fmt.Sprintf("%d.%09d", m.checkedAt.UnixNano()/1e9, m.checkedAt.UnixNano()%1e9)
	past, err := e.pastEvents(ctx, since, until)
	if err != nil {
		e.log.Debug("inspect memo unused: reading engine events failed", "err", err)
		return
	}
	if len(past) > 0 {
		m.anchor = memoEventOf(past[len(past)-1])
	}
	if m.prev == nil {
		return
	}
	// The anchor and what came before it were in the buffer when the
	// memo's observation began: the memo already shows them.
	touched := map[string]bool{}
	anchored := false
	for _, ev := range past {
		if !anchored {
			anchored = memoEventOf(ev) == m.prev.Anchor
			continue
		}
		for _, id := range eventContainers(ev) {
			touched[id] = true
		}
	}
	if !anchored {
		e.log.Debug("inspect memo unused: its anchor event is no longer in the engine's buffer")
		return
	}
	m.valid = map[string]memoContainer{}
	for _, c := range m.prev.Containers {
		if !touched[c.ID] {
			m.valid[c.ID] = c
		}
	}
}

// pastEvents is the engine's buffered events from since to until.
func (e *Engine) pastEvents(ctx context.Context, since, until string) ([]events.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream := e.api.Events(ctx, client.EventsListOptions{Since: since, Until: until})
	var out []events.Message
	for {
		select {
		case ev := <-stream.Messages:
			out = append(out, ev)
		case err := <-stream.Err:
			if err == nil || errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
	}
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

// seedFromMemo gives the prober what the memo proves of a listed
// container it does not know yet, so that it is not inspected again.
func (e *Engine) seedFromMemo(c *drift.Container, ip string) {
	m := e.memo
	if m == nil || m.valid == nil || c.App != m.app {
		return
	}
	mc, ok := m.valid[c.ID]
	if !ok || c.State != drift.StateRunning || c.Health != mc.Health || c.Name != mc.Name {
		return
	}
	info := readiness.FromContainer(c, ip)
	info.StartedAt, info.RestartCount, info.Config, info.Inspected = mc.StartedAt, mc.RestartCount, mc.Config, true
	e.prober.Update(info)
}
