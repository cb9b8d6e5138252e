package drift

import (
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

// TestComputeMergesDuplicateNetworks: Docker on API 1.41 lets a second
// network take a name (an agent killed after Docker made the network makes
// it again after its restart), and every container start then fails on the
// ambiguous name. The plan keeps the oldest and removes each other first,
// moving its containers (MergeInto); the services' own changes follow.
func TestComputeMergesDuplicateNetworks(t *testing.T) {
	d := desiredApp(service("web", 2))
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	act := converged(d)
	kept := act.Networks[0]
	kept.ID, kept.Created = "net-zzz-oldest", t0
	act.Networks = []Network{
		{ID: "net-aaa-younger", Name: kept.Name, App: testApp, Resource: kept.Resource, SpecHash: kept.SpecHash, Driver: "bridge", Created: t0.Add(time.Second)},
		kept,
		{ID: "net-bbb-youngest", Name: kept.Name, App: testApp, Resource: kept.Resource, SpecHash: kept.SpecHash, Driver: "bridge", Created: t0.Add(time.Minute)},
	}
	drop(&act, "shop-web-2")

	checkPlan(t, input(d, act, Options{}), `
Plan for app shop at revision abc1234:

  - network shop-default  a second network named shop-default (net-aaa-youn): every container start fails while the name is ambiguous; its containers move to the oldest, net-zzz-olde
  - network shop-default  a second network named shop-default (net-bbb-youn): every container start fails while the name is ambiguous; its containers move to the oldest, net-zzz-olde
  + container shop-web-2  scale up: replicas 1 → 2

Plan: 1 to create, 0 to replace, 0 to start, 2 to remove.
`)
	plan := Compute(input(d, act, Options{}))
	for _, c := range plan.Changes[:2] {
		if c.MergeInto != "net-zzz-oldest" || c.Cause != CauseDrift || c.Action != ActionRemove {
			t.Errorf("%+v: want a drift removal merged into the oldest network", c)
		}
	}
	for _, c := range plan.Changes[2:] {
		if c.MergeInto != "" {
			t.Errorf("%+v: only duplicates merge", c)
		}
	}

	// With self-heal off the repair is shown and held like any drift.
	dec := Decide(input(d, act, Options{}), plan, Policy{})
	if len(dec.Held) != 2 || dec.Held[0].Change.MergeInto == "" {
		t.Errorf("self-heal off: %s", dec)
	}

	// A network of another owner with the name is a conflict, as ever:
	// never merged, never removed.
	foreign := converged(d)
	foreign.ForeignNetworks = []Network{{ID: "net-foreign", Name: kept.Name, Driver: "bridge"}}
	for _, c := range Compute(input(d, foreign, Options{})).Changes {
		if c.Kind == KindNetwork {
			t.Errorf("foreign network with the name: %+v", c)
		}
	}

	// Swarm keeps its own networks.
	swarm := act
	if p := Compute(input(d, swarm, Options{Target: manifest.TargetSwarm})); hasMerge(p) {
		t.Errorf("swarm: %v", p.Changes)
	}
}

func hasMerge(p Plan) bool {
	for _, c := range p.Changes {
		if c.MergeInto != "" {
			return true
		}
	}
	return false
}
