// Package workqueue is the agent's work queue: deduplicating, keyed by
// app, one worker per key at a time, with per-key exponential backoff.
package workqueue

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// Queue is a deduplicating work queue keyed by app name, shaped like
// client-go's workqueue: adding a key that is already waiting does nothing
// (its trigger is remembered for history), a key is never handed to two
// workers at once, and a key added while it is being processed is handed out
// once more after Done. Failures back off exponentially per key.
type Queue struct {
	mu   sync.Mutex
	cond *sync.Cond

	order []string // keys ready to be handed out, FIFO
	// urgent are ready keys with a trigger that is not background: they
	// are handed out before order, so a webhook or a repair never waits
	// behind a burst of polls and resyncs of other apps.
	urgent     []string
	background map[string]bool
	dirty      map[string][]string // keys that must run (again), with their triggers
	processing map[string]bool
	failures   map[string]int
	shutdown   bool

	baseDelay, maxDelay time.Duration
}

func New(baseDelay, maxDelay time.Duration) *Queue {
	q := &Queue{
		dirty:      map[string][]string{},
		processing: map[string]bool{},
		failures:   map[string]int{},
		baseDelay:  baseDelay,
		maxDelay:   maxDelay,
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Add marks key as needing a pass because of trigger.
func (q *Queue) Add(key, trigger string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	triggers, waiting := q.dirty[key]
	q.dirty[key] = appendUnique(triggers, trigger)
	if q.processing[key] {
		// Done re-queues it, so the pass that is running now cannot miss
		// what this trigger saw.
		return
	}
	if waiting {
		if !q.background[trigger] {
			if i := slices.Index(q.order, key); i >= 0 {
				q.order = slices.Delete(q.order, i, i+1)
				q.urgent = append(q.urgent, key)
			}
		}
		return
	}
	q.ready(key)
}

// ready queues key, ahead of the background-only keys unless every one
// of its triggers is background.
func (q *Queue) ready(key string) {
	if slices.ContainsFunc(q.dirty[key], func(t string) bool { return !q.background[t] }) {
		q.urgent = append(q.urgent, key)
	} else {
		q.order = append(q.order, key)
	}
	q.cond.Signal()
}

// SetBackground names the triggers (a schedule's polls, a periodic
// resync) whose passes wait behind every other: they find nothing new
// most of the time, and a burst of them must not delay a repair.
func (q *Queue) SetBackground(triggers ...string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.background = map[string]bool{}
	for _, t := range triggers {
		q.background[t] = true
	}
}

// AddAfter adds key once d has passed.
func (q *Queue) AddAfter(key, trigger string, d time.Duration) {
	if d <= 0 {
		q.Add(key, trigger)
		return
	}
	time.AfterFunc(d, func() { q.Add(key, trigger) })
}

// AddRateLimited adds key after its backoff, which doubles with every
// failure since the last Forget. It returns the delay chosen.
func (q *Queue) AddRateLimited(key, trigger string) time.Duration {
	q.mu.Lock()
	q.failures[key]++
	d := backoffDelay(q.failures[key], q.baseDelay, q.maxDelay, rand.Float64())
	q.mu.Unlock()
	q.AddAfter(key, trigger, d)
	return d
}

// AddRateLimitedMax is AddRateLimited with the delay capped at max, for
// failures that should be retried soon whatever their count.
func (q *Queue) AddRateLimitedMax(key, trigger string, max time.Duration) time.Duration {
	q.mu.Lock()
	q.failures[key]++
	d := backoffDelay(q.failures[key], q.baseDelay, min(max, q.maxDelay), rand.Float64())
	q.mu.Unlock()
	q.AddAfter(key, trigger, d)
	return d
}

// Forget resets key's failure count after a success (or a failure that
// retrying cannot fix).
func (q *Queue) Forget(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.failures, key)
}

// Failures is how often key failed since it was last forgotten.
func (q *Queue) Failures(key string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failures[key]
}

// Get blocks until a key is ready or the queue shuts down. The caller must
// call Done(key) when the pass ends.
func (q *Queue) Get() (key string, triggers []string, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.order)+len(q.urgent) == 0 && !q.shutdown {
		q.cond.Wait()
	}
	switch {
	case len(q.urgent) > 0:
		key, q.urgent = q.urgent[0], q.urgent[1:]
	case len(q.order) > 0:
		key, q.order = q.order[0], q.order[1:]
	default:
		return "", nil, true
	}
	triggers = q.dirty[key]
	delete(q.dirty, key)
	q.processing[key] = true
	return key, triggers, false
}

// Done ends the processing of key; if it was added meanwhile it becomes
// ready again.
func (q *Queue) Done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	if _, again := q.dirty[key]; again && !q.shutdown {
		q.ready(key)
	}
}

// Len is the number of keys waiting to be handed out.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order) + len(q.urgent)
}

// ShutDown makes Get return shutdown=true once nothing is left to hand out;
// keys still waiting are dropped (every app is enqueued at startup anyway).
func (q *Queue) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutdown = true
	q.order, q.urgent = nil, nil
	q.cond.Broadcast()
}

// backoffDelay is base doubled per failure beyond the first, capped at max,
// plus up to 10% jitter so apps failing together do not retry in lockstep.
// rnd is in [0,1).
func backoffDelay(failures int, base, max time.Duration, rnd float64) time.Duration {
	d := base
	for i := 1; i < failures && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d + time.Duration(float64(d)*0.1*rnd)
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// JoinTriggers names the triggers of one pass for history: "poll", or
// "commit+docker-event" when several arrived while the app waited.
func JoinTriggers(triggers []string) string { return strings.Join(triggers, "+") }
