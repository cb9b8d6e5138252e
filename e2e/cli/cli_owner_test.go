package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestCLIUsesTheAgentsAppName: `driftless diff` and `apply` run inside a
// checkout of a repository a running agent deploys, without --app, take
// the name that agent uses for that path (and say so) instead of the
// directory's name, so they compare with what runs rather than planning a
// second copy of everything. With --app the user's name wins, and in a
// directory no agent deploys the directory's name is the default as
// before.
func TestCLIUsesTheAgentsAppName(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	dirName := app + "-dir" // what the old default would have named it
	t.Cleanup(func() { testenv.RemoveApp(t, dirName) })
	repo := gitserver.Init(t, t.TempDir(), "owner")
	repo.WriteFile(dirName+"/web.yaml", testenv.WebManifest(image, 1, "one"))
	sha := repo.Commit("deploy web")
	data := t.TempDir()
	agent := testenv.StartAgent(t, data, "run", "--repo", repo.Bare, "--branch", "main", "--path", dirName,
		"--app", app, "--interval", "1s", "--allow-insecure-transport")
	testenv.WaitReady(t, agent, app, sha, 1)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := filepath.Join(repo.Work, dirName)
	env := map[string]string{"DRIFTLESS_SERVER": agent.URL}

	out, code := testenv.RunDriftless(t, ctx, dir, env, "diff", "--data", data)
	t.Logf("diff:\n%s", out)
	if code != 0 || !strings.Contains(out, "app name: "+app+" — the agent at "+agent.URL+" deploys this directory as "+app) ||
		!strings.Contains(out, "No changes") && !strings.Contains(out, "0 to create") {
		t.Fatalf("diff in the agent's checkout: exit %d, want 0 under the agent's name %s:\n%s", code, app, out)
	}
	out, code = testenv.RunDriftless(t, ctx, dir, env, "apply", "--data", data, "--ready-timeout", "60s")
	t.Logf("apply:\n%s", out)
	if code != 0 || !strings.Contains(out, "deploys this directory as "+app) || strings.Contains(out, dirName+"-web-1") {
		t.Fatalf("apply in the agent's checkout: exit %d:\n%s", code, out)
	}
	if names := testenv.DockerNames(t, dirName); len(names) != 0 {
		t.Fatalf("apply created a second copy under the directory's name: %v", names)
	}

	// --app is the user's choice, whatever the agent calls it.
	out, code = testenv.RunDriftless(t, ctx, dir, env, "diff", "--data", data, "--app", dirName)
	if code != 1 || strings.Contains(out, "app name:") || !strings.Contains(out, "+ container "+dirName+"-web-1") {
		t.Fatalf("diff --app %s: exit %d, want 1 planning its own containers:\n%s", dirName, code, out)
	}

	// A copy of the files outside the checkout: no agent deploys it, so
	// the directory's name is the default.
	other := filepath.Join(t.TempDir(), dirName)
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "web.yaml"), []byte(testenv.WebManifest(image, 1, "one")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = testenv.RunDriftless(t, ctx, other, env, "diff", "--data", data)
	if code != 1 || strings.Contains(out, "app name:") || !strings.Contains(out, "+ container "+dirName+"-web-1") {
		t.Fatalf("diff outside the checkout: exit %d, want 1 under the directory's name:\n%s", code, out)
	}
}
