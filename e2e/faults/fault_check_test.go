package faults

import (
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/api/types/events"
)

// TestFaultHistoryCheckCanFail: the check that a synced revision ran
// rebuilds what ran from engine events; it must say no when the revision's
// replicas never ran together, or ran only outside the window.
func TestFaultHistoryCheckCanFail(t *testing.T) {
	t.Parallel()
	r := &faultRig{t: t, states: map[string]svcState{
		"a": {Image: "img:1", Replicas: 2},
		"b": {Image: "img:2", Replicas: 2},
	}}
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	ev := func(s int, action, id, name, rev string) events.Message {
		return events.Message{Action: events.Action(action), TimeNano: at(s).UnixNano(),
			Actor: events.Actor{ID: id, Attributes: map[string]string{"name": name, drift.LabelRevision: rev}}}
	}
	l := &eventLog{evs: []events.Message{
		ev(1, "create", "1", "x-web-1", "a"), ev(1, "start", "1", "", ""),
		ev(2, "create", "2", "x-web-2", "a"), ev(2, "start", "2", "", ""), // a runs from 2s
		ev(5, "rename", "1", "x-web-1-old-1", ""),                         // parked: a is 1 replica
		ev(6, "create", "3", "x-web-1", "b"), ev(6, "start", "3", "", ""), // one of b
		ev(7, "die", "1", "", ""), ev(7, "destroy", "1", "", ""),
	}}
	for _, tc := range []struct {
		name     string
		rev      string
		from, to int
		want     bool
	}{
		{"a ran before the window and still runs at its start", "a", 3, 4, true},
		{"a ran inside the window", "a", 0, 3, true},
		{"a had stopped running as two replicas", "a", 5, 9, false},
		{"b never ran as two replicas", "b", 0, 9, false},
		{"a had not started yet", "a", 0, 1, false},
	} {
		if got := l.ran(r, r.states[tc.rev], at(tc.from), at(tc.to)); got != tc.want {
			t.Errorf("%s: ran(%s, %ds..%ds) = %v, want %v", tc.name, tc.rev, tc.from, tc.to, got, tc.want)
		}
	}
}
