package swarm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/registry"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestSwarmPullsPrivateImageWithCredentials: a service whose image is
// only in a registry that wants a password runs, because the agent sends
// the app's credentials (here from Docker's config.json) with the
// service, as `docker stack deploy --with-registry-auth` does: the node
// that runs the task pulls with them. The private engine has no
// credentials of its own, so its pull succeeds only with the ones the
// service carries.
func TestSwarmPullsPrivateImageWithCredentials(t *testing.T) {
	base := testenv.WorkloadImage(t, "v1")
	reg := registry.Start(t, "puller", "pull-pw-7e2a")
	app := testenv.UniqueApp(t)
	ref, _ := reg.Push(t, base, app+"/web:1")
	// Only the registry has it now: the private engine was never given it.
	reg.RemoveLocal(t, ref)
	eng := startSwarm(t)

	gitBase := t.TempDir()
	gitURL := gitserver.StartDaemon(t, gitBase)
	repo := gitserver.Init(t, gitBase, app)
	repo.WriteFile("app/compose.yaml", "services:\n  web:\n    image: "+ref+"\n    deploy: {replicas: 2}\n")
	first := repo.Commit("web from the private registry")
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(eng.Env(), "DOCKER_CONFIG="+reg.DockerConfig)
	agent := testenv.StartAgentEnv(t, env, data, "run", "--repo", repo.URL(gitURL), "--path", "app", "--app", app,
		"--target", "swarm", "--allow-insecure-transport", "--interval", "2s")
	r := &buildRig{t: t, eng: eng, agent: agent, app: app}
	t0 := time.Now()
	st := r.wait(180*time.Second, "web's two tasks running from the private image", func(st status.AppStatus) bool {
		return st.Applied != nil && st.Applied.SHA == first && st.Sync == drift.SyncSynced && st.Health == drift.HealthHealthy &&
			len(st.Services) == 1 && st.Services[0].Ready == 2
	})
	t.Logf("pulled on the node with the app's credentials and running in %s", time.Since(t0).Round(time.Millisecond))
	if got := st.Services[0].Image; got != ref {
		t.Errorf("web runs %s, want %s", got, ref)
	}
	if got := eng.Docker("image", "inspect", "--format", "{{index .RepoTags 0}}", ref); got != ref {
		t.Errorf("the node's image is %q, want %s pulled from the registry", got, ref)
	}
}
