package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/loop"
	"github.com/driftless-dev/driftless/sync/status"
)

// hook is a loopback webhook receiver standing in for a destination.
type hook struct {
	srv  *httptest.Server
	got  chan map[string]string
	mu   sync.Mutex
	fail int // answer 500 to this many requests first
}

func newHook(t *testing.T, fail int) *hook {
	h := &hook{got: make(chan map[string]string, 20), fail: fail}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		failing := h.fail > 0
		h.fail--
		h.mu.Unlock()
		if failing {
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
			return
		}
		data, _ := io.ReadAll(r.Body)
		var m map[string]string
		if err := json.Unmarshal(data, &m); err != nil {
			t.Errorf("generic webhook body is not JSON: %s", data)
		}
		m["_method"], m["_path"], m["_contentType"] = r.Method, r.URL.Path, r.Header.Get("Content-Type")
		h.got <- m
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// url is the shoutrrr generic webhook URL of the receiver.
func (h *hook) url(path string) string {
	return "generic://" + strings.TrimPrefix(h.srv.URL, "http://") + path + "?template=json&disabletls=yes"
}

func (h *hook) next(t *testing.T) map[string]string {
	t.Helper()
	select {
	case m := <-h.got:
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no notification arrived")
		return nil
	}
}

type recorder struct {
	mu      sync.Mutex
	entries []string
}

func (r *recorder) RecordNotification(app, summary, result string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, app+" "+result+" "+summary)
	return nil
}

func TestNotifierSendsFilteredEventsThroughShoutrrr(t *testing.T) {
	all, onlyFailures := newHook(t, 0), newHook(t, 0)
	reg := prometheus.NewRegistry()
	n, err := New(Options{Registerer: reg, Config: config.Config{
		ExternalURL:   "https://driftless.example.com/",
		Notifications: []config.Notification{{Name: "ops", URL: all.url("/hooks/ops")}},
		Apps: []config.AppConfig{{Name: "web", Notifications: []config.Notification{
			{Name: "web-oncall", URL: onlyFailures.url("/hooks/web"), Events: []string{"rollout-failed"}}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n.Start(ctx, nil)
	good, bad := rev("1111111aaaa", "good"), rev("2222222bbbb", "crash")
	n.Observe(loop.Report{App: "web", Next: appStatus(drift.HealthHealthy, good), Entries: []status.HistoryEntry{{ID: 9, Kind: status.KindSync, Result: "succeeded", Revision: good, Summary: "synced 1111111 “good”: 1 to add"}}})
	n.Observe(loop.Report{App: "web", Next: appStatus(drift.HealthDegraded, good), Entries: []status.HistoryEntry{{ID: 10, Kind: status.KindSync, Result: "failed", Revision: bad, Summary: "failed to sync 2222222 “crash”"}}})

	m := all.next(t)
	if m["_method"] != http.MethodPost || m["_path"] != "/hooks/ops" || m["_contentType"] != "application/json" {
		t.Errorf("request %s %s (%s), want POST /hooks/ops as JSON", m["_method"], m["_path"], m["_contentType"])
	}
	if m["title"] != "driftless: web synced 1111111" {
		t.Errorf("title %q", m["title"])
	}
	wantMsg := "web: synced 1111111 “good”: 1 to add\nRevision: 1111111 “good” by Ada\nDetails: https://driftless.example.com/history/9"
	if m["message"] != wantMsg {
		t.Errorf("message %q, want %q", m["message"], wantMsg)
	}
	if m := all.next(t); m["title"] != "driftless: web rollout-failed 2222222" {
		t.Errorf("second message %q, want the failure", m["title"])
	}
	if m := onlyFailures.next(t); m["title"] != "driftless: web rollout-failed 2222222" {
		t.Errorf("the filtered destination got %q, want only the failure", m["title"])
	}
	if err := n.Test(ctx, "web-oncall"); err != nil {
		t.Fatal(err)
	}
	if m := onlyFailures.next(t); m["title"] != "driftless: test notification" {
		t.Errorf("test message %q", m["title"])
	}
	if err := n.Test(ctx, "nope"); err == nil || !strings.Contains(err.Error(), `unknown notification destination "nope"`) {
		t.Errorf("Test of an unknown destination: %v", err)
	}
	// Test sends at once, outside the queue, and counts at once.
	if got := testutil.ToFloat64(n.counter.WithLabelValues("web-oncall", ResultSent)); got < 1 {
		t.Errorf(`driftless_notifications_total{destination="web-oncall",result="sent"} = %v, want at least the test`, got)
	}
}

func TestNotifierRetriesAFailingDestinationAndRecordsGivingUp(t *testing.T) {
	flaky := newHook(t, 2)
	n, err := New(Options{retry: retry{Attempts: 3, Base: time.Millisecond, Max: time.Millisecond},
		Config: config.Config{Notifications: []config.Notification{{Name: "flaky", URL: flaky.url("/x")}}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n.Start(ctx, rec)
	n.Observe(loop.Report{App: "web", Entries: []status.HistoryEntry{{Kind: status.KindRollback, Summary: "pinned to 1111111", Revision: rev("1111111", "x")}}})
	if m := flaky.next(t); m["title"] != "driftless: web pinned 1111111" {
		t.Fatalf("delivered %q", m["title"])
	}

	flaky.mu.Lock()
	flaky.fail = 3
	flaky.mu.Unlock()
	n.Observe(loop.Report{App: "web", Entries: []status.HistoryEntry{{Kind: status.KindRollback, Summary: "unpinned from 1111111"}}})
	n.Observe(loop.Report{App: "web", Entries: []status.HistoryEntry{{Kind: status.KindRollback, Summary: "pinned to 2222222"}}})
	if m := flaky.next(t); m["title"] != "driftless: web pinned" {
		t.Fatalf("after giving up on one message the next one is delivered; got %q", m["title"])
	}
	// One destination delivers in order: once a later message arrived,
	// what came before it is counted and recorded.
	n.Observe(loop.Report{App: "web", Entries: []status.HistoryEntry{{Kind: status.KindRollback, Summary: "unpinned from 2222222"}}})
	flaky.next(t)
	counts := map[string]float64{}
	for _, r := range []string{ResultSent, ResultRetried, ResultFailed, ResultDropped} {
		counts[r] = testutil.ToFloat64(n.counter.WithLabelValues("flaky", r))
	}
	if counts[ResultSent] < 2 || counts[ResultRetried] != 4 || counts[ResultFailed] != 1 || counts[ResultDropped] != 0 {
		t.Fatalf("counts %v; want 2 retries before the first message, 2 more and a failure for the second, then sent", counts)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.entries) != 2 || !strings.HasPrefix(rec.entries[0], "web failed flaky: could not deliver unpinned message: ") ||
		rec.entries[1] != "web recovered flaky: delivers again" {
		t.Fatalf("history of delivery problems = %q", rec.entries)
	}
	if strings.Contains(rec.entries[0], flaky.srv.URL) {
		t.Fatalf("the destination URL (it may hold a token) leaked into history: %s", rec.entries[0])
	}
}

func TestNewRejectsBadDestinationsWithoutShowingTheURL(t *testing.T) {
	_, err := New(Options{Config: config.Config{Notifications: []config.Notification{
		{Name: "a", URL: "nosuchservice://token-abc@host"},
		{Name: "b", URL: "generic://127.0.0.1/x", Events: []string{"everything"}},
	}}})
	if err == nil {
		t.Fatal("bad destinations accepted")
	}
	msg := err.Error()
	for _, want := range []string{"notifications[0] (a): url: ", `notifications[1] (b): events: event "everything" is not known`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "token-abc") {
		t.Errorf("error shows the URL's secret: %s", msg)
	}
}

// TestHungDestinationNeverHoldsTheLoopUp: Observe returns at once while a
// destination hangs; what does not fit its queue is counted as dropped.
func TestHungDestinationNeverHoldsTheLoopUp(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	n, err := New(Options{Config: config.Config{Notifications: []config.Notification{
		{Name: "hung", URL: "generic://" + strings.TrimPrefix(srv.URL, "http://") + "/x?template=json&disabletls=yes"}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n.Start(ctx, nil)
	for i := range queueSize + 50 {
		n.Observe(loop.Report{App: "web", Entries: []status.HistoryEntry{{ID: uint64(i + 1), Kind: status.KindRollback, Summary: "pinned"}}})
	}
	if d := testutil.ToFloat64(n.counter.WithLabelValues("hung", ResultDropped)); d < 49 {
		t.Fatalf("dropped %v, want at least 49 of %d messages to a hung destination with a queue of %d", d, queueSize+50, queueSize)
	}
}

// The instances of an app declared on several engines share the
// destinations of their one entry: the agent starts (no name is used
// twice), and a message about either instance goes there.
func TestInstancesShareTheirEntrysDestinations(t *testing.T) {
	hook := newHook(t, 0)
	shared := []config.Notification{{Name: "shop-1", URL: hook.url("/hooks/shop")}}
	onLocal := config.AppConfig{Name: "shop@local", InstanceOf: "shop", Notifications: shared}
	onFar := config.AppConfig{Name: "shop@far", InstanceOf: "shop", Engine: "far", Notifications: shared}
	n, err := New(Options{Registerer: prometheus.NewRegistry(), Config: config.Config{Apps: []config.AppConfig{onLocal, onFar}}})
	if err != nil {
		t.Fatalf("two instances of one entry with notifications: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n.Start(ctx, nil)
	good := rev("1111111aaaa", "good")
	n.Observe(loop.Report{App: "shop@far", Next: appStatus(drift.HealthHealthy, good), Entries: []status.HistoryEntry{{ID: 3, Kind: status.KindSync, Result: "succeeded", Revision: good, Summary: "synced 1111111 “good”: 1 to add"}}})
	if m := hook.next(t); m["title"] != "driftless: shop@far synced 1111111" {
		t.Errorf("title %q, want shop@far's sync", m["title"])
	}
}
