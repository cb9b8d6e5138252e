package engines

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/sshengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestBuildOnRemoteEngine: a compose service built from the repository
// (build: ./web) of an app on an ssh engine is built on that engine, from
// the revision's files sent through the engine API, and runs there; the
// agent's own engine gets no such image.
func TestBuildOnRemoteEngine(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	eng := privengine.Start(t)
	eng.LoadImages(image)
	ssh := sshengine.Start(t, eng.Host)

	app := prefix() + "-built"
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "platform")
	dir := "apps/" + app + "/"
	repo.WriteFile(dir+"compose.yaml", "services:\n  web:\n    build: ./web\n    stop_grace_period: 1s\n")
	repo.WriteFile(dir+"web/Dockerfile", fmt.Sprintf("FROM %s\nENV MESSAGE=built-on-far\n", image))
	sha := repo.Commit("a service built from the repository, on the ssh engine")
	path := writeConfig(t, fmt.Sprintf(`engines:
  - {name: far, host: %s, sshKeyFile: %s, knownHostsFile: %s}
apps:
  - {name: %s, repo: %s, branch: main, path: apps/%[4]s, interval: 10m, allowInsecureTransport: true, engine: far}
`, ssh.URL, ssh.KeyFile, ssh.KnownHostsFile, app, repo.URL(server.URL)))
	agent := testenv.StartAgent(t, testenv.DataDir(t), "run", "--config", path)

	testenv.WaitAppStatus(t, agent, app, 120*time.Second, "built and converged on far", testenv.ConvergedServices(sha, map[string]int{"web": 1}))
	name := app + "-web-1"
	if env := eng.Docker("inspect", "--format", "{{range .Config.Env}}{{println .}}{{end}}", name); !strings.Contains(env, "MESSAGE=built-on-far") {
		t.Errorf("%s on far runs with env %q, want the built image's MESSAGE=built-on-far", name, env)
	}
	built := strings.TrimSpace(eng.Docker("inspect", "--format", "{{.Config.Image}}", name))
	if built == image || built == "" {
		t.Fatalf("%s runs image %q, want the one built from ./web", name, built)
	}
	if out, err := exec.Command("docker", "image", "inspect", built).CombinedOutput(); err == nil {
		t.Errorf("the agent's own engine has the image %s built for far: %s", built, out)
	}
}
