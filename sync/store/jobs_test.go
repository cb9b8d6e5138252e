package store

import (
	"fmt"
	"testing"
	"time"
)

func TestJobsPersist(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	for i := range MaxJobsDone + 5 {
		if err := s.UpdateJobs("shop", func(j *Jobs) { j.Done = append(j.Done, fmt.Sprint(i)) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.UpdateJobs("shop", func(j *Jobs) { j.LastRun = map[string]time.Time{"backup": at} }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	j, err := s.LoadJobs("shop")
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Done) != MaxJobsDone || j.Done[0] != "5" || !j.LastRun["backup"].Equal(at) {
		t.Errorf("jobs = %d entries, first %q, last run %v", len(j.Done), j.Done[0], j.LastRun)
	}
	if none, _ := s.LoadJobs("other"); none.LastRun != nil {
		t.Errorf("other = %+v", none)
	}
}
