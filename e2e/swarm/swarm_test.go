// Package swarm holds the end-to-end test of the Swarm target: the real
// agent binary, a real git daemon and a real single-node Swarm on a
// private Docker engine the test starts itself (never the machine's
// shared engine, which must not be put in Swarm mode). It is its own
// package so `go test ./...` runs it in parallel with the main e2e suite.
package swarm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// rig is one Swarm, one repository and one agent deploying app to it.
type rig struct {
	t     *testing.T
	eng   *privengine.Engine
	repo  *gitserver.Repo
	agent *testenv.Agent
	app   string
	svc   string // the Swarm service of the app's web service
	v1    string
	v2    string
	// oldConfig is a config version no spec uses once the service is
	// updated again.
	oldConfig string
}

func sortedPair(a, b string) []string {
	s := []string{a, b}
	slices.Sort(s)
	return s
}

// compose is the app's compose file: two web tasks with a healthcheck
// (the workload's own probe; the image has no shell), rolled start-first
// one at a time, rolled back by Swarm when a new task does not become
// healthy; greeting.txt reaches the tasks as a Swarm config. env adds
// variables to the service.
func (r *rig) compose(image string, replicas int, env ...string) string {
	vars := ""
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars += fmt.Sprintf("      %s: %q\n", k, v)
	}
	return fmt.Sprintf(`services:
  web:
    image: %s
    environment:
%s    configs: [{source: greeting, target: /etc/greeting.txt}]
    secrets: [api-key]
    healthcheck:
      test: [CMD, /driftless, workload, probe, "http://127.0.0.1:8080/healthz"]
      interval: 1s
      timeout: 2s
      retries: 2
      start_period: 1s
    deploy:
      replicas: %d
      update_config: {parallelism: 1, order: start-first, failure_action: rollback, monitor: 3s}
      rollback_config: {parallelism: 2}
      placement:
        constraints: [node.role==manager]
configs:
  greeting: {file: ./greeting.txt}
secrets:
  api-key: {file: ./api-key.txt, x-driftless: {allowPlaintext: true}}
`, image, vars, replicas)
}

// configs are the app's Swarm config names, sorted.
func (r *rig) configs() []string {
	r.t.Helper()
	out := r.eng.Docker("config", "ls", "--filter", "label=dev.driftless.app="+r.app, "--format", "{{.Name}}")
	names := strings.Fields(out)
	slices.Sort(names)
	return names
}

func (r *rig) push(msg, compose string) string {
	r.t.Helper()
	r.repo.WriteFile("app/compose.yaml", compose)
	return r.repo.Commit(msg)
}

// wait polls the app's status until ok accepts it.
func (r *rig) wait(timeout time.Duration, what string, ok func(status.AppStatus) bool) status.AppStatus {
	r.t.Helper()
	return testenv.WaitApp(r.t, r.agent, timeout, what, func(ctx context.Context, c *web.Client) (status.AppStatus, error) {
		return c.App(ctx, r.app)
	}, ok)
}

// converged: the revision is applied, Synced and Healthy, with n tasks
// running and ready, each on a node.
func converged(sha string, n int) func(status.AppStatus) bool {
	return func(st status.AppStatus) bool {
		if st.Applied == nil || st.Applied.SHA != sha || st.Sync != drift.SyncSynced || st.Health != drift.HealthHealthy || len(st.Services) != 1 {
			return false
		}
		s := st.Services[0]
		ready := 0
		for _, c := range s.Containers {
			if c.Ready && c.Node != "" {
				ready++
			}
		}
		return s.Ready == n && ready == n && len(s.Containers) == n
	}
}

// inspect reads the service from the engine, as a user would.
func (r *rig) inspect(format string) string {
	r.t.Helper()
	return r.eng.Docker("service", "inspect", "--format", format, r.svc)
}

// history is the app's history, newest first.
func (r *rig) history() []status.HistoryEntry {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	page, err := r.agent.Client().History(ctx, r.app, nil, 0, 100)
	if err != nil {
		r.t.Fatalf("history: %v", err)
	}
	return page.Entries
}

func (r *rig) waitEntry(timeout time.Duration, what string, ok func(status.HistoryEntry) bool) status.HistoryEntry {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, e := range r.history() {
			if ok(e) {
				return e
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	var got []string
	for _, e := range r.history() {
		got = append(got, fmt.Sprintf("%s %s: %s", e.Kind, e.Result, e.Summary))
	}
	r.t.Fatalf("no history entry for %s within %s; history:\n  %s", what, timeout, strings.Join(got, "\n  "))
	return status.HistoryEntry{}
}

// startSwarm starts a private engine, loads the images into it and makes
// it a single-node Swarm manager (SwarmInit on its own socket).
func startSwarm(t *testing.T, images ...string) *privengine.Engine {
	t.Helper()
	eng := privengine.Start(t)
	load := eng.LoadImages(images...)
	cli, err := client.New(client.WithHost(eng.Host))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now()
	if _, err := cli.SwarmInit(ctx, client.SwarmInitOptions{ListenAddr: "127.0.0.1:0", AdvertiseAddr: "127.0.0.1", DataPathPort: freeDataPathPort(t)}); err != nil {
		t.Fatalf("swarm init on the private engine: %v", err)
	}
	// Leave before the engine's own clean-up removes its networks, so
	// nothing of the Swarm (its ingress sandbox, docker_gwbridge) stays.
	t.Cleanup(func() { leaveSwarm(t, eng) })
	t.Logf("private engine: images loaded in %s, swarm init took %s", load.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	return eng
}

// leaveSwarm takes the private engine out of its Swarm and removes the
// docker_gwbridge network Swarm made, whose bridge interface lives on the
// host under that fixed name: the engine's own clean-up prunes only
// networks without endpoints, and the ingress sandbox's endpoint goes
// away a moment after the leave (or is disconnected by force when it
// does not).
func leaveSwarm(t *testing.T, eng *privengine.Engine) {
	if out, err := eng.DockerTry("swarm", "leave", "--force"); err != nil {
		t.Logf("swarm leave: %v %s", err, out)
	}
	var out string
	var err error
	ok := pollUntil(60*time.Second, func() bool {
		out, err = eng.DockerTry("network", "rm", "docker_gwbridge")
		if err != nil && strings.Contains(out, "active endpoints") {
			// On a loaded machine the ingress sandbox can outlive the
			// leave by more than 30 s (seen in CI); Docker's documented
			// way out is to disconnect it by force.
			_, _ = eng.DockerTry("network", "disconnect", "--force", "docker_gwbridge", "gateway_ingress-sbox")
		}
		return err == nil || strings.Contains(out, "No such network") || strings.Contains(out, "not found")
	})
	if !ok {
		t.Errorf("the Swarm's docker_gwbridge network of the private engine could not be removed: %v %s", err, out)
	}
}

// TestSwarmTarget drives one app with target swarm through a push, drift
// made with `docker service scale` and `docker service update` (--image,
// --env-add, --limit-memory, --label-add), a revert commit, and a commit
// whose tasks never become healthy.
func TestSwarmTarget(t *testing.T) {
	total := time.Now()
	v1, v2 := testenv.WorkloadImage(t, "v1"), testenv.WorkloadImage(t, "v2")
	r := &rig{t: t, v1: v1, v2: v2, app: testenv.UniqueApp(t)}
	r.svc = r.app + "-web"
	r.eng = startSwarm(t, v1, v2)
	gitBase := t.TempDir()
	url := gitserver.StartDaemon(t, gitBase)
	r.repo = gitserver.Init(t, gitBase, r.app)
	r.repo.WriteFile("app/greeting.txt", "hello\n")
	r.repo.WriteFile("app/api-key.txt", swarmSecretValue)
	first := r.push("web: two tasks", r.compose(v1, 2, "MESSAGE=one"))
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := r.eng.DockerTry("service", "inspect", "--format", "{{json .UpdateStatus}} {{.UpdatedAt}} {{.Spec.TaskTemplate.ContainerSpec.Image}}", r.svc)
			ps, _ := r.eng.DockerTry("service", "ps", "--no-trunc", "--format", "{{.Name}} {{.Image}} {{.CurrentState}} {{.DesiredState}} {{.Error}}", r.svc)
			t.Logf("service at the end: %s\ntasks:\n%s", out, ps)
		}
	})
	r.agent = testenv.StartAgentEnv(t, r.eng.Env(), data, "run", "--repo", r.repo.URL(url), "--path", "app", "--app", r.app,
		"--target", "swarm", "--allow-insecure-transport", "--interval", "2s")

	r.pushDeploys(first)
	r.diffSaysNoChanges(data)
	r.scaleIsHealed(first)
	r.imageIsReverted(first)
	r.handEditsAreReverted(first)
	r.revertRollsBack()
	r.unhealthyRolledBack()
	t.Logf("TestSwarmTarget took %s", time.Since(total).Round(time.Millisecond))
}

func pollUntil(timeout time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ok() {
			return true
		}
		time.Sleep(500 * time.Millisecond)
	}
	return ok()
}

// step logs how long a scenario took: defer r.step(name)().
func (r *rig) step(name string) func() {
	t0 := time.Now()
	return func() { r.t.Logf("step %q took %s", name, time.Since(t0).Round(time.Millisecond)) }
}

// pushDeploys: the first commit runs as a Swarm service with two
// healthy tasks, each shown with its node.
func (r *rig) pushDeploys(first string) {
	t := r.t
	defer r.step("push deploys")()
	t0 := time.Now()
	st := r.wait(120*time.Second, "the first revision running as a Swarm service with 2 healthy tasks", converged(first, 2))
	if got := r.inspect("{{.Spec.Mode.Replicated.Replicas}} {{index .Spec.Labels \"dev.driftless.app\"}} {{.Spec.UpdateConfig.FailureAction}}"); got != "2 "+r.app+" rollback" {
		t.Errorf("service spec: replicas, app label, failure action = %q", got)
	}
	c := st.Services[0].Containers[0]
	if !strings.HasPrefix(c.Name, r.svc+".") || c.Node == "" || c.State != "running" {
		t.Errorf("task row %+v: want %s.<slot> running on a node", c, r.svc)
	}
	// The dashboard shows the same rows, each with its node.
	resp, err := http.Get(r.agent.URL + "/apps/" + r.app)
	if err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), c.Name) || !strings.Contains(string(page), "on node <b>"+c.Node+"</b>") {
		t.Errorf("the dashboard's app page does not show task %s on node %s", c.Name, c.Node)
	}
	t.Logf("task %s on node %s: %s (deployed in %s)", c.Name, c.Node, c.Status, time.Since(t0).Round(time.Millisecond))
	r.secretIsASwarmSecret()
}

// swarmSecretValue is the compose secret's content: it must reach Swarm
// as a secret, and show nowhere else.
const swarmSecretValue = "swarm-secret-0f3c9d\n"

// secretIsASwarmSecret: the compose secret is a Swarm secret versioned by
// the agent's keyed digest, mounted at /run/secrets/NAME, and its value is
// in neither the service spec nor the agent's status.
func (r *rig) secretIsASwarmSecret() {
	t := r.t
	names := strings.Fields(r.eng.Docker("secret", "ls", "--filter", "label=dev.driftless.app="+r.app, "--format", "{{.Name}}"))
	if len(names) != 1 || !strings.HasPrefix(names[0], r.app+"_api-key_") {
		t.Errorf("Swarm secrets of the app: %v, want one %s_api-key_<digest>", names, r.app)
	}
	if got := r.inspect("{{range .Spec.TaskTemplate.ContainerSpec.Secrets}}{{.SecretName}} {{.File.Name}}{{end}}"); len(names) == 1 && got != names[0]+" /run/secrets/api-key" {
		t.Errorf("service secrets = %q, want %s at /run/secrets/api-key", got, names[0])
	}
	value := strings.TrimSpace(swarmSecretValue)
	if spec := r.inspect("{{json .Spec}}"); strings.Contains(spec, value) {
		t.Errorf("the service spec shows the secret's value")
	}
	resp, err := http.Get(r.agent.URL + "/api/v1/apps/" + r.app)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), value) {
		t.Errorf("the app's status shows the secret's value")
	}
}

// diffSaysNoChanges: the one-shot CLI, pointed at the same manager with
// --target swarm, agrees with the agent that nothing is to do.
func (r *rig) diffSaysNoChanges(data string) {
	defer r.step("driftless diff --target swarm")()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.DriftlessBinary(r.t), "diff", "--app", r.app, "--target", "swarm", "--data", data, filepath.Join(r.repo.Work, "app"))
	cmd.Env = r.eng.Env()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "No changes") {
		r.t.Errorf("driftless diff --target swarm: %v\n%s", err, out)
	}
}

// scaleIsHealed: `docker service scale` by hand is scaled back, and
// history says so.
func (r *rig) scaleIsHealed(first string) {
	t := r.t
	defer r.step("docker service scale by hand is healed")()
	t0 := time.Now()
	r.eng.Docker("service", "scale", "--detach", r.svc+"=4")
	e := r.waitEntry(60*time.Second, "the scale repair", func(e status.HistoryEntry) bool {
		return e.Kind == status.KindRepair && strings.Contains(e.Summary, "was scaled outside Git to 4 replicas; scaled back to 2")
	})
	r.wait(60*time.Second, "2 tasks again", converged(first, 2))
	if got := r.inspect("{{.Spec.Mode.Replicated.Replicas}}"); got != "2" {
		t.Errorf("replicas = %s after the repair, want 2", got)
	}
	t.Logf("healed in %s: %q", time.Since(t0).Round(time.Millisecond), e.Summary)
}

// imageIsReverted: `docker service update --image` by hand is reverted.
func (r *rig) imageIsReverted(first string) {
	t, v1, v2 := r.t, r.v1, r.v2
	defer r.step("docker service update --image by hand is reverted")()
	t0 := time.Now()
	r.eng.Docker("service", "update", "--detach", "--image", v2, r.svc)
	e := r.waitEntry(90*time.Second, "the image repair", func(e status.HistoryEntry) bool {
		return e.Kind == status.KindRepair && strings.Contains(e.Summary, "was changed outside Git (image); reverted")
	})
	r.wait(90*time.Second, "the declared image back", converged(first, 2))
	if got := r.inspect("{{.Spec.TaskTemplate.ContainerSpec.Image}}"); drift.SameImage(got, v2) || !drift.SameImage(got, v1) {
		t.Errorf("image = %s after the repair, want %s", got, v1)
	}
	t.Logf("reverted in %s: %q", time.Since(t0).Round(time.Millisecond), e.Summary)
}

// handEditsAreReverted: `docker service update` by hand of a setting
// other than the image (the service keeps driftless's labels and spec
// hash) is drift: each is reverted, with a history entry naming the
// field. Then, converged, the agent's passes leave the service alone: no
// false repair.
func (r *rig) handEditsAreReverted(first string) {
	t := r.t
	defer r.step("docker service update --env-add, --limit-memory, --label-add by hand are reverted")()
	for _, tc := range []struct {
		flags []string
		field string
		check string // inspect format whose output must not contain gone after the repair
		gone  string
	}{
		{[]string{"--env-add", "HAND_EDIT=1"}, "env.HAND_EDIT", "{{.Spec.TaskTemplate.ContainerSpec.Env}}", "HAND_EDIT"},
		{[]string{"--limit-memory", "512m"}, "resources.limits.memoryBytes", "{{json .Spec.TaskTemplate.Resources}}", "MemoryBytes"},
		{[]string{"--label-add", "owner=ops"}, "labels.owner", "{{json .Spec.Labels}}", "owner"},
	} {
		t0 := time.Now()
		before := len(r.history())
		// The agent hears the update at once and may revert it before an
		// inspect here could see it: the repair entry is the proof.
		r.eng.Docker(append(append([]string{"service", "update", "--detach"}, tc.flags...), r.svc)...)
		e := r.waitEntry(180*time.Second, "the repair of "+tc.field, func(e status.HistoryEntry) bool {
			return e.Kind == status.KindRepair && strings.Contains(e.Summary, "was changed outside Git ("+tc.field+"); reverted")
		})
		r.wait(180*time.Second, "the declared spec back after "+tc.field, converged(first, 2))
		if !pollUntil(30*time.Second, func() bool { return !strings.Contains(r.inspect(tc.check), tc.gone) }) {
			t.Errorf("after the repair of %s the service still has it: %s", tc.field, r.inspect(tc.check))
		}
		t.Logf("%v reverted in %s (%d history entries since): %q", tc.flags, time.Since(t0).Round(time.Millisecond), len(r.history())-before, e.Summary)
	}

	// Converged: every pass compares the whole spec again, and none
	// may update the service.
	t0 := time.Now()
	version := r.inspect("{{.Version.Index}}")
	repairs := 0
	for _, e := range r.history() {
		if e.Kind == status.KindRepair {
			repairs++
		}
	}
	for i := range 4 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := r.agent.Client().Sync(ctx, r.app); err != nil {
			t.Fatalf("sync now: %v", err)
		}
		time.Sleep(3 * time.Second) // a pass, and the 2 s poll's
		plan, err := r.agent.Client().PlanText(ctx, r.app)
		cancel()
		if err != nil || !strings.Contains(plan, "No changes") {
			t.Errorf("pass %d after convergence: the agent plans changes (%v):\n%s", i+1, err, plan)
		}
	}
	after := 0
	for _, e := range r.history() {
		if e.Kind == status.KindRepair {
			after++
		}
	}
	if got := r.inspect("{{.Version.Index}}"); got != version || after != repairs {
		t.Errorf("after convergence the passes changed the service: version %s → %s, repairs %d → %d", version, got, repairs, after)
	}
	// Every field this Swarm returned was normalised as sent: none had
	// to be learned after an update.
	if logs := r.agent.Logs(); strings.Contains(logs, "otherwise than driftless sent them") {
		t.Errorf("Swarm returned fields Fields does not normalise:\n%s", logs)
	}
	t.Logf("no update in %s of passes after convergence (service version %s)", time.Since(t0).Round(time.Millisecond), version)
}

// revertRollsBack: a commit rolls out, and its revert rolls it back.
func (r *rig) revertRollsBack() {
	t, v1 := r.t, r.v1
	defer r.step("a revert commit rolls back")()
	t0 := time.Now()
	const cfg = "{{range .Spec.TaskTemplate.ContainerSpec.Configs}}{{.ConfigName}}{{end}}"
	before := r.inspect(cfg)
	r.repo.WriteFile("app/greeting.txt", "hello again\n")
	second := r.push("web: message two, new greeting", r.compose(v1, 2, "MESSAGE=two"))
	r.wait(120*time.Second, "message two rolled out", converged(second, 2))
	if got := r.inspect("{{.Spec.TaskTemplate.ContainerSpec.Env}}"); !strings.Contains(got, "MESSAGE=two") {
		t.Errorf("env after the commit = %s", got)
	}
	// A changed file is a new config version; the old one stays while the
	// service's previous spec (what Swarm rolls back to) uses it.
	after := r.inspect(cfg)
	if !strings.HasPrefix(before, r.app+"_greeting_") || after == before || !slices.Equal(r.configs(), sortedPair(before, after)) {
		t.Errorf("config versions: before %q, after %q, existing %v", before, after, r.configs())
	}
	revert := r.repo.Revert(second)
	r.wait(120*time.Second, "the revert rolled out", converged(revert, 2))
	if got := r.inspect("{{.Spec.TaskTemplate.ContainerSpec.Env}}"); !strings.Contains(got, "MESSAGE=one") {
		t.Errorf("env after the revert = %s", got)
	}
	if got := r.inspect(cfg); got != before {
		t.Errorf("after the revert the service uses config %q, want the first version %q again", got, before)
	}
	r.oldConfig = after
	t.Logf("commit and revert rolled by Swarm in %s", time.Since(t0).Round(time.Millisecond))
}

// unhealthyRolledBack: a commit whose tasks never become healthy is
// rolled back by Swarm (update_config failure_action: rollback);
// driftless reports it Degraded, records the sync as failed, and does
// not push the refused spec again.
func (r *rig) unhealthyRolledBack() {
	t, v1 := r.t, r.v1
	defer r.step("an unhealthy rollout is rolled back by Swarm and reported Degraded")()
	t0 := time.Now()
	good := r.history()[0].Revision
	bad := r.push("web: never healthy", r.compose(v1, 2, "MESSAGE=bad", "WORKLOAD_NEVER_READY=1"))
	var sawSuccess []string
	st := r.wait(180*time.Second, "Swarm to roll the update back and the app Degraded", func(st status.AppStatus) bool {
		if st.Applied != nil && st.Applied.SHA == bad && st.Health == drift.HealthHealthy {
			sawSuccess = append(sawSuccess, st.Message)
		}
		return st.Health == drift.HealthDegraded && strings.Contains(st.Message, "Swarm rolled the update")
	})
	if len(sawSuccess) > 0 {
		t.Errorf("the bad revision was reported Healthy: %q", sawSuccess)
	}
	// Degraded is reported from rollback_started on; Swarm finishes the
	// rollback a moment later (tasks restart on any exit, so it also
	// replaces the failed ones first).
	var got string
	pollUntil(60*time.Second, func() bool {
		got = r.inspect("{{.UpdateStatus.State}} {{.Spec.TaskTemplate.ContainerSpec.Env}}")
		return strings.HasPrefix(got, "rollback_completed")
	})
	if !strings.HasPrefix(got, "rollback_completed") || strings.Contains(got, "WORKLOAD_NEVER_READY") {
		t.Errorf("after the rollback the service is %q; want rollback_completed with the previous spec", got)
	}
	e := r.waitEntry(30*time.Second, "the failed sync of the bad revision", func(e status.HistoryEntry) bool {
		return e.Kind == status.KindSync && e.Revision != nil && e.Revision.SHA == bad && e.Result == "failed"
	})
	// It stays Degraded: driftless does not push the refused spec again.
	time.Sleep(5 * time.Second)
	if got := r.inspect("{{.UpdateStatus.State}}"); got != "rollback_completed" {
		t.Errorf("the service was updated again after Swarm's rollback: state %s", got)
	}
	// Still Degraded (the revision in Git is not running), while the
	// previous spec's tasks serve again.
	r.wait(90*time.Second, "the previous spec's tasks serving, the app still Degraded", func(st status.AppStatus) bool {
		return st.Health == drift.HealthDegraded && len(st.Services) == 1 && st.Services[0].Ready == 2
	})
	for _, h := range r.history() {
		if h.Kind == status.KindSync && h.Revision != nil && h.Revision.SHA == bad && h.Result == "succeeded" {
			t.Errorf("a sync of the revision Swarm refused was recorded as succeeded: %q", h.Summary)
		}
	}
	t.Logf("rolled back and reported in %s (good revision %s): %q; history: %s %q", time.Since(t0).Round(time.Millisecond),
		good.Short(), st.Message, e.Result, e.Summary)

	// Reverting the bad commit converges again, and then the config
	// version no spec uses any more (Swarm's rollback dropped the
	// previous spec) is removed.
	fix := r.repo.Revert(bad)
	r.wait(60*time.Second, "the revert of the bad commit Synced and Healthy", converged(fix, 2))
	if !pollUntil(30*time.Second, func() bool { return !slices.Contains(r.configs(), r.oldConfig) }) {
		t.Errorf("config %s is still there: %v", r.oldConfig, r.configs())
	}
}
