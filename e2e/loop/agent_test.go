package loop

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// The tests in this file run the real binary (`driftless run`) against the
// real Docker engine and a git daemon on loopback, and look at it only as a
// user can: through its API, its CLI and `docker`.

// TestAgentKeepsRunningWhileGitIsDown: when the Git host goes away the
// agent says so and leaves the running containers alone; when it comes
// back the error clears and new commits deploy again. SIGTERM then stops
// the agent with exit status 0.
func TestAgentKeepsRunningWhileGitIsDown(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	rig := testenv.StartRig(t, func(string) string { return testenv.ServiceManifest(v1, 2, map[string]string{"MESSAGE": "one"}) })
	first := rig.Repo.Head()
	rig.WaitConverged("the first commit to be deployed", first, 2, v1)
	before := testenv.IDsByName(testenv.DockerContainers(t, rig.App))

	rig.Server.Stop()
	st := rig.Wait(15*time.Second, "a source error while the git server is down", func(st status.AppStatus) bool {
		return st.Source.Error != ""
	})
	if st.Applied == nil || st.Applied.SHA != first || !strings.Contains(st.Message, "still running "+first[:7]) {
		t.Errorf("during the outage: applied %s, message %q; want %s still running and said so", testenv.RevShort(st.Applied), st.Message, first[:7])
	}
	// A few more polls fail; nothing may be touched meanwhile.
	time.Sleep(3 * time.Second)
	if after := testenv.IDsByName(testenv.DockerContainers(t, rig.App)); !maps.Equal(after, before) {
		t.Fatalf("containers changed while Git was down: before %v, after %v", before, after)
	}

	rig.Server.Start(t)
	rig.Wait(15*time.Second, "the source error to clear once the git server is back", func(st status.AppStatus) bool {
		return st.Source.Error == "" && st.Source.ErrorSince.IsZero()
	})
	if after := testenv.IDsByName(testenv.DockerContainers(t, rig.App)); !maps.Equal(after, before) {
		t.Fatalf("containers changed when Git came back with no new commit: before %v, after %v", before, after)
	}

	second := rig.Commit("scale to 3", testenv.ServiceManifest(v1, 3, map[string]string{"MESSAGE": "one"}))
	rig.WaitConverged("a commit made after the outage to deploy", second, 3, v1)

	rig.Agent.Stop(t)
	if exited, err := rig.Agent.Exited(); !exited || err != nil {
		t.Fatalf("after SIGTERM: exited %v, err %v; want a clean exit with status 0", exited, err)
	}
	if logs := rig.Agent.Logs(); !strings.Contains(logs, "driftless agent stopped") {
		t.Errorf("the agent did not log its clean stop:\n%s", logs)
	}
}

// TestAgentSurvivesSIGKILLDuringRollout: an agent killed in the middle of a
// rolling update, restarted on the same data directory, finishes the
// rollout and leaves exactly the declared replicas, with no parked old
// ones. It is killed at two points of replacing the first replica.
func TestAgentSurvivesSIGKILLDuringRollout(t *testing.T) {
	t.Parallel()
	isParked := func(c testenv.DockerContainer) bool { return strings.Contains(c.Name, "-old-") }
	for _, tc := range []struct {
		name string
		// killNow says, from the containers seen, that the agent is at the
		// point to kill it.
		killNow func(cs []testenv.DockerContainer, oldHash string) bool
	}{
		{"just after parking the old replica", func(cs []testenv.DockerContainer, oldHash string) bool {
			return slices.ContainsFunc(cs, func(c testenv.DockerContainer) bool { return isParked(c) || c.SpecHash != oldHash })
		}},
		{"while the new replica is not ready yet", func(cs []testenv.DockerContainer, oldHash string) bool {
			return slices.ContainsFunc(cs, isParked) && slices.ContainsFunc(cs, func(c testenv.DockerContainer) bool {
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
			rig := testenv.StartRig(t, func(string) string { return testenv.ServiceManifest(v1, 3, slow) })
			rig.WaitConverged("v1 to be deployed", rig.Repo.Head(), 3, v1)
			oldHash := testenv.DockerContainers(t, rig.App)[0].SpecHash
			if oldHash == "" {
				t.Fatalf("containers carry no %s label", drift.LabelSpecHash)
			}

			second := rig.Commit("web v2", testenv.ServiceManifest(v2, 3, slow))
			deadline := time.Now().Add(30 * time.Second)
			var seen []testenv.DockerContainer
			for {
				seen = testenv.DockerContainers(t, rig.App)
				if tc.killNow(seen, oldHash) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the rollout did not reach the kill point within 30s of the commit; containers: %+v", seen)
				}
				time.Sleep(50 * time.Millisecond)
			}
			rig.Agent.Kill(t)
			t.Logf("killed the agent mid-rollout with containers %+v", seen)
			if !slices.ContainsFunc(seen, func(c testenv.DockerContainer) bool { return c.SpecHash == oldHash && !isParked(c) }) {
				t.Fatalf("the rollout had already finished when the agent was killed: %+v", seen)
			}

			rig.Restart()
			rig.WaitConverged("the restarted agent to finish the rollout", second, 3, v2)
			got := testenv.DockerContainers(t, rig.App)
			var names []string
			for _, c := range got {
				names = append(names, c.Name)
			}
			want := []string{rig.App + "-web-1", rig.App + "-web-2", rig.App + "-web-3"}
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
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	env := map[string]string{"MESSAGE": "one"}
	rig := testenv.StartRig(t, func(string) string { return testenv.ServiceManifest(v1, 2, env) })
	first := rig.Repo.Head()
	rig.WaitConverged("the first commit to be deployed", first, 2, v1)

	rig.Call("turn self-heal off", func(ctx context.Context, c *web.Client, app string) error { return c.SetSelfHeal(ctx, app, false) })
	rig.Wait(5*time.Second, "self-heal to show as off", func(st status.AppStatus) bool { return !st.SelfHeal })
	victim := rig.App + "-web-1"
	testenv.Docker(t, "rm", "-f", victim)
	st := rig.Wait(15*time.Second, "the removed replica to show as drift", func(st status.AppStatus) bool {
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
		if slices.ContainsFunc(testenv.DockerContainers(t, rig.App), func(c testenv.DockerContainer) bool { return c.Name == victim }) {
			t.Fatalf("%s was recreated although self-heal is off", victim)
		}
	}
	rig.Call("turn self-heal on", func(ctx context.Context, c *web.Client, app string) error { return c.SetSelfHeal(ctx, app, true) })
	rig.WaitConverged("the removed replica to be repaired once self-heal is on", first, 2, v1)

	rig.Call("suspend", func(ctx context.Context, c *web.Client, app string) error { return c.Suspend(ctx, app) })
	rig.Wait(5*time.Second, "the app to show as suspended", func(st status.AppStatus) bool {
		return st.Suspended && st.Health == status.HealthSuspended
	})
	second := rig.Commit("scale to 3", testenv.ServiceManifest(v1, 3, env))
	st = rig.Wait(15*time.Second, "the suspended agent to see the new commit", func(st status.AppStatus) bool {
		return st.Fetched != nil && st.Fetched.SHA == second
	})
	for range 12 {
		if cs := testenv.DockerContainers(t, rig.App); len(cs) != 2 {
			t.Fatalf("a suspended app was changed: containers %+v", cs)
		}
		time.Sleep(250 * time.Millisecond)
	}
	st = rig.Wait(5*time.Second, "status of the suspended app", func(status.AppStatus) bool { return true })
	if st.Health != status.HealthSuspended || st.Sync != drift.SyncOutOfSync || st.Applied == nil || st.Applied.SHA != first {
		t.Errorf("while suspended: health %s, sync %s, applied %s; want Suspended, OutOfSync, %s", st.Health, st.Sync, testenv.RevShort(st.Applied), first[:7])
	}
	if !strings.Contains(st.Message, "suspended") {
		t.Errorf("message %q does not say the app is suspended", st.Message)
	}
	rig.Call("resume", func(ctx context.Context, c *web.Client, app string) error { return c.Resume(ctx, app) })
	rig.WaitConverged("the held commit to deploy on resume", second, 3, v1)
}

// TestAgentHistoryAndStatusCLI: `driftless status` and `driftless history`
// against a running agent show what it did, a revert included.
func TestAgentHistoryAndStatusCLI(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	rig := testenv.StartRig(t, func(string) string { return testenv.ServiceManifest(v1, 1, map[string]string{"MESSAGE": "one"}) })
	rig.WaitConverged("the first commit to be deployed", rig.Repo.Head(), 1, v1)
	second := rig.Commit("say two", testenv.ServiceManifest(v1, 1, map[string]string{"MESSAGE": "two"}))
	rig.WaitConverged("the change to roll out", second, 1, v1)
	reverted := rig.Repo.Revert(second)
	rig.WaitConverged("the revert to roll out", reverted, 1, v1)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	server := "--server=" + rig.Agent.URL

	out, code := testenv.Run(t, ctx, dir, "status", server)
	if code != 0 {
		t.Fatalf("driftless status: exit %d:\n%s", code, out)
	}
	if line := lineStarting(out, rig.App+" "); !strings.Contains(line, "Synced") || !strings.Contains(line, "Healthy") ||
		!strings.Contains(line, "1/1") || !strings.Contains(line, reverted[:7]) {
		t.Errorf("driftless status: the app's line %q should say Synced, Healthy, 1/1 and %s:\n%s", line, reverted[:7], out)
	}

	out, code = testenv.Run(t, ctx, dir, "history", rig.App, server)
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

	out, code = testenv.Run(t, ctx, dir, "status", rig.App, server)
	if code != 0 {
		t.Fatalf("driftless status %s: exit %d:\n%s", rig.App, code, out)
	}
	for _, want := range []string{
		"App " + rig.App + ": Synced, Healthy",
		"running:  " + reverted[:7],
		"(revert)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("driftless status %s lacks %q:\n%s", rig.App, want, out)
		}
	}
	if svc := lineStarting(out, "web "); !strings.Contains(svc, "1/1") || !strings.Contains(svc, v1) {
		t.Errorf("driftless status %s: service line %q should show 1/1 of %s:\n%s", rig.App, svc, v1, out)
	}
	if c := lineStarting(out, "  "+rig.App+"-web-1 "); !strings.Contains(c, "ready") || !strings.Contains(c, "running") {
		t.Errorf("driftless status %s: container line %q should show it ready and running:\n%s", rig.App, c, out)
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
