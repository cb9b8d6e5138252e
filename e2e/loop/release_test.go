package loop

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// releaseWatch is the window of these tests: long enough for a release
// that crashes a few seconds after it is ready to fall inside it.
const releaseWatch = "20s"

// crashAfter is when the bad releases crash: after their rollout (about
// 5 s for two replicas) and inside the window.
const crashAfter = "10s"

// startReleaseRig deploys v1 with a watch window and waits until v1 has
// passed it, so that a regression has somewhere to roll back to.
func startReleaseRig(t *testing.T, image string, flags ...string) (*testenv.AgentRig, string) {
	t.Helper()
	r := testenv.StartRigWith(t, func(string) string { return testenv.ServiceManifest(image, 2, map[string]string{"MESSAGE": "v1"}) },
		append([]string{"--interval", "1s", "--release-watch", releaseWatch}, flags...)...)
	good := r.Repo.Head()
	r.WaitConverged("v1", good, 2, image)
	r.Wait(2*time.Minute, "v1 passes its watch window", func(st status.AppStatus) bool {
		return st.Release != nil && st.Release.LastGood == good && st.Release.Watching == nil
	})
	return r, good
}

// rolledBackTo is ConvergedTo for an app whose head is quarantined: it
// runs sha, healthy, and is out of sync with its branch on purpose.
func rolledBackTo(sha string, replicas int, image string) func(status.AppStatus) bool {
	return func(st status.AppStatus) bool {
		synced := st
		synced.Sync = drift.SyncSynced
		return st.Sync == drift.SyncOutOfSync && testenv.ConvergedTo(sha, replicas, image)(synced)
	}
}

func quarantinedAt(st status.AppStatus, sha string) *status.Quarantine {
	if st.Release == nil {
		return nil
	}
	for i := range st.Release.Quarantined {
		if st.Release.Quarantined[i].Revision.SHA == sha {
			return &st.Release.Quarantined[i]
		}
	}
	return nil
}

func historyOf(t *testing.T, r *testenv.AgentRig, kinds ...string) []status.HistoryEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	page, err := r.Agent.Client().History(ctx, r.App, kinds, 0, 200)
	if err != nil {
		t.Fatal(err)
	}
	return page.Entries
}

// TestReleaseRegressionRollsBackAndQuarantines: a release that becomes
// ready and then crashes inside its watch window is rolled back to the
// last release that passed its window and quarantined while the branch
// still names it. 'driftless sync' refuses to retry it without --force;
// with --force it is retried (and rolled back again); a fix commit then
// deploys and is watched.
func TestReleaseRegressionRollsBackAndQuarantines(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	r, good := startReleaseRig(t, image)
	before := testenv.IDsByName(testenv.DockerContainers(t, r.App))

	bad := r.Commit("v2 crashes under traffic", testenv.ServiceManifest(image, 2, map[string]string{"MESSAGE": "v2", "WORKLOAD_EXIT_AFTER": crashAfter, "WORKLOAD_EXIT_CODE": "3"}))
	watched := r.Wait(time.Minute, "v2 rolled out and watched", func(st status.AppStatus) bool {
		return st.Applied != nil && st.Applied.SHA == bad && st.Release != nil && st.Release.Watching != nil && st.Release.Watching.Revision == bad
	})
	st := r.Wait(2*time.Minute, "v2 quarantined and v1 running again", func(st status.AppStatus) bool {
		return quarantinedAt(st, bad) != nil && rolledBackTo(good, 2, image)(st)
	})
	q := quarantinedAt(st, bad)
	if !strings.Contains(q.Reason, r.App+"-web-") || !strings.Contains(q.Reason, "after the release (") || q.RolledBackTo != good {
		t.Fatalf("quarantine %+v: want the replica that failed and a rollback to %s", q, good[:7])
	}
	if st.Fetched == nil || st.Fetched.SHA != bad || st.Sync != drift.SyncOutOfSync || !strings.HasPrefix(st.Message, "quarantined "+bad[:7]+": ") ||
		!strings.Contains(st.Message, "running "+good[:7]+", rolled back automatically") {
		t.Fatalf("head %s, sync %s, message %q: want the head quarantined, out of sync, and the message to say so", testenv.RevShort(st.Fetched), st.Sync, st.Message)
	}
	for name, id := range testenv.IDsByName(testenv.DockerContainers(t, r.App)) {
		if id == before[name] {
			t.Errorf("replica %s is v1's old container; want v1 rolled out again", name)
		}
	}
	rb := historyOf(t, r, "rollback")
	last := len(rb) - 1 // oldest first from here
	if len(rb) < 2 || rb[last].Result != "quarantined" || !status.AutomaticRollback(rb[last-1]) || rb[0].Result != "succeeded" || !status.AutomaticRollback(rb[0]) {
		t.Fatalf("rollback history %+v: want the quarantine, then the automatic rollback", rb)
	}
	for _, e := range rb {
		t.Logf("history: %s %s: %s", e.Kind, e.Result, e.Summary)
	}
	// How fast: from the quarantine (the regression seen) to the start of
	// the rollback's first apply. Reported, not asserted
	// (docs/benchmarks.md).
	t.Logf("regression seen → rollback started: %s (%d rollback applies, the first took %s)",
		rb[last-1].Time.Add(-rb[last-1].Duration).Sub(rb[last].Time), last, rb[last-1].Duration)
	if crash, ok := firstEvent(t, r.App, "die", watched.Release.Watching.Since, rb[last].Time); ok {
		t.Logf("crash (Docker's die event) → regression seen (quarantine recorded): %s", rb[last].Time.Sub(crash))
		if create, ok := firstEvent(t, r.App, "create", crash, rb[last-1].Time); ok {
			t.Logf("crash → the rollback's first container created: %s", create.Sub(crash))
		}
	}

	// Polls keep seeing v2 at the head and keep v1.
	time.Sleep(3 * time.Second)
	if st := r.Wait(10*time.Second, "still rolled back", func(st status.AppStatus) bool { return !st.Reconciling }); st.Applied.SHA != good {
		t.Fatalf("applied %s after more polls: the quarantined head was tried again", st.Applied.Short())
	}

	cli := func(args ...string) (string, error) {
		cmd := exec.Command(testenv.DriftlessBinary(t), append(args, "--server", r.Agent.URL)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := cli("sync", r.App); err == nil || !strings.Contains(out, "is quarantined") || !strings.Contains(out, "sync --force "+r.App) {
		t.Fatalf("driftless sync of a quarantined head: err %v, output %q; want a refusal naming --force", err, out)
	}
	if out, err := cli("status", r.App); err != nil || !strings.Contains(out, "QUARANTINED "+bad[:7]) {
		t.Fatalf("driftless status: err %v, output:\n%s", err, out)
	}
	if out, err := cli("sync", "--force", r.App); err != nil || !strings.Contains(out, "quarantine of "+bad[:7]+" lifted") {
		t.Fatalf("driftless sync --force: err %v, output %q", err, out)
	}
	r.Wait(2*time.Minute, "v2 retried on purpose, then rolled back again", func(st status.AppStatus) bool {
		return quarantinedAt(st, bad) != nil && rolledBackTo(good, 2, image)(st) && len(historyOf(t, r, "rollback")) >= 4
	})

	fix := r.Commit("v3 fixes it", testenv.ServiceManifest(image, 2, map[string]string{"MESSAGE": "v3"}))
	st = r.Wait(2*time.Minute, "the fix deploys and is watched", func(st status.AppStatus) bool {
		return testenv.ConvergedTo(fix, 2, image)(st) && st.Release != nil && st.Release.Watching != nil && st.Release.Watching.Revision == fix
	})
	if !strings.Contains(st.Message, "watching (") {
		t.Errorf("message %q: want the open window shown", st.Message)
	}
}

// TestReleaseWatchSurvivesAgentKill: the agent is SIGKILLed inside a
// window; the replica crashes while it is down; the restarted agent
// resumes the window from its store and still rolls back.
func TestReleaseWatchSurvivesAgentKill(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	r, good := startReleaseRig(t, image)
	bad := r.Commit("v2 crashes after a while", testenv.ServiceManifest(image, 2, map[string]string{"MESSAGE": "v2", "WORKLOAD_EXIT_AFTER": crashAfter, "WORKLOAD_EXIT_CODE": "137"}))
	r.Wait(time.Minute, "v2 rolled out and watched", func(st status.AppStatus) bool {
		return st.Applied != nil && st.Applied.SHA == bad && st.Release != nil && st.Release.Watching != nil
	})
	r.Agent.Kill(t)
	// Docker restarts the crashed replica meanwhile (restart: always).
	time.Sleep(12 * time.Second)
	r.Restart()
	st := r.Wait(2*time.Minute, "rolled back after the restart", func(st status.AppStatus) bool {
		return quarantinedAt(st, bad) != nil && rolledBackTo(good, 2, image)(st)
	})
	if q := quarantinedAt(st, bad); !strings.Contains(q.Reason, "crash-looped") {
		t.Fatalf("quarantine reason %q: want the restarts Docker made while the agent was down", q.Reason)
	}
}

// TestReleaseRollbackThatFailsStops: the release regresses, and the
// rollback fails too (v1's image is gone and there is no registry). The
// app is Degraded with both reasons, and the quarantined commit is not
// tried again: no ping-pong between revisions.
func TestReleaseRollbackThatFailsStops(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "rollback-fails-"+testenv.UniqueApp(t))
	v2 := testenv.WorkloadImage(t, "v2")
	r, good := startReleaseRig(t, v1)
	bad := r.Commit("v2 crashes", testenv.ServiceManifest(v2, 2, map[string]string{"MESSAGE": "v2", "WORKLOAD_EXIT_AFTER": crashAfter, "WORKLOAD_EXIT_CODE": "1"}))
	r.Wait(time.Minute, "v2 rolled out", func(st status.AppStatus) bool {
		return testenv.ConvergedTo(bad, 2, v2)(st)
	})
	testenv.Docker(t, "rmi", v1)
	st := r.Wait(2*time.Minute, "the failed rollback reported", func(st status.AppStatus) bool {
		return quarantinedAt(st, bad) != nil && testenv.HasCondition(st, "release") && st.Health == drift.HealthDegraded
	})
	var cond string
	for _, c := range st.Errors {
		if c.Kind == "release" {
			cond = c.Message
		}
	}
	if !strings.Contains(cond, "quarantined "+bad[:7]) || !strings.Contains(cond, "the rollback to "+good[:7]+" failed too") {
		t.Fatalf("release condition %q: want both reasons", cond)
	}
	time.Sleep(5 * time.Second)
	for _, e := range historyOf(t, r, "sync", "rollback") {
		if e.Revision != nil && e.Revision.SHA == bad && e.Kind == status.KindSync && e.Time.After(st.LastPass) {
			t.Fatalf("the quarantined commit was applied again after the failed rollback: %+v", e)
		}
	}
}

// firstEvent is the time of the app's first container event of the kind
// between from and to, as the engine recorded it.
func firstEvent(t *testing.T, app, event string, from, to time.Time) (time.Time, bool) {
	t.Helper()
	out, err := testenv.DockerTry("events", "--since", strconv.FormatInt(from.Unix(), 10), "--until", strconv.FormatInt(to.Unix()+1, 10),
		"--filter", "label=dev.driftless.app="+app, "--filter", "event="+event, "--format", "{{.TimeNano}}")
	if err != nil {
		t.Logf("docker events: %v", err)
		return time.Time{}, false
	}
	for _, f := range strings.Fields(out) {
		ns, err := strconv.ParseInt(f, 10, 64)
		if at := time.Unix(0, ns); err == nil && !at.Before(from) && !at.After(to) {
			return at, true
		}
	}
	return time.Time{}, false
}

// TestReleaseCanaryRegression: with update.canary 1, a new spec reaches one
// replica; the other two keep running untouched while it is watched. It
// crashes: the commit is quarantined and that one replica goes back.
func TestReleaseCanaryRegression(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	canary := func(env map[string]string) string {
		return strings.Replace(testenv.ServiceManifest(image, 3, env), "  replicas: 3\n", "  replicas: 3\n  update: {canary: 1, canaryWatch: 30s}\n", 1)
	}
	r := testenv.StartRigWith(t, func(string) string { return canary(map[string]string{"MESSAGE": "v1"}) },
		"--interval", "1s", "--release-watch", "10s")
	good := r.Repo.Head()
	r.WaitConverged("v1", good, 3, image)
	r.Wait(2*time.Minute, "v1 passes its watch window", func(st status.AppStatus) bool {
		return st.Release != nil && st.Release.LastGood == good && st.Release.Watching == nil
	})
	before := testenv.IDsByName(testenv.DockerContainers(t, r.App))

	bad := r.Commit("v2 crashes", canary(map[string]string{"MESSAGE": "v2", "WORKLOAD_EXIT_AFTER": crashAfter, "WORKLOAD_EXIT_CODE": "1"}))
	st := r.Wait(time.Minute, "the canary watched", func(st status.AppStatus) bool {
		return st.Applied != nil && st.Applied.SHA == bad && strings.HasPrefix(st.Message, "canary of "+bad[:7])
	})
	t.Logf("during the canary: %s", st.Message)
	during := testenv.IDsByName(testenv.DockerContainers(t, r.App))
	changed := 0
	for name, id := range during {
		if before[name] != id {
			changed++
		}
	}
	if changed != 1 {
		t.Fatalf("%d replicas replaced for the canary, want 1: before %v, during %v", changed, before, during)
	}
	r.Wait(2*time.Minute, "the canary rolled back and v2 quarantined", func(st status.AppStatus) bool {
		return quarantinedAt(st, bad) != nil && rolledBackTo(good, 3, image)(st)
	})
	after := testenv.IDsByName(testenv.DockerContainers(t, r.App))
	for name, id := range before {
		if during[name] == id && after[name] != id {
			t.Errorf("%s was replaced by the rollback, but it never left v1", name)
		}
	}
	rb := historyOf(t, r, "rollback")
	if len(rb) == 0 || !status.AutomaticRollback(rb[0]) || !strings.Contains(rb[0].Summary, "1 to replace") {
		t.Fatalf("rollback history %+v: want one replica replaced back", rb)
	}
}

// TestReleaseUnreadyRollsBack: a release whose replicas stop answering
// their readiness probe (503) inside the window, for longer than
// release.unreadyFor, is rolled back like a crash.
func TestReleaseUnreadyRollsBack(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	r, good := startReleaseRig(t, image, "--release-unready-for", "3s")
	bad := r.Commit("v2 stops being ready", testenv.ServiceManifest(image, 2, map[string]string{"MESSAGE": "v2", "WORKLOAD_UNREADY_AFTER": "8s"}))
	st := r.Wait(2*time.Minute, "v2 quarantined for readiness and v1 running again", func(st status.AppStatus) bool {
		return quarantinedAt(st, bad) != nil && rolledBackTo(good, 2, image)(st)
	})
	if q := quarantinedAt(st, bad); !strings.Contains(q.Reason, "was not ready for 3s") || !strings.Contains(q.Reason, "503") {
		t.Fatalf("quarantine reason %q: want the replica unready for 3s, with the probe's answer", q.Reason)
	}
}

// TestReleaseHTTPCheckRollsBack: release.check (from driftless.yaml) GETs a
// URL every second; once it answers 503 twice in a row inside v2's window,
// v2 is quarantined and v1 runs again.
func TestReleaseHTTPCheckRollsBack(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	var broken atomic.Bool
	check := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			http.Error(w, "broken", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	t.Cleanup(check.Close)
	app := testenv.UniqueApp(t)
	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	repo.WriteFile("apps/"+app+"/web.yaml", testenv.ServiceManifest(image, 1, map[string]string{"MESSAGE": "v1"}))
	repo.Commit("v1")
	good := repo.Head()
	cfg := filepath.Join(t.TempDir(), "driftless.yaml")
	body := fmt.Sprintf(`apps:
  - name: %s
    repo: %s
    branch: main
    path: apps/%s
    interval: 1s
    allowInsecureTransport: true
    release:
      watch: 15s
      check: {url: %q, interval: 1s, failureThreshold: 2}
`, app, repo.URL(server), app, check.URL+"/healthz")
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := testenv.StartAgent(t, t.TempDir(), "run", "--config", cfg)
	get := func(ctx context.Context, c *web.Client) (status.AppStatus, error) { return c.App(ctx, app) }
	testenv.WaitApp(t, agent, 2*time.Minute, "v1 passes its watch window", get, func(st status.AppStatus) bool {
		return st.Release != nil && st.Release.LastGood == good && st.Release.Watching == nil
	})
	repo.WriteFile("apps/"+app+"/web.yaml", testenv.ServiceManifest(image, 1, map[string]string{"MESSAGE": "v2"}))
	repo.Commit("v2")
	bad := repo.Head()
	testenv.WaitApp(t, agent, time.Minute, "v2 watched", get, func(st status.AppStatus) bool {
		return st.Release != nil && st.Release.Watching != nil && st.Release.Watching.Revision == bad
	})
	broken.Store(true)
	st := testenv.WaitApp(t, agent, time.Minute, "v2 quarantined by the check and v1 running again", get, func(st status.AppStatus) bool {
		return quarantinedAt(st, bad) != nil && rolledBackTo(good, 1, image)(st)
	})
	if q := quarantinedAt(st, bad); !strings.Contains(q.Reason, "failed 2 times in a row (503 Service Unavailable)") {
		t.Fatalf("quarantine reason %q: want the check's two 503s", q.Reason)
	}
}
