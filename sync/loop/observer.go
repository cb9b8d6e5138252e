package loop

import (
	"fmt"
	"maps"
	"slices"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/status"
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
	Prev, Next status.AppStatus
	// Entries are the history entries just stored, with their IDs.
	Entries []status.HistoryEntry
	// Applying is set when a rollout of this revision starts; the
	// pass's own report follows when it ends.
	Applying *gitsource.Revision
}

// RecordNotification adds a history entry about a delivery problem of
// app's notifications or commit statuses, and while it lasts (result
// "failed" until "recovered") a "notification" condition in the app's
// status, so it shows where people look. It does not call the Observer:
// a report about a failed report would feed itself.
func (a *Agent) RecordNotification(app, summary, result string) error {
	st, ok := a.app(app)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownApp, app)
	}
	now := a.now()
	a.mu.Lock()
	// Copy on write: a pass may be reading the old map outside the lock.
	conds := maps.Clone(st.mem.conditions)
	if conds == nil {
		conds = map[string]status.Condition{}
	}
	errs := slices.DeleteFunc(slices.Clone(st.status.Errors), func(c status.Condition) bool { return c.Kind == "notification" })
	if result == "failed" {
		c := status.Condition{Kind: "notification", Message: "notifications are not delivered: " + summary, Since: now}
		if old, had := conds["notification"]; had {
			c.Since = old.Since
		}
		conds["notification"] = c
		errs = append(errs, c)
	} else {
		delete(conds, "notification")
	}
	// Status exception: a delivery problem is reported outside any pass;
	// nextStatus keeps the condition from mem.conditions until "recovered".
	st.mem.conditions, st.status.Errors = conds, errs
	a.mu.Unlock()
	a.notify(app, "status")
	_, err := a.store.Append(status.HistoryEntry{App: app, Kind: status.KindNotification, Summary: summary, Result: result, Time: now})
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
