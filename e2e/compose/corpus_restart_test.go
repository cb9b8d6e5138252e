package compose

import (
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// restartStacks are the corpus stacks for depends_on restart: true, and
// for what compose reads from the project's .env or ignores.
func restartStacks() []corpusStack {
	return []corpusStack{profilesFromEnvStack(), {
		dir:      "restart-dependency",
		replicas: map[string]int{"db": 1, "api": 1, "worker": 1},
		changes: []stackChange{{
			// A change to db recreates it, and api (restart: true) after
			// it; worker (no restart: true) keeps its container.
			what:  "db: another database name",
			edits: []fileEdit{{File: "compose.yaml", Old: "POSTGRES_DB: lago", New: "POSTGRES_DB: lago2"}},
			rolls: []string{"db", "api"},
			check: func(t *testing.T, r *stackRun) {
				if api, db := startedAt(t, r.c("api", 1)), startedAt(t, r.c("db", 1)); !api.After(db) {
					t.Errorf("api started at %s, not after the new db (%s)", api.Format(time.RFC3339Nano), db.Format(time.RFC3339Nano))
				}
			},
		}},
		// db removed by hand is recreated, and api after it.
		heal: "db",
	}}
}

// profilesFromEnvStack: COMPOSE_PROFILES in .env selects the services, as
// in docker compose; a volume option compose ignores is ignored with a
// warning, and the volume is writable as compose mounts it.
func profilesFromEnvStack() corpusStack {
	return corpusStack{
		dir:      "profiles-from-env",
		replicas: map[string]int{"api": 1, "db": 1, "weaviate": 1},
		setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
			// The change turns qdrant's profile on: its stand-in image is
			// made now, as the first deployment's are.
			r.images.Ensure(r.images.Ref("shop/qdrant:1"))
			cfg.Prune = true // so a service leaving the active profiles is removed
		},
		check: func(t *testing.T, r *stackRun) {
			if m := mountByTarget(t, r.c("db", 1), "/var/lib/postgresql/data"); m["RW"] != true {
				t.Errorf("db's volume with :roz is not writable as compose mounts it: %v", m)
			}
		},
		changes: []stackChange{{
			what:     ".env: qdrant instead of weaviate",
			edits:    []fileEdit{{File: ".env", Old: "postgresql,weaviate", New: "postgresql,qdrant"}},
			rolls:    []string{"qdrant"},
			replicas: map[string]int{"api": 1, "db": 1, "qdrant": 1},
		}},
		heal: "api",
		warnings: []string{
			`compose.yaml:15:9: services.db.volumes[0]: unknown volume option "roz" is ignored, as compose ignores it (the mount is read-write, without an SELinux label): use ro, rw, z, Z, nocopy or a propagation, comma-separated (ro,z)`,
		},
	}
}
