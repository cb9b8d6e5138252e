package notify

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Delivery results, the result label of driftless_notifications_total.
const (
	ResultSent    = "sent"    // delivered (perhaps after retries)
	ResultRetried = "retried" // one attempt failed; another follows
	ResultFailed  = "failed"  // every attempt failed; the message is dropped
	ResultDropped = "dropped" // the destination's queue was full
)

// job is one message or commit status to deliver.
type job struct {
	app     string
	what    string // for logs and history: "synced abc1234"
	deliver func(ctx context.Context) error
}

// problemFunc is told when a destination gives up on a job (failed) and
// when it delivers again after that (recovered).
type problemFunc func(app, destination, summary, result string)

// worker delivers one destination's jobs in order on its own goroutine,
// retrying with backoff, so a slow or broken destination never holds the
// loop or another destination up.
type worker struct {
	name     string
	queue    chan job
	attempts int
	base     time.Duration
	max      time.Duration
	counter  *prometheus.CounterVec
	log      *slog.Logger
	problem  problemFunc
	failing  bool
}

const queueSize = 100

func newWorker(name string, r retry, counter *prometheus.CounterVec, log *slog.Logger, problem problemFunc) *worker {
	return &worker{name: name, queue: make(chan job, queueSize), attempts: r.Attempts, base: r.Base, max: r.Max,
		counter: counter, log: log, problem: problem}
}

// enqueue never blocks: a destination that cannot keep up loses messages
// (counted as dropped) rather than slowing the loop down.
func (w *worker) enqueue(j job) {
	select {
	case w.queue <- j:
	default:
		w.counter.WithLabelValues(w.name, ResultDropped).Inc()
		w.log.Warn("notification dropped: the destination's queue is full", "destination", w.name, "app", j.app, "what", j.what)
	}
}

func (w *worker) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-w.queue:
			w.deliver(ctx, j)
		}
	}
}

func (w *worker) deliver(ctx context.Context, j job) {
	delay := w.base
	var err error
	for attempt := 1; attempt <= w.attempts; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = j.deliver(actx)
		cancel()
		if err == nil {
			w.counter.WithLabelValues(w.name, ResultSent).Inc()
			if w.failing {
				w.failing = false
				w.problem(j.app, w.name, "delivers again", "recovered")
			}
			return
		}
		if attempt == w.attempts || ctx.Err() != nil {
			break
		}
		w.counter.WithLabelValues(w.name, ResultRetried).Inc()
		w.log.Warn("notification not delivered; retrying", "destination", w.name, "app", j.app, "what", j.what, "attempt", attempt, "retryIn", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, w.max)
	}
	w.counter.WithLabelValues(w.name, ResultFailed).Inc()
	w.log.Error("notification not delivered; giving up on it", "destination", w.name, "app", j.app, "what", j.what, "attempts", w.attempts, "err", err)
	w.failing = true
	w.problem(j.app, w.name, "could not deliver "+j.what+": "+err.Error(), "failed")
}

// retry bounds the attempts of one delivery.
type retry struct {
	Attempts  int
	Base, Max time.Duration
}
