package previews

import (
	"testing"
	"time"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/sources"
)

func source(maxPreviews int, ttl time.Duration) config.SourceConfig {
	return config.SourceConfig{Name: "shop", MaxPreviews: maxPreviews, Branches: &sources.Branches{Match: "preview/*", Path: "deploy"},
		Preview: config.PreviewSettings{PortsFrom: 20000, PortsTo: 20029, PerPreview: 10, TTL: ttl}}
}

// TestNextKeepsSlotsAndLimits: a preview keeps its block of ports while
// others come and go; past maxPreviews or the range's blocks a branch
// waits; main never gets one.
func TestNextKeepsSlotsAndLimits(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	sc := source(3, 0)
	next, dropped := Next(sc, nil, []gitsource.Branch{{Name: "main", SHA: "m"}, {Name: "preview/a", SHA: "1"}, {Name: "preview/b", SHA: "2"}}, t0)
	if len(next) != 2 || next["preview/a"].Slot != 0 || next["preview/b"].Slot != 1 || len(dropped) != 0 {
		t.Fatalf("first: %+v %v", next, dropped)
	}
	// a goes; c and d arrive: c takes a's free block, d the third, e waits.
	next, dropped = Next(sc, next, []gitsource.Branch{{Name: "preview/b", SHA: "2"}, {Name: "preview/c", SHA: "3"}, {Name: "preview/d", SHA: "4"}, {Name: "preview/e", SHA: "5"}}, t0.Add(time.Minute))
	if next["preview/b"].Slot != 1 || next["preview/c"].Slot != 0 || next["preview/d"].Slot != 2 || len(next) != 3 {
		t.Fatalf("second: %+v", next)
	}
	if len(dropped) != 1 || dropped[0].String() != "preview/e (maxPreviews reached)" {
		t.Fatalf("dropped %v", dropped)
	}
	apps, err := Apps(sc, next)
	if err != nil || len(apps) != 3 || apps[0].Name != "shop-preview-b" || apps[0].Preview.Ports.Base != 20010 || apps[0].Branch != "preview/b" || apps[0].Path != "deploy" {
		t.Fatalf("apps %+v %v", apps, err)
	}
}

// TestNextExpiresIdlePreviews: a branch that has not moved for the ttl
// loses its preview and its ports; a new commit brings it back.
func TestNextExpiresIdlePreviews(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	sc := source(10, time.Hour)
	branch := []gitsource.Branch{{Name: "preview/a", SHA: "1"}}
	next, _ := Next(sc, nil, branch, t0)
	next, dropped := Next(sc, next, branch, t0.Add(2*time.Hour))
	if p := next["preview/a"]; !p.Expired || p.Slot != -1 || len(dropped) != 1 {
		t.Fatalf("after the ttl: %+v %v", next, dropped)
	}
	if apps, _ := Apps(sc, next); len(apps) != 0 {
		t.Fatalf("an expired preview has an app: %+v", apps)
	}
	if next, _ = Next(sc, next, branch, t0.Add(3*time.Hour)); !next["preview/a"].Expired {
		t.Fatal("an expired preview came back without a commit")
	}
	next, _ = Next(sc, next, []gitsource.Branch{{Name: "preview/a", SHA: "2"}}, t0.Add(4*time.Hour))
	if p := next["preview/a"]; p.Expired || p.Slot != 0 {
		t.Fatalf("a new commit must revive it: %+v", p)
	}
}
