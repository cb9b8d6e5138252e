package loop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestAgentReportsCrashingImageWithoutHotLoop commits an image that exits at
// start. The agent must try it, keep the old replicas serving, report the
// service Degraded with the exit code, and not roll it out again and again
// while Docker events from the failed attempt and polls keep arriving.
func TestAgentReportsCrashingImageWithoutHotLoop(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	r := testenv.StartRig(t, func(app string) string { return testenv.ServiceManifest(v1, 2, map[string]string{"MESSAGE": "one"}) })
	first := r.Repo.Head()
	r.WaitConverged("first deploy", first, 2, v1)
	before := testenv.DockerContainers(t, r.App)

	bad := r.Commit("crash at start", testenv.ServiceManifest(v1, 2, map[string]string{"MESSAGE": "two", "WORKLOAD_CRASH": "true"}))
	st := r.Wait(60*time.Second, "the crashing rollout reported", func(st status.AppStatus) bool {
		return st.Health == drift.HealthDegraded && len(st.Services) == 1 &&
			strings.Contains(st.Services[0].Message, "exited with code 1")
	})
	t.Logf("degraded: %s", st.Services[0].Message)

	// Polls come every second; give them and the failed attempt's Docker
	// events time to cause a hot loop if there were one.
	time.Sleep(6 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	page, err := r.Agent.Client().History(ctx, r.App, []string{"sync"}, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	attempts := 0
	for _, e := range page.Entries {
		if e.Revision != nil && e.Revision.SHA == bad {
			attempts++
		}
	}
	if attempts != 1 {
		t.Fatalf("the crashing revision was rolled out %d times in a few seconds; want 1 and a backoff", attempts)
	}
	after := testenv.DockerContainers(t, r.App)
	if len(after) != len(before) {
		t.Fatalf("old replicas must keep serving unchanged: before %+v, after %+v", before, after)
	}
	for i := range before {
		if after[i].ID != before[i].ID || after[i].State != "running" {
			t.Fatalf("old replicas must keep serving unchanged: before %+v, after %+v", before, after)
		}
	}

	// Fixing it in Git is applied at once, backoff or not.
	fix := r.Commit("fix", testenv.ServiceManifest(v1, 2, map[string]string{"MESSAGE": "three"}))
	r.WaitConverged("the fix", fix, 2, v1)
}
