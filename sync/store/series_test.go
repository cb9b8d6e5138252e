package store

import (
	"testing"
	"time"

	"github.com/driftless-dev/driftless/sync/status"
	bolt "go.etcd.io/bbolt"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func points(s []status.ServiceSeries, service string) []status.SeriesPoint {
	for _, x := range s {
		if x.Service == service {
			return x.Points
		}
	}
	return nil
}

// A minute keeps the lowest ready count seen in it and the last desired
// count; the next minute starts from the latest observation.
func TestSeriesMinuteKeepsTheDip(t *testing.T) {
	r := NewSeries()
	r.Observe("shop", t0.Add(5*time.Second), []ServiceCount{{"web", 3, 3}})
	r.Observe("shop", t0.Add(20*time.Second), []ServiceCount{{"web", 2, 3}}) // a replica removed
	r.Observe("shop", t0.Add(21*time.Second), []ServiceCount{{"web", 3, 3}}) // and recreated
	r.Tick(t0.Add(70*time.Second), []string{"shop"})
	r.Observe("shop", t0.Add(130*time.Second), []ServiceCount{{"web", 1, 1}}) // scaled down

	got := points(r.Since("shop", t0), "web")
	want := []status.SeriesPoint{{Time: t0, Ready: 3, Desired: 3, MinReady: 2, MaxReady: 3}, {Time: t0.Add(time.Minute), Ready: 3, Desired: 3, MinReady: 3, MaxReady: 3}, {Time: t0.Add(2 * time.Minute), Ready: 1, Desired: 1, MinReady: 1, MaxReady: 1}}
	requirePoints(t, "", got, want)
	if other := r.Since("cart", t0); len(other) != 0 {
		t.Fatalf("another app's series = %+v", other)
	}
}

// The point before since still holds at since; points before it are cut.
func TestSeriesSinceStartsWithThePointInForce(t *testing.T) {
	r := NewSeries()
	for i := range 10 {
		r.Observe("shop", t0.Add(time.Duration(i)*time.Minute), []ServiceCount{{"web", i, 9}})
	}
	got := points(r.Since("shop", t0.Add(4*time.Minute+30*time.Second)), "web")
	if len(got) != 6 || got[0].Ready != 4 || got[5].Ready != 9 {
		t.Fatalf("points since 4m30s = %+v, want ready 4..9", got)
	}
}

// Points older than the retention are dropped from memory, from the store
// and when loading, and the series survives a restart of the agent.
func TestSeriesRetentionAndRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := NewSeries()
	start := t0
	total := int((SeriesRetention + 2*time.Hour) / time.Minute)
	for i := range total {
		now := start.Add(time.Duration(i) * time.Minute)
		r.Observe("shop", now, []ServiceCount{{"web", i % 4, 3}, {"db", 1, 1}})
		if i%60 == 0 {
			if err := r.Flush(s, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	end := start.Add(time.Duration(total-1) * time.Minute)
	if err := r.Flush(s, end); err != nil {
		t.Fatal(err)
	}
	keep := int(SeriesRetention/time.Minute) + 1
	if n := len(points(r.Since("shop", time.Time{}), "web")); n != keep {
		t.Fatalf("in memory %d points, want %d (the retention at 1-minute resolution)", n, keep)
	}
	if n := countStoredPoints(t, s); n != 2*keep {
		t.Fatalf("stored %d points, want %d (two services within the retention)", n, 2*keep)
	}
	s.Close()

	// Reopened two hours later: the oldest two hours are gone too.
	s, err = Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	later := end.Add(2 * time.Hour)
	r2 := NewSeries()
	if err := r2.Prune(s, later); err != nil {
		t.Fatal(err)
	}
	if err := r2.Load(s, later); err != nil {
		t.Fatal(err)
	}
	got := points(r2.Since("shop", time.Time{}), "web")
	if len(got) != keep-120 {
		t.Fatalf("after restart %d points, want %d", len(got), keep-120)
	}
	last := got[len(got)-1]
	if !last.Time.Equal(end) || last.Ready != (total-1)%4 || last.MinReady != last.Ready || last.MaxReady != last.Ready || last.Desired != 3 {
		t.Fatalf("last point after restart = %+v, want %v ready %d desired 3", last, end, (total-1)%4)
	}
	if n := countStoredPoints(t, s); n != 2*(keep-120) {
		t.Fatalf("stored after prune %d points, want %d", n, 2*(keep-120))
	}
	// After the restart the line goes on from the current minute; the
	// minutes in between stay a gap.
	r2.Observe("shop", later, []ServiceCount{{"web", 3, 3}})
	got = points(r2.Since("shop", end), "web")
	if len(got) != 2 || !got[1].Time.Equal(later) {
		t.Fatalf("after restart the series = %+v, want the last stored point then %v", got, later)
	}
}

func countStoredPoints(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	if err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketSeries).Stats().KeyN
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func requirePoints(t *testing.T, when string, got, want []status.SeriesPoint) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: points = %+v, want %+v", when, got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.Time.Equal(w.Time) || g.Ready != w.Ready || g.Desired != w.Desired || g.MinReady != w.MinReady || g.MaxReady != w.MaxReady {
			t.Fatalf("%s: point %d = %+v, want %+v (all %+v)", when, i, g, w, got)
		}
	}
}

// Whatever the database holds under the series bucket, reading it never
// panics, and a point that decodes encodes back to the same bytes.
func FuzzSeriesRecord(f *testing.F) {
	f.Add(seriesDBKey(seriesKey{"shop", "web"}, 1700000000), encodePoint(status.SeriesPoint{Ready: 3, Desired: 3, MinReady: 2, MaxReady: 3}))
	f.Add([]byte("x\x00"), []byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if k, unix, ok := parseSeriesDBKey(key); ok && string(seriesDBKey(k, unix)) != string(key) {
			t.Fatalf("key %q parses to %+v %d, which encodes as %q", key, k, unix, seriesDBKey(k, unix))
		}
		if p, ok := decodePoint(value); ok {
			if p.MinReady > p.Ready || p.MaxReady < p.Ready {
				t.Fatalf("decoded %+v: min/max outside the value", p)
			}
		}
	})
}
