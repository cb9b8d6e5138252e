package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// The tests in this file run the real binary (`driftless run`) against the
// real Docker engine and a git daemon on loopback, and look at it only as a
// user can: through its API, its CLI and `docker`.

// agentRig is one app in a git repository followed by one agent process.
type agentRig struct {
	t      *testing.T
	app    string
	path   string // apps/<app>: the manifest directory in the repository
	repo   *gitserver.Repo
	server *gitserver.Server
	data   string
	args   []string
	agent  *testenv.Agent
}

// startRig commits manifest as apps/<app>/web.yaml and starts an agent
// polling every second.
func startRig(t *testing.T, manifest func(app string) string) *agentRig {
	t.Helper()
	return startRigWith(t, manifest, "--interval", "1s")
}

// startRigWith is startRig with the agent's flags after the source flags.
func startRigWith(t *testing.T, manifest func(app string) string, flags ...string) *agentRig {
	t.Helper()
	app := testenv.UniqueApp(t)
	base := t.TempDir()
	r := &agentRig{t: t, app: app, path: "apps/" + app, server: gitserver.RunDaemon(t, base), data: t.TempDir()}
	r.repo = gitserver.Init(t, base, "infra")
	r.repo.WriteFile(r.path+"/web.yaml", manifest(app))
	r.repo.Commit("deploy web")
	r.args = append([]string{"run", "--repo", r.repo.URL(r.server.URL), "--branch", "main", "--path", r.path,
		"--app", app, "--allow-insecure-transport"}, flags...)
	r.agent = testenv.StartAgent(t, r.data, r.args...)
	return r
}

// restart starts a new agent process on the same data directory.
func (r *agentRig) restart() {
	r.t.Helper()
	r.agent = testenv.StartAgent(r.t, r.data, r.args...)
}

// commit replaces the manifest and pushes it.
func (r *agentRig) commit(msg, manifest string) string {
	r.t.Helper()
	r.repo.WriteFile(r.path+"/web.yaml", manifest)
	return r.repo.Commit(msg)
}

// wait polls the app's status through the API.
func (r *agentRig) wait(timeout time.Duration, what string, ok func(status.AppStatus) bool) status.AppStatus {
	r.t.Helper()
	return testenv.WaitApp(r.t, r.agent, timeout, what, func(ctx context.Context, c *web.Client) (status.AppStatus, error) {
		return c.App(ctx, r.app)
	}, ok)
}

// waitConverged waits until sha is applied and runs as `replicas` ready
// replicas of image. Replicas are not checked for sha: scaling up keeps the
// existing ones, which carry the revision that created them.
func (r *agentRig) waitConverged(what, sha string, replicas int, image string) status.AppStatus {
	r.t.Helper()
	return r.wait(60*time.Second, what, convergedTo(sha, replicas, image))
}

func convergedTo(sha string, replicas int, image string) func(status.AppStatus) bool {
	return func(st status.AppStatus) bool {
		if st.Applied == nil || st.Applied.SHA != sha || st.Sync != drift.SyncSynced || st.Health != drift.HealthHealthy || len(st.Services) != 1 {
			return false
		}
		svc := st.Services[0]
		if svc.Ready != replicas || len(svc.Containers) != replicas {
			return false
		}
		for _, c := range svc.Containers {
			if c.Image != image {
				return false
			}
		}
		return true
	}
}

// call runs one API call with a timeout and fails the test on error.
func (r *agentRig) call(what string, do func(ctx context.Context, c *web.Client, app string) error) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := do(ctx, r.agent.Client(), r.app); err != nil {
		r.t.Fatalf("%s: %v", what, err)
	}
}

// serviceManifest is a web service with readiness on the workload's
// /healthz and the given env.
func serviceManifest(image string, replicas int, env map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: driftless.dev/v1
kind: Service
metadata:
  name: web
spec:
  image: %s
  replicas: %d
  env:
`, image, replicas)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(&b, "    %s: %q\n", k, env[k])
	}
	b.WriteString(`  readiness:
    httpGet: {path: /healthz, port: 8080}
    periodSeconds: 1
  stopGracePeriodSeconds: 1
`)
	return b.String()
}

// dockerContainer is one of the app's containers as `docker ps` sees it.
type dockerContainer struct {
	Name, ID, State, SpecHash string
}

// dockerContainers lists every container with the app's label, by name.
func dockerContainers(t *testing.T, app string) []dockerContainer {
	t.Helper()
	out := docker(t, "ps", "-a", "--no-trunc", "--filter", "label="+drift.LabelApp+"="+app,
		"--format", `{{.Names}}|{{.ID}}|{{.State}}|{{.Label "`+drift.LabelSpecHash+`"}}`)
	var cs []dockerContainer
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 4 {
			t.Fatalf("unexpected docker ps line %q", line)
		}
		cs = append(cs, dockerContainer{Name: f[0], ID: f[1], State: f[2], SpecHash: f[3]})
	}
	slices.SortFunc(cs, func(a, b dockerContainer) int { return strings.Compare(a.Name, b.Name) })
	return cs
}

func idsByName(cs []dockerContainer) map[string]string {
	m := make(map[string]string, len(cs))
	for _, c := range cs {
		m[c.Name] = c.ID
	}
	return m
}

// TestAgentKeepsRunningWhileGitIsDown: when the Git host goes away the
// agent says so and leaves the running containers alone; when it comes
// back the error clears and new commits deploy again. SIGTERM then stops
// the agent with exit status 0.
func TestAgentKeepsRunningWhileGitIsDown(t *testing.T) {
	v1 := testenv.WorkloadImage(t, "v1")
	rig := startRig(t, func(string) string { return serviceManifest(v1, 2, map[string]string{"MESSAGE": "one"}) })
	first := rig.repo.Head()
	rig.waitConverged("the first commit to be deployed", first, 2, v1)
	before := idsByName(dockerContainers(t, rig.app))

	rig.server.Stop()
	st := rig.wait(15*time.Second, "a source error while the git server is down", func(st status.AppStatus) bool {
		return st.Source.Error != ""
	})
	if st.Applied == nil || st.Applied.SHA != first || !strings.Contains(st.Message, "still running "+first[:7]) {
		t.Errorf("during the outage: applied %s, message %q; want %s still running and said so", revShort(st.Applied), st.Message, first[:7])
	}
	// A few more polls fail; nothing may be touched meanwhile.
	time.Sleep(3 * time.Second)
	if after := idsByName(dockerContainers(t, rig.app)); !maps.Equal(after, before) {
		t.Fatalf("containers changed while Git was down: before %v, after %v", before, after)
	}

	rig.server.Start(t)
	rig.wait(15*time.Second, "the source error to clear once the git server is back", func(st status.AppStatus) bool {
		return st.Source.Error == "" && st.Source.ErrorSince.IsZero()
	})
	if after := idsByName(dockerContainers(t, rig.app)); !maps.Equal(after, before) {
		t.Fatalf("containers changed when Git came back with no new commit: before %v, after %v", before, after)
	}

	second := rig.commit("scale to 3", serviceManifest(v1, 3, map[string]string{"MESSAGE": "one"}))
	rig.waitConverged("a commit made after the outage to deploy", second, 3, v1)

	rig.agent.Stop(t)
	if exited, err := rig.agent.Exited(); !exited || err != nil {
		t.Fatalf("after SIGTERM: exited %v, err %v; want a clean exit with status 0", exited, err)
	}
	if logs := rig.agent.Logs(); !strings.Contains(logs, "driftless agent stopped") {
		t.Errorf("the agent did not log its clean stop:\n%s", logs)
	}
}

// TestAgentSurvivesSIGKILLDuringRollout: an agent killed in the middle of a
// rolling update, restarted on the same data directory, finishes the
// rollout and leaves exactly the declared replicas, with no parked old
// ones. It is killed at two points of replacing the first replica.
func TestAgentSurvivesSIGKILLDuringRollout(t *testing.T) {
	isParked := func(c dockerContainer) bool { return strings.Contains(c.Name, "-old-") }
	for _, tc := range []struct {
		name string
		// killNow says, from the containers seen, that the agent is at the
		// point to kill it.
		killNow func(cs []dockerContainer, oldHash string) bool
	}{
		{"just after parking the old replica", func(cs []dockerContainer, oldHash string) bool {
			return slices.ContainsFunc(cs, func(c dockerContainer) bool { return isParked(c) || c.SpecHash != oldHash })
		}},
		{"while the new replica is not ready yet", func(cs []dockerContainer, oldHash string) bool {
			return slices.ContainsFunc(cs, isParked) && slices.ContainsFunc(cs, func(c dockerContainer) bool {
				return c.SpecHash != oldHash && c.State == "running"
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v1 := testenv.WorkloadImage(t, "v1")
			v2 := testenv.WorkloadImage(t, "v2")
			// Replicas take 2s to become ready, so the rollout is slow
			// enough to be caught half-way.
			slow := map[string]string{"WORKLOAD_READY_AFTER": "2s"}
			rig := startRig(t, func(string) string { return serviceManifest(v1, 3, slow) })
			rig.waitConverged("v1 to be deployed", rig.repo.Head(), 3, v1)
			oldHash := dockerContainers(t, rig.app)[0].SpecHash
			if oldHash == "" {
				t.Fatalf("containers carry no %s label", drift.LabelSpecHash)
			}

			second := rig.commit("web v2", serviceManifest(v2, 3, slow))
			deadline := time.Now().Add(30 * time.Second)
			var seen []dockerContainer
			for {
				seen = dockerContainers(t, rig.app)
				if tc.killNow(seen, oldHash) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the rollout did not reach the kill point within 30s of the commit; containers: %+v", seen)
				}
				time.Sleep(50 * time.Millisecond)
			}
			rig.agent.Kill(t)
			t.Logf("killed the agent mid-rollout with containers %+v", seen)
			if !slices.ContainsFunc(seen, func(c dockerContainer) bool { return c.SpecHash == oldHash && !isParked(c) }) {
				t.Fatalf("the rollout had already finished when the agent was killed: %+v", seen)
			}

			rig.restart()
			rig.waitConverged("the restarted agent to finish the rollout", second, 3, v2)
			got := dockerContainers(t, rig.app)
			var names []string
			for _, c := range got {
				names = append(names, c.Name)
			}
			want := []string{rig.app + "-web-1", rig.app + "-web-2", rig.app + "-web-3"}
			if !slices.Equal(names, want) {
				t.Fatalf("after the rollout the containers are %v, want exactly %v (no leftovers)", names, want)
			}
			newHash := got[0].SpecHash
			for _, c := range got {
				if c.State != "running" || c.SpecHash != newHash || c.SpecHash == oldHash {
					t.Errorf("container %s: state %s, spec hash %s; want running with the new spec hash %s (old %s)",
						c.Name, c.State, c.SpecHash, newHash, oldHash)
				}
			}
		})
	}
}

// TestAgentSelfHealOffAndSuspend: with self-heal off, drift is shown but
// not repaired until it is turned back on; while suspended, a new commit
// is not applied until the app is resumed.
func TestAgentSelfHealOffAndSuspend(t *testing.T) {
	v1 := testenv.WorkloadImage(t, "v1")
	env := map[string]string{"MESSAGE": "one"}
	rig := startRig(t, func(string) string { return serviceManifest(v1, 2, env) })
	first := rig.repo.Head()
	rig.waitConverged("the first commit to be deployed", first, 2, v1)

	rig.call("turn self-heal off", func(ctx context.Context, c *web.Client, app string) error { return c.SetSelfHeal(ctx, app, false) })
	rig.wait(5*time.Second, "self-heal to show as off", func(st status.AppStatus) bool { return !st.SelfHeal })
	victim := rig.app + "-web-1"
	docker(t, "rm", "-f", victim)
	st := rig.wait(15*time.Second, "the removed replica to show as drift", func(st status.AppStatus) bool {
		return st.Sync == drift.SyncOutOfSync && st.Drift != nil && slices.ContainsFunc(st.Drift.Changes, func(c drift.Change) bool {
			return c.Action == drift.ActionCreate && c.Kind == drift.KindContainer && c.Name == victim
		})
	})
	if !strings.Contains(st.Message, "self-heal is off") {
		t.Errorf("message %q does not say why the drift is not repaired", st.Message)
	}
	// Several passes run (1s interval, plus the Docker event); none may
	// repair it.
	for range 12 {
		time.Sleep(250 * time.Millisecond)
		if slices.ContainsFunc(dockerContainers(t, rig.app), func(c dockerContainer) bool { return c.Name == victim }) {
			t.Fatalf("%s was recreated although self-heal is off", victim)
		}
	}
	rig.call("turn self-heal on", func(ctx context.Context, c *web.Client, app string) error { return c.SetSelfHeal(ctx, app, true) })
	rig.waitConverged("the removed replica to be repaired once self-heal is on", first, 2, v1)

	rig.call("suspend", func(ctx context.Context, c *web.Client, app string) error { return c.Suspend(ctx, app) })
	rig.wait(5*time.Second, "the app to show as suspended", func(st status.AppStatus) bool {
		return st.Suspended && st.Health == status.HealthSuspended
	})
	second := rig.commit("scale to 3", serviceManifest(v1, 3, env))
	st = rig.wait(15*time.Second, "the suspended agent to see the new commit", func(st status.AppStatus) bool {
		return st.Fetched != nil && st.Fetched.SHA == second
	})
	for range 12 {
		if cs := dockerContainers(t, rig.app); len(cs) != 2 {
			t.Fatalf("a suspended app was changed: containers %+v", cs)
		}
		time.Sleep(250 * time.Millisecond)
	}
	st = rig.wait(5*time.Second, "status of the suspended app", func(status.AppStatus) bool { return true })
	if st.Health != status.HealthSuspended || st.Sync != drift.SyncOutOfSync || st.Applied == nil || st.Applied.SHA != first {
		t.Errorf("while suspended: health %s, sync %s, applied %s; want Suspended, OutOfSync, %s", st.Health, st.Sync, revShort(st.Applied), first[:7])
	}
	if !strings.Contains(st.Message, "suspended") {
		t.Errorf("message %q does not say the app is suspended", st.Message)
	}
	rig.call("resume", func(ctx context.Context, c *web.Client, app string) error { return c.Resume(ctx, app) })
	rig.waitConverged("the held commit to deploy on resume", second, 3, v1)
}

// TestAgentHistoryAndStatusCLI: `driftless status` and `driftless history`
// against a running agent show what it did, a revert included.
func TestAgentHistoryAndStatusCLI(t *testing.T) {
	v1 := testenv.WorkloadImage(t, "v1")
	rig := startRig(t, func(string) string { return serviceManifest(v1, 1, map[string]string{"MESSAGE": "one"}) })
	rig.waitConverged("the first commit to be deployed", rig.repo.Head(), 1, v1)
	second := rig.commit("say two", serviceManifest(v1, 1, map[string]string{"MESSAGE": "two"}))
	rig.waitConverged("the change to roll out", second, 1, v1)
	reverted := rig.repo.Revert(second)
	rig.waitConverged("the revert to roll out", reverted, 1, v1)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	server := "--server=" + rig.agent.URL

	out, code := testenv.Run(t, ctx, dir, "status", server)
	if code != 0 {
		t.Fatalf("driftless status: exit %d:\n%s", code, out)
	}
	if line := lineStarting(out, rig.app+" "); !strings.Contains(line, "Synced") || !strings.Contains(line, "Healthy") ||
		!strings.Contains(line, "1/1") || !strings.Contains(line, reverted[:7]) {
		t.Errorf("driftless status: the app's line %q should say Synced, Healthy, 1/1 and %s:\n%s", line, reverted[:7], out)
	}

	out, code = testenv.Run(t, ctx, dir, "history", rig.app, server)
	if code != 0 {
		t.Fatalf("driftless history: exit %d:\n%s", code, out)
	}
	// Columns: ID, date, time, KIND, TRIGGER, REVISION, ...
	var syncs, reverts int
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 5 || f[3] != string(status.KindSync) {
			continue
		}
		syncs++
		if strings.Contains(line, reverted[:7]) && strings.Contains(line, "(revert)") {
			reverts++
		}
	}
	if syncs != 3 || reverts != 1 {
		t.Errorf("driftless history: %d sync entries (want 3), %d marked as the revert %s (want 1):\n%s", syncs, reverts, reverted[:7], out)
	}

	out, code = testenv.Run(t, ctx, dir, "status", rig.app, server)
	if code != 0 {
		t.Fatalf("driftless status %s: exit %d:\n%s", rig.app, code, out)
	}
	for _, want := range []string{
		"App " + rig.app + ": Synced, Healthy",
		"running:  " + reverted[:7],
		"(revert)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("driftless status %s lacks %q:\n%s", rig.app, want, out)
		}
	}
	if svc := lineStarting(out, "web "); !strings.Contains(svc, "1/1") || !strings.Contains(svc, v1) {
		t.Errorf("driftless status %s: service line %q should show 1/1 of %s:\n%s", rig.app, svc, v1, out)
	}
	if c := lineStarting(out, "  "+rig.app+"-web-1 "); !strings.Contains(c, "ready") || !strings.Contains(c, "running") {
		t.Errorf("driftless status %s: container line %q should show it ready and running:\n%s", rig.app, c, out)
	}
}

// lineStarting returns the first line of out that starts with prefix.
func lineStarting(out, prefix string) string {
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimRight(line, "\n")
		}
	}
	return ""
}

func revShort(r *gitsource.Revision) string {
	if r == nil {
		return "none"
	}
	return r.Short()
}
