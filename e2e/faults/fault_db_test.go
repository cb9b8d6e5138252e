package faults

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestFaultCorruptDatabase damages driftless.db while the agent is stopped
// — overwritten with garbage, truncated, or a few bytes rotted inside a
// stored record — and starts it again. The agent must start, say in
// history that the database was moved aside and history starts over (the
// damaged file kept for a person), converge without touching the running
// containers, and heal drift.
func TestFaultCorruptDatabase(t *testing.T) {
	t.Parallel()
	row := recordFault(t, "corrupt driftless.db")
	v1 := testenv.WorkloadImage(t, "v1")
	first := svcState{Image: v1, Replicas: 2, Env: map[string]string{"MESSAGE": "one"}}
	r := newFaultRig(t, first, rigOptions{noStart: true})
	r.foreign = plantForeign(t, r.dk, r.app, v1)
	r.start()
	r.waitHead(60*time.Second, "the first deploy")
	r.commit("say two", first.with(func(s *svcState) { s.Env["MESSAGE"] = "two" }))
	r.waitHead(60*time.Second, "the second commit")
	r.checkRunning("before any damage")

	db := filepath.Join(r.data, "driftless.db")
	r.agent.Stop(t)
	pristine, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	r.start()
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, good []byte) []byte
		// silent: the store may start over without a history entry (no
		// case does since an emptied file is reported too).
		silent bool
	}{
		{"overwritten with garbage", func(t *testing.T, good []byte) []byte {
			return []byte(randomBlob(3, 64<<10))
		}, false},
		{"truncated to its first pages", func(t *testing.T, good []byte) []byte {
			if len(good) < 4*4096 {
				t.Fatalf("the database is only %d bytes; too small to truncate meaningfully", len(good))
			}
			return good[:3*4096]
		}, false},
		{"the app's stored state rotted", func(t *testing.T, good []byte) []byte {
			// The app's persisted state is JSON in the apps bucket; damage a
			// few bytes inside it (and in any stale copy in a free page),
			// leaving bbolt's page structure intact.
			return rot(t, good, `"appliedState"`)
		}, false},
		{"history entries rotted", func(t *testing.T, good []byte) []byte {
			return rot(t, good, `"kind":"sync"`)
		}, false},
		{"emptied", func(t *testing.T, good []byte) []byte { return nil }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := r.t
			r.t = t
			defer func() { r.t = parent }()
			before := idsOf(r.dk.appContainers(t, r.app))
			r.agent.Stop(t)
			// Every case damages the same good database, whatever the one
			// before left.
			bad := tc.damage(t, pristine)
			if err := os.WriteFile(db, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			row.add(1)
			r.start()
			// Enforcement first: it must not depend on history.
			r.waitHead(60*time.Second, "converged after starting on a damaged database")
			r.checkRunning("after starting on a damaged database")
			if after := idsOf(r.dk.appContainers(t, r.app)); !maps.Equal(after, before) {
				t.Errorf("losing the database changed the running containers: %v, want %v", after, before)
			}
			healed := r.healOne(r.dk, r.app+"-web-1", "after starting on a damaged database")

			entries := r.history()
			if tc.silent {
				t.Logf("history after starting on an %s database: %d entries", tc.name, len(entries))
			} else {
				if len(entries) == 0 || entries[0].Kind != status.KindAction || entries[0].Result != "failed" ||
					!strings.Contains(entries[0].Summary, "moved to") || !strings.Contains(entries[0].Summary, "history starts over") {
					t.Fatalf("history does not start with the entry saying the database was moved aside: %+v", entries)
				}
				aside := between(entries[0].Summary, "moved to ", " and history")
				kept, err := os.ReadFile(aside)
				if err != nil || !bytes.Equal(kept, bad) {
					t.Errorf("the damaged database was not kept at %q (%v)", aside, err)
				}
				t.Logf("history starts with: %s", entries[0].Summary)
			}
			r.waitRepair(r.app + "-web-1 was removed outside Git; recreated")
			r.checkHistory("after starting on a damaged database", nil)
			what := "moved aside"
			if tc.silent {
				what = "started over silently"
			}
			row.note("%s: %s, converged, healed in %s", tc.name, what, healed.Round(100*time.Millisecond))
		})
	}
}

// rot damages every occurrence of marker in a database file, in place.
func rot(t *testing.T, good []byte, marker string) []byte {
	t.Helper()
	bad := slices.Clone(good)
	n := 0
	for i := bytes.Index(bad, []byte(marker)); i >= 0; {
		copy(bad[i+1:], "\x00\xff\x13")
		n++
		j := bytes.Index(bad[i+1:], []byte(marker))
		if j < 0 {
			break
		}
		i += 1 + j
	}
	if n == 0 {
		t.Fatalf("%s is not in the database file", marker)
	}
	return bad
}

// waitRepair waits until history records a repair whose summary contains
// want.
func (r *faultRig) waitRepair(want string) {
	r.t.Helper()
	if !pollUntil(10*time.Second, 100*time.Millisecond, func() bool {
		return slices.ContainsFunc(r.history(), func(e status.HistoryEntry) bool {
			return e.Kind == status.KindRepair && strings.Contains(e.Summary, want)
		})
	}) {
		r.t.Fatalf("no repair %q in history within 10s", want)
	}
}

// between is the text of s between the first from and the next to after it.
func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	out, _, _ := strings.Cut(rest, to)
	return out
}
