package deploy

import (
	"context"
	"errors"
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// flakyEvents breaks its first stream, then delivers one event.
type flakyEvents struct {
	dockerAPI
	connects int
}

func (f *flakyEvents) Events(ctx context.Context, o client.EventsListOptions) client.EventsResult {
	f.connects++
	msgs := make(chan events.Message, 1)
	errs := make(chan error, 1)
	if f.connects == 1 {
		errs <- errors.New("unexpected EOF")
	} else {
		msgs <- events.Message{Type: events.ContainerEventType, Action: "die", Actor: events.Actor{
			ID: "c1", Attributes: map[string]string{drift.LabelApp: "shop", "name": "shop-web-1"},
		}}
	}
	return client.EventsResult{Messages: msgs, Err: errs}
}

func TestWatchReconnectsAfterTheStreamBreaks(t *testing.T) {
	fake := &flakyEvents{}
	e := newEngine(fake, Options{})
	defer e.prober.stop()
	e.watchBackoff = 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []string
	err := e.Watch(ctx, func(app, name, action string) {
		got = append(got, app+" "+name+" "+action)
		cancel()
	})
	if err != nil {
		t.Errorf("Watch returned %v when its context ended", err)
	}
	if fake.connects != 2 || len(got) != 1 || got[0] != "shop shop-web-1 die" {
		t.Errorf("connects %d, events %v; want a reconnect and the die event", fake.connects, got)
	}
}
