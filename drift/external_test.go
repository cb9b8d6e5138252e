package drift

import (
	"testing"

	"github.com/driftless-dev/driftless/drift/manifest"
)

// externalApp: web joins the external network corp-net (declared as
// "backend") and mounts the external volume corp-data (declared "data").
func externalApp() *manifest.App {
	web := service("web", 1, networks("backend"), mount("data"))
	return &manifest.App{
		Name:     testApp,
		Services: []manifest.Service{web},
		Networks: []manifest.Network{{Name: "backend", Spec: manifest.NetworkSpec{External: true, ExternalName: "corp-net"}, Hash: "ext-net"}},
		Volumes:  []manifest.Volume{{Name: "data", Spec: manifest.VolumeSpec{External: true, ExternalName: "corp-data"}, Hash: "ext-vol"}},
	}
}

func TestComputeExternalNetworksAndVolumes(t *testing.T) {
	d := externalApp()
	present := Actual{
		ForeignNetworks: []Network{{ID: "n1", Name: "corp-net", Driver: "bridge"}},
		ForeignVolumes:  []Volume{{Name: "corp-data", Driver: "local"}},
	}
	running := present
	c := replica(d.Services[0], 1)
	c.Networks = []string{"corp-net"}
	running.Containers = []Container{c}

	// Once owned under the app's own name, now external under another one.
	wasOwned := running
	wasOwned.Networks = []Network{{ID: "n0", Name: "shop-backend", App: testApp, Resource: "backend", SpecHash: "old", Driver: "bridge"}}
	wasOwned.Volumes = []Volume{{Name: "shop-data", App: testApp, Resource: "data", SpecHash: "old", Driver: "local"}}

	runPlanCases(t, []planCase{
		{
			name: "present external objects are used, never created",
			in:   input(d, present, Options{Prune: true, AllowVolumeRemoval: true}),
			want: `
Plan for app shop at revision abc1234:

  + container shop-web-1  new service in revision abc1234

Plan: 1 to create, 0 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "a replica on the external network by its Docker name has not drifted",
			in:   input(d, running, Options{Prune: true, AllowVolumeRemoval: true}),
			want: `
Plan for app shop at revision abc1234:

No changes: running state matches revision abc1234.
`,
		},
		{
			name: "missing external objects are conflicts that hold the service back",
			in:   input(d, Actual{}, Options{}),
			want: "\nPlan for app shop at revision abc1234:\n\n" +
				"Conflicts (driftless will not touch these):\n" +
				"  ! network corp-net  external network corp-net does not exist; driftless never creates external networks: create it with `docker network create corp-net`\n" +
				"  ! volume corp-data  external volume corp-data does not exist; driftless never creates external volumes: create it with `docker volume create corp-data`\n" +
				"\nNo changes to make now: 2 conflicts.\n",
		},
		{
			name: "owned objects that became external elsewhere are pruned like undeclared ones",
			in:   input(d, wasOwned, Options{Prune: true, AllowVolumeRemoval: true}),
			want: `
Plan for app shop at revision abc1234:

  - network shop-backend  network backend is no longer declared in revision abc1234
  - volume shop-data  volume data is no longer declared in revision abc1234

Plan: 0 to create, 0 to replace, 0 to start, 2 to remove.
`,
		},
	})

	// Whatever the options, an external object is never in a change.
	for _, act := range []Actual{present, running, wasOwned, {}} {
		for _, opts := range []Options{{}, {Prune: true, AllowVolumeRemoval: true}} {
			plan := Compute(input(d, act, opts))
			for _, ch := range append(append(plan.Changes, plan.Pruneable...), plan.Deferred...) {
				if ch.Name == "corp-net" || ch.Name == "corp-data" {
					t.Errorf("external object in a change: %+v", ch)
				}
			}
		}
	}
}
