package web

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestDashboardInBrowser drives the dashboard in a real headless Chromium
// against the real binary, Docker and a git daemon: the overview and app
// pages follow the agent live (server-sent events, no reload), "Sync now"
// makes the agent pick up a commit long before its 30s poll, and history
// shows a git revert as one, with the applied plan on the entry's page.
func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	chrome := testenv.ChromiumPath(t)
	v1 := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)

	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	path := "apps/" + app
	repo.WriteFile(path+"/web.yaml", testenv.WebManifest(v1, 2, "one"))
	repo.Commit("deploy web")

	b := testenv.StartBrowser(t, chrome)
	// A long poll interval on purpose: only "Sync now" can make the agent
	// see the next commits within this test's deadlines.
	agent := testenv.StartAgent(t, t.TempDir(), "run", "--repo", repo.URL(server), "--branch", "main",
		"--path", path, "--app", app, "--interval", "30s", "--allow-insecure-transport")
	artifacts := testenv.ArtifactDir(t)

	// 1. The overview lists the app and turns Synced by itself once the
	// first deployment is done.
	b.Run("open the overview", chromedp.Navigate(agent.URL+"/"))
	b.MarkPage("overview")
	rowText := fmt.Sprintf(`(() => { const a = document.querySelector('a.app[href="/apps/%s"]');
		return a ? a.closest("tr").innerText : "(app not listed)"; })()`, app)
	first := b.Text(rowText)
	if strings.Contains(first, "(app not listed)") {
		t.Fatalf("overview does not list %s; page text:\n%s", app, b.Text(`document.body.innerText`))
	}
	b.WaitText("the overview to show the app Synced with 2/2 ready", rowText, 60*time.Second, func(s string) bool {
		return testenv.HasWord(s, "Synced") && testenv.HasWord(s, "Healthy") && strings.Contains(s, "2/2")
	})
	t.Logf("overview row when first loaded: %q", first)
	b.WaitText("the live indicator to say live", `document.getElementById("live").textContent`, 10*time.Second,
		func(s string) bool { return s == "live" })
	b.RequireSamePage("overview")
	b.Screenshot(filepath.Join(artifacts, "overview.png"))

	// 2. A commit scales web to 3; "Sync now" makes the agent roll it out,
	// and the app page follows without a reload.
	b.Run("open the app page", chromedp.Navigate(agent.URL+"/apps/"+app))
	head := `document.querySelector(".pagehead").innerText`
	svc := `Array.from(document.querySelectorAll(".svchead")).map(e => e.innerText).join(" | ")`
	b.WaitText("the app page to show Synced", head, 10*time.Second, func(s string) bool { return testenv.HasWord(s, "Synced") })
	repo.WriteFile(path+"/web.yaml", testenv.WebManifest(v1, 3, "one"))
	scaled := repo.Commit("scale web to 3")

	if flash := b.PressSyncNow("scale", head, svc); flash == "" {
		t.Fatalf("no message confirms the sync request after pressing Sync now")
	} else {
		t.Logf("flash after Sync now: %q", flash)
	}
	b.WaitText("the app page to show Synced with 3/3 ready", head+`+" || "+`+svc, 60*time.Second, func(s string) bool {
		return testenv.HasWord(s, "Synced") && testenv.HasWord(s, "Healthy") && !strings.Contains(s, "syncing") && strings.Contains(s, "3/3 ready")
	})
	b.RequireSamePage("after-sync-scale")
	states := b.States()
	t.Logf("app page states seen after Sync now: %q", states)
	if len(states) < 2 {
		t.Fatalf("the app page never updated live after Sync now; states seen: %q", states)
	}
	// The agent publishes a pass's outcome when the pass ends; while it
	// rolls out, the page says so with "syncing…" (and would show
	// OutOfSync/Progressing if the agent reported them mid-pass).
	sawProgress := false
	for _, s := range states[:len(states)-1] {
		if testenv.HasWord(s, "OutOfSync") || testenv.HasWord(s, "Progressing") || strings.Contains(s, "syncing") {
			sawProgress = true
		}
	}
	if !sawProgress {
		t.Fatalf("the app page went to 3/3 without showing OutOfSync, Progressing or syncing… first; states seen: %q", states)
	}
	if running := b.Text(`document.querySelector(".kv").innerText`); !strings.Contains(running, scaled[:7]) {
		t.Fatalf("app page source card does not name the running commit %s:\n%s", scaled[:7], running)
	}
	b.Screenshot(filepath.Join(artifacts, "app.png"))

	// 3. git revert, Sync now again: history marks the entry as a revert of
	// the scaling commit.
	reverted := repo.Revert(scaled)
	if flash := b.PressSyncNow("revert"); flash == "" {
		t.Fatalf("no message confirms the second sync request")
	}
	b.WaitText("the app page to show the revert running with 2/2 ready", head+`+" || "+`+svc+`+" || "+document.querySelector(".kv").innerText`,
		60*time.Second, func(s string) bool {
			return testenv.HasWord(s, "Synced") && !strings.Contains(s, "syncing") && strings.Contains(s, "2/2 ready") && strings.Contains(s, reverted[:7])
		})
	b.RequireSamePage("after-sync-revert")

	b.Run("open the history page", chromedp.Navigate(agent.URL+"/apps/"+app+"/history"))
	revertRow := fmt.Sprintf(`(() => { const r = Array.from(document.querySelectorAll("tr.k-sync"))
		.find(tr => tr.innerText.includes(%q)); return r ? r.innerText : ""; })()`, reverted[:7])
	row := b.Text(revertRow)
	if !strings.Contains(row, "revert of "+scaled[:7]) || !strings.Contains(row, "synced revert") {
		t.Fatalf("history has no sync entry for %s marked as a revert of %s; row: %q\npage:\n%s",
			reverted[:7], scaled[:7], row, b.Text(`document.querySelector("main").innerText`))
	}
	b.Screenshot(filepath.Join(artifacts, "history.png"))

	// 4. The entry's page shows the plan that was applied.
	link := fmt.Sprintf(`//tr[contains(@class,"k-sync")][.//code[@title=%q]]//a[starts-with(@href,"/history/")]`, reverted)
	b.Run("open the revert's history entry", chromedp.Click(link))
	plan := `(() => { const h = Array.from(document.querySelectorAll("section.card h3")).find(h => h.textContent === "Applied plan");
		return h ? h.parentElement.innerText : ""; })()`
	planText := b.WaitText("the entry page to show the applied plan", plan, 10*time.Second, func(s string) bool {
		return strings.Contains(s, app+"-web-3")
	})
	t.Logf("applied plan of the revert:\n%s", planText)
	b.Screenshot(filepath.Join(artifacts, "entry.png"))
	b.RequireNoPageErrors()
}
