package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/sync/status"
)

func appendN(t *testing.T, s *Store, app string, kind status.HistoryKind, n int) {
	t.Helper()
	for i := range n {
		if _, err := s.Append(status.HistoryEntry{App: app, Kind: kind, Summary: fmt.Sprintf("%s %d", app, i), Time: time.Unix(int64(i), 0)}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStoreHistorySurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "shop", status.KindSync, 3)
	if err := s.UpdateApp("shop", func(p *App) { on := true; p.Suspended = &on }); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Query(status.HistoryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Summary != "shop 2" || got[0].ID != 3 {
		t.Fatalf("after reopen got %+v, want 3 entries newest first", got)
	}
	e, ok := s.Entry(2)
	if !ok || e.Summary != "shop 1" {
		t.Fatalf("Entry(2) = %+v %v", e, ok)
	}
	if _, ok := s.Entry(99); ok {
		t.Fatal("Entry(99) found an entry that does not exist")
	}
	p, err := s.LoadApp("shop")
	if err != nil || p.Suspended == nil || !*p.Suspended {
		t.Fatalf("persisted app state = %+v, %v; want suspended", p, err)
	}
	appendN(t, s, "shop", status.KindSync, 1)
	if got, _ := s.Query(status.HistoryQuery{Limit: 1}); got[0].ID != 4 {
		t.Fatalf("IDs restart after reopen: got %d, want 4", got[0].ID)
	}
}

func TestStoreTrimsToRetention(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "shop", status.KindSync, 8)
	got, _ := s.Query(status.HistoryQuery{Limit: 100})
	if len(got) != 5 || got[4].ID != 4 || got[0].ID != 8 {
		t.Fatalf("kept %d entries (%d..%d), want the newest 5 (4..8)", len(got), got[len(got)-1].ID, got[0].ID)
	}
	s.Close()
	s, err = Open(dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appendN(t, s, "shop", status.KindSync, 1)
	got, _ = s.Query(status.HistoryQuery{Limit: 100})
	if len(got) != 5 || got[4].ID != 5 {
		t.Fatalf("after reopen kept %d entries from %d, want 5 from 5", len(got), got[len(got)-1].ID)
	}
}

func TestStoreQueryFiltersAndPages(t *testing.T) {
	s, err := Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 10 {
		app, kind := "shop", status.KindSync
		if i%2 == 1 {
			app, kind = "blog", status.KindRepair
		}
		if _, err := s.Append(status.HistoryEntry{App: app, Kind: kind}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(es []status.HistoryEntry) []uint64 {
		var out []uint64
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	page1, _ := s.Query(status.HistoryQuery{App: "shop", Limit: 3})
	page2, _ := s.Query(status.HistoryQuery{App: "shop", Limit: 3, Before: page1[2].ID})
	if fmt.Sprint(ids(page1), ids(page2)) != "[9 7 5] [3 1]" {
		t.Fatalf("pages = %v %v, want [9 7 5] [3 1]", ids(page1), ids(page2))
	}
	repairs, _ := s.Query(status.HistoryQuery{Kinds: []status.HistoryKind{status.KindRepair}, Before: 6})
	if fmt.Sprint(ids(repairs)) != "[4 2]" {
		t.Fatalf("repairs before 6 = %v, want [4 2]", ids(repairs))
	}
	all, _ := s.Query(status.HistoryQuery{Before: 1000})
	if len(all) != 10 {
		t.Fatalf("Before beyond the newest returned %d entries, want 10", len(all))
	}
}
