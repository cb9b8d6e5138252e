package drift

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

// facts renders the changes of a plan as the applier sees them: action,
// kind, name, service/slot, container ID and cause — what must be right
// whatever the reasons say.
func facts(cs []Change) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(string(c.Action) + " " + string(c.Kind) + " " + c.Name)
		if c.Service != "" {
			b.WriteString(" svc=" + c.Service + "/" + itoa(c.Slot))
		}
		if c.ID != "" {
			b.WriteString(" id=" + c.ID)
		}
		b.WriteString(" cause=" + string(c.Cause) + "\n")
	}
	return b.String()
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

func checkFacts(t *testing.T, what string, cs []Change, want string) {
	t.Helper()
	if got, want := facts(cs), strings.TrimLeft(want, "\n"); got != want {
		t.Errorf("%s differ\n--- got:\n%s--- want:\n%s", what, got, want)
	}
}

func TestComputeHoldsDependentsOfAServiceThatCannotComeUp(t *testing.T) {
	cache := service("cache", 1, hostPort(6379))
	web := service("web", 2, dependsOn("cache"))
	blocker := Actual{ForeignContainers: []Container{{ID: "f1", Name: "redis-by-hand", State: StateRunning, HostPorts: []int{6379}}}}
	plan := checkPlan(t, input(desiredApp(cache, web), blocker, Options{}), `
Plan for app shop at revision abc1234:

  + network shop-default  default network of services that name no network

Held back (waiting for a dependency or a backoff):
  + container shop-web-1  waits for service cache, which is held back by a conflict
  + container shop-web-2  waits for service cache, which is held back by a conflict

Conflicts (driftless will not touch these):
  ! container redis-by-hand  publishes host port 6379 that service cache needs

Plan: 1 to create, 0 to replace, 0 to start, 0 to remove.
`)
	checkFacts(t, "held", plan.Deferred, `
+ container shop-web-1 svc=web/1 cause=git
+ container shop-web-2 svc=web/2 cause=git
`)
	h := Assess(input(desiredApp(cache, web), blocker, Options{}), plan)
	if h.Sync != SyncOutOfSync || h.Services[1].Health != HealthMissing ||
		!strings.Contains(h.Services[1].Message, "waits for service cache") {
		t.Errorf("web: %+v", h.Services[1])
	}

	// A dependency that still has a ready replica does not hold anyone.
	cache2 := service("cache", 2, hostPort(6379))
	act := converged(desiredApp(cache2))
	drop(&act, "shop-cache-2")
	act.ForeignContainers = blocker.ForeignContainers
	plan = Compute(input(desiredApp(cache2, web), act, Options{}))
	checkFacts(t, "changes", plan.Changes, `
+ container shop-web-1 svc=web/1 cause=git
+ container shop-web-2 svc=web/2 cause=git
`)

	// Transitively: api waits for web waits for a backed-off cache.
	api := service("api", 1, dependsOn("web"))
	backoff := Options{Backoff: map[string]time.Time{"shop-cache-1": t0.Add(time.Minute)}}
	plan = Compute(input(desiredApp(service("cache", 1), web, api), Actual{}, backoff))
	checkFacts(t, "held", plan.Deferred, `
+ container shop-cache-1 svc=cache/1 cause=git
+ container shop-web-1 svc=web/1 cause=git
+ container shop-web-2 svc=web/2 cause=git
+ container shop-api-1 svc=api/1 cause=git
`)
	if r := plan.Deferred[3].Reason; r != "waits for service web, which waits for a dependency" {
		t.Errorf("api reason %q", r)
	}
}

func TestDecide(t *testing.T) {
	web := service("web", 2)
	three := desiredApp(web, service("db", 1), service("cache", 1))
	drifted := converged(three)
	drop(&drifted, "shop-web-1")
	rev := desiredApp(service("web", 2, image("shop/web:v2")), service("db", 1), service("cache", 1))

	cases := []struct {
		name    string
		in      Input
		policy  Policy
		want    string
		applied string
	}{
		{"self-heal applies drift", input(three, drifted, Options{}), Policy{SelfHeal: true}, "apply 1, hold 0",
			"+ container shop-web-1 svc=web/1 cause=drift\n"},
		{"self-heal off holds drift", input(three, drifted, Options{}), Policy{}, "apply 0, hold 1 (" + HeldNoSelfHeal + ")", ""},
		{"a person's sync applies drift with self-heal off", input(three, drifted, Options{}), Policy{Manual: true}, "apply 1, hold 0",
			"+ container shop-web-1 svc=web/1 cause=drift\n"},
		{"self-heal off still applies Git changes", input(rev, drifted, Options{}), Policy{}, "apply 2, hold 0",
			"-/+ container shop-web-2 svc=web/2 id=id-shop-web-2 cause=git\n+ container shop-web-1 svc=web/1 cause=git\n"},
		{"suspended holds everything, even a person's sync", input(rev, drifted, Options{}), Policy{SelfHeal: true, Suspended: true, Manual: true},
			"apply 0, hold 2 (" + HeldSuspended + ")", ""},
		{"guard: an empty revision", input(desiredApp(), converged(three), Options{}), Policy{Guard: true, MaxRemovalPercent: 100},
			"refuse: the revision declares no services, so applying it would remove everything the app runs; to allow it set allowEmpty: true in driftless.yaml (or --allow-empty for driftless run)", ""},
		{"guard: an empty revision on first deploy", input(desiredApp(), converged(desiredApp()), Options{}), Policy{Guard: true, MaxRemovalPercent: 100},
			"refuse: the revision declares no services: check the app's path, which holds no manifests; to accept an empty revision set allowEmpty: true in driftless.yaml (or --allow-empty for driftless run)", ""},
		{"guard: an empty revision allowed", input(desiredApp(), converged(three), Options{Prune: true}), Policy{Guard: true, AllowEmpty: true, MaxRemovalPercent: 100},
			"apply 5, hold 0", ""},
		{"guard: too many removals", input(desiredApp(service("db", 1)), converged(three), Options{Prune: true}), Policy{Guard: true, MaxRemovalPercent: 50},
			"refuse: applying it would remove 2 of 3 running services (cache, web), more than maxRemovalPercent 50%; raise maxRemovalPercent for this app (100 = no limit) to allow it", ""},
		{"guard: within the limit", input(desiredApp(service("db", 1), service("cache", 1)), converged(three), Options{Prune: true}), Policy{Guard: true, MaxRemovalPercent: 50},
			"apply 2, hold 0", ""},
		{"no guard for an accepted revision", input(desiredApp(service("db", 1)), converged(three), Options{Prune: true}), Policy{MaxRemovalPercent: 50},
			"apply 3, hold 0", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := Compute(tc.in)
			d := Decide(tc.in, plan, tc.policy)
			if got := d.String(); got != tc.want {
				t.Errorf("decision %q, want %q", got, tc.want)
			}
			if tc.applied != "" {
				checkFacts(t, "applied changes", d.Apply.Changes, tc.applied)
			}
			if len(d.Apply.Changes)+len(d.Held) != len(plan.Changes) && d.Refusal == "" {
				t.Errorf("changes lost: %d applied + %d held of %d", len(d.Apply.Changes), len(d.Held), len(plan.Changes))
			}
		})
	}
}

func TestSyncOfMatrix(t *testing.T) {
	change := Change{Action: ActionCreate, Kind: KindContainer, Name: "shop-web-1"}
	for _, tc := range []struct {
		name    string
		plan    Plan
		refused bool
		want    SyncStatus
	}{
		{"nothing to do", Plan{}, false, SyncSynced},
		{"a change", Plan{Changes: []Change{change}}, false, SyncOutOfSync},
		{"a deferred change", Plan{Deferred: []Change{change}}, false, SyncOutOfSync},
		{"only a conflict", Plan{Conflicts: []Conflict{{Kind: KindContainer, Name: "x"}}}, false, SyncOutOfSync},
		{"a refused newer revision", Plan{}, true, SyncOutOfSync},
		{"only something prunable", Plan{Pruneable: []Change{change}}, false, SyncSynced},
	} {
		if got := SyncOf(tc.plan, tc.refused); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// Changes someone makes to a running container that can be undone on it
// (docker update, network disconnect, docker rename) are repaired in
// place; an image change needs a new container.
func TestComputeRepairsRuntimeChangesInPlace(t *testing.T) {
	web := service("web", 1, func(s *manifest.ServiceSpec) {
		s.Resources.MemoryBytes = 64 << 20
		s.Aliases = map[string][]string{"default": {"www"}}
	})
	inspected := func(mod func(*RuntimeConfig)) Actual {
		act := converged(desiredApp(web))
		cfg := &RuntimeConfig{MemoryBytes: 64 << 20, RestartPolicy: "unless-stopped",
			Aliases: map[string][]string{"shop-default": {"web", "www", "0123456789ab"}}}
		if mod != nil {
			mod(cfg)
		}
		act.Containers[0].Config = cfg
		return act
	}
	if plan := Compute(input(desiredApp(web), inspected(nil), Options{})); !plan.Empty() {
		t.Fatalf("as created: %s", plan)
	}
	updated := inspected(func(c *RuntimeConfig) { c.MemoryBytes, c.RestartPolicy, c.PidsLimit = 256<<20, "no", 100 })
	checkPlan(t, input(desiredApp(web), updated, Options{}), `
Plan for app shop at revision abc1234:

  ~ container shop-web-1 (update in place)  changed outside Git: resources.memory, resources.pids, restart
        resources.memory: 256Mi → 64Mi
        resources.pids: 100 → unlimited
        restart: no → unless-stopped

Plan: 0 to create, 0 to replace, 0 to start, 0 to remove, 1 to update in place.
`)
	aliases := inspected(func(c *RuntimeConfig) { c.Aliases["shop-default"] = []string{"web"} })
	checkFacts(t, "alias repair", Compute(input(desiredApp(web), aliases, Options{})).Changes, `
update container shop-web-1 svc=web/1 id=id-shop-web-1 cause=drift
`)
	renamed := inspected(nil)
	renamed.Containers[0].Name = "hotfix"
	plan := Compute(input(desiredApp(web), renamed, Options{}))
	if len(plan.Changes) != 1 || plan.Changes[0].Action != ActionUpdate || plan.Changes[0].Fields[0] != (FieldChange{Path: "name", Before: "hotfix", After: "shop-web-1"}) {
		t.Fatalf("renamed: %s", plan)
	}
	// A replica parked during a replace keeps its -old- name: not drift.
	parked := inspected(nil)
	parked.Containers[0].Name = "shop-web-1-old-0123456789ab"
	if plan := Compute(input(desiredApp(web), parked, Options{})); !plan.Empty() {
		t.Fatalf("parked: %s", plan)
	}
	// An image change needs a new container, whatever else changed.
	both := inspected(func(c *RuntimeConfig) { c.MemoryBytes = 1 << 30 })
	both.Containers[0].Image = "shop/web:hotfix"
	checkFacts(t, "image drift", Compute(input(desiredApp(web), both, Options{})).Changes, `
-/+ container shop-web-1 svc=web/1 id=id-shop-web-1 cause=drift
`)
	// A stopped container is started, not updated.
	stopped := inspected(func(c *RuntimeConfig) { c.MemoryBytes = 1 << 30 })
	edit(&stopped, "shop-web-1", func(c *Container) { c.State, c.ExitCode, c.Status = StateExited, 137, "Exited (137)" })
	checkFacts(t, "stopped", Compute(input(desiredApp(web), stopped, Options{})).Changes, `
~ container shop-web-1 svc=web/1 id=id-shop-web-1 cause=drift
`)
}

// Containers that docker compose runs for the app's project are "managed
// by compose" conflicts; with adoption each is replaced by the replica of
// its slot (new one ready first, by the applier), extras removed, and
// compose's volumes kept.
func TestComputeAdoptsComposeProject(t *testing.T) {
	web := service("web", 2)
	web.ComposeName = "web_app"
	d := desiredApp(web, service("db", 1, mount("data")))
	d.Volumes[0].ComposeName = "data"
	composeC := func(id, name, svc string, n int) Container {
		return Container{ID: id, Name: "/" + name, State: StateRunning, ComposeProject: "shop", ComposeService: svc, ComposeNumber: n}
	}
	act := Actual{ForeignContainers: []Container{
		composeC("c1", "shop-web_app-1", "web_app", 1), composeC("c2", "shop-web_app-2", "web_app", 2),
		composeC("c3", "shop-web_app-3", "web_app", 3), composeC("c4", "shop_db_1", "db", 1),
		{ID: "x1", Name: "/other_web_1", State: StateRunning, ComposeProject: "other", ComposeService: "web_app", ComposeNumber: 1},
	}, ForeignVolumes: []Volume{{Name: "shop_data", Labels: map[string]string{LabelComposeProject: "shop", LabelComposeVolume: "data"}}}}

	plan := Compute(input(d, act, Options{}))
	if len(plan.Changes) != 1 || plan.Changes[0].Kind != KindNetwork || len(plan.Conflicts) != 5 ||
		!strings.Contains(plan.Conflicts[3].Reason, "managed by docker compose (project shop, service db); set adopt: compose") ||
		plan.Conflicts[4] != (Conflict{Kind: KindVolume, Name: "shop_data", Reason: "docker compose project shop keeps this volume's data; set adopt: compose for this app to use it"}) {
		t.Fatalf("without adoption: %s", plan)
	}

	in := input(d, act, Options{Adopt: true})
	in.Desired = AdoptComposeVolumes(d, act, "shop")
	if v := in.Desired.Volume("data"); !v.Spec.External || v.Spec.ExternalName != "shop_data" {
		t.Fatalf("volume: %+v", v)
	}
	plan = Compute(in)
	checkFacts(t, "adoption", plan.Changes, `
+ network shop-default cause=git
-/+ container shop-db-1 svc=db/1 id=c4 cause=git
- container shop-web_app-3 svc=web/3 id=c3 cause=git
-/+ container shop-web-1 svc=web/1 id=c1 cause=git
-/+ container shop-web-2 svc=web/2 id=c2 cause=git
`)
	for _, c := range plan.Changes[1:] {
		if c.Adopt != "shop" {
			t.Errorf("%s: adopt %q", c.Name, c.Adopt)
		}
	}
	if len(plan.Conflicts) != 0 || slices.ContainsFunc(plan.Changes, func(c Change) bool { return c.ID == "x1" }) {
		t.Fatalf("another project's container must be left alone: %s", plan)
	}
}
