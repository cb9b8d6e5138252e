package drift

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
)

// swarmConverged is the observed state of an app whose Swarm services run
// exactly as declared, every task running and healthy.
func swarmConverged(a *manifest.App) Actual {
	var act Actual
	for _, n := range a.Networks {
		act.Networks = append(act.Networks, Network{ID: "net-id-" + n.Name, Name: manifest.ObjectName(testApp, n.Name),
			App: testApp, Resource: n.Name, SpecHash: n.Hash, Driver: "overlay"})
	}
	for _, s := range a.Services {
		name := ServiceName(testApp, s.Name)
		act.Services = append(act.Services, SwarmService{ID: "svc-" + s.Name, Name: name, App: testApp, Service: s.Name,
			SpecHash: s.Hash, Image: s.Spec.Image + "@sha256:0123", Replicas: s.Spec.Replicas, UpdateState: SwarmUpdateCompleted})
		for slot := 1; slot <= s.Spec.Replicas; slot++ {
			act.Containers = append(act.Containers, Container{ID: "task-" + s.Name + strconv.Itoa(slot),
				Name: name + "." + strconv.Itoa(slot), App: testApp, Service: s.Name, Slot: slot, SpecHash: s.Hash,
				Image: s.Spec.Image, State: StateRunning, Ready: true, Node: "node-1"})
		}
	}
	return act
}

func swarmService(act *Actual, service string, f func(*SwarmService)) {
	for i := range act.Services {
		if act.Services[i].Service == service {
			f(&act.Services[i])
			return
		}
	}
	panic("no service " + service)
}

func swarmInput(d *manifest.App, act Actual, opts Options) Input {
	opts.Target = manifest.TargetSwarm
	return input(d, act, opts)
}

func applied(a *manifest.App) map[string]AppliedService {
	m := map[string]AppliedService{}
	for _, s := range a.Services {
		m[s.Name] = AppliedService{Hash: s.Hash, Replicas: s.Spec.Replicas}
	}
	return m
}

func TestComputeSwarm(t *testing.T) {
	web3, api1 := service("web", 3), service("api", 1)
	app := desiredApp(web3, api1)
	web3v2 := service("web", 3, image("shop/web:v2"))
	appV2 := desiredApp(web3v2, api1)
	web5 := desiredApp(service("web", 5), api1)

	scaledByHand := swarmConverged(app)
	swarmService(&scaledByHand, "web", func(s *SwarmService) { s.Replicas = 1 })
	imageByHand := swarmConverged(app)
	swarmService(&imageByHand, "web", func(s *SwarmService) { s.Image = "evil/web:latest@sha256:ffff" })
	removedByHand := swarmConverged(app)
	removedByHand.Services = removedByHand.Services[1:] // desiredApp keeps web first: web is gone
	rolledBack := swarmConverged(app)
	swarmService(&rolledBack, "web", func(s *SwarmService) {
		s.UpdateState, s.UpdateMessage, s.PreviousSpecHash = SwarmUpdateRollbackCompleted, "rollback completed", web3v2.Hash
	})
	autoRolledBack := swarmConverged(app)
	swarmService(&autoRolledBack, "web", func(s *SwarmService) {
		s.UpdateState, s.UpdateMessage = SwarmUpdateRollbackCompleted, "rollback completed" // Swarm cleared the previous spec
	})
	failedV2 := map[string]RolloutFailure{"web": {Hash: web3v2.Hash, Failure: Failure{Cause: FailureRollout, Summary: "Swarm rollback started"}}}
	// The node the tasks ran on was drained and no other meets the
	// constraints: Swarm keeps the new tasks pending, with its reason.
	unplaced := swarmConverged(app)
	for i := 1; i < 3; i++ {
		c := &unplaced.Containers[i]
		c.State, c.Ready, c.Node = "pending", false, ""
		c.ReadyReason = "no suitable node (1 node not available for new tasks; scheduling constraints not satisfied on 1 node)"
	}
	unplacedOther := swarmConverged(app)
	unplacedOther.Containers[2].State, unplacedOther.Containers[2].Ready = "pending", false
	unplacedOther.Containers[2].ReadyReason = "no suitable node (insufficient resources on 2 nodes)"

	extra := swarmConverged(app)
	extra.Services = append(extra.Services, SwarmService{ID: "svc-old", Name: "shop-old", App: testApp, Service: "old", Replicas: 1})
	foreign := swarmConverged(desiredApp(api1))
	foreign.Services = append(foreign.Services, SwarmService{ID: "svc-x", Name: "shop-web", Replicas: 1})

	runPlanCases(t, []planCase{
		{
			name: "converged: the pinned digest Swarm adds is not drift",
			in:   swarmInput(app, swarmConverged(app), Options{Applied: applied(app)}),
			want: `
Plan for app shop at revision abc1234:

No changes: running state matches revision abc1234.
`,
		},
		{
			name: "new app: network, then services",
			in:   swarmInput(app, Actual{}, Options{}),
			want: `
Plan for app shop at revision abc1234:

  + network shop-default  default network of services that name no network
  + service shop-api  declared in revision abc1234
  + service shop-web  declared in revision abc1234

Plan: 3 to create, 0 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "a commit changes the image: one service update, Swarm rolls it",
			in:   swarmInput(appV2, swarmConverged(app), Options{Applied: applied(app)}),
			want: `
Plan for app shop at revision abc1234:

  ~ service shop-web (update: Swarm rolls the tasks)  spec changed in revision abc1234
        spec-hash: ` + web3.Hash + ` → ` + web3v2.Hash + `
        image: shop/web:v1@sha256:0123 → shop/web:v2

Plan: 0 to create, 0 to replace, 0 to start, 0 to remove, 1 to update in place.
`,
		},
		{
			name: "a commit changes replicas: scale, from Git",
			in:   swarmInput(web5, swarmConverged(app), Options{Applied: applied(app)}),
			want: `
Plan for app shop at revision abc1234:

  ~ service shop-web (scale)  replicas changed in revision abc1234
        replicas: 3 → 5

Plan: 0 to create, 0 to replace, 0 to start, 0 to remove, 1 to scale.
`,
		},
		{
			name: "docker service scale by hand is drift, scaled back",
			in:   swarmInput(app, scaledByHand, Options{Applied: applied(app)}),
			want: `
Plan for app shop at revision abc1234:

  ~ service shop-web (scale)  scaled outside Git; scaled back
        replicas: 1 → 3

Plan: 0 to create, 0 to replace, 0 to start, 0 to remove, 1 to scale.
`,
		},
		{
			name: "docker service update --image by hand is drift, reverted",
			in:   swarmInput(app, imageByHand, Options{Applied: applied(app)}),
			want: `
Plan for app shop at revision abc1234:

  ~ service shop-web (update: Swarm rolls the tasks)  changed outside Git: image; reverted
        image: evil/web:latest@sha256:ffff → shop/web:v1

Plan: 0 to create, 0 to replace, 0 to start, 0 to remove, 1 to update in place.
`,
		},
		{
			name: "a service removed by hand is recreated as drift",
			in:   swarmInput(app, removedByHand, Options{Applied: applied(app)}),
			want: `
Plan for app shop at revision abc1234:

  + service shop-web  service was removed outside Git; recreated

Plan: 1 to create, 0 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "an update Swarm rolled back is held until a new commit",
			in:   swarmInput(appV2, rolledBack, Options{Applied: applied(app)}),
			want: `
Plan for app shop at revision abc1234:

Held back (waiting for a dependency or a backoff):
  ~ service shop-web (update: Swarm rolls the tasks)  Swarm rolled the update to revision abc1234 back (rollback completed); waiting for a new commit

No changes to make now: 1 deferred.
`,
		},
		{
			name: "Swarm's own rollback: the failed rollout the applier saw holds it",
			in:   swarmInput(appV2, autoRolledBack, Options{Applied: applied(app), FailedRollouts: failedV2}),
			want: `
Plan for app shop at revision abc1234:

Held back (waiting for a dependency or a backoff):
  ~ service shop-web (update: Swarm rolls the tasks)  Swarm rolled the update to revision abc1234 back (rollback completed); waiting for a new commit

No changes to make now: 1 deferred.
`,
		},
		{
			name: "a new commit after a rollback is rolled out",
			in:   swarmInput(desiredApp(service("web", 3, image("shop/web:v3")), api1), autoRolledBack, Options{Applied: applied(app), FailedRollouts: failedV2}),
			want: `
Plan for app shop at revision abc1234:

  ~ service shop-web (update: Swarm rolls the tasks)  spec changed in revision abc1234
        spec-hash: ` + web3.Hash + ` → ` + service("web", 3, image("shop/web:v3")).Hash + `
        image: shop/web:v1@sha256:0123 → shop/web:v3

Plan: 0 to create, 0 to replace, 0 to start, 0 to remove, 1 to update in place.
`,
		},
		{
			name: "a service no longer declared is removed",
			in:   swarmInput(app, extra, Options{Applied: applied(app)}),
			want: `
Plan for app shop at revision abc1234:

  - service shop-old  service old is no longer declared in revision abc1234

Plan: 0 to create, 0 to replace, 0 to start, 1 to remove.
`,
		},
		{
			name: "a foreign service holding the name is a conflict, never touched",
			in:   swarmInput(app, foreign, Options{}),
			want: `
Plan for app shop at revision abc1234:

Conflicts (driftless will not touch these):
  ! service shop-web  name is held by a service driftless does not own

No changes to make now: 1 conflict.
`,
		},
	})
}

func TestComputeSwarmMakesNoContainerChanges(t *testing.T) {
	// Swarm owns its tasks: a task that died is Swarm's to replace, and
	// the plan never acts on a container of a Swarm app.
	app := desiredApp(service("web", 2))
	act := swarmConverged(app)
	act.Containers[0].State, act.Containers[0].Ready = StateExited, false
	act.Containers = act.Containers[:1]
	plan := Compute(swarmInput(app, act, Options{Applied: applied(app)}))
	for _, c := range plan.Changes {
		if c.Kind == KindContainer {
			t.Errorf("container change in a Swarm plan: %+v", c)
		}
	}
	if !plan.Empty() {
		t.Errorf("plan = %s, want no changes", plan)
	}
}

func TestSameImage(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"shop/web:v1", "shop/web:v1@sha256:abc", true},
		{"nginx", "docker.io/library/nginx:latest", true},
		{"nginx@sha256:abc", "nginx:latest", true},
		{"localhost:5000/web", "localhost:5000/web:latest", true},
		{"shop/web:v1", "shop/web:v2", false},
		{"registry:5000/a:v1", "registry:5000/b:v1", false},
	} {
		if got := SameImage(tc.a, tc.b); got != tc.same {
			t.Errorf("SameImage(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

const unstartedHint = " (check the nodes with docker node ls: one drained, paused or down, or none that meets the placement constraints or resources)"

func TestAssessSwarm(t *testing.T) {
	web := service("web", 3)
	app := desiredApp(web)
	webV2 := service("web", 3, image("shop/web:v2"))
	appV2 := desiredApp(webV2)

	oneDown := swarmConverged(app)
	oneDown.Containers[2].State, oneDown.Containers[2].Ready = "starting", false
	failing := swarmConverged(app)
	failing.Containers = failing.Containers[:2]
	swarmService(&failing, "web", func(s *SwarmService) {
		s.TaskErrors = []string{"shop-web.3 on node-1: task: non-zero exit (1)"}
	})
	updating := swarmConverged(appV2)
	swarmService(&updating, "web", func(s *SwarmService) { s.UpdateState = SwarmUpdateUpdating })
	paused := swarmConverged(appV2)
	swarmService(&paused, "web", func(s *SwarmService) {
		s.UpdateState, s.UpdateMessage = SwarmUpdatePaused, "update paused due to failure or early termination of task x"
		s.TaskErrors = []string{"shop-web.1 on node-1: task: container unhealthy"}
	})
	rolledBack := swarmConverged(app)
	swarmService(&rolledBack, "web", func(s *SwarmService) {
		s.UpdateState, s.UpdateMessage, s.PreviousSpecHash = SwarmUpdateRollbackCompleted, "rollback completed", webV2.Hash
		s.TaskErrors = []string{"shop-web.1 on node-1: task: container unhealthy"}
	})

	// The node the tasks ran on was drained and no other meets the
	// constraints: Swarm keeps the new tasks pending, with its reason.
	unplaced := swarmConverged(app)
	for i := 1; i < 3; i++ {
		c := &unplaced.Containers[i]
		c.State, c.Ready, c.Node = "pending", false, ""
		c.ReadyReason = "no suitable node (1 node not available for new tasks; scheduling constraints not satisfied on 1 node)"
	}
	unplacedOther := swarmConverged(app)
	unplacedOther.Containers[2].State, unplacedOther.Containers[2].Ready = "pending", false
	unplacedOther.Containers[2].ReadyReason = "no suitable node (insufficient resources on 2 nodes)"

	extra := swarmConverged(app)
	extra.Containers = append(extra.Containers, Container{ID: "task-web4", Name: "shop-web.4", App: testApp, Service: "web", Slot: 4, State: StateRunning, Ready: true})

	// A fix (or revert) commit declares the spec Swarm rolled back to:
	// the leftover rollback state is no failure of it.
	fixed := swarmConverged(app)
	swarmService(&fixed, "web", func(s *SwarmService) {
		s.UpdateState, s.UpdateMessage = SwarmUpdateRollbackCompleted, "rollback completed"
	})

	for _, tc := range []struct {
		name    string
		desired *manifest.App
		act     Actual
		health  Health
		msg     string
	}{
		{"every task running and healthy", app, swarmConverged(app), HealthHealthy, "3/3 tasks ready"},
		{"a task not yet healthy", app, oneDown, HealthProgressing, "2/3 tasks ready"},
		{"tasks Swarm cannot place: Degraded with its reason, once per reason", app, unplaced, HealthDegraded,
			"1/3 tasks ready; Swarm cannot start 2 tasks: shop-web.2, shop-web.3 pending: no suitable node (1 node not available for new tasks; scheduling constraints not satisfied on 1 node)" + unstartedHint},
		{"a task Swarm cannot place for lack of resources", app, unplacedOther, HealthDegraded,
			"2/3 tasks ready; Swarm cannot start 1 task: shop-web.3 pending: no suitable node (insufficient resources on 2 nodes)" + unstartedHint},
		{"a task keeps failing", app, failing, HealthDegraded, "2/3 tasks ready; task errors: shop-web.3 on node-1: task: non-zero exit (1)"},
		{"Swarm is rolling an update", appV2, updating, HealthProgressing, "3/3 tasks ready; Swarm is rolling the update"},
		{"Swarm paused the update", appV2, paused, HealthDegraded, "3/3 tasks ready; Swarm paused the update: update paused due to failure or early termination of task x; task errors: shop-web.1 on node-1: task: container unhealthy (fix it in a new commit)"},
		{"Swarm rolled the update back: never a success", appV2, rolledBack, HealthDegraded, "3/3 tasks ready; Swarm rolled the update to revision abc1234 back (rollback completed); waiting for a new commit; task errors: shop-web.1 on node-1: task: container unhealthy"},
		{"service missing", app, Actual{}, HealthMissing, "service does not exist; 1 change pending"},
		{"a commit declaring the spec Swarm went back to is healthy", app, fixed, HealthHealthy, "3/3 tasks ready"},
		{"more tasks than replicas is not done", app, extra, HealthProgressing, "4 tasks running for 3 replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := swarmInput(tc.desired, tc.act, Options{Applied: applied(app)})
			plan := Compute(in)
			h := Assess(in, plan)
			if len(h.Services) != 1 {
				t.Fatalf("services = %+v", h.Services)
			}
			sh := h.Services[0]
			if sh.Health != tc.health || sh.Message != tc.msg || h.Health != tc.health {
				t.Errorf("got %s %q (app %s), want %s %q", sh.Health, sh.Message, h.Health, tc.health, tc.msg)
			}
			if strings.Contains(tc.name, "rolled") && SyncOf(plan, false) != SyncOutOfSync {
				t.Errorf("a rolled-back update must leave the app OutOfSync")
			}
		})
	}
}

func withConfig(name, hash string) func(*manifest.ServiceSpec) {
	return func(s *manifest.ServiceSpec) {
		s.Binds = append(s.Binds, manifest.BindMount{RepoPath: name + ".conf", ContentHash: hash, MountPath: "/" + name, ReadOnly: true,
			Object: &manifest.FileObject{Kind: manifest.FileConfig, Name: name}})
	}
}

func TestComputeSwarmConfigsVersionedByContent(t *testing.T) {
	v1 := desiredApp(service("web", 2, withConfig("site", "aaaaaaaa11112222")))
	v2 := desiredApp(service("web", 2, withConfig("site", "bbbbbbbb33334444")))
	running := swarmConverged(v1)
	running.Objects = []SwarmObject{{ID: "cfg-a", Name: "shop_site_aaaaaaaa", Kind: KindConfig, App: testApp, Resource: "site", Hash: "aaaaaaaa11112222"}}
	swarmService(&running, "web", func(s *SwarmService) { s.Objects = []string{"shop_site_aaaaaaaa"} })

	// After the update the service's previous spec still uses the old
	// version (Swarm may roll back to it); one more update frees it.
	updated := swarmConverged(v2)
	updated.Objects = append(slices.Clone(running.Objects), SwarmObject{ID: "cfg-b", Name: "shop_site_bbbbbbbb", Kind: KindConfig, App: testApp, Resource: "site", Hash: "bbbbbbbb33334444"})
	swarmService(&updated, "web", func(s *SwarmService) { s.Objects = []string{"shop_site_bbbbbbbb", "shop_site_aaaaaaaa"} })
	freed := swarmConverged(v2)
	freed.Objects = updated.Objects
	swarmService(&freed, "web", func(s *SwarmService) { s.Objects = []string{"shop_site_bbbbbbbb"} })
	// Swarm rolled an update to v3 back: the service runs v2 again and
	// nothing uses the old version, but the app is not converged.
	v3 := desiredApp(service("web", 2, withConfig("site", "cccccccc55556666")))
	rolledBack := freed
	rolledBack.Services = slices.Clone(freed.Services)
	swarmService(&rolledBack, "web", func(s *SwarmService) {
		s.UpdateState, s.UpdateMessage = SwarmUpdateRollbackCompleted, "rollback completed"
	})
	failedV3 := map[string]RolloutFailure{"web": {Hash: v3.Services[0].Hash}}

	runPlanCases(t, []planCase{
		{
			name: "new app: the config before the service",
			in:   swarmInput(v1, Actual{}, Options{}),
			want: `
Plan for app shop at revision abc1234:

  + network shop-default  default network of services that name no network
  + config shop_site_aaaaaaaa  config site at content aaaaaaaa (revision abc1234)
  + service shop-web  declared in revision abc1234

Plan: 3 to create, 0 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "a changed file is a new version, and the service moves to it",
			in:   swarmInput(v2, running, Options{Applied: applied(v1)}),
			want: `
Plan for app shop at revision abc1234:

  + config shop_site_bbbbbbbb  config site at content bbbbbbbb (revision abc1234)
  ~ service shop-web (update: Swarm rolls the tasks)  spec changed in revision abc1234
        spec-hash: ` + v1.Services[0].Hash + ` → ` + v2.Services[0].Hash + `

Plan: 1 to create, 0 to replace, 0 to start, 0 to remove, 1 to update in place.
`,
		},
		{
			name: "the old version stays while the previous spec uses it",
			in:   swarmInput(v2, updated, Options{Applied: applied(v2)}),
			want: `
Plan for app shop at revision abc1234:

No changes: running state matches revision abc1234.
`,
		},
		{
			name: "an unused old version is removed",
			in:   swarmInput(v2, freed, Options{Applied: applied(v2)}),
			want: `
Plan for app shop at revision abc1234:

  - config shop_site_aaaaaaaa  old version, no longer used by any service

Plan: 0 to create, 0 to replace, 0 to start, 1 to remove.
`,
		},
		{
			name: "old versions wait while Swarm's rollback holds the app",
			in:   swarmInput(v3, withObject(rolledBack, "cfg-c", "shop_site_cccccccc"), Options{Applied: applied(v2), FailedRollouts: failedV3}),
			want: `
Plan for app shop at revision abc1234:

Held back (waiting for a dependency or a backoff):
  ~ service shop-web (update: Swarm rolls the tasks)  Swarm rolled the update to revision abc1234 back (rollback completed); waiting for a new commit

No changes to make now: 1 deferred.
`,
		},
	})
}

func withObject(act Actual, id, name string) Actual {
	act.Objects = append(slices.Clone(act.Objects), SwarmObject{ID: id, Name: name, Kind: KindConfig, App: testApp, Resource: "site"})
	return act
}

// renderSwarm stands in for the Swarm back end's rendering of a declared
// service: image, environment and memory limit.
func renderSwarm(_ *manifest.App, svc *manifest.Service) SwarmSpec {
	out := SwarmSpec{"image": svc.Spec.Image}
	for k, v := range svc.Spec.Env {
		out["env."+k] = v
	}
	if m := svc.Spec.Resources.MemoryBytes; m != 0 {
		out["resources.limits.memoryBytes"] = strconv.FormatInt(m, 10)
	}
	return out
}

// renderedSwarm is renderSwarm of every service of a, as
// Options.SwarmSpecs carries it.
func renderedSwarm(a *manifest.App) map[string]SwarmSpec {
	out := map[string]SwarmSpec{}
	for i := range a.Services {
		out[a.Services[i].Name] = renderSwarm(a, &a.Services[i])
	}
	return out
}

// swarmRunning is swarmConverged with each service's running spec read,
// changed by edit.
func swarmRunning(a *manifest.App, edit func(service string, s SwarmSpec)) Actual {
	act := swarmConverged(a)
	for i := range act.Services {
		s := &act.Services[i]
		s.Spec = renderSwarm(a, a.Service(s.Service))
		s.Spec["image"] += "@sha256:0123" // Swarm pins the tag; the back end's Fields drops it
		s.Spec["image"] = NormalImage(s.Spec["image"])
		if edit != nil {
			edit(s.Service, s.Spec)
		}
	}
	return act
}

func TestComputeSwarmFieldDrift(t *testing.T) {
	web := service("web", 2, env("MESSAGE", "one", "TOKEN", "s3cret"), func(s *manifest.ServiceSpec) {
		s.SecretEnv = []string{"TOKEN"}
		s.Resources.MemoryBytes = 64 << 20
	})
	app := desiredApp(web, service("api", 1))
	opts := Options{Applied: applied(app), SwarmSpecs: renderedSwarm(app)}
	edited := func(service string, f func(SwarmSpec)) Actual {
		return swarmRunning(app, func(s string, spec SwarmSpec) {
			if s == service {
				f(spec)
			}
		})
	}
	v2 := desiredApp(service("web", 2, image("shop/web:v2")), service("api", 1))
	scaledAndEdited := edited("web", func(s SwarmSpec) { s["env.X"] = "1" })
	swarmService(&scaledAndEdited, "web", func(s *SwarmService) { s.Replicas = 5 })

	runPlanCases(t, []planCase{
		{
			name: "the running spec as the back end reads it is no drift",
			in:   swarmInput(app, swarmRunning(app, nil), opts),
			want: `
Plan for app shop at revision abc1234:

No changes: running state matches revision abc1234.
`,
		},
		{
			name: "docker service update --env-add and --limit-memory by hand: drift naming both, reverted",
			in: swarmInput(app, edited("web", func(s SwarmSpec) {
				s["env.X"] = "1"
				s["resources.limits.memoryBytes"] = "134217728"
			}), opts),
			want: `
Plan for app shop at revision abc1234:

  ~ service shop-web (update: Swarm rolls the tasks)  changed outside Git: env.X, resources.limits.memoryBytes; reverted
        env.X: 1 → (unset)
        resources.limits.memoryBytes: 134217728 → 67108864

Plan: 0 to create, 0 to replace, 0 to start, 0 to remove, 1 to update in place.
`,
		},
		{
			name: "a secret variable changed by hand: drift, its values never shown",
			in:   swarmInput(app, edited("web", func(s SwarmSpec) { s["env.TOKEN"] = "leaked" }), opts),
			want: `
Plan for app shop at revision abc1234:

  ~ service shop-web (update: Swarm rolls the tasks)  changed outside Git: env.TOKEN; reverted
        env.TOKEN: (sensitive) → (sensitive)

Plan: 0 to create, 0 to replace, 0 to start, 0 to remove, 1 to update in place.
`,
		},
		{
			name: "a variable removed by hand",
			in:   swarmInput(app, edited("web", func(s SwarmSpec) { delete(s, "env.MESSAGE") }), opts),
			want: `
Plan for app shop at revision abc1234:

  ~ service shop-web (update: Swarm rolls the tasks)  changed outside Git: env.MESSAGE; reverted
        env.MESSAGE: (unset) → one

Plan: 0 to create, 0 to replace, 0 to start, 0 to remove, 1 to update in place.
`,
		},
		{
			name: "edited and scaled by hand: one update sets both",
			in:   swarmInput(app, scaledAndEdited, opts),
			want: `
Plan for app shop at revision abc1234:

  ~ service shop-web (update: Swarm rolls the tasks)  changed outside Git: env.X; reverted
        env.X: 1 → (unset)
        replicas: 5 → 2

Plan: 0 to create, 0 to replace, 0 to start, 0 to remove, 1 to update in place.
`,
		},
		{
			name: "a new commit is a spec change from Git, not drift, whatever else differs",
			in:   swarmInput(v2, edited("web", func(s SwarmSpec) { s["env.X"] = "1" }), Options{Applied: applied(app), SwarmSpecs: renderedSwarm(v2)}),
			want: `
Plan for app shop at revision abc1234:

  ~ service shop-web (update: Swarm rolls the tasks)  spec changed in revision abc1234
        spec-hash: ` + web.Hash + ` → ` + service("web", 2, image("shop/web:v2")).Hash + `
        image: shop/web:v1@sha256:0123 → shop/web:v2

Plan: 0 to create, 0 to replace, 0 to start, 0 to remove, 1 to update in place.
`,
		},
		{
			name: "a service the back end did not render: only its image is compared",
			in:   swarmInput(app, edited("web", func(s SwarmSpec) { s["env.X"] = "1" }), Options{Applied: applied(app), SwarmSpecs: map[string]SwarmSpec{"api": renderSwarm(app, app.Service("api"))}}),
			want: `
Plan for app shop at revision abc1234:

No changes: running state matches revision abc1234.
`,
		},
		{
			name: "without the back end's rendering only the image is compared",
			in:   swarmInput(app, edited("web", func(s SwarmSpec) { s["env.X"] = "1" }), Options{Applied: applied(app)}),
			want: `
Plan for app shop at revision abc1234:

No changes: running state matches revision abc1234.
`,
		},
	})
}

// TestAssessSwarmStalledRollout: a rollout the applier gave up on (Swarm
// ran fewer tasks than asked even after a forced update) is Degraded with
// the applier's words while the tasks are short, and Healthy once Swarm
// caught up on its own.
func TestAssessSwarmStalledRollout(t *testing.T) {
	app := desiredApp(service("web", 2))
	short := swarmConverged(app)
	short.Containers = short.Containers[:1]
	failed := map[string]RolloutFailure{"web": {Hash: app.Services[0].Hash, Failure: Failure{Cause: FailureRollout,
		Summary: "Swarm did not finish rolling shop-web within 3m0s: 1/2 tasks running; a forced update did not help"}}}
	for _, tc := range []struct {
		name   string
		act    Actual
		failed map[string]RolloutFailure
		health Health
		msg    string
	}{
		{"tasks short after the applier gave up", short, failed, HealthDegraded,
			"1/2 tasks ready; rollout failed: Swarm did not finish rolling shop-web within 3m0s: 1/2 tasks running; a forced update did not help"},
		{"tasks short, nothing failed: still starting", short, nil, HealthProgressing, "1/2 tasks ready"},
		{"Swarm caught up after the failure", swarmConverged(app), failed, HealthHealthy, "2/2 tasks ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := swarmInput(app, tc.act, Options{Applied: applied(app), FailedRollouts: tc.failed})
			h := Assess(in, Compute(in))
			if sh := h.Services[0]; sh.Health != tc.health || sh.Message != tc.msg {
				t.Errorf("got %s %q, want %s %q", sh.Health, sh.Message, tc.health, tc.msg)
			}
		})
	}
}
