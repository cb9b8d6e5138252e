package images

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// TestAgentImage runs the agent as users are told to: its own image, built
// by scripts/build-image.sh, in a container on the host network that
// manages the host engine through the mounted socket and keeps its data on
// a named volume. It checks that the containerised agent deploys an app
// from Git, repairs a replica removed behind its back, stops cleanly on
// docker stop, and that restarting or replacing its container keeps the
// history and leaves the workloads running.
//
// The repository is served over git:// on the host's loopback: the image is
// FROM scratch, without the git binary that file:// and local paths need.
func TestAgentImage(t *testing.T) {
	t.Parallel()
	started := time.Now()
	testenv.RequireDocker(t)
	image := buildAgentImage(t)
	workload := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)

	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	path := "apps/" + app
	repo.WriteFile(path+"/web.yaml", testenv.WebManifest(workload, 2, "from the image"))
	sha := repo.Commit("deploy web")

	volume := "driftless-e2e-" + app
	testenv.DockerStdout(t, "volume", "create", volume)
	t.Cleanup(func() { testenv.DockerQuiet(t, "volume", "rm", "--force", volume) })

	addr := testenv.FreeAddr(t)
	agent := "driftless-e2e-" + app
	runAgent := func() {
		testenv.DockerStdout(t, "run", "--detach", "--name", agent, "--network", "host",
			"--volume", "/var/run/docker.sock:/var/run/docker.sock",
			"--volume", volume+":/data",
			image, "run", "--repo", repo.URL(server), "--branch", "main", "--path", path, "--app", app,
			"--interval", "1s", "--data", "/data", "--listen", addr, "--allow-insecure-transport")
	}
	// Registered after UniqueApp's clean-up, so it runs before it: the agent
	// must be gone before its app's containers are removed, or it would
	// recreate them.
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command("docker", "logs", agent).CombinedOutput()
			t.Logf("agent container logs:\n%s", logs)
		}
		testenv.DockerQuiet(t, "rm", "--force", agent)
	})
	runAgent()

	api := &web.Client{BaseURL: "http://" + addr, HTTP: &http.Client{Timeout: 10 * time.Second}}
	waitHealthz(t, api.BaseURL, agent)
	converged := func(st status.AppStatus) bool {
		if st.Applied == nil || st.Applied.SHA != sha || st.Sync != drift.SyncSynced || st.Health != drift.HealthHealthy || len(st.Services) != 1 {
			return false
		}
		svc := st.Services[0]
		return svc.Ready == 2 && len(svc.Containers) == 2
	}

	// The commit is deployed as sibling containers on the host engine.
	st := waitStatus(t, api, app, "the app to be Synced and Healthy with 2 replicas", converged)
	ids := testenv.ContainerIDs(st)
	for _, name := range []string{app + "-web-1", app + "-web-2"} {
		if got := testenv.DockerStdout(t, "inspect", "--format", "{{.State.Running}} {{.Config.Image}}", name); got != "true "+workload {
			t.Fatalf("docker inspect %s = %q, want a running %s", name, got, workload)
		}
	}

	// A replica removed behind the agent's back is recreated and recorded.
	victim := app + "-web-1"
	oldVictim := testenv.DockerStdout(t, "inspect", "--format", "{{.Id}}", victim)
	testenv.DockerStdout(t, "rm", "--force", victim)
	repairSummary := victim + " was removed outside Git; recreated"
	waitStatus(t, api, app, "the removed replica to be repaired", func(st status.AppStatus) bool {
		return converged(st) && slices.ContainsFunc(testenv.History(t, api, app, "repair"), func(e status.HistoryEntry) bool {
			return e.Summary == repairSummary
		})
	})
	if id := testenv.DockerStdout(t, "inspect", "--format", "{{.Id}}", victim); id == oldVictim {
		t.Fatalf("%s still has the removed container's ID %s", victim, id)
	}
	before := testenv.History(t, api, app, "")
	ids = testenv.ContainerIDs(waitStatus(t, api, app, "the repaired app's status", converged))

	// After the agent comes back, it has kept its history and has left the
	// running replicas alone.
	keptState := func(when string) {
		t.Helper()
		waitHealthz(t, api.BaseURL, agent)
		st := waitStatus(t, api, app, "the app to converge "+when, converged)
		if got := testenv.ContainerIDs(st); !slices.Equal(got, ids) {
			t.Errorf("%s, containers = %v; want the same replicas %v kept running", when, got, ids)
		}
		after := testenv.History(t, api, app, "")
		for _, e := range before {
			i := slices.IndexFunc(after, func(a status.HistoryEntry) bool { return a.ID == e.ID })
			if i < 0 {
				t.Errorf("%s, history entry %d (%s %q) is gone", when, e.ID, e.Kind, e.Summary)
				continue
			}
			if a := after[i]; a.Kind != e.Kind || a.Summary != e.Summary {
				t.Errorf("%s, history entry %d is %s %q, was %s %q", when, e.ID, a.Kind, a.Summary, e.Kind, e.Summary)
			}
		}
		if !slices.ContainsFunc(after, func(e status.HistoryEntry) bool { return e.Kind == status.KindRepair && e.Summary == repairSummary }) {
			t.Errorf("%s, the repair entry is missing; history: %+v", when, after)
		}
	}
	testenv.DockerStdout(t, "restart", "--time", "20", agent)
	keptState("after docker restart")

	// SIGTERM from `docker stop` shuts the agent down cleanly: as PID 1 it
	// only exits on signals it handles.
	testenv.DockerStdout(t, "stop", "--time", "20", agent)
	if code := testenv.DockerStdout(t, "inspect", "--format", "{{.State.ExitCode}}", agent); code != "0" {
		t.Errorf("agent container exited with code %s after docker stop, want 0", code)
	}

	// A new container on the same volume, as an upgrade makes, carries on
	// where the old one stopped: the history lives on the volume, not in the
	// container.
	testenv.DockerStdout(t, "rm", agent)
	runAgent()
	keptState("after the container was replaced")
	t.Logf("TestAgentImage took %s", time.Since(started).Round(time.Millisecond))
}

// buildAgentImage builds the image with scripts/build-image.sh under a
// unique tag and removes it when the test ends.
func buildAgentImage(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	tag := "driftless:e2e-" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join(testenv.RepoRoot(t), "scripts", "build-image.sh"), tag)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/build-image.sh %s: %v\n%s", tag, err, out)
	}
	t.Logf("built %s in %s", tag, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { testenv.DockerQuiet(t, "image", "rm", "--force", tag) })
	return tag
}

// waitHealthz waits until the containerised agent serves, failing early if
// its container stopped.
func waitHealthz(t *testing.T, baseURL, container string) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := hc.Get(baseURL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if state := testenv.DockerStdout(t, "inspect", "--format", "{{.State.Status}}", container); state == "exited" || state == "dead" {
			t.Fatalf("agent container %s is %s before serving", container, state)
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent container %s did not serve %s/healthz within 30s: %v", container, baseURL, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitStatus polls the agent's API until ok accepts the app's status.
func waitStatus(t *testing.T, api *web.Client, app, what string, ok func(status.AppStatus) bool) status.AppStatus {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last status.AppStatus
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := api.App(ctx, app)
		cancel()
		if err == nil {
			last = st
			if ok(st) {
				return st
			}
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last status: sync %s health %s message %q errors %v (API error %v)",
				what, last.Sync, last.Health, last.Message, last.Errors, lastErr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
