package deploy

import (
	"context"
	"time"
)

// An engine that accepts connections and never answers must not hold the
// passes of its apps, nor the loop's workers they run on: every ping is
// bounded (Options.PingTimeout), and once a ping has failed the engine is
// known down. Passes then get the ping's error at once, without a request,
// while one background ping per Options.LivenessInterval looks for the
// engine to come back. While the engine answers, one ping per interval
// vouches for it, shared by every pass.

// pingRecent returns nil when a ping succeeded within the liveness
// interval, the last ping's error at once while the engine is known down,
// and otherwise pings. Concurrent callers share one ping; a caller waiting
// for it stops waiting when its ctx ends.
func (e *Engine) pingRecent(ctx context.Context) error {
	for {
		e.livenessMu.Lock()
		switch {
		case e.down != nil:
			err := e.down
			e.livenessMu.Unlock()
			return err
		case !e.lastPing.IsZero() && time.Since(e.lastPing) < e.opts.LivenessInterval:
			e.livenessMu.Unlock()
			return nil
		case e.pinging != nil:
			done := e.pinging
			e.livenessMu.Unlock()
			select {
			case <-done:
				continue // the ping's result is recorded: look again
			case <-ctx.Done():
				return engineErr(ctx.Err())
			}
		}
		done := make(chan struct{})
		e.pinging = done
		e.livenessMu.Unlock()
		err := e.Ping(ctx) // records its answer
		e.livenessMu.Lock()
		e.pinging = nil
		close(done)
		e.livenessMu.Unlock()
		return err
	}
}

// notePing records a ping's result: the engine answered, or it is known
// down and a background ping starts looking for it. A ping cut short by
// its caller's ctx says nothing about the engine.
func (e *Engine) notePing(ctx context.Context, err error) {
	e.livenessMu.Lock()
	defer e.livenessMu.Unlock()
	switch {
	case err == nil:
		if e.down != nil {
			e.log.Info("Docker engine answers again")
		}
		e.lastPing, e.down = time.Now(), nil
	case ctx.Err() != nil:
	default:
		if e.down == nil {
			e.log.Warn("Docker engine does not answer; its apps wait, pinged again every liveness interval", "err", err, "interval", e.opts.LivenessInterval)
		}
		e.lastPing, e.down = time.Time{}, err
		if !e.repinging && e.stop.Err() == nil {
			e.repinging = true
			e.background.Add(1)
			go e.reping()
		}
	}
}

// reping pings a known-down engine once per liveness interval until it
// answers or the engine is closed; no pass waits for it.
func (e *Engine) reping() {
	defer e.background.Done()
	for e.repingDue() {
		if e.Ping(e.stop) != nil {
			continue
		}
		e.livenessMu.Lock()
		if e.down == nil { // not down again since: a failure would need us
			e.repinging = false
			e.livenessMu.Unlock()
			return
		}
		e.livenessMu.Unlock()
	}
}

// repingDue waits one liveness interval and reports whether the engine is
// still known down; false (and the re-ping marked ended) when it answered,
// to the event stream's ping or this one, or when the engine is closed.
func (e *Engine) repingDue() bool {
	t := time.NewTimer(e.opts.LivenessInterval)
	defer t.Stop()
	select {
	case <-e.stop.Done():
	case <-t.C:
	}
	e.livenessMu.Lock()
	defer e.livenessMu.Unlock()
	if e.down == nil || e.stop.Err() != nil {
		e.repinging = false
		return false
	}
	return true
}
