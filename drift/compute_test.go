package drift

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

type planCase struct {
	name string
	in   Input
	want string
}

func runPlanCases(t *testing.T, cases []planCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkPlan(t, tc.in, tc.want) })
	}
}

func TestComputeReplicas(t *testing.T) {
	web2, web3, web4 := service("web", 2), service("web", 3), service("web", 4)
	three := desiredApp(web3)

	gap := converged(three)
	drop(&gap, "shop-web-2")

	lastGone := converged(three)
	drop(&lastGone, "shop-web-3")

	oldSpec := service("web", 2, image("shop/web:v0"))

	runPlanCases(t, []planCase{
		{
			name: "converged",
			in:   input(three, converged(three), Options{}),
			want: `
Plan for app shop at revision abc1234:

No changes: running state matches revision abc1234.
`,
		},
		{
			name: "converged without a revision",
			in:   Input{App: testApp, Desired: three, Actual: converged(three), Options: Options{Now: t0}},
			want: `
Plan for app shop:

No changes.
`,
		},
		{
			name: "new app starts with its network, services in dependsOn order",
			in: input(desiredApp(
				service("web", 2, dependsOn("api")),
				service("api", 1, dependsOn("db")),
				service("db", 1),
			), Actual{}, Options{}),
			want: `
Plan for app shop at revision abc1234:

  + network shop-default  default network of services that name no network
  + container shop-db-1  new service in revision abc1234
  + container shop-api-1  new service in revision abc1234
  + container shop-web-1  new service in revision abc1234
  + container shop-web-2  new service in revision abc1234

Plan: 5 to create, 0 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "scale up",
			in:   input(three, converged(desiredApp(web2)), Options{}),
			want: `
Plan for app shop at revision abc1234:

  + container shop-web-3  scale up: replicas 2 → 3

Plan: 1 to create, 0 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "scale up known from the last apply",
			in: input(desiredApp(service("web", 4)), converged(desiredApp(web2)), Options{
				Applied: map[string]AppliedService{"web": {Hash: web2.Hash, Replicas: 2}},
			}),
			want: `
Plan for app shop at revision abc1234:

  + container shop-web-3  scale up: replicas 2 → 4
  + container shop-web-4  scale up: replicas 2 → 4

Plan: 2 to create, 0 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "scale down removes the highest slots first",
			in:   input(desiredApp(web2), converged(desiredApp(web4)), Options{}),
			want: `
Plan for app shop at revision abc1234:

  - container shop-web-4  scale down: replicas 4 → 2
  - container shop-web-3  scale down: replicas 4 → 2

Plan: 0 to create, 0 to replace, 0 to start, 2 to remove.
`,
		},
		{
			name: "a gap below a replica of the desired spec was made outside Git",
			in:   input(three, gap, Options{}),
			want: `
Plan for app shop at revision abc1234:

  + container shop-web-2  removed outside Git

Plan: 1 to create, 0 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "a replica the last apply converged is gone",
			in: input(three, lastGone, Options{
				Applied: map[string]AppliedService{"web": {Hash: web3.Hash, Replicas: 3}},
			}),
			want: `
Plan for app shop at revision abc1234:

  + container shop-web-3  removed outside Git

Plan: 1 to create, 0 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "a missing replica of a spec the last apply did not reach is Git's",
			in: input(three, lastGone, Options{
				Applied: map[string]AppliedService{"web": {Hash: oldSpec.Hash, Replicas: 3}},
			}),
			want: `
Plan for app shop at revision abc1234:

  + container shop-web-3  replica missing

Plan: 1 to create, 0 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "a new revision that keeps the spec touches nothing",
			in: func() Input {
				act := converged(three)
				for i := range act.Containers {
					act.Containers[i].Revision = "0000000"
				}
				return input(three, act, Options{Revision: "fffffff1234"})
			}(),
			want: `
Plan for app shop at revision fffffff:

No changes: running state matches revision fffffff.
`,
		},
	})
}

func TestComputeSpecChanges(t *testing.T) {
	secret := func(s *manifest.ServiceSpec) { s.SecretEnv = []string{"DB_PASSWORD"} }
	before := service("web", 2, env("LOG_LEVEL", "info", "DB_PASSWORD", "hash-of-old"), secret)
	after := service("web", 3, image("shop/web:v2"), env("LOG_LEVEL", "debug", "DB_PASSWORD", "hash-of-new"), secret)
	db := service("db", 1)

	noSpec := converged(desiredApp(before))
	edit(&noSpec, "shop-web-1", func(c *Container) { c.Spec, c.SpecHash = nil, "0ldhash" })
	noSpecWant := desiredApp(before)
	noSpecWant.Services[0].Hash = "n3whash"

	imageDrift := converged(desiredApp(before, db))
	edit(&imageDrift, "shop-web-1", func(c *Container) { c.Image = "shop/web:hotfix" })
	netDrift := converged(desiredApp(before))
	edit(&netDrift, "shop-web-2", func(c *Container) { c.Networks = []string{"bridge"} })
	dead := converged(desiredApp(db))
	edit(&dead, "shop-db-1", func(c *Container) { c.State, c.Status = StateDead, "Dead" })

	runPlanCases(t, []planCase{
		{
			name: "changed spec replaces every replica; secrets stay hidden; unchanged services untouched",
			in:   input(desiredApp(after, db), converged(desiredApp(before, db)), Options{}),
			want: `
Plan for app shop at revision abc1234:

  -/+ container shop-web-1  spec changed in revision abc1234
        image: shop/web:v1 → shop/web:v2
        env.DB_PASSWORD: (sensitive) → (sensitive)
        env.LOG_LEVEL: info → debug
  -/+ container shop-web-2  spec changed in revision abc1234
        image: shop/web:v1 → shop/web:v2
        env.DB_PASSWORD: (sensitive) → (sensitive)
        env.LOG_LEVEL: info → debug
  + container shop-web-3  scale up: replicas 2 → 3

Plan: 1 to create, 2 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "hash differs and no recorded spec",
			in:   input(noSpecWant, noSpec, Options{}),
			want: `
Plan for app shop at revision abc1234:

  -/+ container shop-web-1  spec changed in revision abc1234
        spec-hash: 0ldhash → n3whash
  -/+ container shop-web-2  spec changed in revision abc1234
        spec-hash: ` + before.Hash + ` → n3whash

Plan: 0 to create, 2 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "image changed outside Git",
			in:   input(desiredApp(before, db), imageDrift, Options{}),
			want: `
Plan for app shop at revision abc1234:

  -/+ container shop-web-1  changed outside Git: image
        image: shop/web:hotfix → shop/web:v1

Plan: 0 to create, 1 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "network detached outside Git is reconnected in place",
			in:   input(desiredApp(before), netDrift, Options{}),
			want: `
Plan for app shop at revision abc1234:

  ~ container shop-web-2 (update in place)  changed outside Git: networks
        networks: bridge → shop-default

Plan: 0 to create, 0 to replace, 0 to start, 0 to remove, 1 to update in place.
`,
		},
		{
			name: "dead container is replaced",
			in:   input(desiredApp(db), dead, Options{}),
			want: `
Plan for app shop at revision abc1234:

  -/+ container shop-db-1  dead outside Git: Dead

Plan: 0 to create, 1 to replace, 0 to start, 0 to remove.
`,
		},
	})
}

func TestComputeStoppedReplicas(t *testing.T) {
	stopped := func(s manifest.Service, state ContainerState, code int, status string) Actual {
		act := converged(desiredApp(s))
		edit(&act, manifest.ContainerName(testApp, s.Name, 1), func(c *Container) {
			c.State, c.ExitCode, c.Status, c.Ready = state, code, status, false
		})
		return act
	}
	db := service("db", 1)
	never := service("db", 1, restart(manifest.RestartNever))
	onFailure := service("db", 1, restart(manifest.RestartOnFailure))
	oldDB := service("db", 1, image("shop/db:v0"))
	noChanges := `
Plan for app shop at revision abc1234:

No changes: running state matches revision abc1234.
`
	runPlanCases(t, []planCase{
		{
			name: "stopped outside Git is started",
			in:   input(desiredApp(db), stopped(db, StateExited, 137, "Exited (137) 5 seconds ago"), Options{}),
			want: `
Plan for app shop at revision abc1234:

  ~ container shop-db-1 (start)  stopped outside Git: Exited (137) 5 seconds ago

Plan: 0 to create, 0 to replace, 1 to start, 0 to remove.
`,
		},
		{
			name: "created but never started (crash between create and start)",
			in:   input(desiredApp(db), stopped(db, StateCreated, 0, "Created"), Options{}),
			want: `
Plan for app shop at revision abc1234:

  ~ container shop-db-1 (start)  created but never started

Plan: 0 to create, 0 to replace, 1 to start, 0 to remove.
`,
		},
		{
			name: "stopped replica of a spec the last apply did not reach is Git's",
			in: input(desiredApp(db), stopped(db, StateExited, 0, "Exited (0) 3 minutes ago"), Options{
				Applied: map[string]AppliedService{"db": {Hash: oldDB.Hash, Replicas: 1}},
			}),
			want: `
Plan for app shop at revision abc1234:

  ~ container shop-db-1 (start)  not running: Exited (0) 3 minutes ago

Plan: 0 to create, 0 to replace, 1 to start, 0 to remove.
`,
		},
		{
			name: "restart never: an exit of its own is left for Assess",
			in:   input(desiredApp(never), stopped(never, StateExited, 1, "Exited (1) 2 seconds ago"), Options{}),
			want: noChanges,
		},
		{
			name: "restart never: stopped by a signal is started",
			in:   input(desiredApp(never), stopped(never, StateExited, 143, "Exited (143) 1 second ago"), Options{}),
			want: `
Plan for app shop at revision abc1234:

  ~ container shop-db-1 (start)  stopped outside Git: Exited (143) 1 second ago

Plan: 0 to create, 0 to replace, 1 to start, 0 to remove.
`,
		},
		{
			name: "restart on-failure: a clean exit stays down",
			in:   input(desiredApp(onFailure), stopped(onFailure, StateExited, 0, "Exited (0) 1 second ago"), Options{}),
			want: noChanges,
		},
		{
			name: "restart on-failure: a failed exit is started",
			in:   input(desiredApp(onFailure), stopped(onFailure, StateExited, 2, "Exited (2) 1 second ago"), Options{}),
			want: `
Plan for app shop at revision abc1234:

  ~ container shop-db-1 (start)  stopped outside Git: Exited (2) 1 second ago

Plan: 0 to create, 0 to replace, 1 to start, 0 to remove.
`,
		},
		{
			name: "restarting is Docker's business",
			in:   input(desiredApp(db), stopped(db, StateRestarting, 1, "Restarting (1) 3 seconds ago"), Options{}),
			want: noChanges,
		},
		{
			name: "crash-loop backoff defers the start",
			in: input(desiredApp(db), stopped(db, StateExited, 137, "Exited (137) 5 seconds ago"), Options{
				Backoff: map[string]time.Time{"shop-db-1": t0.Add(30 * time.Second)},
			}),
			want: `
Plan for app shop at revision abc1234:

Deferred (crash-loop backoff):
  ~ container shop-db-1 (start)  not before 12:00:30 (stopped outside Git: Exited (137) 5 seconds ago)

No changes to make now: 1 deferred.
`,
		},
		{
			name: "backoff does not hold back a removal",
			in: input(desiredApp(service("db", 1)), converged(desiredApp(service("db", 2))), Options{
				Backoff: map[string]time.Time{"shop-db-2": t0.Add(time.Minute)},
			}),
			want: `
Plan for app shop at revision abc1234:

  - container shop-db-2  scale down: replicas 2 → 1

Plan: 0 to create, 0 to replace, 0 to start, 1 to remove.
`,
		},
		{
			name: "an expired backoff no longer defers",
			in: input(desiredApp(db), stopped(db, StateExited, 137, "Exited (137) 5 seconds ago"), Options{
				Backoff: map[string]time.Time{"shop-db-1": t0.Add(-time.Second)},
			}),
			want: `
Plan for app shop at revision abc1234:

  ~ container shop-db-1 (start)  stopped outside Git: Exited (137) 5 seconds ago

Plan: 0 to create, 0 to replace, 1 to start, 0 to remove.
`,
		},
	})
}

func TestComputeSlotsWithSeveralContainers(t *testing.T) {
	old := service("web", 2, image("shop/web:v0"))
	cur := service("web", 2)

	// A replace that crashed after creating the new container: slot 1 holds
	// the old replica (running) and the new one (created, never started).
	midReplace := converged(desiredApp(old))
	next := replica(cur, 1)
	next.ID, next.Name, next.State, next.Status, next.Created = "id-next", "shop-web-1-next", StateCreated, "Created", t0
	midReplace.Containers = append(midReplace.Containers, next)

	// Two copies of the desired spec in one slot: the running one stays.
	twins := converged(desiredApp(cur))
	twin := replica(cur, 2)
	twin.ID, twin.Name, twin.State, twin.Status, twin.Created = "id-twin", "shop-web-2-twin", StateExited, "Exited (0) 1 hour ago", t0
	twins.Containers = append(twins.Containers, twin)

	unnumbered := converged(desiredApp(cur))
	stray := replica(cur, 0)
	stray.ID, stray.Name = "id-stray", "shop-web-stray"
	unnumbered.Containers = append(unnumbered.Containers, stray)

	// Two stopped copies of the desired spec: the newest stays; at equal
	// age, the lowest ID.
	stoppedTwins := func(createdB time.Time) Actual {
		act := converged(desiredApp(service("db", 1)))
		edit(&act, "shop-db-1", func(c *Container) {
			c.ID, c.State, c.Status, c.Created = "id-b", StateExited, "Exited (137) 1 second ago", t0
		})
		other := act.Containers[0]
		other.ID, other.Name, other.Created = "id-a", "shop-db-1-copy", createdB
		act.Containers = append(act.Containers, other)
		return act
	}

	runPlanCases(t, []planCase{
		{
			name: "stopped twins: the newest stays",
			in:   input(desiredApp(service("db", 1)), stoppedTwins(t0.Add(-time.Minute)), Options{}),
			want: `
Plan for app shop at revision abc1234:

  - container shop-db-1-copy  extra container for slot 1 (keeping shop-db-1)
  ~ container shop-db-1 (start)  stopped outside Git: Exited (137) 1 second ago

Plan: 0 to create, 0 to replace, 1 to start, 1 to remove.
`,
		},
		{
			name: "stopped twins of equal age: the lowest ID stays",
			in:   input(desiredApp(service("db", 1)), stoppedTwins(t0), Options{}),
			want: `
Plan for app shop at revision abc1234:

  - container shop-db-1  extra container for slot 1 (keeping shop-db-1-copy)
  ~ container shop-db-1-copy (start)  stopped outside Git: Exited (137) 1 second ago

Plan: 0 to create, 0 to replace, 1 to start, 1 to remove.
`,
		},
		{
			name: "crash mid-replace: the old copy goes, the new one starts",
			in:   input(desiredApp(cur), midReplace, Options{}),
			want: `
Plan for app shop at revision abc1234:

  - container shop-web-1  extra container for slot 1 (keeping shop-web-1-next)
  -/+ container shop-web-2  spec changed in revision abc1234
        image: shop/web:v0 → shop/web:v1
  ~ container shop-web-1-next (start)  created but never started

Plan: 0 to create, 1 to replace, 1 to start, 1 to remove.
`,
		},
		{
			name: "duplicate of the desired spec: the running one stays",
			in:   input(desiredApp(cur), twins, Options{}),
			want: `
Plan for app shop at revision abc1234:

  - container shop-web-2-twin  extra container for slot 2 (keeping shop-web-2)

Plan: 0 to create, 0 to replace, 0 to start, 1 to remove.
`,
		},
		{
			name: "a container without a slot is removed",
			in:   input(desiredApp(cur), unnumbered, Options{}),
			want: `
Plan for app shop at revision abc1234:

  - container shop-web-stray  replica has no valid slot label

Plan: 0 to create, 0 to replace, 0 to start, 1 to remove.
`,
		},
	})
}

func TestComputePrune(t *testing.T) {
	web := service("web", 2, mount("data"))
	oldSvc := service("old", 1, networks("legacy"))
	before := desiredApp(web, oldSvc)
	act := converged(before)
	act.Volumes = append(act.Volumes, Volume{Name: "shop-cache", App: testApp, Resource: "cache", SpecHash: "vol-cache", Driver: "local"})
	now := desiredApp(service("web", 3, mount("data")))

	runPlanCases(t, []planCase{
		{
			name: "undeclared objects are only listed without --prune",
			in:   input(now, act, Options{}),
			want: `
Plan for app shop at revision abc1234:

  + container shop-web-3  scale up: replicas 2 → 3

Would be removed with --prune:
  - container shop-old-1  service old is no longer declared in revision abc1234
  - network shop-legacy  network legacy is no longer declared in revision abc1234
  - volume shop-cache  kept: volumes are never removed without --allow-volume-removal

Plan: 1 to create, 0 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "prune removes containers, then networks; volumes stay",
			in:   input(now, act, Options{Prune: true}),
			want: `
Plan for app shop at revision abc1234:

  + container shop-web-3  scale up: replicas 2 → 3
  - container shop-old-1  service old is no longer declared in revision abc1234
  - network shop-legacy  network legacy is no longer declared in revision abc1234

Would be removed with --prune:
  - volume shop-cache  kept: volumes are never removed without --allow-volume-removal

Plan: 1 to create, 0 to replace, 0 to start, 2 to remove.
`,
		},
		{
			name: "prune with volume removal removes volumes last",
			in:   input(now, act, Options{Prune: true, AllowVolumeRemoval: true}),
			want: `
Plan for app shop at revision abc1234:

  + container shop-web-3  scale up: replicas 2 → 3
  - container shop-old-1  service old is no longer declared in revision abc1234
  - network shop-legacy  network legacy is no longer declared in revision abc1234
  - volume shop-cache  volume cache is no longer declared in revision abc1234

Plan: 1 to create, 0 to replace, 0 to start, 3 to remove.
`,
		},
		{
			name: "empty revision removes nothing without --prune",
			in:   input(nil, converged(desiredApp(web)), Options{}),
			want: `
Plan for app shop at revision abc1234:

Would be removed with --prune:
  - container shop-web-1  service web is no longer declared in revision abc1234
  - container shop-web-2  service web is no longer declared in revision abc1234
  - network shop-default  network default is no longer declared in revision abc1234
  - volume shop-data  kept: volumes are never removed without --allow-volume-removal

No changes: running state matches revision abc1234.
`,
		},
		{
			name: "an undeclared service that stays keeps its host port",
			in: func() Input {
				act := converged(desiredApp(service("old", 1, hostPort(8080))))
				return input(desiredApp(service("web", 1, hostPort(8080))), act, Options{})
			}(),
			want: `
Plan for app shop at revision abc1234:

Would be removed with --prune:
  - container shop-old-1  service old is no longer declared in revision abc1234

Conflicts (driftless will not touch these):
  ! container shop-old-1  publishes host port 8080 that service web needs

No changes to make now: 1 conflict.
`,
		},
	})
}

func TestComputeNetworksAndVolumes(t *testing.T) {
	d := desiredApp(service("web", 2, networks("backend")), service("db", 1, mount("data")), service("log", 1, mount("logs")))
	act := converged(d)
	for i := range act.Networks {
		if act.Networks[i].Resource == "backend" {
			act.Networks[i].SpecHash, act.Networks[i].Driver = "net-old", "macvlan"
		}
	}
	act.Networks = append(act.Networks, Network{ID: "net-id-legacy", Name: "shop-legacy", App: testApp, Resource: "legacy", Driver: "bridge"})
	var vols []Volume
	for _, v := range act.Volumes {
		switch v.Resource {
		case "data":
			v.SpecHash = "vol-old"
			vols = append(vols, v)
		case "logs": // gone
		default:
			vols = append(vols, v)
		}
	}
	act.Volumes = vols

	noDefault := converged(desiredApp(service("web", 1)))
	noDefault.Networks = nil

	runPlanCases(t, []planCase{
		{
			name: "network replaced with its containers; volumes created, never replaced",
			in:   input(d, act, Options{Prune: true}),
			want: `
Plan for app shop at revision abc1234:

  -/+ network shop-backend  spec changed in revision abc1234
        driver: macvlan → bridge
  + volume shop-logs  declared in revision abc1234
  -/+ container shop-web-1  network backend is replaced
  -/+ container shop-web-2  network backend is replaced
  - network shop-legacy  network legacy is no longer declared in revision abc1234

Conflicts (driftless will not touch these):
  ! volume shop-data  volume spec changed; driftless never replaces volumes: remove shop-data by hand to recreate it

Plan: 1 to create, 3 to replace, 0 to start, 1 to remove.
`,
		},
		{
			name: "missing network is created",
			in:   input(desiredApp(service("web", 1)), noDefault, Options{}),
			want: `
Plan for app shop at revision abc1234:

  + network shop-default  default network of services that name no network

Plan: 1 to create, 0 to replace, 0 to start, 0 to remove.
`,
		},
	})
}

func TestComputeConflicts(t *testing.T) {
	web := service("web", 2)
	api := service("api", 1, hostPort(8080))
	act := converged(desiredApp(web))
	drop(&act, "shop-web-2")
	act.ForeignContainers = []Container{
		{ID: "f1", Name: "/shop-web-2", State: StateRunning},
		{ID: "f2", Name: "nginx", State: StateRunning, HostPorts: []int{80, 8080}},
	}
	otherApp := converged(desiredApp(service("db", 1)))
	otherApp.Containers = append(otherApp.Containers, Container{ID: "o1", Name: "shop-db-2", App: "shop-db", Service: "2", Slot: 1})
	otherApp.Containers = append(otherApp.Containers, Container{ID: "o2", Name: "shop-other-1", App: "shop-other", Service: "x", Slot: 1})

	netTaken := Actual{ForeignNetworks: []Network{{ID: "n1", Name: "shop-backend"}}, ForeignVolumes: []Volume{{Name: "shop-data", App: "legacy"}}}

	runPlanCases(t, []planCase{
		{
			name: "foreign name and host port hold back creates",
			in:   input(desiredApp(web, api), act, Options{}),
			want: `
Plan for app shop at revision abc1234:

Conflicts (driftless will not touch these):
  ! container nginx  publishes host port 8080 that service api needs
  ! container shop-web-2  name is held by a container driftless does not own

No changes to make now: 2 conflicts.
`,
		},
		{
			name: "a container of another app holding our name",
			in:   input(desiredApp(service("db", 2)), otherApp, Options{}),
			want: `
Plan for app shop at revision abc1234:

Conflicts (driftless will not touch these):
  ! container shop-db-2  name is held by a container of app shop-db

No changes to make now: 1 conflict.
`,
		},
		{
			name: "foreign network and volume names hold back their services",
			in: input(desiredApp(service("web", 1, networks("backend")), service("db", 1, mount("data")), service("cache", 1)),
				netTaken, Options{}),
			want: `
Plan for app shop at revision abc1234:

  + network shop-default  default network of services that name no network
  + container shop-cache-1  new service in revision abc1234

Conflicts (driftless will not touch these):
  ! network shop-backend  name is held by a network driftless does not own
  ! volume shop-data  name is held by a volume of app legacy

Plan: 2 to create, 0 to replace, 0 to start, 0 to remove.
`,
		},
	})
}

func TestComputeDependencyCycleStillPlansEveryService(t *testing.T) {
	// The parser rejects cycles; the differ must still terminate and plan
	// each service once: free services first, the cycle broken at the first
	// name.
	in := input(desiredApp(service("web", 1, dependsOn("api")), service("api", 1, dependsOn("web")), service("db", 1)), Actual{}, Options{})
	checkPlan(t, in, `
Plan for app shop at revision abc1234:

  + network shop-default  default network of services that name no network
  + container shop-db-1  new service in revision abc1234
  + container shop-api-1  new service in revision abc1234
  + container shop-web-1  new service in revision abc1234

Plan: 4 to create, 0 to replace, 0 to start, 0 to remove.
`)
}

// mixedSituation exercises most rules at once; its plan must not depend on
// the order of any input list.
func mixedSituation() Input {
	web := service("web", 3, dependsOn("api"))
	api := service("api", 2, dependsOn("db"), hostPort(8443))
	db := service("db", 1, mount("data"))
	worker := service("worker", 2)
	d := desiredApp(web, api, db, worker, service("cron", 1))
	act := converged(desiredApp(service("web", 4, image("shop/web:v0"), dependsOn("api")), api, db, worker, service("gone", 2)))
	drop(&act, "shop-worker-1")
	edit(&act, "shop-db-1", func(c *Container) { c.State, c.ExitCode, c.Status = StateExited, 137, "Exited (137) 1 minute ago" })
	edit(&act, "shop-api-2", func(c *Container) { c.Image = "shop/api:debug" })
	act.Containers = append(act.Containers, Container{ID: "f1", Name: "shop-cron-1", App: "other"})
	act.ForeignContainers = []Container{{ID: "f2", Name: "proxy", HostPorts: []int{9000}}}
	return input(d, act, Options{Prune: true, Backoff: map[string]time.Time{"shop-worker-1": t0.Add(time.Minute)}})
}

func TestComputeMixedOrder(t *testing.T) {
	checkPlan(t, mixedSituation(), `
Plan for app shop at revision abc1234:

  ~ container shop-db-1 (start)  stopped outside Git: Exited (137) 1 minute ago
  -/+ container shop-api-2  changed outside Git: image
        image: shop/api:debug → shop/api:v1
  - container shop-web-4  scale down: replicas 4 → 3
  -/+ container shop-web-1  spec changed in revision abc1234
        image: shop/web:v0 → shop/web:v1
  -/+ container shop-web-2  spec changed in revision abc1234
        image: shop/web:v0 → shop/web:v1
  -/+ container shop-web-3  spec changed in revision abc1234
        image: shop/web:v0 → shop/web:v1
  - container shop-gone-1  service gone is no longer declared in revision abc1234
  - container shop-gone-2  service gone is no longer declared in revision abc1234

Deferred (crash-loop backoff):
  + container shop-worker-1  not before 12:01:00 (removed outside Git)

Conflicts (driftless will not touch these):
  ! container shop-cron-1  name is held by a container of app other

Plan: 0 to create, 4 to replace, 1 to start, 3 to remove.
`)
}

func TestComputeIsDeterministic(t *testing.T) {
	base := mixedSituation()
	want := Compute(base)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		in := mixedSituation()
		d := *in.Desired
		d.Services = append([]manifest.Service(nil), d.Services...)
		d.Networks = append([]manifest.Network(nil), d.Networks...)
		d.Volumes = append([]manifest.Volume(nil), d.Volumes...)
		in.Desired = &d
		shuffle(rng, d.Services)
		shuffle(rng, d.Networks)
		shuffle(rng, d.Volumes)
		shuffle(rng, in.Actual.Containers)
		shuffle(rng, in.Actual.Networks)
		shuffle(rng, in.Actual.Volumes)
		shuffle(rng, in.Actual.ForeignContainers)
		got := Compute(in)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("shuffle %d: plan differs\n--- got:\n%s\n--- want:\n%s", i, got, want)
		}
	}
}

func shuffle[T any](rng *rand.Rand, s []T) {
	rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
}
