package sync

import (
	"github.com/driftless-dev/driftless/gitsource"
)

// Observer is told what a pass (or a person's action) left behind, so that
// notifications and commit statuses can be derived outside the loop. It is
// called on the agent's goroutines and must return at once: anything that
// waits (a network call) belongs on the observer's own goroutines.
type Observer interface {
	Observe(Report)
}

// Report is what one step of the loop changed for one app.
type Report struct {
	App string
	// Prev and Next are the app's status before and after. For an action
	// outside a pass (pin, unpin) both are the current status.
	Prev, Next AppStatus
	// Entries are the history entries just stored, with their IDs.
	Entries []HistoryEntry
	// Applying is set when a rollout of this revision starts; the
	// pass's own report follows when it ends.
	Applying *gitsource.Revision
}

// KindNotification: a notification or commit status could not be
// delivered (result "failed"), or was delivered again (result
// "recovered").
const KindNotification HistoryKind = "notification"

// RecordNotification adds a history entry about a delivery problem of
// app's notifications or commit statuses, so it shows where people look.
// It does not call the Observer: a report about a failed report would
// feed itself.
func (a *Agent) RecordNotification(app, summary, result string) error {
	if _, ok := a.apps[app]; !ok {
		return ErrUnknownApp
	}
	_, err := a.store.Append(HistoryEntry{App: app, Kind: KindNotification, Summary: summary, Result: result, Time: a.now()})
	if err == nil {
		a.notify(app, "history")
	}
	return err
}

// observe hands a report to the observer, if there is one.
func (a *Agent) observe(r Report) {
	if a.opts.Observer != nil {
		a.opts.Observer.Observe(r)
	}
}
