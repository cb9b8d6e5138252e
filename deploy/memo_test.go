package deploy

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
)

// bufferedEngine answers since/until event queries as the Docker daemon
// does: from a ring of its last bufferSize events, walked from the newest
// back, stopping at the first older than since and skipping those after
// until. Inspects show each container's memory limit.
type bufferedEngine struct {
	*memEngine
	buffer     []events.Message
	bufferSize int
	clock      int64
	memory     map[string]int64
	health     map[string]string
}

func newBufferedEngine() *bufferedEngine {
	return &bufferedEngine{memEngine: newMemEngine(), bufferSize: 256, clock: time.Now().UnixNano(),
		memory: map[string]int64{}, health: map[string]string{}}
}

// log appends an event to the daemon's buffer.
func (b *bufferedEngine) log(typ events.Type, action, actor string, attrs map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clock += 1000
	b.buffer = append(b.buffer, events.Message{Type: typ, Action: events.Action(action), Actor: events.Actor{ID: actor, Attributes: attrs}, TimeNano: b.clock})
	if len(b.buffer) > b.bufferSize {
		b.buffer = b.buffer[1:]
	}
}

// parseEventTime reads Docker's "seconds.nanoseconds".
func parseEventTime(s string) (int64, error) {
	sec, nsec, _ := strings.Cut(s, ".")
	a, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, err
	}
	var n int64
	if nsec != "" {
		if n, err = strconv.ParseInt((nsec + "000000000")[:9], 10, 64); err != nil {
			return 0, err
		}
	}
	return a*1e9 + n, nil
}

func (b *bufferedEngine) Events(_ context.Context, o client.EventsListOptions) client.EventsResult {
	msgs, errs := make(chan events.Message), make(chan error, 1)
	since, err := parseEventTime(o.Since)
	if err == nil {
		_, err = parseEventTime(o.Until)
	}
	if err != nil {
		errs <- err
		return client.EventsResult{Messages: msgs, Err: errs}
	}
	b.mu.Lock()
	b.calls["Events"]++
	// The fake's clock is its own: every event logged so far is before
	// until.
	var out []events.Message
	for i := len(b.buffer) - 1; i >= 0; i-- {
		if b.buffer[i].TimeNano < since {
			break
		}
		out = append([]events.Message{b.buffer[i]}, out...)
	}
	b.mu.Unlock()
	// As the Docker client does: each message is taken before the end of
	// the stream is reported.
	go func() {
		for _, ev := range out {
			msgs <- ev
		}
		errs <- io.EOF
		close(errs)
	}()
	return client.EventsResult{Messages: msgs, Err: errs}
}

func (b *bufferedEngine) ContainerInspect(ctx context.Context, id string, o client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	res, err := b.memEngine.ContainerInspect(ctx, id, o)
	b.mu.Lock()
	defer b.mu.Unlock()
	res.Container.HostConfig = &container.HostConfig{Resources: container.Resources{Memory: b.memory[id]}}
	if h := b.health[id]; h != "" {
		res.Container.State.Health = &container.Health{Status: container.HealthStatus(h), Log: []*container.HealthcheckResult{{Output: "check said " + h}}}
	}
	return res, err
}

// cliRun is one CLI process's observation of app shop with the memo
// data an earlier one left: what it saw, the memo it leaves, and how many
// containers it inspected.
func cliRun(t *testing.T, api dockerAPI, calls func() int, build string, memo []byte) (drift.Actual, []byte, int) {
	t.Helper()
	e := newEngine(api, Options{})
	defer e.prober.Stop()
	e.UseInspectMemo("shop", build, memo)
	before := calls()
	actual, err := e.ObserveForPlan(context.Background(), drift.Input{App: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	return actual, e.InspectMemo("shop"), calls() - before
}

func (b *bufferedEngine) inspects() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls["ContainerInspect"]
}

// shopEngine is an engine with three running replicas of shop, one
// foreign container and some history in its event buffer.
func shopEngine() *bufferedEngine {
	b := newBufferedEngine()
	for _, id := range []string{"c1", "c2", "c3"} {
		b.setContainer(id, "shop-web-"+id[1:], "shop", "running", "shop-default")
		b.memory[id] = 64 << 20
		b.log(events.ContainerEventType, "start", id, nil)
	}
	b.setContainer("f1", "other", "", "running")
	return b
}

func memoryOf(t *testing.T, a drift.Actual, name string) int64 {
	t.Helper()
	for _, c := range a.Containers {
		if c.Name == name {
			if c.Config == nil {
				t.Fatalf("%s: no runtime config observed", name)
			}
			return c.Config.MemoryBytes
		}
	}
	t.Fatalf("%s not observed", name)
	return 0
}

func TestInspectMemoSkipsInspectsWhenNothingHappenedSinceIt(t *testing.T) {
	b := shopEngine()
	first, memo, n := cliRun(t, b, b.inspects, "v1", nil)
	if n != 3 || memo == nil {
		t.Fatalf("first run: %d inspects, memo %q; want 3 and a memo", n, memo)
	}
	for run := 2; run <= 3; run++ {
		var got drift.Actual
		got, memo, n = cliRun(t, b, b.inspects, "v1", memo)
		if n != 0 {
			t.Errorf("run %d: %d inspects, want none: nothing happened since the memo", run, n)
		}
		for _, name := range []string{"shop-web-1", "shop-web-2", "shop-web-3"} {
			if g, w := memoryOf(t, got, name), memoryOf(t, first, name); g != w {
				t.Errorf("run %d: %s memory %d, inspected %d", run, name, g, w)
			}
		}
		for _, c := range got.Containers {
			if !c.Ready {
				t.Errorf("run %d: %s not ready (%s): the memo lost its start time", run, c.Name, c.ReadyReason)
			}
		}
	}
}

func TestInspectMemoInspectsWhatEventsName(t *testing.T) {
	b := shopEngine()
	_, memo, _ := cliRun(t, b, b.inspects, "v1", nil)
	b.memory["c1"] = 96 << 20
	b.log(events.ContainerEventType, "update", "c1", nil)
	b.log(events.NetworkEventType, "disconnect", "net1", map[string]string{"container": "c2"})
	b.log(events.ContainerEventType, "exec_start: /bin/true", "c3", nil) // a healthcheck's exec changes nothing
	got, memo, n := cliRun(t, b, b.inspects, "v1", memo)
	if n != 2 {
		t.Errorf("%d inspects, want 2: the updated replica and the disconnected one", n)
	}
	if m := memoryOf(t, got, "shop-web-1"); m != 96<<20 {
		t.Errorf("shop-web-1 memory %d after docker update, want %d", m, 96<<20)
	}
	if _, _, n = cliRun(t, b, b.inspects, "v1", memo); n != 0 {
		t.Errorf("next run: %d inspects, want none", n)
	}
}

func TestInspectMemoIsVoidOnceItsAnchorLeftTheBuffer(t *testing.T) {
	b := shopEngine()
	b.bufferSize = 8
	_, memo, _ := cliRun(t, b, b.inspects, "v1", nil)
	// The update's own event is pushed out of the buffer with the anchor:
	// only the missing anchor tells that something may have happened.
	b.memory["c1"] = 96 << 20
	b.log(events.ContainerEventType, "update", "c1", nil)
	for i := range 10 {
		b.log(events.ImageEventType, "tag", "img"+strconv.Itoa(i), nil)
	}
	got, _, n := cliRun(t, b, b.inspects, "v1", memo)
	if n != 3 {
		t.Errorf("%d inspects, want all 3: the memo cannot be proven", n)
	}
	if m := memoryOf(t, got, "shop-web-1"); m != 96<<20 {
		t.Errorf("shop-web-1 memory %d, want the updated %d", m, 96<<20)
	}
}

func TestInspectMemoIsVoidWhenAnEarlierEventFollowsTheAnchor(t *testing.T) {
	b := shopEngine()
	_, memo, _ := cliRun(t, b, b.inspects, "v1", nil)
	// Two events logged at once can enter the buffer out of time order;
	// the daemon's walk then stops before it reaches the anchor.
	b.log(events.ContainerEventType, "update", "c1", nil)
	b.mu.Lock()
	b.buffer[len(b.buffer)-1].TimeNano = b.buffer[len(b.buffer)-2].TimeNano - 1
	b.mu.Unlock()
	if _, _, n := cliRun(t, b, b.inspects, "v1", memo); n != 3 {
		t.Errorf("%d inspects, want all 3", n)
	}
}

func TestInspectMemoBelongsToOneBuildAppAndEngine(t *testing.T) {
	b := shopEngine()
	_, memo, _ := cliRun(t, b, b.inspects, "v1", nil)
	for what, run := range map[string]func() int{
		"another build": func() int { _, _, n := cliRun(t, b, b.inspects, "v2", memo); return n },
		"garbled data":  func() int { _, _, n := cliRun(t, b, b.inspects, "v1", memo[:len(memo)/2]); return n },
		"another app": func() int {
			other := strings.Replace(string(memo), `"App":"shop"`, `"App":"shop2"`, 1)
			_, _, n := cliRun(t, b, b.inspects, "v1", []byte(other))
			return n
		},
	} {
		if n := run(); n != 3 {
			t.Errorf("%s: %d inspects, want all 3", what, n)
		}
	}
	remote := tcpEngine{b}
	if _, memo, n := cliRun(t, remote, b.inspects, "v1", memo); memo != nil || n != 3 {
		t.Errorf("engine over TCP: memo %q, %d inspects; want no memo: its clock is not ours", memo, n)
	}
}

type tcpEngine struct{ *bufferedEngine }

func (tcpEngine) DaemonHost() string { return "tcp://10.0.0.1:2375" }

func TestInspectMemoLeavesOutStoppedAndUnhealthyContainers(t *testing.T) {
	b := shopEngine()
	b.setContainer("c2", "shop-web-2", "shop", "exited", "shop-default")
	b.health["c3"] = "unhealthy"
	b.mu.Lock()
	s := b.containers["c3"]
	s.Status = "Up 2 hours (unhealthy)"
	b.containers["c3"] = s
	b.mu.Unlock()
	_, memo, _ := cliRun(t, b, b.inspects, "v1", nil)
	got, _, n := cliRun(t, b, b.inspects, "v1", memo)
	if n != 2 {
		t.Errorf("%d inspects, want 2: the stopped and the unhealthy replica", n)
	}
	for _, c := range got.Containers {
		if c.Name == "shop-web-3" && !strings.Contains(c.ReadyReason, "check said unhealthy") {
			t.Errorf("shop-web-3: reason %q, want the healthcheck's output", c.ReadyReason)
		}
	}
}
