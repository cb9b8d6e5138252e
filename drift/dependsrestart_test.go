package drift

import (
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

// restartsWith makes the service depend on dep with restart: true.
func restartsWith(dep string) func(*manifest.ServiceSpec) {
	return func(s *manifest.ServiceSpec) {
		s.DependsOn, s.DependsOnRestart = []string{dep}, []string{dep}
	}
}

// dbAndWeb is a db and a web that depends on it, running converged: web
// started after db was created. webMods edit web beyond its dependency.
func dbAndWeb(dbMods []func(*manifest.ServiceSpec), webMods ...func(*manifest.ServiceSpec)) (*manifest.App, Actual) {
	d := desiredApp(service("db", 1, dbMods...), service("web", 1, webMods...))
	act := converged(desiredApp(service("db", 1), service("web", 1, webMods...)))
	edit(&act, "shop-db-1", func(c *Container) { c.Created, c.StartedAt = t0.Add(-time.Hour), t0.Add(-time.Hour) })
	edit(&act, "shop-web-1", func(c *Container) { c.Created, c.StartedAt = t0.Add(-time.Hour), t0.Add(-time.Hour+time.Second) })
	return d, act
}

func TestComputeDependsOnRestart(t *testing.T) {
	d, act := dbAndWeb(nil, restartsWith("db"))
	changedDB, _ := dbAndWeb([]func(*manifest.ServiceSpec){env("POSTGRES_DB", "shop")}, restartsWith("db"))
	bothChanged, _ := dbAndWeb([]func(*manifest.ServiceSpec){env("POSTGRES_DB", "shop")}, restartsWith("db"), image("shop/web:v2"))
	plain, plainAct := dbAndWeb(nil, dependsOn("db"))
	plainChangedDB, _ := dbAndWeb([]func(*manifest.ServiceSpec){env("POSTGRES_DB", "shop")}, dependsOn("db"))

	// An apply stopped after db's replace: db is new, web is not.
	interrupted := cloneActual(act)
	edit(&interrupted, "shop-db-1", func(c *Container) {
		c.ID, c.Created, c.StartedAt = "id-new-db", t0.Add(-time.Minute), t0.Add(-time.Minute+time.Second)
	})
	// Then web replaced after it: converged again.
	finished := cloneActual(interrupted)
	edit(&finished, "shop-web-1", func(c *Container) {
		c.ID, c.Created, c.StartedAt = "id-new-web", t0.Add(-time.Minute+2*time.Second), t0.Add(-time.Minute+3*time.Second)
	})
	// Docker restarted db by its restart policy: the same container.
	runtimeRestart := cloneActual(act)
	edit(&runtimeRestart, "shop-db-1", func(c *Container) { c.StartedAt = t0.Add(-time.Minute) })
	// web was never inspected: its start is unknown.
	notInspected := cloneActual(interrupted)
	edit(&notInspected, "shop-web-1", func(c *Container) { c.StartedAt = time.Time{} })

	dbGone := cloneActual(act)
	drop(&dbGone, "shop-db-1")
	plainInterrupted := cloneActual(plainAct)
	edit(&plainInterrupted, "shop-db-1", func(c *Container) { c.ID, c.Created = "id-new-db", t0.Add(-time.Minute) })

	noChanges := "Plan for app shop at revision abc1234:\n\nNo changes: running state matches revision abc1234.\n"
	runPlanCases(t, []planCase{
		{name: "converged: nothing to do", in: input(d, act, Options{}), want: noChanges},
		{
			name: "db's spec changes: web is replaced after it",
			in:   input(changedDB, act, Options{}),
			want: `
Plan for app shop at revision abc1234:

  -/+ container shop-db-1  spec changed in revision abc1234
        env.POSTGRES_DB: (unset) → shop
  -/+ container shop-web-1  its dependency db is replaced (depends_on restart: true)

Plan: 0 to create, 2 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "db removed outside Git: created, then web replaced",
			in:   input(d, dbGone, Options{Applied: map[string]AppliedService{"db": {Hash: d.Services[0].Hash, Replicas: 1}}}),
			want: `
Plan for app shop at revision abc1234:

  + container shop-db-1  removed outside Git
  -/+ container shop-web-1  its dependency db is created (depends_on restart: true)

Plan: 1 to create, 1 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "web changes too: replaced for its own spec",
			in:   input(bothChanged, act, Options{}),
			want: `
Plan for app shop at revision abc1234:

  -/+ container shop-db-1  spec changed in revision abc1234
        env.POSTGRES_DB: (unset) → shop
  -/+ container shop-web-1  spec changed in revision abc1234
        image: shop/web:v1 → shop/web:v2

Plan: 0 to create, 2 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "db was recreated after web started (an apply stopped half-way): web is replaced",
			in:   input(d, interrupted, Options{}),
			want: `
Plan for app shop at revision abc1234:

  -/+ container shop-web-1  its dependency db was recreated after it started (depends_on restart: true)

Plan: 0 to create, 1 to replace, 0 to start, 0 to remove.
`,
		},
		{name: "web replaced after the new db: converged, no replace loop", in: input(d, finished, Options{}), want: noChanges},
		{name: "Docker restarted db (restart policy): not a recreation", in: input(d, runtimeRestart, Options{}), want: noChanges},
		{name: "web's start unknown: nothing to compare", in: input(d, notInspected, Options{}), want: noChanges},
		{
			name: "without restart: true, only db is replaced",
			in:   input(plainChangedDB, plainAct, Options{}),
			want: `
Plan for app shop at revision abc1234:

  -/+ container shop-db-1  spec changed in revision abc1234
        env.POSTGRES_DB: (unset) → shop

Plan: 0 to create, 1 to replace, 0 to start, 0 to remove.
`,
		},
		{name: "without restart: true, a recreated db leaves web be", in: input(plain, plainInterrupted, Options{}), want: noChanges},
	})
}

// The dependent's replace carries the cause of the dependency's change:
// Git when a commit replaced it, drift when it was recreated outside Git
// or by an apply that stopped.
func TestComputeDependsOnRestartCause(t *testing.T) {
	d, act := dbAndWeb(nil, restartsWith("db"))
	changedDB, _ := dbAndWeb([]func(*manifest.ServiceSpec){env("POSTGRES_DB", "shop")}, restartsWith("db"))
	interrupted := cloneActual(act)
	edit(&interrupted, "shop-db-1", func(c *Container) { c.ID, c.Created = "id-new-db", t0.Add(-time.Minute) })
	dead := cloneActual(act)
	edit(&dead, "shop-db-1", func(c *Container) { c.State, c.Status = StateDead, "Dead" })

	for _, tc := range []struct {
		name string
		in   Input
		want Cause
	}{
		{"db's spec changed", input(changedDB, act, Options{}), CauseGit},
		{"db dead outside Git", input(d, dead, Options{}), CauseDrift},
		{"db recreated after web started", input(d, interrupted, Options{}), CauseDrift},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []Cause
			for _, c := range Compute(tc.in).Changes {
				if c.Service == "web" {
					got = append(got, c.Cause)
				}
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("web's changes have causes %v, want [%s]", got, tc.want)
			}
		})
	}
}
