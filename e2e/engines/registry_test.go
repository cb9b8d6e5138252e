package engines

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/registry"
	"github.com/driftless-dev/driftless/e2e/sshengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestEngineRegistryCredentials: an app on an ssh engine that lacks its
// image pulls it from a registry that needs a login, with the credentials
// of that engine's registries: in driftless.yaml (there are no global
// ones, and no Docker config.json login): the pull runs on that engine
// and the container runs the pulled digest.
func TestEngineRegistryCredentials(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	reg := registry.Start(t, "far", "s3cret-far")
	p := prefix()
	ref, digest := reg.Push(t, image, p+"/web:v1")
	eng := privengine.Start(t)
	ssh := sshengine.Start(t, eng.Host)
	if out, err := eng.DockerTry("image", "inspect", ref); err == nil {
		t.Fatalf("the private engine already has %s: %s", ref, out)
	}

	app := p + "-pull"
	repo, url := platformRepo(t)
	repo.WriteFile("apps/"+app+"/web.yaml", fmt.Sprintf("apiVersion: driftless.dev/v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  image: %s\n  replicas: 1\n  stopGracePeriodSeconds: 1\n", ref))
	sha := repo.Commit("an app whose image is in a private registry")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "far-registry"), []byte(reg.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`engines:
  - name: far
    host: %s
    sshKeyFile: %s
    knownHostsFile: %s
    registries:
      - {host: %s, username: %s, passwordFile: far-registry}
apps:
  - {name: %s, repo: %s, branch: main, path: apps/%[6]s, interval: 10m, allowInsecureTransport: true, engine: far}
`, ssh.URL, ssh.KeyFile, ssh.KnownHostsFile, reg.Host, reg.User, app, url)
	path := filepath.Join(dir, "driftless.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := testenv.StartAgentEnv(t, append(os.Environ(), "DOCKER_CONFIG="+t.TempDir()), testenv.DataDir(t), "run", "--config", path, "--ping-timeout", sshPingTimeout)
	st := testenv.WaitAppStatus(t, agent, app, 120*time.Second, "converged with the pulled image", testenv.ConvergedServices(sha, map[string]int{"web": 1}))
	if got := st.Services[0].Containers[0].ImageDigest; !strings.Contains(got, digest) {
		t.Errorf("the replica runs digest %q, want the pushed %s", got, digest)
	}
	if out, err := eng.DockerTry("image", "inspect", "--format", "{{json .RepoDigests}}", ref); err != nil || !strings.Contains(out, digest) {
		t.Errorf("the ssh engine's copy of %s: %s %v, want the pushed digest %s", ref, out, err, digest)
	}
}
