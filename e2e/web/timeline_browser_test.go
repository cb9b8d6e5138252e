package web

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestTimelineInBrowser: in headless Chromium, the app page's timeline
// gains marks live (no reload) for a sync, a drift repair and a refusal,
// its web line drops to 1 after a scale-down, and a click on the refusal's
// mark opens that history entry. The overview draws one compact timeline
// per app. Screenshots go to e2e/artifacts.
func TestTimelineInBrowser(t *testing.T) {
	t.Parallel()
	chrome := testenv.ChromiumPath(t)
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "timeline")
	repo.WriteFile("deploy/web.yaml", testenv.WebManifest(image, 3, "one"))
	first := repo.Commit("three replicas")
	agent := startFaceAgent(t, app, repo, server)
	testenv.WaitReady(t, agent, app, first, 3)
	artifacts := testenv.ArtifactDir(t)

	b := testenv.StartBrowser(t, chrome)
	b.Run("open the app page", chromedp.Navigate(agent.URL+"/apps/"+app+"?range=1h"))
	b.MarkPage("timeline")
	kinds := `Array.from(document.querySelectorAll("#timeline-` + app + ` a.mark")).map(a => a.dataset.kind).join(" ")`
	b.WaitText("the first sync's mark", kinds, 10*time.Second, func(s string) bool { return strings.Contains(s, "applied") })

	// Drift: a replica removed by hand is recreated; a repair mark appears.
	testenv.Docker(t, "rm", "-f", app+"-web-2")
	b.WaitText("a repair mark, live", kinds, 60*time.Second, func(s string) bool { return strings.Contains(s, "repair") })

	// A bad commit is refused.
	repo.WriteFile("deploy/web.yaml", strings.Replace(testenv.WebManifest(image, 3, "one"), "replicas: 3", "replicas: -3", 1))
	refused := repo.Commit("negative replicas")
	b.WaitText("a refused mark, live", kinds, 60*time.Second, func(s string) bool { return strings.Contains(s, "refused") })

	// A scale-down: the web line ends at 1.
	repo.WriteFile("deploy/web.yaml", testenv.WebManifest(image, 1, "one"))
	scaled := repo.Commit("one replica")
	testenv.WaitReady(t, agent, app, scaled, 1)
	lineEnd := `(() => {
		const lane = document.querySelector('#timeline-` + app + ` g.lane[data-service="web"]');
		if (!lane) return "no lane";
		const peak = +lane.dataset.peak, top = +lane.dataset.top, bottom = +lane.dataset.bottom;
		const lines = lane.querySelectorAll("polyline.ready");
		if (!lines.length) return "no line";
		const pts = lines[lines.length-1].getAttribute("points").trim().split(/\s+/).map(p => p.split(",").map(Number));
		const count = y => Math.round((bottom - y) / (bottom - top) * peak);
		return "peak " + peak + " steps " + pts.map(p => count(p[1])).join(",") + " title " + lane.querySelector("title").textContent;
	})()`
	// The ready line was at 3 and ends at 1 (the steps are the counts at
	// the polyline's points, oldest first).
	line := b.WaitText("the web line to go from 3 to 1 replica", lineEnd, 60*time.Second, func(s string) bool {
		_, steps, _ := strings.Cut(s, " steps ")
		steps, _, _ = strings.Cut(steps, " ")
		return strings.Contains(s, "web: 1/1 ready now") && strings.HasPrefix(s, "peak 3 ") &&
			strings.Contains(","+steps, ",3,") && strings.HasSuffix(steps, ",1")
	})
	t.Logf("web line: %s", line)
	final := b.WaitText("marks of both syncs", kinds, 60*time.Second, func(s string) bool { return strings.Count(s, "applied") >= 2 })
	t.Logf("marks, oldest first: %s", final)
	b.RequireSamePage("timeline")
	b.Screenshot(filepath.Join(artifacts, "timeline-app.png"))

	// Hover text and click: the refused mark opens its entry.
	title := b.Text(`document.querySelector("#timeline-` + app + ` a.mark.m-refused title").textContent`)
	if !strings.Contains(title, "refused "+refused[:7]) || !strings.Contains(title, "must be >= 0") {
		t.Errorf("refused mark's title = %q", title)
	}
	id := b.Text(`document.querySelector("#timeline-` + app + ` a.mark.m-refused").dataset.id`)
	b.Run("click the refused mark", chromedp.Click(chromedp.CSS(`#timeline-`+app+` a.mark.m-refused`)))
	b.WaitText("the refused entry's page", `location.pathname + " " + document.querySelector("main").innerText`, 10*time.Second,
		func(s string) bool { return strings.HasPrefix(s, "/history/"+id+" ") && strings.Contains(s, "refused") })

	// The overview: a compact timeline per app, and the legend.
	b.Run("open the overview", chromedp.Navigate(agent.URL+"/?range=1h"))
	compact := b.Text(fmt.Sprintf(`(() => { const el = document.getElementById("timeline-%s");
		return el ? el.querySelectorAll("a.mark").length + " marks, " + el.querySelector("g.lane title").textContent : "none"; })()`, app))
	if !strings.Contains(compact, "all services: 1/1 ready now") || strings.HasPrefix(compact, "0 ") || compact == "none" {
		t.Errorf("overview timeline: %s", compact)
	}
	if n := b.Text(`String(document.querySelectorAll(".legendrow .legend-item").length)`); n != "6" {
		// applied, revert, refused, repair, failed, quarantined
		t.Errorf("overview legend has %s items, want 6", n)
	}
	b.Screenshot(filepath.Join(artifacts, "timeline-overview.png"))
	b.RequireNoPageErrors()
	if os.Getenv("DRIFTLESS_DOCS_IMG") != "" {
		// Refresh the screenshots the docs show.
		for _, f := range []string{"timeline-app.png", "timeline-overview.png"} {
			data, err := os.ReadFile(filepath.Join(artifacts, f))
			if err == nil {
				err = os.WriteFile(filepath.Join(testenv.RepoRoot(t), "docs", "img", f), data, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}
