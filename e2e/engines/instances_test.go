package engines

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestOneAppOnTwoEngines: an app declared with engines: [local, far]
// runs as two instances, APP@local on the machine's engine and APP@far on
// an engine reached over ssh, each with its own status and its
// containers named for the app on its engine. One commit rolls both; a
// container removed by hand on far is healed there while the local
// instance's container is left alone.
func TestOneAppOnTwoEngines(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	eng, ssh := farEngine(t, image)

	app := prefix() + "-both"
	t.Cleanup(func() { testenv.RemoveApp(t, app) })
	repo, url := platformRepo(t)
	manifest := func(message string) string {
		return fmt.Sprintf("apiVersion: driftless.dev/v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  image: %s\n  replicas: 1\n  env: {MESSAGE: %s}\n  stopGracePeriodSeconds: 1\n", image, message)
	}
	repo.WriteFile("apps/"+app+"/web.yaml", manifest("one"))
	first := repo.Commit("an app on two engines")
	cfg := fmt.Sprintf(`engines:
%sapps:
  - {name: %s, repo: %s, branch: main, path: apps/%[2]s, interval: 2s, allowInsecureTransport: true, engines: [local, far]}
`, farEntry(ssh), app, url)
	path := writeConfig(t, cfg)
	agent := testenv.StartAgent(t, testenv.DataDir(t), "run", "--config", path, "--ping-timeout", sshPingTimeout)

	onLocal, onFar := app+"@local", app+"@far"
	local := testenv.WaitAppStatus(t, agent, onLocal, 90*time.Second, "converged on the local engine", testenv.ConvergedServices(first, map[string]int{"web": 1}))
	far := testenv.WaitAppStatus(t, agent, onFar, 90*time.Second, "converged on far", testenv.ConvergedServices(first, map[string]int{"web": 1}))
	if local.Engine != "" || far.Engine != "far" {
		t.Errorf("%s on engine %q, %s on %q; want the local engine and far", onLocal, local.Engine, onFar, far.Engine)
	}
	if l, f := (engineCLI{}).containers(t, app), (engineCLI{eng}).containers(t, app); len(l) != 1 || len(f) != 1 {
		t.Fatalf("containers labelled %s: local %v, far %v; want one on each", app, l, f)
	}
	for _, e := range []*privengine.Engine{nil, eng} {
		name := app + "-web-1"
		var env string
		if e == nil {
			env = testenv.Docker(t, "inspect", "--format", "{{range .Config.Env}}{{println .}}{{end}}", name)
		} else {
			env = e.Docker("inspect", "--format", "{{range .Config.Env}}{{println .}}{{end}}", name)
		}
		if !strings.Contains(env, "MESSAGE=one") {
			t.Errorf("%s (private engine %v) env %q, want MESSAGE=one", name, e != nil, env)
		}
	}

	// The CLI lists both instances, each with its engine, and shows one.
	out, code := testenv.Run(t, t.Context(), t.TempDir(), "status", "--server="+agent.URL)
	if code != 0 || !strings.Contains(out, onLocal) || !strings.Contains(out, onFar+" (engine far)") {
		t.Errorf("driftless status: exit %d\n%s\nwant both %s and %s", code, out, onLocal, onFar)
	}
	out, code = testenv.Run(t, t.Context(), t.TempDir(), "status", onFar, "--server="+agent.URL)
	if code != 0 || !strings.Contains(out, onFar) || !strings.Contains(out, "engine:   far") {
		t.Errorf("driftless status %s: exit %d\n%s", onFar, code, out)
	}

	// Each instance has its dashboard page.
	if page := get(t, agent.URL+"/apps/"+onFar); !strings.Contains(page, onFar) || !strings.Contains(page, "engine far") {
		t.Errorf("the dashboard page of %s does not name it and its engine:\n%s", onFar, page)
	}

	// One commit rolls both instances.
	repo.WriteFile("apps/"+app+"/web.yaml", manifest("two"))
	second := repo.Commit("a new message")
	rolled := func(old status.AppStatus) func(status.AppStatus) bool {
		return func(st status.AppStatus) bool {
			ids := testenv.ContainerIDs(st)
			return testenv.ConvergedServices(second, map[string]int{"web": 1})(st) && len(ids) == 1 && ids[0] != testenv.ContainerIDs(old)[0]
		}
	}
	local = testenv.WaitAppStatus(t, agent, onLocal, 90*time.Second, "rolled on the local engine", rolled(local))
	far = testenv.WaitAppStatus(t, agent, onFar, 90*time.Second, "rolled on far", rolled(far))

	// Each instance has its own history: the rollout on far is far's.
	page, err := agent.Client().History(t.Context(), onFar, []string{"sync"}, 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	rolledOnFar := false
	for _, e := range page.Entries {
		if e.App != onFar {
			t.Errorf("%s's history holds an entry of %s", onFar, e.App)
		}
		rolledOnFar = rolledOnFar || (e.Revision.SHA == second)
	}
	if !rolledOnFar {
		t.Errorf("%s's history has no sync to %s: %+v", onFar, second, page.Entries)
	}

	// A container removed by hand on far heals there; the local one stays.
	eng.Docker("rm", "-f", app+"-web-1")
	testenv.WaitAppStatus(t, agent, onFar, 60*time.Second, "healed on far", func(st status.AppStatus) bool {
		ids := testenv.ContainerIDs(st)
		return testenv.ConvergedServices(second, map[string]int{"web": 1})(st) && len(ids) == 1 && ids[0] != testenv.ContainerIDs(far)[0]
	})
	if got := testenv.ContainerIDs(testenv.AppStatus(t, agent, onLocal)); len(got) != 1 || got[0] != testenv.ContainerIDs(local)[0] {
		t.Errorf("%s's containers %v after far healed, want %v untouched", onLocal, got, testenv.ContainerIDs(local))
	}
}
