package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// The demo's rough edges on first use: a second `demo` says where the first
// one runs (not a database timeout), and `demo --clean` while the demo's
// agent runs stops it first instead of failing on what it recreates.
func TestDemoSecondRunAndCleanWhileRunning(t *testing.T) {
	t.Parallel()
	eng := testenv.RequireDocker(t)
	defer eng.Close()
	data := t.TempDir()
	// A bound on the whole test, tour steps 5 (a one-minute watch window)
	// and 8 included, on a loaded machine: not a speed target.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		// Whatever happened, leave no demo behind.
		_, _ = testenv.Run(t, context.Background(), os.TempDir(), "demo", "--clean", "--data", data)
	})

	agent := testenv.StartAgent(t, data, "demo")
	for _, app := range []string{"demo", "demo-shop", "hello"} {
		testenv.WaitApp(t, agent, 3*time.Minute, app+" synced and healthy",
			func(ctx context.Context, c *web.Client) (status.AppStatus, error) { return c.App(ctx, app) },
			func(s status.AppStatus) bool { return s.Sync == drift.SyncSynced && s.Health == drift.HealthHealthy })
	}

	tourStepAddsApp(t, agent, data)
	tourStepRollsBack(t, agent, data)

	out, code := testenv.Run(t, ctx, os.TempDir(), "demo", "--data", data, "--listen", testenv.FreeAddr(t))
	want := fmt.Sprintf("a demo is already running (pid %d): open %s", agent.PID(), agent.URL)
	if code != 1 || !strings.Contains(out, want) || strings.Contains(out, "timeout") {
		t.Fatalf("second demo: exit %d, want %q in:\n%s", code, want, out)
	}

	out, code = testenv.Run(t, ctx, os.TempDir(), "demo", "--clean", "--data", data)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("stopping the demo's agent (pid %d", agent.PID())) || !strings.Contains(out, "demo cleaned up") {
		t.Fatalf("demo --clean while running: exit %d\n%s", code, out)
	}
	if exited, _ := agent.Exited(); !exited {
		t.Fatal("the demo's agent still runs after --clean")
	}
	// Every app of the demo's source goes too, the tour's hello2 included.
	for _, app := range []string{"demo", "demo-shop", "hello", "hello2"} {
		actual, err := eng.Observe(ctx, app, false)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(actual.Containers); n != 0 {
			t.Fatalf("%d containers of %s left after --clean", n, app)
		}
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("data directory left after --clean: %v", err)
	}
}

// tourStepRollsBack runs the tour's step 5 as printed: a commit that
// crashes 15 s after it is ready is rolled back on its own and quarantined.
func tourStepRollsBack(t *testing.T, agent *testenv.Agent, data string) {
	t.Helper()
	app := func(ctx context.Context, c *web.Client) (status.AppStatus, error) { return c.App(ctx, "demo") }
	// The first release must pass its minute-long window first: that is
	// what a regression rolls back to.
	first := testenv.WaitApp(t, agent, 3*time.Minute, "the first release passes its watch window", app,
		func(s status.AppStatus) bool {
			return s.Release != nil && s.Release.LastGood != "" && s.Release.Watching == nil
		})
	runTourStep(t, agent, filepath.Join(data, "repo"),
		`sed -i 's/^    LOG_LEVEL: info$/    LOG_LEVEL: info\n    WORKLOAD_EXIT_AFTER: 15s/' web.yaml`,
		`git commit -qam "Crash under traffic"`)
	st := testenv.WaitApp(t, agent, 3*time.Minute, "the crashing release rolled back and quarantined", app, func(s status.AppStatus) bool {
		return strings.HasPrefix(s.Message, "quarantined ") && s.Applied != nil && s.Applied.SHA == first.Release.LastGood && s.Health == drift.HealthHealthy
	})
	if !strings.Contains(st.Message, "rolled back automatically") {
		t.Fatalf("status after tour step 5: %q", st.Message)
	}
}

// tourStepAddsApp runs the tour's step 8 as printed: a directory copied
// under apps/ and committed is a new app of the source demo-apps, and
// removing it removes the app (the source prunes).
func tourStepAddsApp(t *testing.T, agent *testenv.Agent, data string) {
	t.Helper()
	repo := filepath.Join(data, "apps-repo")
	runTourStep(t, agent, repo, `cp -r apps/hello apps/hello2 && git add apps && git commit -qm "Add hello2"`)
	testenv.WaitApp(t, agent, 2*time.Minute, "hello2 deployed from its new directory",
		func(ctx context.Context, c *web.Client) (status.AppStatus, error) { return c.App(ctx, "hello2") },
		func(s status.AppStatus) bool {
			return s.FromSource == "demo-apps" && s.Sync == drift.SyncSynced && s.Health == drift.HealthHealthy
		})
	runTourStep(t, agent, repo, `git rm -rq apps/hello2 && git commit -qm "Remove hello2"`)
	testenv.WaitApp(t, agent, 2*time.Minute, "the source no longer declares hello2",
		func(ctx context.Context, c *web.Client) ([]status.SourceSet, error) { return c.Sources(ctx) },
		func(ss []status.SourceSet) bool {
			return len(ss) == 1 && ss[0].Name == "demo-apps" && slices.Equal(ss[0].Apps, []string{"hello"})
		})
	testenv.WaitApp(t, agent, time.Minute, "hello2 removed with its containers",
		func(ctx context.Context, c *web.Client) ([]status.AppStatus, error) { return c.Apps(ctx) },
		func(apps []status.AppStatus) bool {
			return !slices.ContainsFunc(apps, func(a status.AppStatus) bool { return a.Name == "hello2" })
		})
}

// runTourStep runs a step of the tour in dir, each of lines exactly as the
// demo printed it, and fails unless the demo printed them.
func runTourStep(t *testing.T, agent *testenv.Agent, dir string, lines ...string) {
	t.Helper()
	tour := agent.Logs()
	for _, l := range append([]string{"cd " + dir}, lines...) {
		if !strings.Contains(tour, l) {
			t.Fatalf("the demo's tour no longer prints %q", l)
		}
	}
	cmd := exec.Command("sh", "-c", strings.Join(lines, " && "))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Tour", "GIT_AUTHOR_EMAIL=tour@example.com", "GIT_COMMITTER_NAME=Tour", "GIT_COMMITTER_EMAIL=tour@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tour step in %s: %v\n%s", dir, err, out)
	}
}
