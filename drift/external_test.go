package drift

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
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

// TestComputeExternalObjectsOfAnotherApp: an external network or volume
// that carries another app's label is not this app's to join or mount
// unless Options.Shared lists it; one without a driftless label (a
// reverse proxy's network) or with this app's own label is used as
// before.
func TestComputeExternalObjectsOfAnotherApp(t *testing.T) {
	d := externalApp()
	d.Networks[0].Source = manifest.Position{File: "compose.yaml", Line: 12, Column: 3}
	d.Volumes[0].Source = manifest.Position{File: "compose.yaml", Line: 16, Column: 3}
	blogs := Actual{
		ForeignNetworks: []Network{{ID: "n1", Name: "corp-net", App: "blog", Driver: "bridge"}},
		ForeignVolumes:  []Volume{{Name: "corp-data", App: "blog", Driver: "local"}},
	}
	// Two networks may carry one name; one of another app's is enough.
	twoNets := blogs
	twoNets.ForeignNetworks = append([]Network{{ID: "n0", Name: "corp-net", Driver: "bridge"}}, blogs.ForeignNetworks...)
	twoNets.ForeignVolumes = []Volume{{Name: "corp-data", Driver: "local"}}
	own := Actual{
		Networks: []Network{{ID: "n1", Name: "corp-net", App: testApp, Resource: "backend", Driver: "bridge"}},
		Volumes:  []Volume{{Name: "corp-data", App: testApp, Resource: "data", Driver: "local"}},
	}
	const created = `
Plan for app shop at revision abc1234:

  + container shop-web-1  new service in revision abc1234

Plan: 1 to create, 0 to replace, 0 to start, 0 to remove.
`
	runPlanCases(t, []planCase{
		{
			name: "another app's objects are conflicts that hold the service back",
			in:   input(d, blogs, Options{}),
			want: "\nPlan for app shop at revision abc1234:\n\n" +
				"Conflicts (driftless will not touch these):\n" +
				"  ! network corp-net  compose.yaml:12:3: external network corp-net belongs to app blog (label dev.driftless.app); an app may not join another app's networks: if app blog shares it on purpose, list it for this app with `shared: {networks: [corp-net]}` in driftless.yaml (or `--shared-network corp-net`)\n" +
				"  ! volume corp-data  compose.yaml:16:3: external volume corp-data belongs to app blog (label dev.driftless.app); an app may not mount another app's volumes: if app blog shares it on purpose, list it for this app with `shared: {volumes: [corp-data]}` in driftless.yaml (or `--shared-volume corp-data`)\n" +
				"\nNo changes to make now: 2 conflicts.\n",
		},
		{
			name: "listed as shared, they are used",
			in:   input(d, blogs, Options{Shared: Shared{Networks: []string{"corp-net"}, Volumes: []string{"corp-data"}}}),
			want: created,
		},
		{
			name: "a network shared by name does not share the volume",
			in:   input(d, blogs, Options{Shared: Shared{Networks: []string{"corp-net"}}}),
			want: "\nPlan for app shop at revision abc1234:\n\n" +
				"Conflicts (driftless will not touch these):\n" +
				"  ! volume corp-data  compose.yaml:16:3: external volume corp-data belongs to app blog (label dev.driftless.app); an app may not mount another app's volumes: if app blog shares it on purpose, list it for this app with `shared: {volumes: [corp-data]}` in driftless.yaml (or `--shared-volume corp-data`)\n" +
				"\nNo changes to make now: 1 conflict.\n",
		},
		{
			name: "one of two networks of that name is another app's",
			in:   input(d, twoNets, Options{}),
			want: "\nPlan for app shop at revision abc1234:\n\n" +
				"Conflicts (driftless will not touch these):\n" +
				"  ! network corp-net  compose.yaml:12:3: external network corp-net belongs to app blog (label dev.driftless.app); an app may not join another app's networks: if app blog shares it on purpose, list it for this app with `shared: {networks: [corp-net]}` in driftless.yaml (or `--shared-network corp-net`)\n" +
				"\nNo changes to make now: 1 conflict.\n",
		},
		{
			name: "the app's own labelled objects are its to use",
			in:   input(d, own, Options{}),
			want: created,
		},
	})
	for _, act := range []Actual{blogs, twoNets} {
		for _, c := range Compute(input(d, act, Options{})).Conflicts {
			if c.Owner != "blog" {
				t.Errorf("conflict %+v: want owner blog", c)
			}
		}
	}
	// The agent names the file as the repository has it.
	for _, c := range Compute(input(d, blogs, Options{SourceDir: "apps/shop"})).Conflicts {
		if !strings.HasPrefix(c.Reason, "apps/shop/compose.yaml:") {
			t.Errorf("conflict reason %q: want the position under the app's directory", c.Reason)
		}
	}
}

// TestDecideRefusesARevisionThatUsesAnotherAppsObjects: a new revision
// (Guard) is refused as a whole; the accepted one is not refused, its
// services that use the objects stay held back by the conflict.
func TestDecideRefusesARevisionThatUsesAnotherAppsObjects(t *testing.T) {
	d := externalApp()
	d.Services = append(d.Services, service("api", 1))
	d.Volumes[0].Source = manifest.Position{File: "compose.yaml", Line: 16, Column: 3}
	act := Actual{
		ForeignNetworks: []Network{{ID: "n1", Name: "corp-net", Driver: "bridge"}},
		ForeignVolumes:  []Volume{{Name: "corp-data", App: "blog", Driver: "local"}},
	}
	in := input(d, act, Options{})
	plan := Compute(in)
	dec := Decide(in, plan, Policy{Guard: true, SelfHeal: true, MaxRemovalPercent: 100})
	want := "refuse: the revision uses another app's objects: compose.yaml:16:3: external volume corp-data belongs to app blog (label dev.driftless.app); an app may not mount another app's volumes: if app blog shares it on purpose, list it for this app with `shared: {volumes: [corp-data]}` in driftless.yaml (or `--shared-volume corp-data`)"
	if dec.String() != want || len(dec.Apply.Changes) != 0 {
		t.Fatalf("decision %q with %d changes, want\n%s\nand nothing applied", dec, len(dec.Apply.Changes), want)
	}
	if dec := Decide(in, plan, Policy{SelfHeal: true, MaxRemovalPercent: 100}); dec.String() != "apply 1, hold 0" || dec.Apply.Changes[0].Name != "shop-api-1" {
		t.Fatalf("accepted revision: %s %+v, want only the service that uses neither applied", dec, dec.Apply.Changes)
	}
	in.Options.Shared.Volumes = []string{"corp-data"}
	if dec := Decide(in, Compute(in), Policy{Guard: true, SelfHeal: true, MaxRemovalPercent: 100}); dec.Refusal != "" || len(dec.Apply.Changes) != 2 {
		t.Fatalf("shared: %s, want both services applied", dec)
	}
}

func TestSharedValidate(t *testing.T) {
	if err := (Shared{Networks: []string{"traefik-public", "corp.net_1"}, Volumes: []string{"media"}}).Validate(); err != nil {
		t.Fatalf("valid names: %v", err)
	}
	err := (Shared{Networks: []string{"", "a b"}, Volumes: []string{"media", "media"}}).Validate()
	for _, want := range []string{`shared.networks: "" is not a Docker network name`, `shared.networks: "a b" is not a Docker network name`, `shared.volumes: "media" is listed twice`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %q", err, want)
		}
	}
}
