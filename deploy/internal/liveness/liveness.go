// Package liveness tracks whether one Docker engine answers, for every
// pass that would talk to it. An engine that accepts connections and never
// answers must not hold the passes of its apps, nor the loop's workers
// they run on: every ping is bounded by its caller, and once a ping has
// failed the engine is known down. Passes then get the ping's error at
// once, without a request, while one background ping per interval looks
// for the engine to come back. While the engine answers, one ping per
// interval vouches for it, shared by every pass.
package liveness

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Tracker is one engine's liveness.
type Tracker struct {
	interval time.Duration
	log      *slog.Logger
	ping     func(context.Context) error // one bounded ping, recording nothing
	// ctxErr wraps a caller's cancelled context in the error its pass
	// reports.
	ctxErr func(error) error

	// mu guards what the pings found: last, when the engine last
	// answered; down, the last ping's error while the engine is known
	// down; pinging, closed when the ping under way ends; repinging,
	// whether the background re-ping runs.
	mu        sync.Mutex
	last      time.Time
	down      error
	pinging   chan struct{}
	repinging bool
	// stop ends the background re-ping on Close; background waits for it.
	stop       context.Context
	stopNow    context.CancelFunc
	background sync.WaitGroup
}

// New tracks an engine pinged by ping, once per interval at most.
func New(interval time.Duration, log *slog.Logger, ping func(context.Context) error, ctxErr func(error) error) *Tracker {
	t := &Tracker{interval: interval, log: log, ping: ping, ctxErr: ctxErr}
	t.stop, t.stopNow = context.WithCancel(context.Background())
	return t
}

// Close ends the background re-ping and waits for it.
func (t *Tracker) Close() {
	t.stopNow()
	t.background.Wait()
}

// Ping pings the engine and records the answer.
func (t *Tracker) Ping(ctx context.Context) error {
	err := t.ping(ctx)
	t.Note(ctx, err)
	return err
}

// Recent returns nil when a ping succeeded within the interval, the last
// ping's error at once while the engine is known down, and otherwise
// pings. Concurrent callers share one ping; a caller waiting for it stops
// waiting when its ctx ends.
func (t *Tracker) Recent(ctx context.Context) error {
	for {
		t.mu.Lock()
		switch {
		case t.down != nil:
			err := t.down
			t.mu.Unlock()
			return err
		case !t.last.IsZero() && time.Since(t.last) < t.interval:
			t.mu.Unlock()
			return nil
		case t.pinging != nil:
			done := t.pinging
			t.mu.Unlock()
			select {
			case <-done:
				continue // the ping's result is recorded: look again
			case <-ctx.Done():
				return t.ctxErr(ctx.Err())
			}
		}
		done := make(chan struct{})
		t.pinging = done
		t.mu.Unlock()
		err := t.Ping(ctx) // records its answer
		t.mu.Lock()
		t.pinging = nil
		close(done)
		t.mu.Unlock()
		return err
	}
}

// Note records a ping's result: the engine answered, or it is known down
// and a background ping starts looking for it. A ping cut short by its
// caller's ctx says nothing about the engine.
func (t *Tracker) Note(ctx context.Context, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err == nil:
		if t.down != nil {
			t.log.Info("Docker engine answers again")
		}
		t.last, t.down = time.Now(), nil
	case ctx.Err() != nil:
	default:
		if t.down == nil {
			t.log.Warn("Docker engine does not answer; its apps wait, pinged again every liveness interval", "err", err, "interval", t.interval)
		}
		t.last, t.down = time.Time{}, err
		if !t.repinging && t.stop.Err() == nil {
			t.repinging = true
			t.background.Add(1)
			go t.reping()
		}
	}
}

// Down is the last ping's error while the engine is known down, else nil.
func (t *Tracker) Down() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.down
}

// Repinging reports whether the background re-ping runs.
func (t *Tracker) Repinging() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.repinging
}

// Expire makes the next Recent ping again, as once the interval has run;
// ClearDown forgets that the engine is down (tests).
func (t *Tracker) Expire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = t.last.Add(-time.Hour - t.interval)
}

// ClearDown forgets that the engine is known down.
func (t *Tracker) ClearDown() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.down = nil
}

// reping pings a known-down engine once per interval until it answers or
// the tracker is closed; no pass waits for it.
func (t *Tracker) reping() {
	defer t.background.Done()
	for t.repingDue() {
		if t.Ping(t.stop) != nil {
			continue
		}
		t.mu.Lock()
		if t.down == nil { // not down again since: a failure would need us
			t.repinging = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
}

// repingDue waits one interval and reports whether the engine is still
// known down; false (and the re-ping marked ended) when it answered, to
// the event stream's ping or this one, or when the tracker is closed.
func (t *Tracker) repingDue() bool {
	timer := time.NewTimer(t.interval)
	defer timer.Stop()
	select {
	case <-t.stop.Done():
	case <-timer.C:
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.down == nil || t.stop.Err() != nil {
		t.repinging = false
		return false
	}
	return true
}
