package loop

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/status"
)

// fakeJobs runs jobs by name: exit codes from exits (0 when absent), and
// what ran on the engine when each run started.
type fakeJobs struct {
	mu     sync.Mutex
	engine *fakeEngine
	exits  map[string]int
	runs   []string   // "job@sha"
	seen   [][]string // the app's replicas when each run started
}

func (f *fakeJobs) RunJob(ctx context.Context, app *manifest.App, j *manifest.Job, rev string) drift.JobRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append(f.runs, j.Name+"@"+rev[:7])
	f.seen = append(f.seen, f.engine.running(app.Name))
	code := f.exits[j.Name]
	return drift.JobRun{Job: j.Name, Type: j.Type, Revision: rev, JobHash: j.Hash, Started: time.Now(), Duration: 1200 * time.Millisecond,
		ExitCode: code, LastLines: []string{"migrating", "error: column exists"}}
}

func (f *fakeJobs) RemoveJobRuns(ctx context.Context, app string, keep func(string) bool) {}

func (f *fakeJobs) ran() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.runs...)
}

func job(name, typ, image string) string {
	return "apiVersion: driftless.dev/v1\nkind: Job\nmetadata:\n  name: " + name + "\nspec:\n  type: " + typ + "\n  image: " + image + "\n  command: [migrate]\n"
}

func jobHarness(t *testing.T) (*harness, *fakeJobs) {
	h := &harness{t: t, dir: t.TempDir(), engine: &fakeEngine{}, sources: map[string]*fakeSource{"shop": newFakeSource()},
		clock: &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, apps: nil}
	h.apps = append(h.apps, appConfig("shop"))
	f := &fakeJobs{engine: h.engine, exits: map[string]int{}}
	h.jobs = f
	h.open()
	return h, f
}

// A pre-sync job runs before the new revision's replicas, once per
// revision: not on drift repairs, not on a pass that changes nothing, not
// again after a restart.
func TestPreSyncRunsOncePerRevisionBeforeTheRollout(t *testing.T) {
	h, f := jobHarness(t)
	v1 := h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 1), "migrate.yaml": job("migrate", "pre-sync", "demo:v1")})
	st, err := h.pass("shop", TriggerStartup)
	if err != nil || st.Sync != drift.SyncSynced {
		t.Fatalf("v1: %v %s %s", err, st.Sync, st.Message)
	}
	if got := f.ran(); len(got) != 1 || got[0] != "migrate@"+v1[:7] || len(f.seen[0]) != 0 {
		t.Fatalf("runs %v, replicas when it ran %v", got, f.seen)
	}
	h.engine.rm("shop-web-1")
	h.pass("shop", TriggerDockerEvent)
	h.pass("shop", TriggerPoll)
	if got := f.ran(); len(got) != 1 {
		t.Fatalf("a repair or an idle poll ran the job again: %v", got)
	}
	v2 := h.sources["shop"].commit("v2", map[string]string{"web.yaml": service("web", "demo:v2", 1), "migrate.yaml": job("migrate", "pre-sync", "demo:v2")})
	h.clock.Advance(time.Minute)
	h.pass("shop", TriggerPoll)
	if got := f.ran(); len(got) != 2 || got[1] != "migrate@"+v2[:7] || strings.Join(f.seen[1], ",") != "shop-web-1@"+v1[:7] {
		t.Fatalf("v2: runs %v, seen %v", got, f.seen)
	}
	if img := h.engine.containers[0].Image; img != "demo:v2" {
		t.Fatalf("v2 not deployed: %s", img)
	}
	// A commit that changes no service does not run it.
	h.sources["shop"].commit("docs", map[string]string{"web.yaml": service("web", "demo:v2", 1), "migrate.yaml": job("migrate", "pre-sync", "demo:v2"), "README": "x"})
	h.pass("shop", TriggerPoll)
	if got := f.ran(); len(got) != 2 {
		t.Fatalf("a commit that changes no service ran it: %v", got)
	}
	es := h.history("shop", status.KindJob)
	if len(es) != 2 || es[0].Job == nil || es[0].Result != "succeeded" || !strings.HasPrefix(es[0].Summary, "pre-sync job migrate succeeded") {
		t.Fatalf("job history %+v", es)
	}
	if len(st.Jobs) != 1 || st.Jobs[0].Name != "migrate" || st.Jobs[0].LastRun == nil {
		t.Fatalf("status jobs %+v", st.Jobs)
	}
}

// A failed pre-sync job refuses the revision: the old one keeps running,
// history has the exit code and last lines, the job is not retried on
// polls, "Sync now" retries it, and a fixed commit deploys.
func TestPreSyncFailureRefusesTheRevision(t *testing.T) {
	h, f := jobHarness(t)
	h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", TriggerStartup)
	before := h.engine.containers[0].ID
	f.exits["migrate"] = 3
	bad := h.sources["shop"].commit("v2", map[string]string{"web.yaml": service("web", "demo:v2", 1), "migrate.yaml": job("migrate", "pre-sync", "demo:v2")})
	st, err := h.pass("shop", TriggerPoll)
	if err == nil || st.Refused == nil || st.Refused.Revision.SHA != bad {
		t.Fatalf("not refused: %v %+v", err, st.Refused)
	}
	if want := "pre-sync job migrate failed: exit 3 after 1.2s; last lines: migrating | error: column exists"; !strings.Contains(st.Refused.Reason, want) {
		t.Fatalf("reason %q\nwant %q", st.Refused.Reason, want)
	}
	if c := h.engine.containers; len(c) != 1 || c[0].ID != before || c[0].Image != "demo:v1" {
		t.Fatalf("the old revision was touched: %+v", c)
	}
	if st.Applied == nil || st.Applied.SHA == bad {
		t.Fatalf("applied %+v", st.Applied)
	}
	checkFailedPreSync(t, h, st)
	h.pass("shop", TriggerPoll)
	if got := f.ran(); len(got) != 1 {
		t.Fatalf("a poll retried the failed job: %v", got)
	}
	f.exits["migrate"] = 0
	st, err = h.pass("shop", TriggerManual)
	if got := f.ran(); len(got) != 2 || err != nil || st.Refused != nil || h.engine.containers[0].Image != "demo:v2" {
		t.Fatalf("Sync now: runs %v, err %v, refused %+v, image %s", got, err, st.Refused, h.engine.containers[0].Image)
	}
}

// A failed pre-sync job of a new commit is retried at once by the next
// commit that fixes it.
func TestPreSyncFixedByANewCommit(t *testing.T) {
	h, f := jobHarness(t)
	h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", TriggerStartup)
	f.exits["migrate"] = 1
	h.sources["shop"].commit("v2", map[string]string{"web.yaml": service("web", "demo:v2", 1), "migrate.yaml": job("migrate", "pre-sync", "demo:v2")})
	h.pass("shop", TriggerPoll)
	f.exits["fixed"] = 0
	h.sources["shop"].commit("v3", map[string]string{"web.yaml": service("web", "demo:v2", 1), "migrate.yaml": job("fixed", "pre-sync", "demo:v2")})
	st, err := h.pass("shop", TriggerPoll)
	if err != nil || st.Refused != nil || h.engine.containers[0].Image != "demo:v2" || len(f.ran()) != 2 {
		t.Fatalf("v3: %v %+v runs %v", err, st.Refused, f.ran())
	}
}

// The pre-sync success is kept in the store: after a restart the same
// revision's job is not run again, even if the rollout did not finish.
func TestPreSyncNotRerunAfterRestart(t *testing.T) {
	h, f := jobHarness(t)
	h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 1), "migrate.yaml": job("migrate", "pre-sync", "demo:v1")})
	h.engine.outside(func(e *fakeEngine) { e.badImage = "demo:v1" }) // the rollout fails after the job
	h.pass("shop", TriggerStartup)
	h.restart()
	h.engine.outside(func(e *fakeEngine) { e.badImage = "" })
	h.clock.Advance(10 * time.Minute)
	h.pass("shop", TriggerStartup)
	if got := f.ran(); len(got) != 1 {
		t.Fatalf("runs after restart %v", got)
	}
}

// A post-sync job runs after the rollout, once per revision; a failure is
// in the pass outcome for the release watch.
func TestPostSyncRunsAfterTheRollout(t *testing.T) {
	h, f := jobHarness(t)
	f.exits["smoke"] = 2
	h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 2), "smoke.yaml": job("smoke", "post-sync", "demo:v1")})
	st, _ := h.pass("shop", TriggerStartup)
	if got := f.ran(); len(got) != 1 || len(f.seen[0]) != 2 {
		t.Fatalf("runs %v seen %v", got, f.seen)
	}
	if len(st.Jobs) != 1 || !st.Jobs[0].Failed() {
		t.Fatalf("status jobs %+v", st.Jobs)
	}
	if len(st.Errors) != 1 || st.Errors[0].Kind != "job" || st.Errors[0].Message != "post-sync job smoke failed: exit 2 after 1.2s" {
		t.Fatalf("status errors %+v", st.Errors)
	}
	h.engine.rm("shop-web-1")
	h.pass("shop", TriggerDockerEvent)
	if got := f.ran(); len(got) != 1 {
		t.Fatalf("a repair ran post-sync again: %v", got)
	}
	if es := h.history("shop", status.KindJob); len(es) != 1 || es[0].Result != "failed" {
		t.Fatalf("history %+v", es)
	}
}

// The outcome of a pass carries the failed post-sync run.
func TestPostSyncFailureInOutcome(t *testing.T) {
	h, f := jobHarness(t)
	f.exits["smoke"] = 1
	h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 1), "smoke.yaml": job("smoke", "post-sync", "demo:v1")})
	a := h.agent
	a.mu.Lock()
	st := a.apps["shop"]
	in := passInput{cfg: st.cfg, triggers: []string{TriggerStartup}, start: h.clock.Now(), mem: st.mem.clone(), stop: make(chan struct{})}
	a.mu.Unlock()
	p := &pass{a: a, st: st, in: in}
	o := p.run(context.Background())
	if o.postSyncFailure == nil || o.postSyncFailure.Job != "smoke" || o.postSyncFailure.ExitCode != 1 {
		t.Fatalf("postSyncFailure %+v", o.postSyncFailure)
	}
}

// A new revision whose only change on the engine is a drift repair runs
// no pre-sync job: it changes no service.
func TestPreSyncNotBeforeARepairAlone(t *testing.T) {
	h, f := jobHarness(t)
	h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "demo:v1", 1)})
	h.pass("shop", TriggerStartup)
	h.engine.rm("shop-web-1")
	h.sources["shop"].commit("add a job", map[string]string{"web.yaml": service("web", "demo:v1", 1), "migrate.yaml": job("migrate", "pre-sync", "demo:v1")})
	st, err := h.pass("shop", TriggerPoll)
	if got := f.ran(); len(got) != 0 || err != nil || len(h.engine.running("shop")) != 1 {
		t.Fatalf("runs %v, err %v, running %v (%s)", got, err, h.engine.running("shop"), st.Message)
	}
}

// checkFailedPreSync fails unless history and status show migrate's one
// failed run, and the revision's refusal.
func checkFailedPreSync(t *testing.T, h *harness, st status.AppStatus) {
	t.Helper()
	es := h.history("shop", status.KindJob)
	if len(es) != 1 || es[0].Result != "failed" || es[0].Job.ExitCode != 3 || !strings.Contains(strings.Join(es[0].Errors, "\n"), "error: column exists") {
		t.Fatalf("job history %+v", es)
	}
	if len(st.Jobs) != 1 || st.Jobs[0].Name != "migrate" || !st.Jobs[0].Failed() {
		t.Fatalf("status jobs %+v", st.Jobs)
	}
	if r := h.history("shop", status.KindRefused); len(r) != 1 {
		t.Fatalf("refused history %+v", r)
	}
}
