package loop

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/loop"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/moby/moby/client"
)

// TestLoopFollowsGitAndRepairsDrift runs the whole loop against the real
// Docker engine and a real git server: commits roll out, a revert restores
// the previous state, a removed replica comes back without a commit, and a
// broken commit is refused while the last good one keeps running.
func TestLoopFollowsGitAndRepairsDrift(t *testing.T) {
	t.Parallel()
	engine := testenv.RequireDocker(t)
	v1 := testenv.WorkloadImage(t, "v1")
	v2 := testenv.WorkloadImage(t, "v2")
	app := testenv.UniqueApp(t)

	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	path := "apps/" + app
	repo.WriteFile(path+"/web.yaml", testenv.WebManifest(v1, 2, "one"))
	first := repo.Commit("deploy web")

	dataDir := t.TempDir()
	cfg := config.AppConfig{Name: app, Repo: repo.URL(server), Branch: "main", Path: path,
		Interval: "@every 1s", SelfHeal: true, MaxRemovalPercent: 50, AllowInsecureTransport: true}
	agent, err := loop.New(loop.Options{
		DataDir: dataDir,
		Apps:    []config.AppConfig{cfg},
		Engine:  engine,
		NewSource: func(c config.AppConfig) (loop.Source, error) {
			return gitsource.New(gitsource.Config{URL: c.Repo, Branch: c.Branch, Path: c.Path, Dir: filepath.Join(dataDir, "git", c.Name), Auth: c.Auth,
				AllowInsecureTransport: c.AllowInsecureTransport})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	waitFor := func(what string, ok func(st status.AppStatus) bool) status.AppStatus {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			st, _ := agent.App(app)
			if ok(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; status: sync %s health %s message %q refused %+v errors %+v",
					what, st.Sync, st.Health, st.Message, st.Refused, st.Errors)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	converged := func(sha string, replicas int, image string) func(status.AppStatus) bool {
		return func(st status.AppStatus) bool {
			if st.Applied == nil || st.Applied.SHA != sha || st.Sync != drift.SyncSynced || st.Health != drift.HealthHealthy || len(st.Services) != 1 {
				return false
			}
			svc := st.Services[0]
			if svc.Ready != replicas || len(svc.Containers) != replicas {
				return false
			}
			for _, c := range svc.Containers {
				if c.Image != image || c.Revision != sha {
					return false
				}
			}
			return true
		}
	}

	// A commit is deployed.
	waitFor("the first commit to be deployed", converged(first, 2, v1))

	// A change is rolled out.
	repo.WriteFile(path+"/web.yaml", testenv.WebManifest(v2, 2, "two"))
	second := repo.Commit("web v2")
	waitFor("v2 to roll out", converged(second, 2, v2))

	// git revert brings the previous state back, and history says so.
	reverted := repo.Revert(second)
	waitFor("the revert to roll out", converged(reverted, 2, v1))
	syncs, err := agent.History(status.HistoryQuery{App: app, Kinds: []status.HistoryKind{status.KindSync}})
	if err != nil {
		t.Fatal(err)
	}
	if len(syncs) == 0 || syncs[0].Revision == nil || syncs[0].Revision.SHA != reverted || !syncs[0].Revision.Revert || !strings.HasPrefix(syncs[0].Summary, "synced revert") {
		t.Fatalf("newest sync entry = %+v, want the revert marked", syncs[0])
	}

	// A replica removed outside Git comes back without a commit.
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	victim := app + "-web-2"
	if _, err := cli.ContainerRemove(ctx, victim, client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	waitFor("the removed replica to be repaired", func(st status.AppStatus) bool {
		es, _ := agent.History(status.HistoryQuery{App: app, Kinds: []status.HistoryKind{status.KindRepair}})
		return converged(reverted, 2, v1)(st) && slices.ContainsFunc(es, func(e status.HistoryEntry) bool {
			return e.Summary == victim+" was removed outside Git; recreated"
		})
	})

	// A broken commit is refused; nothing is stopped; the errors are shown.
	running, _ := agent.App(app)
	ids := testenv.ContainerIDs(running)
	repo.WriteFile(path+"/web.yaml", testenv.WebManifest(v2, 2, "three")+"  replcas: 3\n")
	broken := repo.Commit("typo")
	st := waitFor("the broken commit to be refused", func(st status.AppStatus) bool {
		return st.Refused != nil && st.Refused.Revision.SHA == broken
	})
	if len(st.Refused.Errors) == 0 || !strings.HasPrefix(st.Refused.Errors[0], path+"/web.yaml:") || !strings.Contains(st.Refused.Errors[0], "replcas") {
		t.Fatalf("refusal errors = %q, want file:line of the typo", st.Refused.Errors)
	}
	if st.Applied.SHA != reverted || !slices.Equal(testenv.ContainerIDs(st), ids) {
		t.Fatalf("after the refusal applied %s, containers %v; want %s still running as %v", st.Applied.Short(), testenv.ContainerIDs(st), reverted[:7], ids)
	}
	refused, _ := agent.History(status.HistoryQuery{App: app, Kinds: []status.HistoryKind{status.KindRefused}})
	if len(refused) != 1 || refused[0].Revision.SHA != broken {
		t.Fatalf("refused entries = %+v", refused)
	}

	// The next good commit applies.
	repo.WriteFile(path+"/web.yaml", testenv.WebManifest(v2, 3, "four"))
	fixed := repo.Commit("fix typo, scale to 3")
	st = waitFor("the fix to roll out", converged(fixed, 3, v2))
	if st.Refused != nil {
		t.Fatalf("refusal still shown after a good commit: %+v", st.Refused)
	}
	if err := agent.Ready(); err != nil {
		t.Fatalf("Ready = %v", err)
	}
}
