package deploy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/client"
)

// stalledEngine accepts every request and answers none: a ping waits until
// its ctx ends, unless answering is set. Any other call panics (nil
// embedded interface), so a pass that got past the ping would show.
type stalledEngine struct {
	dockerAPI
	answering atomic.Bool
	pings     atomic.Int32
	entered   chan struct{} // a ping started; nil: not reported
}

func (s *stalledEngine) Ping(ctx context.Context, _ client.PingOptions) (client.PingResult, error) {
	s.pings.Add(1)
	if s.entered != nil {
		s.entered <- struct{}{}
	}
	if s.answering.Load() {
		return client.PingResult{}, nil
	}
	<-ctx.Done()
	return client.PingResult{}, ctx.Err()
}

func (s *stalledEngine) DaemonHost() string { return "tcp://127.0.0.1:9" }
func (s *stalledEngine) Close() error       { return nil }

func TestStalledEngineIsAnsweredAtOnceOnceKnownDown(t *testing.T) {
	fake := &stalledEngine{}
	// No background ping within the test: only callers could ping.
	e := newEngine(fake, Options{PingTimeout: 50 * time.Millisecond, LivenessInterval: time.Hour})
	defer e.Close()
	ctx := context.Background()

	_, err := e.Observe(ctx, "shop", true)
	if !errors.Is(err, drift.ErrEngineUnreachable) {
		t.Fatalf("observing on an engine that never answers: %v, want the engine unreachable", err)
	}
	t.Logf("first pass: %v", err)
	for range 3 {
		if _, err2 := e.Observe(ctx, "shop", true); !errors.Is(err2, drift.ErrEngineUnreachable) {
			t.Fatalf("next pass: %v, want the engine unreachable", err2)
		}
	}
	if _, err := e.RemoveUnusedFiles(ctx, time.Minute); !errors.Is(err, drift.ErrEngineUnreachable) {
		t.Errorf("collecting files on it: %v, want the engine unreachable", err)
	}
	if n := fake.pings.Load(); n != 1 {
		t.Errorf("%d pings; want 1: once known down, passes get its error without waiting on the engine", n)
	}
}

func TestPassesShareTheFirstPingOfAStalledEngine(t *testing.T) {
	fake := &stalledEngine{entered: make(chan struct{}, 10)}
	e := newEngine(fake, Options{PingTimeout: 200 * time.Millisecond, LivenessInterval: time.Hour})
	defer e.Close()
	first := make(chan error, 1)
	go func() { first <- e.pingRecent(context.Background()) }()
	<-fake.entered // the first ping is under way
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- e.pingRecent(context.Background()) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, drift.ErrEngineUnreachable) {
			t.Errorf("a pass during the first ping: %v, want the engine unreachable", err)
		}
	}
	if err := <-first; !errors.Is(err, drift.ErrEngineUnreachable) {
		t.Errorf("first ping: %v", err)
	}
	if n := fake.pings.Load(); n != 1 {
		t.Errorf("%d pings for 5 concurrent passes; want 1, shared", n)
	}

	// A pass waiting for a ping stops waiting when its own ctx ends.
	e.live.ClearDown()
	go func() { _ = e.pingRecent(context.Background()) }()
	<-fake.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.pingRecent(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled pass waiting for the ping: %v", err)
	}
}

func TestRecoveryOfAStalledEngineIsNoticedInTheBackground(t *testing.T) {
	fake := &stalledEngine{}
	e := newEngine(fake, Options{PingTimeout: 20 * time.Millisecond, LivenessInterval: 20 * time.Millisecond})
	if err := e.pingRecent(context.Background()); !errors.Is(err, drift.ErrEngineUnreachable) {
		t.Fatalf("first ping: %v", err)
	}
	fake.answering.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for {
		pings := fake.pings.Load()
		err := e.pingRecent(context.Background())
		if err == nil {
			break
		}
		if fake.pings.Load() != pings {
			// Only the background ping may run while the engine is down.
			bg := e.live.Repinging()
			if !bg {
				t.Fatal("a pass pinged a known-down engine itself")
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("engine answering again is still reported down: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	bg := e.live.Repinging()
	if bg {
		t.Error("the background ping still runs after the engine answered")
	}
	_ = e.Close()
}

func TestCloseEndsTheBackgroundPing(t *testing.T) {
	fake := &stalledEngine{entered: make(chan struct{}, 10)}
	// The background ping starts at once and then waits on the engine
	// for an hour, until Close.
	e := newEngine(fake, Options{PingTimeout: time.Hour, LivenessInterval: time.Millisecond})
	e.live.Note(context.Background(), errors.New("no answer"))
	<-fake.entered // the background ping waits on the engine
	closed := make(chan struct{})
	go func() { _ = e.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end the background ping")
	}
	if e.live.Repinging() {
		t.Error("the background ping is still marked running after Close")
	}
}

// Watch on an engine that never answers reports each failed connection
// after the bounded ping, and never opens the event stream (whose request
// would wait with no deadline; stalledEngine has no Events).
func TestWatchOnAStalledEngineReportsItDisconnected(t *testing.T) {
	fake := &stalledEngine{}
	e := newEngine(fake, Options{PingTimeout: 10 * time.Millisecond, LivenessInterval: time.Hour})
	defer e.Close()
	e.watchBackoff = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []string
	err := e.Watch(ctx, func(ev drift.EngineEvent) {
		got = append(got, ev.Action)
		if len(got) == 2 {
			cancel()
		}
	})
	if err != nil || len(got) != 2 || got[0] != drift.EventDisconnected || got[1] != drift.EventDisconnected {
		t.Errorf("Watch: %v, events %v; want two disconnections", err, got)
	}
	if err := e.pingRecent(context.Background()); !errors.Is(err, drift.ErrEngineUnreachable) {
		t.Errorf("a pass after the stream's ping failed: %v, want the engine unreachable at once", err)
	}
	if n := fake.pings.Load(); n != 2 {
		t.Errorf("%d pings; want 2, the stream's, none from the pass", n)
	}
}
