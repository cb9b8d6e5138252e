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
	"github.com/driftless-dev/driftless/deploy/internal/inspectmemo"
	"github.com/driftless-dev/driftless/deploy/readiness"
	"github.com/driftless-dev/driftless/drift"
)

// memoState is an Engine's use of an inspect memo (what it is and why it
// holds: deploy/internal/inspectmemo), for one app.
type memoState struct {
	app   string
	build string
	prev  *inspectmemo.Memo
	// checked: the events since prev's anchor were read; valid holds the
	// entries they prove, by container ID; anchor is the newest event then.
	checked   bool
	valid     map[string]inspectmemo.Container
	anchor    inspectmemo.Event
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
	var prev inspectmemo.Memo
	if len(data) > 0 && json.Unmarshal(data, &prev) == nil &&
		prev.Format == inspectmemo.Format && prev.Build == build && prev.Host == e.api.DaemonHost() && prev.App == app {
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
	out := inspectmemo.Memo{Format: inspectmemo.Format, Build: m.build, Host: e.api.DaemonHost(), App: app, Anchor: m.anchor}
	for _, info := range e.prober.Memoizable(app, m.checkedAt) {
		out.Containers = append(out.Containers, inspectmemo.Container{ID: info.ID, Name: info.Name, Health: info.Health,
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
		m.anchor = inspectmemo.EventOf(past[len(past)-1])
	}
	if m.prev == nil {
		return
	}
	valid, ok := m.prev.Valid(past)
	if !ok {
		e.log.Debug("inspect memo unused: its anchor event is no longer in the engine's buffer")
		return
	}
	m.valid = valid
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
