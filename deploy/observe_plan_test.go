package deploy

import (
	"slices"
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// The lookups of ObserveForPlan are decided from the desired app and the
// app's own objects alone; these are the rules, case by case.
func TestColdLookupsFollowWhatThePlanCanTake(t *testing.T) {
	svc := func(name string, replicas int, hostPorts ...int) manifest.Service {
		s := manifest.Service{Name: name, Spec: manifest.ServiceSpec{Replicas: replicas}}
		for _, p := range hostPorts {
			s.Spec.Ports = append(s.Spec.Ports, manifest.Port{ContainerPort: 8080, HostPort: p})
		}
		return s
	}
	desired := &manifest.App{Name: "shop",
		Services: []manifest.Service{svc("web", 3, 18080), svc("db", 1), svc("cache", 2, 16379, 18080)},
		Networks: []manifest.Network{{Name: "default"}},
		Volumes:  []manifest.Volume{{Name: "data"}},
	}
	owned := []drift.Container{
		{Name: "shop-web-1", Service: "web", Slot: 1},
		{Name: "shop-web-3", Service: "web", Slot: 3},
		{Name: "shop-db-1", Service: "db", Slot: 1},
		{Name: "shop-web-9", Service: "web", Slot: 9}, // scaled down: never a name to take
	}
	if got, want := creatableNames("shop", desired, owned), []string{"shop-web-2", "shop-cache-1", "shop-cache-2"}; !slices.Equal(got, want) {
		t.Errorf("names the plan could take = %v, want %v", got, want)
	}
	if got, want := hostPorts(desired), []int{16379, 18080}; !slices.Equal(got, want) {
		t.Errorf("host ports = %v, want %v", got, want)
	}

	nets := []drift.Network{{Name: "shop-default", App: "shop", Resource: "default"}}
	vols := []drift.Volume{{Name: "shop-data", App: "shop", Resource: "data"}}
	if needsAllNetworks(desired, nets) || needsAllVolumes(desired, vols) {
		t.Error("every declared network and volume is owned: nothing to look up")
	}
	if !needsAllNetworks(desired, nil) || !needsAllVolumes(desired, nil) {
		t.Error("a network or volume to create needs its name checked")
	}
	// Owned by name only (no resource label): looked up, to be safe.
	if !needsAllVolumes(desired, []drift.Volume{{Name: "shop-data", App: "shop"}}) {
		t.Error("a volume without its resource label is not counted as owned")
	}
	ext := *desired
	ext.Networks = []manifest.Network{{Name: "default"}, {Name: "edge", Spec: manifest.NetworkSpec{External: true}}}
	if !needsAllNetworks(&ext, nets) {
		t.Error("an external network must be looked up: it has to exist")
	}
}
