package loop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/status"
)

// The agent launches scheduled jobs from the enforced revision, records
// each run in history, shows the next run in status, and keeps the last
// run in the store for catchUp after a restart.
func TestScheduledJobsRunAndCatchUpAfterRestart(t *testing.T) {
	h, f := jobHarness(t)
	sched := "apiVersion: driftless.dev/v1\nkind: Job\nmetadata:\n  name: backup\nspec:\n  image: tools:1\n  schedule: '@every 1m'\n  catchUp: true\n"
	h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 1), "backup.yaml": sched})
	st, _ := h.pass("shop", TriggerStartup)
	if len(st.Jobs) != 1 || !st.Jobs[0].NextRun.Equal(h.clock.Now().Add(time.Minute)) {
		t.Fatalf("status jobs %+v", st.Jobs)
	}
	ctx := context.Background()
	h.agent.launchDue(ctx)
	h.clock.Advance(time.Minute)
	h.agent.launchDue(ctx)
	h.agent.jobs.runs.Wait()
	if got := f.ran(); len(got) != 1 || !strings.HasPrefix(got[0], "backup@") {
		t.Fatalf("runs %v", got)
	}
	es := h.history("shop", status.KindJob)
	if len(es) != 1 || es[0].Trigger != manifest.JobScheduled {
		t.Fatalf("history %+v", es)
	}
	// Down for an hour: the run missed is made once at start.
	h.agent.jobs.runs.Wait()
	h.restart()
	h.clock.Advance(time.Hour)
	h.pass("shop", TriggerStartup)
	h.agent.launchDue(ctx)
	h.agent.launchDue(ctx)
	h.agent.jobs.runs.Wait()
	if got := f.ran(); len(got) != 2 {
		t.Fatalf("after restart: runs %v", got)
	}
}
