package engines

import (
	"fmt"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/sshengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestAppOverSSH: an engine reached over ssh:// (a real sshd on loopback
// whose docker CLI talks to a private engine) runs an app, which is healed
// there after a removal by hand; an app on it that asks for an HTTP
// readiness probe converges too (the probe runs in the engine's probe
// container, see TestReadinessProbesOnRemoteEngine).
func TestAppOverSSH(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	// In a network namespace of its own: there the probe container reaches
	// the replica over the engine's bridge as on a real host, which the
	// host's FORWARD rules (the shared engine's) would drop for a private
	// engine's bridge started with --iptables=false.
	eng := privengine.StartIsolated(t, "far")
	eng.LoadImages(image)
	ssh := sshengine.Start(t, eng.Host)

	p := prefix()
	four, five := p+"-four", p+"-five"
	repo, url := platformRepo(t)
	repo.WriteFile("apps/"+four+"/web.yaml", fmt.Sprintf("apiVersion: driftless.dev/v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  image: %s\n  replicas: 1\n  env: {MESSAGE: four}\n  stopGracePeriodSeconds: 1\n", image))
	repo.WriteFile("apps/"+five+"/web.yaml", testenv.WebManifest(image, 1, "five"))
	sha := repo.Commit("two apps on the ssh engine")
	cfg := fmt.Sprintf(`engines:
%[1]sapps:
  - {name: %[2]s, repo: %[4]s, branch: main, path: apps/%[2]s, interval: 10m, allowInsecureTransport: true, engine: far}
  - {name: %[3]s, repo: %[4]s, branch: main, path: apps/%[3]s, interval: 10m, allowInsecureTransport: true, engine: far}
`, farEntry(ssh), four, five, url)
	path := writeConfig(t, cfg)
	agent := testenv.StartAgent(t, testenv.DataDir(t), "run", "--config", path, "--ping-timeout", sshPingTimeout)

	converged := testenv.ConvergedServices(sha, map[string]int{"web": 1})
	st := testenv.WaitAppStatus(t, agent, four, 90*time.Second, "converged over ssh", converged)
	if n := len((engineCLI{eng}).containers(t, four)); n != 1 || st.Engine != "far" {
		t.Fatalf("the ssh engine holds %d containers of %s (engine %q), want 1 on far", n, four, st.Engine)
	}
	// five's HTTP readiness probe runs in the engine's probe container.
	testenv.WaitAppStatus(t, agent, five, 60*time.Second, "ready through the remote probe", converged)
	if n := len((engineCLI{eng}).containers(t, five)); n != 1 {
		t.Errorf("the ssh engine holds %d containers of %s, want 1", n, five)
	}
	before := testenv.ContainerIDs(st)
	eng.Docker("rm", "-f", four+"-web-1")
	testenv.WaitAppStatus(t, agent, four, 60*time.Second, "healed over ssh", func(st status.AppStatus) bool {
		ids := testenv.ContainerIDs(st)
		return converged(st) && len(ids) == 1 && ids[0] != before[0]
	})
}
