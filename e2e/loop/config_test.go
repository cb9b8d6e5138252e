package loop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// TestAgentRunsSeveralAppsFromConfig: one agent, a driftless.yaml with two
// apps in two paths of one repository, each with its own settings; both
// converge, and a commit to one path changes only that app.
func TestAgentRunsSeveralAppsFromConfig(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	shop, blog := testenv.UniqueApp(t), testenv.UniqueApp(t)
	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	repo.WriteFile("apps/shop/web.yaml", testenv.ServiceManifest(v1, 2, map[string]string{"MESSAGE": "shop"}))
	repo.WriteFile("apps/blog/web.yaml", testenv.ServiceManifest(v1, 1, map[string]string{"MESSAGE": "blog"}))
	repo.Commit("two apps")

	cfg := filepath.Join(t.TempDir(), "driftless.yaml")
	body := fmt.Sprintf(`apps:
  - name: %s
    repo: %s
    branch: main
    path: apps/shop
    interval: "@every 1s"
    allowInsecureTransport: true
  - name: %s
    repo: %s
    branch: main
    path: apps/blog
    interval: 1s
    allowInsecureTransport: true
    selfHeal: false
`, shop, repo.URL(server), blog, repo.URL(server))
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := testenv.StartAgent(t, t.TempDir(), "run", "--config", cfg)

	apps := func(ctx context.Context, c *web.Client) ([]status.AppStatus, error) { return c.Apps(ctx) }
	ready := func(want map[string]int) func([]status.AppStatus) bool {
		return func(as []status.AppStatus) bool {
			if len(as) != len(want) {
				return false
			}
			for _, a := range as {
				total := 0
				for _, s := range a.Services {
					total += s.Ready
				}
				if a.Sync != drift.SyncSynced || total != want[a.Name] {
					return false
				}
			}
			return true
		}
	}
	as := testenv.WaitApp(t, agent, 60*time.Second, "both apps converged", apps, ready(map[string]int{shop: 2, blog: 1}))
	for _, a := range as {
		if a.Name == blog && a.SelfHeal {
			t.Errorf("blog was configured with selfHeal: false, status says %v", a.SelfHeal)
		}
	}
	blogIDs := testenv.IDsByName(testenv.DockerContainers(t, blog))

	repo.WriteFile("apps/shop/web.yaml", testenv.ServiceManifest(v1, 3, map[string]string{"MESSAGE": "shop"}))
	repo.Commit("scale shop")
	testenv.WaitApp(t, agent, 60*time.Second, "shop scaled", apps, ready(map[string]int{shop: 3, blog: 1}))
	if after := testenv.IDsByName(testenv.DockerContainers(t, blog)); fmt.Sprint(after) != fmt.Sprint(blogIDs) {
		t.Fatalf("a commit to apps/shop touched blog: before %v, after %v", blogIDs, after)
	}
}
