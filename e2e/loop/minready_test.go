package loop

import (
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// minReadySeconds is how long a new replica must run without restarting
// before it counts: a commit whose replicas crash after 4s gets past the
// default 2s settle time, but not past minReadySeconds: 10, so the rollout
// stops and the old replica keeps serving.
func TestMinReadySecondsCatchesLateCrash(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	service := func(env string) string {
		return testenv.PlainService("web", v1, 1) + "  minReadySeconds: 10\n" + env
	}
	r := testenv.StartRig(t, func(string) string { return service("") })
	first := r.Repo.Head()
	r.WaitConverged("first deploy, ready after 10s", first, 1, v1)
	before := testenv.DockerContainers(t, r.App)

	r.Commit("crash after 4s", service("  env: {WORKLOAD_EXIT_AFTER: 4s}\n"))
	// Three crashes 4 s apart take seconds here; the bound is sized for a
	// loaded CI machine and only decides how long a real failure takes to
	// report. On an engine slow to restart, the readiness wait may end
	// before the third restart: the rollout then fails as "not ready …:
	// restarting after exiting with code 1", the same crash in other words.
	st := r.Wait(3*time.Minute, "the late crash reported", func(st status.AppStatus) bool {
		return st.Health == drift.HealthDegraded && len(st.Services) == 1 &&
			strings.Contains(st.Services[0].Message, "rollout failed") && strings.Contains(st.Services[0].Message, "with code 1")
	})
	t.Logf("degraded: %s", st.Services[0].Message)
	after := testenv.DockerContainers(t, r.App)
	var kept bool
	for _, c := range after {
		kept = kept || c.ID == before[0].ID && c.State == "running"
	}
	if len(before) != 1 || !kept {
		t.Fatalf("the old replica must keep serving: before %+v, after %+v", before, after)
	}
}
