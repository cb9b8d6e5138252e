package drift

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
)

func anonymous(targets ...string) func(*manifest.ServiceSpec) {
	return func(s *manifest.ServiceSpec) {
		for _, t := range targets {
			s.AnonymousVolumes = append(s.AnonymousVolumes, manifest.AnonymousVolume{MountPath: t})
		}
	}
}

// withAnonymous adds the anonymous volumes of the app's slots 1..replicas
// to the actual state, as deploy labels them.
func withAnonymous(act Actual, a *manifest.App) Actual {
	for _, s := range a.Services {
		for slot := 1; slot <= s.Spec.Replicas; slot++ {
			for _, av := range s.Spec.AnonymousVolumes {
				act.Volumes = append(act.Volumes, anonymousVolume(s.Name, slot, av.MountPath))
			}
		}
	}
	return act
}

func anonymousVolume(service string, slot int, target string) Volume {
	return Volume{Name: manifest.AnonymousVolumeName(testApp, service, slot, target), App: testApp, Driver: "local",
		Service: service, Slot: slot, Target: target}
}

// Names in the plans below: manifest.AnonymousVolumeName of
// /var/lib/postgresql/data is ...-anon-dc8f97c32d81, of /cache
// ...-anon-4f7cfe6fcd42.
func TestComputeAnonymousVolumes(t *testing.T) {
	db := service("db", 2, anonymous("/var/lib/postgresql/data"))
	app := desiredApp(db)
	running := withAnonymous(converged(app), app)

	healed := withAnonymous(converged(app), app)
	drop(&healed, "shop-db-1")

	db1 := service("db", 1, anonymous("/var/lib/postgresql/data"))
	moved := service("db", 2, anonymous("/cache"))

	held := converged(app)
	held.ForeignVolumes = []Volume{{Name: manifest.AnonymousVolumeName(testApp, "db", 2, "/var/lib/postgresql/data"), Driver: "local"}}
	held.Volumes = []Volume{anonymousVolume("db", 1, "/var/lib/postgresql/data")}
	drop(&held, "shop-db-2")

	runPlanCases(t, []planCase{{
		name: "a new service gets one volume per slot and target, before its containers",
		in:   input(app, Actual{}, Options{}),
		want: `
Plan for app shop at revision abc1234:

  + network shop-default  default network of services that name no network
  + volume shop-db-1-anon-dc8f97c32d81  anonymous volume of db slot 1 at /var/lib/postgresql/data
  + volume shop-db-2-anon-dc8f97c32d81  anonymous volume of db slot 2 at /var/lib/postgresql/data
  + container shop-db-1  new service in revision abc1234
  + container shop-db-2  new service in revision abc1234

Plan: 5 to create, 0 to replace, 0 to start, 0 to remove.
`,
	}, {
		name: "converged: the volumes are the slots'",
		in:   input(app, running, Options{Prune: true}),
		want: `
Plan for app shop at revision abc1234:

No changes: running state matches revision abc1234.
`,
	}, {
		name: "a removed replica comes back to the volume it had",
		in:   input(app, healed, Options{Applied: map[string]AppliedService{"db": {Hash: db.Hash, Replicas: 2}}}),
		want: `
Plan for app shop at revision abc1234:

  + container shop-db-1  removed outside Git

Plan: 1 to create, 0 to replace, 0 to start, 0 to remove.
`,
	}, {
		name: "scale down keeps the slot's volume without prune",
		in:   input(desiredApp(db1), running, Options{}),
		want: `
Plan for app shop at revision abc1234:

  - container shop-db-2  scale down: replicas 2 → 1

Would be removed with --prune:
  - volume shop-db-2-anon-dc8f97c32d81  kept: anonymous volume of db slot 2 at /var/lib/postgresql/data: the slot is no longer declared in revision abc1234; prune removes it

Plan: 0 to create, 0 to replace, 0 to start, 1 to remove.
`,
	}, {
		name: "scale down with prune removes the slot's volume after its container",
		in:   input(desiredApp(db1), running, Options{Prune: true}),
		want: `
Plan for app shop at revision abc1234:

  - container shop-db-2  scale down: replicas 2 → 1
  - volume shop-db-2-anon-dc8f97c32d81  anonymous volume of db slot 2 at /var/lib/postgresql/data: the slot is no longer declared in revision abc1234

Plan: 0 to create, 0 to replace, 0 to start, 2 to remove.
`,
	}, {
		name: "a service no longer declared takes its volumes along only with prune",
		in:   input(desiredApp(service("web", 1)), withAnonymous(converged(desiredApp(service("web", 1))), app), Options{Prune: true}),
		want: `
Plan for app shop at revision abc1234:

  - volume shop-db-1-anon-dc8f97c32d81  anonymous volume of db slot 1 at /var/lib/postgresql/data: the slot is no longer declared in revision abc1234
  - volume shop-db-2-anon-dc8f97c32d81  anonymous volume of db slot 2 at /var/lib/postgresql/data: the slot is no longer declared in revision abc1234

Plan: 0 to create, 0 to replace, 0 to start, 2 to remove.
`,
	}, {
		name: "a target no longer mounted keeps its volume, even with prune",
		in:   input(desiredApp(moved), running, Options{Prune: true}),
		want: `
Plan for app shop at revision abc1234:

  + volume shop-db-1-anon-4f7cfe6fcd42  anonymous volume of db slot 1 at /cache
  + volume shop-db-2-anon-4f7cfe6fcd42  anonymous volume of db slot 2 at /cache
  -/+ container shop-db-1  spec changed in revision abc1234
        anonymousVolumes: /var/lib/postgresql/data → /cache
  -/+ container shop-db-2  spec changed in revision abc1234
        anonymousVolumes: /var/lib/postgresql/data → /cache

Plan: 2 to create, 2 to replace, 0 to start, 0 to remove.
`,
	}, {
		name: "a volume name held by another object holds the service back",
		in:   input(app, held, Options{}),
		want: `
Plan for app shop at revision abc1234:

Conflicts (driftless will not touch these):
  ! volume shop-db-2-anon-dc8f97c32d81  name is held by a volume driftless does not own

No changes to make now: 1 conflict.
`,
	}})
}

// The volume names depend on app, service, slot and target only, and
// are Docker names.
func TestAnonymousVolumeName(t *testing.T) {
	a := manifest.AnonymousVolumeName("shop", "db", 1, "/var/lib/postgresql/data")
	if a != manifest.AnonymousVolumeName("shop", "db", 1, "/var/lib/postgresql/data") || !strings.HasPrefix(a, "shop-db-1-anon-") || !manifest.ValidDockerName(a) {
		t.Errorf("name %q", a)
	}
	for _, other := range []string{
		manifest.AnonymousVolumeName("shop", "db", 2, "/var/lib/postgresql/data"),
		manifest.AnonymousVolumeName("shop", "db", 1, "/var/lib/postgresql"),
		manifest.AnonymousVolumeName("shop", "web", 1, "/var/lib/postgresql/data"),
	} {
		if other == a {
			t.Errorf("%q names two volumes", a)
		}
	}
}
