package web

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestFaceInBrowser: in headless Chromium, a sync's entry page shows the
// coloured diff next to the plan and links the commit; a container's logs
// page follows a new line live (no reload) and says when the container
// stopped. Screenshots go to e2e/artifacts.
func TestFaceInBrowser(t *testing.T) {
	t.Parallel()
	chrome := testenv.ChromiumPath(t)
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "face")
	repo.WriteFile("deploy/web.yaml", faceManifest(image, "browser-secret-one", true))
	c1 := repo.Commit("first")
	agent := startFaceAgent(t, app, repo, server)
	waitApplied(t, agent, app, c1)
	repo.WriteFile("deploy/web.yaml", strings.Replace(faceManifest(image, "browser-secret-two", true), "LOG_LEVEL: info", "LOG_LEVEL: debug", 1))
	c2 := repo.Commit("debug logging")
	st := waitApplied(t, agent, app, c2)
	ctr := st.Services[0].Containers[0].Name
	artifacts := testenv.ArtifactDir(t)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	page, err := agent.Client().History(ctx, app, []string{"sync"}, 0, 1)
	if err != nil || len(page.Entries) == 0 {
		t.Fatalf("history: %v %+v", err, page)
	}

	b := testenv.StartBrowser(t, chrome)
	b.Run("open the entry", chromedp.Navigate(fmt.Sprintf("%s/history/%d", agent.URL, page.Entries[0].ID)))
	added := b.WaitText("the diff's added line", `Array.from(document.querySelectorAll("pre.diff .d-add")).map(e => e.textContent + " [" + getComputedStyle(e).color + "]").join("\n")`,
		10*time.Second, func(s string) bool { return strings.Contains(s, "+    LOG_LEVEL: debug") })
	t.Logf("added lines with their colour:\n%s", added)
	if strings.Contains(b.Text(`document.body.innerText`), "browser-secret") {
		t.Error("the entry page shows a secretEnv value")
	}
	href := b.Text(`(document.querySelector("a.sha.commit") || {}).href || ""`)
	if href != "https://git.example.test/acme/shop/commit/"+c2 {
		t.Errorf("commit link = %q", href)
	}
	b.Screenshot(filepath.Join(artifacts, "face-entry-diff.png"))

	b.Run("open the logs", chromedp.Navigate(agent.URL+"/apps/"+app+"/logs/"+ctr))
	b.WaitText("the logs page to follow", `document.getElementById("logstate").textContent`, 10*time.Second,
		func(s string) bool { return s == "following" })
	b.WaitText("the start line", `document.getElementById("logs").textContent`, 10*time.Second,
		func(s string) bool {
			return strings.Contains(s, "workload serving") && !strings.Contains(s, "browser-secret")
		})
	b.MarkPage("logs")
	testenv.Docker(t, "kill", "--signal", "TERM", ctr)
	b.WaitText("the new line, live", `document.getElementById("logs").textContent`, 30*time.Second,
		func(s string) bool { return strings.Contains(s, "stopping on signal") })
	b.WaitText("the end of the stream", `document.getElementById("logstate").textContent`, 30*time.Second,
		func(s string) bool { return s == "the container stopped" })
	b.RequireSamePage("logs")
	b.Screenshot(filepath.Join(artifacts, "face-logs.png"))
	b.RequireNoPageErrors()
}
