package engines

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestBuildOnRemoteEngine: a compose service built from the repository
// (build: ./web) of an app on an ssh engine — an app of a source whose
// template says engine: far — is built on that engine, from the
// revision's files sent through the engine API, and runs there; the
// agent's own engine gets no such image.
func TestBuildOnRemoteEngine(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	eng, ssh := farEngine(t, image)

	app := prefix() + "-built"
	repo, url := platformRepo(t)
	dir := "apps/" + app + "/"
	repo.WriteFile(dir+"compose.yaml", "services:\n  web:\n    build: ./web\n    stop_grace_period: 1s\n")
	repo.WriteFile(dir+"web/Dockerfile", fmt.Sprintf("FROM %s\nENV MESSAGE=built-on-far\n", image))
	sha := repo.Commit("a service built from the repository, on the ssh engine")
	// The app comes from a source whose template places its apps on far.
	path := writeConfig(t, fmt.Sprintf(`engines:
%ssources:
  - {name: platform, repo: %s, branch: main, directories: ['apps/*'], interval: 10m, allowInsecureTransport: true, template: {engine: far}}
`, farEntry(ssh), url))
	agent := testenv.StartAgent(t, testenv.DataDir(t), "run", "--config", path, "--ping-timeout", sshPingTimeout)

	st := testenv.WaitAppStatus(t, agent, app, 120*time.Second, "built and converged on far", testenv.ConvergedServices(sha, map[string]int{"web": 1}))
	if st.Engine != "far" || st.FromSource != "platform" {
		t.Errorf("%s: engine %q, from source %q; want far, platform", app, st.Engine, st.FromSource)
	}
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
