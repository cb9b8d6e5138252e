package workqueue

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestQueueDedupesWaitingKeysAndKeepsTriggers(t *testing.T) {
	q := New(time.Millisecond, time.Second)
	q.Add("shop", "poll")
	q.Add("shop", "webhook")
	q.Add("shop", "poll")
	q.Add("blog", "startup")
	if got := q.Len(); got != 2 {
		t.Fatalf("Len = %d, want 2 (one per app)", got)
	}
	key, triggers, _ := q.Get()
	if key != "shop" || !slices.Equal(triggers, []string{"poll", "webhook"}) {
		t.Fatalf("Get = %s %v, want shop [poll webhook]", key, triggers)
	}
	key, triggers, _ = q.Get()
	if key != "blog" || !slices.Equal(triggers, []string{"startup"}) {
		t.Fatalf("Get = %s %v, want blog [startup]", key, triggers)
	}
}

func TestQueueRerunsKeyAddedWhileProcessing(t *testing.T) {
	q := New(time.Millisecond, time.Second)
	q.Add("shop", "poll")
	key, _, _ := q.Get()
	q.Add(key, "docker-event")
	if got := q.Len(); got != 0 {
		t.Fatalf("Len while processing = %d, want 0: a key must not be handed to a second worker", got)
	}
	q.Done(key)
	if got := q.Len(); got != 1 {
		t.Fatalf("Len after Done = %d, want 1: the add during processing must run once more", got)
	}
	key, triggers, _ := q.Get()
	if key != "shop" || !slices.Equal(triggers, []string{"docker-event"}) {
		t.Fatalf("Get = %s %v, want shop [docker-event]", key, triggers)
	}
	q.Done(key)
	if got := q.Len(); got != 0 {
		t.Fatalf("Len = %d after the re-run, want 0", got)
	}
}

// TestQueueNeverProcessesOneKeyConcurrently hammers the queue from many
// goroutines; run with -race.
func TestQueueNeverProcessesOneKeyConcurrently(t *testing.T) {
	q := New(time.Millisecond, time.Second)
	keys := []string{"a", "b", "c"}
	var inFlight [3]atomic.Int32
	var violations, processed atomic.Int32
	var workers sync.WaitGroup
	for range 4 {
		workers.Go(func() {
			for {
				key, _, shutdown := q.Get()
				if shutdown {
					return
				}
				i := slices.Index(keys, key)
				if inFlight[i].Add(1) > 1 {
					violations.Add(1)
				}
				time.Sleep(50 * time.Microsecond)
				inFlight[i].Add(-1)
				processed.Add(1)
				q.Done(key)
			}
		})
	}
	var adders sync.WaitGroup
	for g := range 8 {
		adders.Go(func() {
			for i := range 200 {
				q.Add(keys[(g+i)%3], fmt.Sprint("t", i%2))
			}
		})
	}
	adders.Wait()
	// Every key added must be processed after its last Add: wait until the
	// queue drains.
	for q.Len() > 0 || q.busy() {
		time.Sleep(time.Millisecond)
	}
	q.ShutDown()
	workers.Wait()
	if v := violations.Load(); v > 0 {
		t.Fatalf("a key was processed by two workers at once %d times", v)
	}
	if processed.Load() < 3 {
		t.Fatalf("processed %d passes, want at least one per key", processed.Load())
	}
}

func (q *Queue) busy() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.processing) > 0 || len(q.dirty) > 0
}

func TestQueueBackoffDoublesAndCaps(t *testing.T) {
	base, maxDelay := time.Second, 5*time.Minute
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {9, 256 * time.Second}, {10, 5 * time.Minute}, {40, 5 * time.Minute}} {
		if got := backoffDelay(tc.failures, base, maxDelay, 0); got != tc.want {
			t.Errorf("backoffDelay(%d) = %s, want %s", tc.failures, got, tc.want)
		}
		jittered := backoffDelay(tc.failures, base, maxDelay, 0.999)
		if jittered < tc.want || jittered > tc.want+tc.want/10 {
			t.Errorf("backoffDelay(%d) with jitter = %s, want within 10%% above %s", tc.failures, jittered, tc.want)
		}
	}
}

func TestQueueFailuresBackOffAndSuccessForgets(t *testing.T) {
	q := New(time.Millisecond, 4*time.Millisecond)
	d1 := q.AddRateLimited("shop", "retry")
	key, _, _ := q.Get() // arrives after the delay
	q.Done(key)
	d2 := q.AddRateLimited("shop", "retry")
	key, triggers, _ := q.Get()
	q.Done(key)
	if key != "shop" || !slices.Equal(triggers, []string{"retry"}) {
		t.Fatalf("Get = %s %v, want shop [retry]", key, triggers)
	}
	if d2 < 2*time.Millisecond || d1 >= 2*time.Millisecond {
		t.Fatalf("delays %s then %s: want the second failure to wait twice as long", d1, d2)
	}
	if q.Failures("shop") != 2 {
		t.Fatalf("Failures = %d, want 2", q.Failures("shop"))
	}
	q.Forget("shop")
	if q.Failures("shop") != 0 {
		t.Fatalf("Failures after Forget = %d, want 0", q.Failures("shop"))
	}
	if d := q.AddRateLimited("shop", "retry"); d >= 2*time.Millisecond {
		t.Fatalf("delay after Forget = %s, want the base delay again", d)
	}
}

func TestQueueShutDownReleasesWorkers(t *testing.T) {
	q := New(time.Millisecond, time.Second)
	done := make(chan bool)
	go func() {
		_, _, shutdown := q.Get()
		done <- shutdown
	}()
	q.ShutDown()
	if !<-done {
		t.Fatal("Get after ShutDown did not report shutdown")
	}
	q.Add("shop", "poll")
	if q.Len() != 0 {
		t.Fatal("Add after ShutDown queued work")
	}
}

// TestUrgentKeysGoFirst: with polls and resyncs as background, a webhook
// or a Docker event is handed out before keys that only wait for a poll,
// also when its key was already waiting for a poll.
func TestUrgentKeysGoFirst(t *testing.T) {
	q := New(time.Millisecond, time.Second)
	q.SetBackground("poll", "resync")
	for _, k := range []string{"a", "b", "c", "d"} {
		q.Add(k, "poll")
	}
	q.Add("e", "webhook")
	q.Add("c", "docker-event")
	var got []string
	for range 5 {
		k, _, _ := q.Get()
		got = append(got, k)
		q.Done(k)
	}
	if want := []string{"e", "c", "a", "b", "d"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}
