package deploy

import (
	"context"
	"errors"
	"strings"
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

func (f *flakyEvents) Ping(context.Context, client.PingOptions) (client.PingResult, error) {
	return client.PingResult{}, nil
}

func (f *flakyEvents) DaemonHost() string { return "unix:///fake.sock" }

// An empty engine: each connection builds the view from these.
func (f *flakyEvents) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	return client.ContainerListResult{}, nil
}

func (f *flakyEvents) NetworkList(context.Context, client.NetworkListOptions) (client.NetworkListResult, error) {
	return client.NetworkListResult{}, nil
}

func (f *flakyEvents) VolumeList(context.Context, client.VolumeListOptions) (client.VolumeListResult, error) {
	return client.VolumeListResult{}, nil
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
	defer e.prober.Stop()
	e.watchBackoff = 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []string
	err := e.Watch(ctx, func(ev drift.EngineEvent) {
		got = append(got, strings.TrimSpace(ev.App+" "+ev.Container+" "+ev.Action))
		if ev.Action == "die" {
			cancel()
		}
	})
	if err != nil {
		t.Errorf("Watch returned %v when its context ended", err)
	}
	want := "connected,disconnected,connected,shop shop-web-1 die"
	if fake.connects != 2 || strings.Join(got, ",") != want {
		t.Errorf("connects %d, events %v; want %s: each connection and break reported, so the loop looks again", fake.connects, got, want)
	}
}
