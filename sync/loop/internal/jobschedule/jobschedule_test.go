package jobschedule

import (
	"testing"
	"time"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/manifest"
)

func scheduledApp(concurrency string, catchUp bool, schedule string) *manifest.App {
	j := manifest.Job{Name: "backup", Type: manifest.JobScheduled, Schedule: schedule, Concurrency: concurrency, CatchUp: catchUp}
	j.Hash = manifest.HashJob(nil, j)
	return &manifest.App{Name: "shop", Jobs: []manifest.Job{j}}
}

func launched(l []*Job) int { return len(l) }

func TestSchedulerForbidSkipsARunWhileOneRuns(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := New(nil)
	s.Set(scheduledApp(manifest.ConcurrencyForbid, false, "@every 5s"), gitsource.Revision{SHA: "a"}, t0)
	if l, _ := s.Due(t0.Add(4 * time.Second)); launched(l) != 0 {
		t.Fatal("ran before its time")
	}
	if l, _ := s.Due(t0.Add(5 * time.Second)); launched(l) != 1 {
		t.Fatal("did not run at 5s")
	}
	// Still running at 10s: skipped, not queued.
	if l, skipped := s.Due(t0.Add(10 * time.Second)); launched(l) != 0 || len(skipped) != 1 {
		t.Fatalf("overlap: launched %d skipped %v", len(l), skipped)
	}
	s.Finished("backup")
	if l, _ := s.Due(t0.Add(12 * time.Second)); launched(l) != 0 {
		t.Fatal("a skipped run was made up for")
	}
	if l, _ := s.Due(t0.Add(15 * time.Second)); launched(l) != 1 {
		t.Fatal("did not run at 15s")
	}
	if got := s.lastRun["backup"]; !got.Equal(t0.Add(15 * time.Second)) {
		t.Fatalf("last run %v", got)
	}
}

func TestSchedulerSkipWhileSuspended(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := New(nil)
	s.Set(scheduledApp(manifest.ConcurrencyForbid, false, "@every 5s"), gitsource.Revision{SHA: "a"}, t0)
	if skipped := s.Skip(t0.Add(6 * time.Second)); len(skipped) != 1 || s.running["backup"] != 0 {
		t.Fatalf("skipped %v running %d", skipped, s.running["backup"])
	}
	if l, _ := s.Due(t0.Add(7 * time.Second)); launched(l) != 0 {
		t.Fatal("a run skipped while suspended was made up for")
	}
	if l, _ := s.Due(t0.Add(11 * time.Second)); launched(l) != 1 {
		t.Fatal("no run after resuming")
	}
}

func TestSchedulerAllowOverlaps(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := New(nil)
	s.Set(scheduledApp(manifest.ConcurrencyAllow, false, "@every 5s"), gitsource.Revision{SHA: "a"}, t0)
	s.Due(t0.Add(5 * time.Second))
	if l, skipped := s.Due(t0.Add(10 * time.Second)); launched(l) != 1 || len(skipped) != 0 || s.running["backup"] != 2 {
		t.Fatalf("allow: launched %d skipped %v running %d", len(l), skipped, s.running["backup"])
	}
}

func TestSchedulerCatchUp(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	for _, tt := range []struct {
		name    string
		catchUp bool
		last    time.Time
		want    int
	}{
		{"missed, catchUp", true, t0.Add(-2 * time.Hour), 1},
		{"missed, no catchUp", false, t0.Add(-2 * time.Hour), 0},
		{"not missed", true, t0.Add(-20 * time.Minute), 0},
		{"never ran", true, time.Time{}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			last := map[string]time.Time{}
			if !tt.last.IsZero() {
				last["backup"] = tt.last
			}
			s := New(last)
			s.Set(scheduledApp(manifest.ConcurrencyForbid, tt.catchUp, "@hourly"), gitsource.Revision{SHA: "a"}, t0)
			if l, _ := s.Due(t0); launched(l) != tt.want {
				t.Fatalf("launched %d at start, want %d", len(l), tt.want)
			}
			// Caught up once: the next run is the schedule's.
			if l, _ := s.Due(t0.Add(time.Minute)); launched(l) != 0 {
				t.Fatal("caught up twice")
			}
		})
	}
	// A job already scheduled (a later pass) is not caught up again.
	s := New(map[string]time.Time{"backup": t0.Add(-2 * time.Hour)})
	app := scheduledApp(manifest.ConcurrencyForbid, true, "@hourly")
	s.Set(app, gitsource.Revision{SHA: "a"}, t0)
	s.Due(t0)
	s.Set(app, gitsource.Revision{SHA: "b"}, t0.Add(time.Second))
	if l, _ := s.Due(t0.Add(2 * time.Second)); launched(l) != 0 {
		t.Fatal("a later pass caught up again")
	}
}
