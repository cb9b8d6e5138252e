package deploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// netEngine is the networking of a Docker engine on API 1.41, in memory:
// a create never refuses a name that exists, a container keeps its
// networks by name with the ID it is attached to, endpoints exist only
// while it runs, and a network with endpoints cannot be removed.
type netEngine struct {
	dockerAPI
	mu         sync.Mutex
	networks   map[string]*network.Inspect
	containers map[string]*container.InspectResponse
	next       int
	// beforeCreate runs before each create, as another process would
	// meanwhile; an error refuses the create.
	beforeCreate func(name string) error
	failConnect  error
	calls        []string
}

func newNetEngine() *netEngine {
	return &netEngine{networks: map[string]*network.Inspect{}, containers: map[string]*container.InspectResponse{}}
}

func (f *netEngine) addNetwork(id, name, app string, created time.Time) {
	n := &network.Inspect{Containers: map[string]network.EndpointResource{}}
	n.ID, n.Name, n.Created, n.Driver = id, name, created, "bridge"
	n.Labels = map[string]string{}
	if app != "" {
		n.Labels = map[string]string{drift.LabelApp: app, drift.LabelResource: strings.TrimPrefix(name, app+"-")}
	}
	f.networks[id] = n
}

// addContainer attaches a container to network netID under the network's
// name, with aliases (Docker adds the short ID itself).
func (f *netEngine) addContainer(id, name string, running bool, netID string, aliases ...string) {
	n := f.networks[netID]
	c := &container.InspectResponse{ID: id, Name: "/" + name, State: &container.State{Running: running},
		NetworkSettings: &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{
			n.Name: {NetworkID: netID, Aliases: append(aliases, shortID(id))},
		}}}
	f.containers[id] = c
	if running {
		n.Containers[id] = network.EndpointResource{Name: name}
	}
}

func (f *netEngine) NetworkList(_ context.Context, o client.NetworkListOptions) (client.NetworkListResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "list")
	var out client.NetworkListResult
	for _, n := range f.networks {
		if matches(o.Filters, n.ID, n.Name, n.Labels) {
			out.Items = append(out.Items, network.Summary{Network: n.Network})
		}
	}
	return out, nil
}

func (f *netEngine) NetworkCreate(_ context.Context, name string, o client.NetworkCreateOptions) (client.NetworkCreateResult, error) {
	if f.beforeCreate != nil {
		if err := f.beforeCreate(name); err != nil {
			return client.NetworkCreateResult{}, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "create")
	f.next++
	id := fmt.Sprintf("net-new-%02d", f.next)
	f.addNetwork(id, name, "", time.Now())
	f.networks[id].Labels = o.Labels
	return client.NetworkCreateResult{ID: id}, nil
}

func (f *netEngine) NetworkInspect(_ context.Context, id string, _ client.NetworkInspectOptions) (client.NetworkInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.networks[id]
	if !ok {
		return client.NetworkInspectResult{}, fmt.Errorf("network %s: %w", id, cerrdefs.ErrNotFound)
	}
	cp := *n
	cp.Containers = maps.Clone(n.Containers)
	return client.NetworkInspectResult{Network: cp}, nil
}

func (f *netEngine) NetworkRemove(_ context.Context, id string, _ client.NetworkRemoveOptions) (client.NetworkRemoveResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "remove "+id)
	n, ok := f.networks[id]
	if !ok {
		return client.NetworkRemoveResult{}, fmt.Errorf("network %s: %w", id, cerrdefs.ErrNotFound)
	}
	if len(n.Containers) > 0 {
		return client.NetworkRemoveResult{}, fmt.Errorf("network %s has active endpoints", id)
	}
	delete(f.networks, id)
	return client.NetworkRemoveResult{}, nil
}

func (f *netEngine) NetworkDisconnect(_ context.Context, id string, o client.NetworkDisconnectOptions) (client.NetworkDisconnectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "disconnect "+o.Container+" "+id)
	n, c := f.networks[id], f.containers[o.Container]
	if n == nil || c == nil {
		return client.NetworkDisconnectResult{}, fmt.Errorf("disconnect: %w", cerrdefs.ErrNotFound)
	}
	delete(c.NetworkSettings.Networks, n.Name)
	delete(n.Containers, c.ID)
	return client.NetworkDisconnectResult{}, nil
}

func (f *netEngine) NetworkConnect(_ context.Context, id string, o client.NetworkConnectOptions) (client.NetworkConnectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "connect "+o.Container+" "+id)
	if f.failConnect != nil {
		return client.NetworkConnectResult{}, f.failConnect
	}
	n, c := f.networks[id], f.containers[o.Container]
	if n == nil || c == nil {
		return client.NetworkConnectResult{}, fmt.Errorf("connect: %w", cerrdefs.ErrNotFound)
	}
	ep := &network.EndpointSettings{Aliases: slices.Clone(o.EndpointConfig.Aliases)}
	if c.State.Running {
		ep.NetworkID = id
		n.Containers[c.ID] = network.EndpointResource{Name: strings.TrimPrefix(c.Name, "/")}
	}
	c.NetworkSettings.Networks[n.Name] = ep
	return client.NetworkConnectResult{}, nil
}

// ContainerList honours the network filter by ID, as Docker's does, over
// running and stopped containers.
func (f *netEngine) ContainerList(_ context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out client.ContainerListResult
	for _, c := range f.containers {
		ok := len(o.Filters["network"]) == 0
		for want := range o.Filters["network"] {
			for name, ep := range c.NetworkSettings.Networks {
				ok = ok || name == want || ep.NetworkID == want
			}
		}
		if ok {
			out.Items = append(out.Items, container.Summary{ID: c.ID, Names: []string{c.Name}})
		}
	}
	return out, nil
}

func (f *netEngine) ContainerInspect(_ context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return client.ContainerInspectResult{}, fmt.Errorf("container %s: %w", id, cerrdefs.ErrNotFound)
	}
	cp := *c
	cp.NetworkSettings = &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{}}
	for k, v := range c.NetworkSettings.Networks {
		ep := *v
		cp.NetworkSettings.Networks[k] = &ep
	}
	return client.ContainerInspectResult{Container: cp}, nil
}

// ImageInspect is the first call of a replica's creation, which the tests
// of network merges must not reach when the merge failed.
func (f *netEngine) ImageInspect(context.Context, string, ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "image inspect")
	return client.ImageInspectResult{}, errors.New("netEngine: creating a replica is not modelled")
}

// endpoint is where a container's network of that name points, and its
// aliases.
func (f *netEngine) endpoint(id, name string) (string, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ep := f.containers[id].NetworkSettings.Networks[name]
	if ep == nil {
		return "", nil
	}
	return ep.NetworkID, ep.Aliases
}

func netApp() *manifest.App {
	return &manifest.App{Name: "shop", Networks: []manifest.Network{{Name: "default", Hash: "h1"}},
		Services: []manifest.Service{{Name: "web", Spec: manifest.ServiceSpec{Image: "web:v1", Replicas: 1}}}}
}

// TestApplyMergesDuplicateNetwork: the plan's removal of a duplicate
// network moves every container on it — running (an endpoint) or stopped
// (only its config names the duplicate's ID, and it would fail to start
// once the duplicate is gone) — to the kept network with its aliases,
// then removes the duplicate; the kept network and its containers are
// left alone.
func TestApplyMergesDuplicateNetwork(t *testing.T) {
	f := newNetEngine()
	t0 := time.Now().Add(-time.Hour)
	f.addNetwork("net-kept", "shop-default", "shop", t0)
	f.addNetwork("net-dup", "shop-default", "shop", t0.Add(time.Second))
	f.addContainer("c-on-kept-000000", "shop-web-1", true, "net-kept", "web")
	f.addContainer("c-running-000000", "shop-api-1", true, "net-dup", "api", "backend")
	f.addContainer("c-stopped-000000", "shop-job-1", false, "net-dup", "job")
	e := newEngine(f, Options{AddressPool: &drift.AddressPool{}})
	defer e.prober.Stop()

	plan := drift.Plan{App: "shop", Revision: "abc", Changes: []drift.Change{{
		Action: drift.ActionRemove, Kind: drift.KindNetwork, Name: "shop-default", ID: "net-dup", Resource: "default",
		Cause: drift.CauseDrift, MergeInto: "net-kept",
	}}}
	var events []drift.Event
	res := e.Apply(context.Background(), netApp(), plan, drift.ApplyOptions{Progress: func(ev drift.Event) { events = append(events, ev) }})
	if res.Outcomes[0].Result != drift.ResultDone {
		t.Fatalf("outcome %+v", res.Outcomes[0])
	}
	if _, ok := f.networks["net-dup"]; ok {
		t.Error("the duplicate is still there")
	}
	if _, ok := f.networks["net-kept"]; !ok {
		t.Error("the kept network was removed")
	}
	for id, want := range map[string][]string{"c-running-000000": {"api", "backend"}, "c-stopped-000000": {"job"}, "c-on-kept-000000": {"web", "c-on-kept-00"}} {
		netID, aliases := f.endpoint(id, "shop-default")
		running := f.containers[id].State.Running
		if (running && netID != "net-kept") || !slices.Equal(aliases, want) {
			t.Errorf("%s: on %q with aliases %v, want net-kept with %v", id, netID, aliases, want)
		}
	}
	if slices.ContainsFunc(f.calls, func(c string) bool { return strings.Contains(c, "c-on-kept") }) {
		t.Errorf("a container on the kept network was touched: %v", f.calls)
	}
	if !slices.ContainsFunc(events, func(ev drift.Event) bool {
		return ev.Phase == drift.PhaseRemoved && strings.Contains(ev.Message, "moved to it: shop-api-1, shop-job-1")
	}) {
		t.Errorf("events %+v: want the removal naming the moved containers", events)
	}
}

// TestApplyMergeFailureHoldsServices: a duplicate that cannot be merged
// leaves the name ambiguous, so the services on that network are not
// created (their start would fail) and say why.
func TestApplyMergeFailureHoldsServices(t *testing.T) {
	f := newNetEngine()
	t0 := time.Now().Add(-time.Hour)
	f.addNetwork("net-kept", "shop-default", "shop", t0)
	f.addNetwork("net-dup", "shop-default", "shop", t0.Add(time.Second))
	f.addContainer("c-running-000000", "shop-web-1", true, "net-dup", "web")
	f.failConnect = errors.New("engine said no")
	e := newEngine(f, Options{AddressPool: &drift.AddressPool{}})
	defer e.prober.Stop()
	app := netApp()
	app.Services[0].Spec.Networks = []string{"default"}
	plan := drift.Plan{App: "shop", Revision: "abc", Changes: []drift.Change{
		{Action: drift.ActionRemove, Kind: drift.KindNetwork, Name: "shop-default", ID: "net-dup", Resource: "default", Cause: drift.CauseDrift, MergeInto: "net-kept"},
		{Action: drift.ActionCreate, Kind: drift.KindContainer, Name: "shop-web-2", Service: "web", Slot: 2, Cause: drift.CauseGit},
	}}
	res := e.Apply(context.Background(), app, plan, drift.ApplyOptions{})
	if o := res.Outcomes[0]; o.Result != drift.ResultFailed || !strings.Contains(o.Error, "engine said no") {
		t.Errorf("merge outcome %+v", o)
	}
	if o := res.Outcomes[1]; o.Result != drift.ResultSkipped || o.Failure == nil || !strings.Contains(o.Failure.Summary, "exists twice") {
		t.Errorf("container outcome %+v: want it held back by the duplicate", o)
	}
	if _, ok := f.networks["net-dup"]; !ok {
		t.Error("the duplicate was removed although its container could not move")
	}
}

// TestCreateNetworkLooksUpBeforeEachCreate: Docker on API 1.41 makes a
// second network with a name that exists, so the name is looked up right
// before every create attempt (also the one after a subnet was taken), and
// once more after: of two made at once, ours goes if it is the younger.
func TestCreateNetworkLooksUpBeforeEachCreate(t *testing.T) {
	routes := filepath.Join(t.TempDir(), "route")
	if err := os.WriteFile(routes, []byte("Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pool := drift.DefaultAddressPool()
	create := func(t *testing.T, f *netEngine) (drift.Outcome, []drift.Event) {
		t.Helper()
		e := newEngine(f, Options{AddressPool: &pool, RoutesFile: routes})
		defer e.prober.Stop()
		plan := drift.Plan{App: "shop", Revision: "abc", Changes: []drift.Change{
			{Action: drift.ActionCreate, Kind: drift.KindNetwork, Name: "shop-default", Resource: "default", Cause: drift.CauseGit},
		}}
		var events []drift.Event
		res := e.Apply(context.Background(), netApp(), plan, drift.ApplyOptions{Progress: func(ev drift.Event) { events = append(events, ev) }})
		return res.Outcomes[0], events
	}
	count := func(f *netEngine) int {
		n := 0
		for _, nw := range f.networks {
			if nw.Name == "shop-default" {
				n++
			}
		}
		return n
	}
	alreadyExists := func(events []drift.Event) bool {
		return slices.ContainsFunc(events, func(ev drift.Event) bool { return ev.Message == "already exists" })
	}

	t.Run("made meanwhile, before a retry", func(t *testing.T) {
		f := newNetEngine()
		attempts := 0
		f.beforeCreate = func(name string) error {
			attempts++
			if attempts == 1 {
				// The subnet is taken, and meanwhile another process
				// made the network.
				f.mu.Lock()
				f.addNetwork("net-other", name, "shop", time.Now())
				f.mu.Unlock()
				return errors.New("Pool overlaps with other one on this address space")
			}
			return nil
		}
		out, events := create(t, f)
		if out.Result != drift.ResultDone || count(f) != 1 || attempts != 1 || !alreadyExists(events) {
			t.Errorf("outcome %+v, %d networks named shop-default after %d creates, events %v", out, count(f), attempts, events)
		}
	})
	t.Run("made at the same time", func(t *testing.T) {
		f := newNetEngine()
		f.beforeCreate = func(name string) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.addNetwork("net-other", name, "shop", time.Now().Add(-time.Millisecond))
			return nil
		}
		out, events := create(t, f)
		if out.Result != drift.ResultDone || count(f) != 1 || f.networks["net-other"] == nil || !alreadyExists(events) {
			t.Errorf("outcome %+v, %d networks named shop-default (%v), calls %v", out, count(f), slices.Collect(maps.Keys(f.networks)), f.calls)
		}
	})
	t.Run("exists", func(t *testing.T) {
		f := newNetEngine()
		f.addNetwork("net-old", "shop-default", "shop", time.Now().Add(-time.Hour))
		out, events := create(t, f)
		if out.Result != drift.ResultDone || count(f) != 1 || slices.Contains(f.calls, "create") || !alreadyExists(events) {
			t.Errorf("outcome %+v, calls %v", out, f.calls)
		}
	})
	t.Run("held by another owner", func(t *testing.T) {
		f := newNetEngine()
		f.addNetwork("net-foreign", "shop-default", "", time.Now())
		out, _ := create(t, f)
		if out.Result != drift.ResultFailed || !strings.Contains(out.Error, "does not own") || slices.Contains(f.calls, "create") {
			t.Errorf("outcome %+v, calls %v", out, f.calls)
		}
	})
}
