package loop

import (
	"context"
	"sync"
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/pipeline"
	"github.com/driftless-dev/driftless/sync/status"
)

// fakeSwarm is a Swarm manager as the loop sees it: services by name.
type fakeSwarm struct {
	pipeline.NoBuilds
	mu       sync.Mutex
	services map[string]drift.SwarmService
	networks []drift.Network
}

func (s *fakeSwarm) Ping(context.Context) error { return nil }

func (s *fakeSwarm) Watch(ctx context.Context, _ func(drift.EngineEvent)) error {
	<-ctx.Done()
	return ctx.Err()
}

func (s *fakeSwarm) Observe(_ context.Context, app string, _ bool) (drift.Actual, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var a drift.Actual
	for _, n := range s.networks {
		if n.App == app {
			a.Networks = append(a.Networks, n)
		}
	}
	for _, svc := range s.services {
		if svc.App == app {
			a.Services = append(a.Services, svc)
			for slot := 1; slot <= svc.Replicas; slot++ {
				a.Containers = append(a.Containers, drift.Container{Name: svc.Name, App: app, Service: svc.Service, Slot: slot,
					State: drift.StateRunning, Ready: true, Node: "node-1"})
			}
		}
	}
	return a, nil
}

func (s *fakeSwarm) Apply(_ context.Context, desired *manifest.App, plan drift.Plan, _ drift.ApplyOptions) drift.ApplyResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	var res drift.ApplyResult
	for _, c := range plan.Changes {
		if c.Kind == drift.KindNetwork && c.Action == drift.ActionCreate {
			n := desired.Network(c.Resource)
			s.networks = append(s.networks, drift.Network{ID: "id-" + c.Name, Name: c.Name, App: desired.Name, Resource: n.Name, SpecHash: n.Hash, Driver: "overlay"})
		}
		if c.Kind == drift.KindService {
			svc := desired.Service(c.Service)
			switch c.Action {
			case drift.ActionRemove:
				delete(s.services, c.Name)
			default:
				s.services[c.Name] = drift.SwarmService{ID: "id-" + c.Name, Name: c.Name, App: desired.Name, Service: svc.Name,
					SpecHash: svc.Hash, Image: svc.Spec.Image, Replicas: svc.Spec.Replicas, Spec: s.SwarmSpecs(desired)[svc.Name]}
			}
		}
		res.Outcomes = append(res.Outcomes, drift.Outcome{Change: c, Result: drift.ResultDone})
	}
	return res
}

// SwarmSpecs renders what the fake compares: the image and environment.
func (s *fakeSwarm) SwarmSpecs(app *manifest.App) map[string]drift.SwarmSpec {
	specs := map[string]drift.SwarmSpec{}
	for _, svc := range app.Services {
		out := drift.SwarmSpec{"image": svc.Spec.Image}
		for k, v := range svc.Spec.Env {
			out["env."+k] = v
		}
		specs[svc.Name] = out
	}
	return specs
}

func TestSwarmAppRunsOnTheSwarmEngine(t *testing.T) {
	cfg := appConfig("shop")
	cfg.Target = manifest.TargetSwarm
	if _, err := New(Options{DataDir: t.TempDir(), Apps: []config.AppConfig{cfg}, Engine: &fakeEngine{},
		NewSource: func(config.AppConfig) (Source, error) { return newFakeSource(), nil }}); err == nil {
		t.Fatal("an app with target swarm and no Swarm engine was accepted")
	}

	h := newHarness(t, appConfig("other"))
	h.agent.Close()
	h.apps = []config.AppConfig{cfg, appConfig("other")}
	h.sources["shop"] = newFakeSource()
	sw := &fakeSwarm{services: map[string]drift.SwarmService{}}
	a, err := New(Options{DataDir: t.TempDir(), Apps: h.apps, Engine: h.engine, Swarm: sw, Now: h.clock.Now,
		NewSource: func(c config.AppConfig) (Source, error) { return h.sources[c.Name], nil }})
	if err != nil {
		t.Fatal(err)
	}
	h.agent = a
	t.Cleanup(func() { a.Close() })

	h.sources["shop"].commit("web", map[string]string{"web.yaml": service("web", "shop/web:v1", 3)})
	st, err := h.pass("shop", TriggerPoll)
	if err != nil || st.Sync != drift.SyncSynced || st.Health != drift.HealthHealthy {
		t.Fatalf("first pass: %v, %s/%s %q", err, st.Sync, st.Health, st.Message)
	}
	if got := sw.services["shop-web"]; got.Replicas != 3 || h.engine.applyCount() != 0 {
		t.Fatalf("the service on Swarm = %+v; applies on the single engine: %d (want none)", got, h.engine.applyCount())
	}
	if c := st.Services[0].Containers; len(c) != 3 || c[0].Node != "node-1" {
		t.Errorf("task rows = %+v, want 3 with their node", c)
	}

	// docker service scale by hand: scaled back, recorded as a repair.
	sw.mu.Lock()
	s := sw.services["shop-web"]
	s.Replicas = 5
	sw.services["shop-web"] = s
	sw.mu.Unlock()
	if _, err := h.pass("shop", TriggerDockerEvent); err != nil {
		t.Fatal(err)
	}
	if got := sw.services["shop-web"].Replicas; got != 3 {
		t.Errorf("replicas after the repair = %d, want 3", got)
	}
	repairs := h.history("shop", status.KindRepair)
	if len(repairs) != 1 || repairs[0].Summary != "service shop-web was scaled outside Git to 5 replicas; scaled back to 3" {
		t.Errorf("repairs = %+v", repairs)
	}

	// docker service update --env-add by hand (the labels stay): the
	// declared spec is applied again, recorded as a repair naming it.
	sw.mu.Lock()
	s = sw.services["shop-web"]
	s.Spec["env.X"] = "1"
	sw.services["shop-web"] = s
	sw.mu.Unlock()
	if _, err := h.pass("shop", TriggerDockerEvent); err != nil {
		t.Fatal(err)
	}
	if _, added := sw.services["shop-web"].Spec["env.X"]; added {
		t.Errorf("the variable added by hand is still there: %v", sw.services["shop-web"].Spec)
	}
	repairs = h.history("shop", status.KindRepair)
	if len(repairs) != 2 || repairs[0].Summary != "service shop-web was changed outside Git (env.X); reverted (Swarm rolls the tasks)" {
		t.Errorf("repairs = %+v", repairs)
	}
}

// TestSwarmGlobalServiceShowsItsTaskCount: a global service has no
// replica count; status shows as desired the tasks Swarm runs for it
// (one per eligible node), as its health message counts them.
func TestSwarmGlobalServiceShowsItsTaskCount(t *testing.T) {
	app := &manifest.App{Name: "shop", Services: []manifest.Service{{Name: "agent", Spec: manifest.ServiceSpec{Image: "shop/agent:1", Replicas: 1,
		Swarm: &manifest.SwarmSpec{Global: true}}}}}
	actual := &drift.Actual{Services: []drift.SwarmService{{ID: "s1", Name: "shop-agent", App: "shop", Service: "agent", Global: true, Image: "shop/agent:1"}}}
	for _, node := range []string{"manager-1", "worker-1"} {
		actual.Containers = append(actual.Containers, drift.Container{Name: "shop-agent." + node, App: "shop", Service: "agent",
			State: drift.StateRunning, Ready: true, Node: node})
	}
	in := drift.Input{App: "shop", Desired: app, Actual: *actual, Options: drift.Options{Target: manifest.TargetSwarm}}
	h := drift.Assess(in, drift.Compute(in))
	got := serviceStatuses(&revisionState{app: app}, nil, &h, actual)
	if len(got) != 1 || got[0].Desired != 2 || got[0].Ready != 2 || got[0].Message != "2/2 tasks ready" {
		t.Errorf("global service status = %+v, want 2/2 tasks ready and 2 desired", got)
	}
}
