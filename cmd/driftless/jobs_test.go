package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/sync/status"
)

// `driftless status APP` lists the jobs: type, schedule, last run and its
// result, next run, and the last lines of a failed run.
func TestStatusListsJobs(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	a := status.AppStatus{Name: "shop", Jobs: []status.JobStatus{
		{Name: "migrate", Type: "pre-sync", LastRun: &status.JobRun{Job: "migrate", Type: "pre-sync", Started: now.Add(-time.Minute), Duration: 1200 * time.Millisecond, ExitCode: 3, Container: "shop-job-migrate-1", LastLines: []string{"error: column exists"}}},
		{Name: "backup", Type: "scheduled", Schedule: "0 3 * * *", TimeZone: "Europe/Paris", NextRun: now.Add(2 * time.Hour)},
	}}
	var out bytes.Buffer
	printAppStatus(&out, a, now)
	for _, want := range []string{"Jobs:", "migrate", "FAILED: exit 3 after 1.2s", "1m ago", "backup", "0 3 * * * (Europe/Paris)", "never", "in 2h0m0s", "last lines of migrate (shop-job-migrate-1):", "error: column exists"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	out.Reset()
	printAppStatus(&out, status.AppStatus{Name: "shop"}, now)
	if strings.Contains(out.String(), "Jobs:") {
		t.Errorf("jobs section without jobs:\n%s", out.String())
	}
}
