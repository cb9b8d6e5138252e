package compose

import (
	"testing"
	"time"
)

// restartStacks are the corpus stacks for depends_on restart: true.
func restartStacks() []corpusStack {
	return []corpusStack{{
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
