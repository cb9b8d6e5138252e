package images

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/registry"
	"github.com/driftless-dev/driftless/e2e/testenv"
)

// payloadImage is base plus one layer of size random bytes (which no
// compression shrinks), tagged ref and removed when the test ends.
func payloadImage(t *testing.T, base, ref string, size int) string {
	t.Helper()
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	id := testenv.Docker(t, "create", base)
	defer testenv.DockerQuiet(t, "rm", "--force", id)
	testenv.Docker(t, "cp", file, id+":/payload")
	testenv.Docker(t, "commit", id, ref)
	t.Cleanup(func() { testenv.DockerQuiet(t, "image", "rm", "--force", ref) })
	return ref
}

// TestDashboardShowsPullProgress: while the agent pulls a new image (6 MB
// of random layer, served at 1 MB/s by a proxy in front of the registry),
// the app page shows the pull's progress live, without a reload (the
// download's byte count moving), then the rollout's result.
func TestDashboardShowsPullProgress(t *testing.T) {
	t.Parallel()
	chrome := testenv.ChromiumPath(t)
	testenv.RequireDocker(t)
	start := time.Now()
	reg := registry.Start(t, "deployer", "pw")
	proxy := reg.StartProxy(t)
	app := testenv.UniqueApp(t)
	v1 := testenv.WorkloadImage(t, "v1")
	big := payloadImage(t, v1, "driftless-e2e-"+app+":big", 6<<20)
	pushed, _ := reg.Push(t, big, pushedRepo(app, "web")+":big")
	testenv.DockerQuiet(t, "image", "rm", big, pushed)
	ref := proxy.Host + "/" + pushedRepo(app, "web") + ":big"
	t.Cleanup(func() {
		testenv.RemoveApp(t, app)
		testenv.DockerQuiet(t, "image", "rm", "--force", ref)
	})

	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	path := "apps/" + app
	repo.WriteFile(path+"/web.yaml", testenv.WebManifest(v1, 1, "one"))
	repo.Commit("deploy web")
	b := testenv.StartBrowser(t, chrome)
	env := agentEnv(reg.ConfigDir(t, "deployer", "pw", proxy.Host))
	agent := testenv.StartAgentEnv(t, env, t.TempDir(), "run", "--repo", repo.URL(server), "--branch", "main",
		"--path", path, "--app", app, "--interval", "30s", "--allow-insecure-transport")

	b.Run("open the app page", chromedp.Navigate(agent.URL+"/apps/"+app))
	head := `document.querySelector(".pagehead").innerText`
	msg := `((document.querySelector("p.message") || {}).innerText || "")`
	b.WaitText("the app page to show Synced", head, 60*time.Second, func(s string) bool { return testenv.HasWord(s, "Synced") && testenv.HasWord(s, "Healthy") })

	repo.WriteFile(path+"/web.yaml", testenv.WebManifest(ref, 1, "big"))
	second := repo.Commit("the big image")
	proxy.SlowBlobs(1 << 20)
	if flash := b.PressSyncNow("pull", msg); flash == "" {
		t.Fatalf("no message confirms the sync request")
	}
	shown := b.WaitText("the live status to show the pull", msg, 60*time.Second, func(s string) bool {
		return strings.Contains(s, "pull "+ref+": ") && strings.Contains(s, "Downloading")
	})
	t.Logf("live status during the pull: %q", shown)
	b.Screenshot(filepath.Join(testenv.ArtifactDir(t), "pull-progress.png"))
	b.WaitText("the app page to show the new commit Synced", head+`+" || "+document.querySelector(".kv").innerText`, 90*time.Second, func(s string) bool {
		return testenv.HasWord(s, "Synced") && testenv.HasWord(s, "Healthy") && !strings.Contains(s, "syncing") && strings.Contains(s, second[:7])
	})
	b.RequireSamePage("after-sync-pull")
	states := b.States()
	var pulls []string
	downloading := 0
	for _, s := range states {
		if strings.Contains(s, "pull "+ref) {
			pulls = append(pulls, s)
			if strings.Contains(s, "Downloading") {
				downloading++
			}
		}
	}
	t.Logf("pull lines the page showed live: %q", pulls)
	if downloading < 2 {
		t.Errorf("the page showed %d distinct Downloading lines, want the download's progress to move live; states: %q", downloading, states)
	}
	if n := proxy.Counts()["GET blob"]; n == 0 {
		t.Errorf("no blob was fetched through the proxy: the image was not pulled (%v)", proxy.Counts())
	}
	b.RequireNoPageErrors()
	t.Logf("took %v", time.Since(start).Round(time.Second))
}
