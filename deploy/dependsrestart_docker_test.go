package deploy_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
)

// A service with dependsOnRestart: [db] (compose's depends_on db
// restart: true) gets a new container after db's, in the same apply; an
// apply that stops after db's replace is finished by the next plan; and
// neither leaves a plan behind.
func TestDependsOnRestartReplacesDependentAfterDependency(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	app := func(dbEnv string) string {
		return fmt.Sprintf(`apiVersion: driftless.dev/v1
kind: Service
metadata: {name: db}
spec:
  image: {{image}}
  stopGracePeriodSeconds: 1
  env: {GENERATION: %q}
---
apiVersion: driftless.dev/v1
kind: Service
metadata: {name: web}
spec:
  image: {{image}}
  stopGracePeriodSeconds: 1
  dependsOn: [db]
  dependsOnRestart: [db]
`, dbEnv)
	}
	f.converge(f.load(app("1")), drift.Options{})
	before := f.only("web")

	// db's spec changes: db is replaced, then web, in one apply.
	plan := f.converge(f.load(app("2")), drift.Options{})
	if got := describePlan(plan); !strings.Contains(got, "its dependency db is replaced (depends_on restart: true)") {
		t.Errorf("plan does not replace web for db:\n%s", got)
	}
	f.requireStartedAfter(before, "db", "web")

	// The same, with the apply stopped after db: the next plan replaces
	// web from the observation alone. web's readiness wait (the 1 s
	// settle time) puts db's new container at least a second after web's
	// start, beyond the list's whole-second creation times.
	desired := f.load(app("3"))
	plan = f.plan(desired, drift.Options{})
	before = f.only("web")
	dbOnly := plan
	dbOnly.Changes = nil
	for _, c := range plan.Changes {
		if c.Service != "web" {
			dbOnly.Changes = append(dbOnly.Changes, c)
		}
	}
	if res, _ := f.apply(desired, dbOnly); res.Err != nil {
		t.Fatalf("apply db's changes: %v", res.Err)
	}
	plan = f.converge(desired, drift.Options{})
	if got := describePlan(plan); len(plan.Changes) != 1 || !strings.Contains(got, "its dependency db was recreated after it started") {
		t.Errorf("after db alone was replaced, want web replaced for it:\n%s", got)
	}
	f.requireStartedAfter(before, "db", "web")
}

// only is the one observed container of service.
func (f *fixture) only(svc string) drift.Container {
	f.t.Helper()
	cs := service(f.observe(), svc)
	if len(cs) != 1 {
		f.t.Fatalf("service %s has %d containers, want 1", svc, len(cs))
	}
	return cs[0]
}

// requireStartedAfter checks that dependent's container is not the one
// before, and (by the engine's inspect, to the nanosecond) that it last
// started after dep's container was created.
func (f *fixture) requireStartedAfter(before drift.Container, dep, dependent string) {
	f.t.Helper()
	now := f.only(dependent)
	if now.ID == before.ID {
		f.t.Fatalf("%s kept its container %s", dependent, now.ID)
	}
	created, err := time.Parse(time.RFC3339Nano, f.inspect(f.only(dep).ID).Created)
	if err != nil {
		f.t.Fatal(err)
	}
	started, err := time.Parse(time.RFC3339Nano, f.inspect(now.ID).State.StartedAt)
	if err != nil {
		f.t.Fatal(err)
	}
	if !started.After(created) {
		f.t.Errorf("%s started at %s, not after %s was created at %s", dependent, started, dep, created)
	}
}
