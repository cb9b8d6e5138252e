package inspectmemo

import (
	"testing"

	"github.com/moby/moby/api/types/events"
)

func TestValidDropsWhatEventsAfterTheAnchorTouched(t *testing.T) {
	ev := func(nano int64, typ events.Type, action, actor string, attrs map[string]string) events.Message {
		return events.Message{TimeNano: nano, Type: typ, Action: events.Action(action), Actor: events.Actor{ID: actor, Attributes: attrs}}
	}
	anchor := ev(2, events.ContainerEventType, "start", "a", nil)
	m := &Memo{Anchor: EventOf(anchor), Containers: []Container{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}}}
	past := []events.Message{
		ev(1, events.ContainerEventType, "die", "d", nil), // before the anchor: the memo shows it
		anchor,
		ev(3, events.ContainerEventType, "exec_start: probe", "a", nil),                        // healthchecks change nothing memoized
		ev(4, events.NetworkEventType, "connect", "net1", map[string]string{"container": "b"}), // b's networks changed
		ev(5, events.ContainerEventType, "update", "c", nil),
	}
	valid, ok := m.Valid(past)
	if !ok {
		t.Fatal("the anchor is in the events, yet the memo is void")
	}
	for id, want := range map[string]bool{"a": true, "b": false, "c": false, "d": true} {
		if _, got := valid[id]; got != want {
			t.Errorf("entry %s valid = %v, want %v", id, got, want)
		}
	}
	if _, ok := m.Valid(past[2:]); ok {
		t.Error("without its anchor in the events the memo must be void")
	}
}
