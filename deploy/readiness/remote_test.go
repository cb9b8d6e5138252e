package readiness

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// fakeRunner records the targets it probes and answers with err.
type fakeRunner struct {
	mu      sync.Mutex
	targets []Target
	err     error
}

func (f *fakeRunner) Probe(_ context.Context, t Target, _ manifest.Readiness, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.targets = append(f.targets, t)
	return f.err
}

// TestRemoteRunnerProbesWithTheInspectedNetwork: with a Runner set, the
// prober's httpGet probes go to it, with the container's ID, address and
// the network of that address from the inspect (kept across a list
// summary's update); its error is the readiness reason, as a local
// probe's is.
func TestRemoteRunnerProbesWithTheInspectedNetwork(t *testing.T) {
	p := New(nil, time.Second, slog.New(slog.DiscardHandler))
	defer p.Stop()
	runner := &fakeRunner{err: errors.New("GET http://10.1.0.2:8080/healthz: 503 Service Unavailable: warming up")}
	p.Remote = runner
	r := &manifest.Readiness{HTTPGet: &manifest.HTTPGetProbe{Path: "/healthz", Port: 8080}, PeriodSeconds: 1}
	started := time.Now()
	p.Update(Info{ID: "c1", App: "shop", State: drift.StateRunning, Readiness: r, IP: "10.1.0.2", Network: "shop_default", StartedAt: started, Inspected: true})
	// A list summary knows the address, not its network.
	p.Update(Info{ID: "c1", App: "shop", State: drift.StateRunning, Readiness: r, IP: "10.1.0.2"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.AwaitFirstProbes(ctx, []string{"c1"})
	ready, reason, _, _ := p.Result("c1")
	if ready || reason != "readiness probe failed: GET http://10.1.0.2:8080/healthz: 503 Service Unavailable: warming up" {
		t.Errorf("ready %v, reason %q: want the runner's error as the reason", ready, reason)
	}
	runner.mu.Lock()
	got := append([]Target(nil), runner.targets...)
	runner.err = nil
	runner.mu.Unlock()
	if len(got) == 0 || got[0] != (Target{ID: "c1", IP: "10.1.0.2", Network: "shop_default"}) {
		t.Fatalf("runner probed %+v, want c1 at 10.1.0.2 on shop_default", got)
	}
	for {
		if ready, _, _, _ := p.Result("c1"); ready {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("not ready after the runner's probes passed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	runner.mu.Lock()
	defer runner.mu.Unlock()
	if last := runner.targets[len(runner.targets)-1]; last.Network != "shop_default" {
		t.Errorf("after a summary update the runner probed %+v: the network was lost", last)
	}
}
