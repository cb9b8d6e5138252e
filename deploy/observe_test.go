package deploy

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/volume"
	"github.com/moby/moby/client"
)

// fakeDocker answers the list and inspect calls Observe makes and counts
// them. Calls it does not implement panic (nil embedded interface).
type fakeDocker struct {
	dockerAPI
	mu         sync.Mutex // lists and inspects run at once
	containers []container.Summary
	inspect    map[string]container.InspectResponse
	calls      map[string]int
	filters    []client.Filters
}

func (f *fakeDocker) Ping(context.Context, client.PingOptions) (client.PingResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["Ping"]++
	return client.PingResult{}, nil
}

func (f *fakeDocker) DaemonHost() string { return "unix:///fake.sock" }

func (f *fakeDocker) ContainerList(_ context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["ContainerList"]++
	f.filters = append(f.filters, o.Filters)
	return client.ContainerListResult{Items: f.containers}, nil
}

func (f *fakeDocker) NetworkList(context.Context, client.NetworkListOptions) (client.NetworkListResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["NetworkList"]++
	return client.NetworkListResult{Items: []network.Summary{{Network: network.Network{Name: "shop-default", ID: "n1", Driver: "bridge", Labels: map[string]string{drift.LabelApp: "shop", drift.LabelResource: "default"}}}}}, nil
}

func (f *fakeDocker) VolumeList(context.Context, client.VolumeListOptions) (client.VolumeListResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["VolumeList"]++
	return client.VolumeListResult{Items: []volume.Volume{{Name: "shop-data", Driver: "local", Labels: map[string]string{drift.LabelApp: "shop", drift.LabelResource: "data"}}}}, nil
}

func (f *fakeDocker) ContainerInspect(_ context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["ContainerInspect"]++
	return client.ContainerInspectResult{Container: f.inspect[id]}, nil
}

func TestObserveSteadyStateMakesOnlyListCalls(t *testing.T) {
	started := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	labels := map[string]string{drift.LabelApp: "shop", drift.LabelService: "web", drift.LabelSlot: "1", drift.LabelSpec: `{"image":"web:v1","replicas":1}`}
	fake := &fakeDocker{
		calls: map[string]int{},
		containers: []container.Summary{
			{ID: "c1", Names: []string{"/shop-web-1"}, Labels: labels, State: "running", Status: "Up 3 seconds"},
		},
		inspect: map[string]container.InspectResponse{
			"c1": {ID: "c1", Name: "/shop-web-1", RestartCount: 2, Config: &container.Config{Labels: labels},
				State: &container.State{Status: "running", Running: true, StartedAt: started.Format(time.RFC3339Nano)}},
		},
	}
	e := newEngine(fake, Options{SettleTime: 2 * time.Second})
	defer e.prober.Stop()
	now := started.Add(time.Second)
	e.prober.Now = func() time.Time { return now }

	a, err := e.Observe(context.Background(), "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Containers) != 1 || len(a.Networks) != 1 || len(a.Volumes) != 1 {
		t.Fatalf("observed %+v", a)
	}
	c := a.Containers[0]
	if c.Ready || c.RestartCount != 2 || c.ReadyReason == "" {
		t.Errorf("1s after start with a 2s settle time: ready %v restarts %d reason %q", c.Ready, c.RestartCount, c.ReadyReason)
	}
	if fake.calls["ContainerInspect"] != 1 {
		t.Errorf("first sight of a container: %d inspects, want 1", fake.calls["ContainerInspect"])
	}
	if got := fake.filters[0]["label"]; !got[drift.LabelApp+"=shop"] || len(got) != 1 {
		t.Errorf("container list filter = %v", fake.filters[0])
	}

	now = started.Add(3 * time.Second)
	a, err = e.Observe(context.Background(), "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Containers[0]; !c.Ready || c.ReadyReason != "" {
		t.Errorf("running past the settle time without restarting: ready %v reason %q", c.Ready, c.ReadyReason)
	}
	want := map[string]int{"ContainerList": 2, "NetworkList": 2, "VolumeList": 2, "ContainerInspect": 1}
	for call, n := range want {
		if fake.calls[call] != n {
			t.Errorf("%s called %d times over two observes, want %d", call, fake.calls[call], n)
		}
	}

	// A state change is worth one more inspect.
	fake.containers[0].State, fake.containers[0].Status = "exited", "Exited (2) 1 second ago"
	st := fake.inspect["c1"]
	st.State = &container.State{Status: "exited", ExitCode: 2, StartedAt: started.Format(time.RFC3339Nano)}
	fake.inspect["c1"] = st
	a, err = e.Observe(context.Background(), "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Containers[0]; c.Ready || c.ReadyReason != "exited with code 2" || c.ExitCode != 2 {
		t.Errorf("exited replica: ready %v reason %q exit %d", c.Ready, c.ReadyReason, c.ExitCode)
	}
	if fake.calls["ContainerInspect"] != 2 {
		t.Errorf("inspects after a state change = %d, want 2", fake.calls["ContainerInspect"])
	}

	// Gone containers are forgotten.
	fake.containers = nil
	if _, err := e.Observe(context.Background(), "shop", false); err != nil {
		t.Fatal(err)
	}
	if _, _, _, known := e.prober.Result("c1"); known {
		t.Errorf("a removed container is still tracked by the prober")
	}
}
