package loop

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// jobManifest is a Job of the workload image that exits with code after
// the given time, printing the workload's lines.
func jobManifest(name, spec, image string, after string, code int) string {
	return fmt.Sprintf(`---
apiVersion: driftless.dev/v1
kind: Job
metadata:
  name: %s
spec:
  image: %s
  env:
    WORKLOAD_EXIT_AFTER: %q
    WORKLOAD_EXIT_CODE: "%d"
  timeout: 30s
%s`, name, image, after, code, spec)
}

// jobContainers are the app's job runs as docker ps -a sees them, by name.
func jobContainers(t *testing.T, app, job string) []string {
	t.Helper()
	out := testenv.Docker(t, "ps", "-a", "--filter", "label="+drift.LabelApp+"="+app, "--filter", "label="+drift.LabelJob+"="+job, "--format", "{{.Names}}")
	names := strings.Fields(out)
	slices.Sort(names)
	return names
}

func inspectTime(t *testing.T, container, field string) time.Time {
	t.Helper()
	out := strings.TrimSpace(testenv.Docker(t, "inspect", "-f", "{{"+field+"}}", container))
	ts, err := time.Parse(time.RFC3339Nano, out)
	if err != nil {
		t.Fatalf("%s of %s: %q: %v", field, container, out, err)
	}
	return ts
}

// A failing pre-sync job stops the release: the old replicas keep running
// untouched, history has the job's exit code and last lines, the revision
// is refused; a commit that fixes the job deploys. Job containers are no
// replicas: the app converged with them around is Synced with nothing to
// do.
func TestJobPreSyncFailureKeepsTheOldRevision(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	r := testenv.StartRig(t, func(app string) string { return testenv.WebManifest(v1, 2, "one") })
	first := r.Repo.Head()
	r.WaitConverged("first deploy", first, 2, v1)
	before := testenv.IDsByName(testenv.DockerContainers(t, r.App))

	bad := r.Commit("migrate fails", testenv.WebManifest(v1, 2, "two")+jobManifest("migrate", "  type: pre-sync\n", v1, "300ms", 3))
	st := r.Wait(45*time.Second, "the revision refused by its pre-sync job", func(st status.AppStatus) bool {
		return st.Refused != nil && st.Refused.Revision.SHA == bad
	})
	if !strings.Contains(st.Refused.Reason, "pre-sync job migrate failed: exit 3") || !strings.Contains(st.Refused.Reason, "exiting as configured") {
		t.Fatalf("refusal reason %q", st.Refused.Reason)
	}
	if st.Applied == nil || st.Applied.SHA != first {
		t.Fatalf("applied %s, want %s", testenv.RevShort(st.Applied), first[:7])
	}
	checkUntouched(t, r.App, before)
	checkFailedRun(t, r)
	if runs := jobContainers(t, r.App, "migrate"); len(runs) != 1 {
		t.Fatalf("job containers %v", runs)
	}
	if out, code := testenv.Run(t, t.Context(), t.TempDir(), "status", r.App, "--server="+r.Agent.URL); code != 0 ||
		!strings.Contains(out, "FAILED: exit 3") || !strings.Contains(out, "last lines of migrate") {
		t.Fatalf("driftless status (exit %d):\n%s", code, out)
	}

	fixed := r.Commit("migrate fixed", testenv.WebManifest(v1, 2, "two")+jobManifest("migrate", "  type: pre-sync\n", v1, "300ms", 0))
	st = r.WaitConverged("the fixed revision", fixed, 2, v1)
	if st.Refused != nil {
		t.Fatalf("still refused: %+v", st.Refused)
	}
	if st.Drift != nil && !st.Drift.Empty() {
		t.Fatalf("job containers seen as drift: %s", st.Drift.Summary())
	}
	if len(st.Jobs) != 1 || st.Jobs[0].LastRun == nil || st.Jobs[0].LastRun.ExitCode != 0 {
		t.Fatalf("status jobs %+v", st.Jobs)
	}
	if runs := jobContainers(t, r.App, "migrate"); len(runs) != 2 {
		t.Fatalf("job containers %v (both runs kept for docker logs)", runs)
	}
	// A few more polls with the runs around: nothing is healed or pruned,
	// and the one-shot CLI sees nothing to do either.
	time.Sleep(3 * time.Second)
	if rep := r.Repairs(); len(rep) != 0 {
		t.Fatalf("repairs %q", rep)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(testenv.WebManifest(v1, 2, "two")+jobManifest("migrate", "  type: pre-sync\n", v1, "300ms", 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := testenv.Run(t, t.Context(), dir, "diff", ".", "--app", r.App, "--data", r.Data); code != 0 {
		t.Fatalf("driftless diff with the job runs around: exit %d\n%s", code, out)
	}
}

// A pre-sync job that succeeds has finished before the new replicas are
// created.
func TestJobPreSyncRunsBeforeTheNewReplicas(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	r := testenv.StartRig(t, func(app string) string { return testenv.WebManifest(v1, 1, "one") })
	r.WaitConverged("first deploy", r.Repo.Head(), 1, v1)
	next := r.Commit("migrate, then two", testenv.WebManifest(v1, 1, "two")+jobManifest("migrate", "  type: pre-sync\n", v1, "1s", 0))
	st := r.WaitConverged("the new revision", next, 1, v1)
	runs := jobContainers(t, r.App, "migrate")
	if len(runs) != 1 {
		t.Fatalf("job containers %v", runs)
	}
	finished := inspectTime(t, runs[0], ".State.FinishedAt")
	for _, c := range st.Services[0].Containers {
		created := inspectTime(t, c.ID, ".Created")
		if !created.After(finished) {
			t.Fatalf("replica %s created at %s, before the job finished at %s", c.Name, created, finished)
		}
	}
	es := testenv.History(t, r.Agent.Client(), r.App, string(status.KindJob))
	if len(es) != 1 || es[0].Result != "succeeded" || es[0].Revision == nil || es[0].Revision.SHA != next {
		t.Fatalf("job history %+v", es)
	}
}

// On an app's first revision the pre-sync job runs before anything else
// of the app exists: its network is created first, then the job joins it,
// then the replicas come up.
func TestJobPreSyncOnTheFirstRevision(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	r := testenv.StartRig(t, func(app string) string {
		return testenv.WebManifest(v1, 1, "one") + jobManifest("migrate", "  type: pre-sync\n", v1, "200ms", 0)
	})
	st := r.WaitConverged("first deploy", r.Repo.Head(), 1, v1)
	if len(st.Jobs) != 1 || st.Jobs[0].LastRun == nil || st.Jobs[0].LastRun.Failed() {
		t.Fatalf("status jobs %+v", st.Jobs)
	}
	runs := jobContainers(t, r.App, "migrate")
	if len(runs) != 1 {
		t.Fatalf("job containers %v", runs)
	}
	if nets := testenv.Docker(t, "inspect", "-f", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}", runs[0]); !strings.Contains(nets, r.App+"-default") {
		t.Fatalf("the job ran on %q, not the app's network", nets)
	}
}

// A scheduled job every 5s runs, is recorded each time, and with
// concurrency forbid never overlaps itself although each run takes longer
// than the interval.
func TestJobScheduledRunsWithoutOverlap(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	r := testenv.StartRig(t, func(app string) string {
		return testenv.WebManifest(v1, 1, "one") + jobManifest("tick", "  schedule: '@every 5s'\n", v1, "7s", 0)
	})
	r.WaitConverged("first deploy", r.Repo.Head(), 1, v1)
	var es []status.HistoryEntry
	deadline := time.Now().Add(50 * time.Second)
	for time.Now().Before(deadline) {
		if es = testenv.History(t, r.Agent.Client(), r.App, string(status.KindJob)); len(es) >= 2 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(es) < 2 {
		t.Fatalf("scheduled runs recorded: %d", len(es))
	}
	for _, e := range es {
		if e.Job == nil || e.Job.ExitCode != 0 || e.Job.Duration < 6*time.Second || e.Trigger != "scheduled" {
			t.Fatalf("run %+v", e.Job)
		}
	}
	runs := make([]status.JobRun, 0, len(es))
	for _, e := range es {
		runs = append(runs, *e.Job)
	}
	slices.SortFunc(runs, func(a, b status.JobRun) int { return a.Started.Compare(b.Started) })
	for i := 1; i < len(runs); i++ {
		if end := runs[i-1].Started.Add(runs[i-1].Duration); runs[i].Started.Before(end) {
			t.Fatalf("run %d started at %s before run %d ended at %s", i, runs[i].Started, i-1, end)
		}
	}
	st := testenv.AppStatus(t, r.Agent, r.App)
	if len(st.Jobs) != 1 || st.Jobs[0].Schedule != "@every 5s" || st.Jobs[0].NextRun.IsZero() || st.Sync != drift.SyncSynced {
		t.Fatalf("status %s jobs %+v", st.Sync, st.Jobs)
	}
}

// checkUntouched fails unless the app's replicas are those of before,
// still with the first revision's environment.
func checkUntouched(t *testing.T, app string, before map[string]string) {
	t.Helper()
	after := testenv.IDsByName(testenv.DockerContainers(t, app))
	for name, id := range before {
		if after[name] != id {
			t.Fatalf("replica %s changed: before %v after %v", name, before, after)
		}
		if env := testenv.Docker(t, "inspect", "-f", "{{range .Config.Env}}{{println .}}{{end}}", id); !strings.Contains(env, "MESSAGE=one") {
			t.Fatalf("replica %s env %q", name, env)
		}
	}
}

// checkFailedRun fails unless history has the one failed run of migrate
// with its exit code and last lines.
func checkFailedRun(t *testing.T, r *testenv.AgentRig) {
	t.Helper()
	es := testenv.History(t, r.Agent.Client(), r.App, string(status.KindJob))
	if len(es) != 1 || es[0].Job == nil || es[0].Job.ExitCode != 3 || es[0].Result != "failed" ||
		!slices.ContainsFunc(es[0].Job.LastLines, func(l string) bool { return strings.Contains(l, "exiting as configured") }) {
		t.Fatalf("job history %+v", es)
	}
}
