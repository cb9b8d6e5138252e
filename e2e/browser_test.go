package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
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
	chrome := chromiumPath(t)
	v1 := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)

	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	path := "apps/" + app
	repo.WriteFile(path+"/web.yaml", webManifest(v1, 2, "one"))
	repo.Commit("deploy web")

	b := startBrowser(t, chrome)
	// A long poll interval on purpose: only "Sync now" can make the agent
	// see the next commits within this test's deadlines.
	agent := testenv.StartAgent(t, t.TempDir(), "run", "--repo", repo.URL(server), "--branch", "main",
		"--path", path, "--app", app, "--interval", "30s", "--allow-insecure-transport")
	artifacts := artifactDir(t)

	// 1. The overview lists the app and turns Synced by itself once the
	// first deployment is done.
	b.run("open the overview", chromedp.Navigate(agent.URL+"/"))
	b.markPage("overview")
	rowText := fmt.Sprintf(`(() => { const a = document.querySelector('a.app[href="/apps/%s"]');
		return a ? a.closest("tr").innerText : "(app not listed)"; })()`, app)
	first := b.text(rowText)
	if strings.Contains(first, "(app not listed)") {
		t.Fatalf("overview does not list %s; page text:\n%s", app, b.text(`document.body.innerText`))
	}
	b.waitText("the overview to show the app Synced with 2/2 ready", rowText, 60*time.Second, func(s string) bool {
		return hasWord(s, "Synced") && hasWord(s, "Healthy") && strings.Contains(s, "2/2")
	})
	t.Logf("overview row when first loaded: %q", first)
	b.waitText("the live indicator to say live", `document.getElementById("live").textContent`, 10*time.Second,
		func(s string) bool { return s == "live" })
	b.requireSamePage("overview")
	b.screenshot(filepath.Join(artifacts, "overview.png"))

	// 2. A commit scales web to 3; "Sync now" makes the agent roll it out,
	// and the app page follows without a reload.
	b.run("open the app page", chromedp.Navigate(agent.URL+"/apps/"+app))
	head := `document.querySelector(".pagehead").innerText`
	svc := `Array.from(document.querySelectorAll(".svchead")).map(e => e.innerText).join(" | ")`
	b.waitText("the app page to show Synced", head, 10*time.Second, func(s string) bool { return hasWord(s, "Synced") })
	repo.WriteFile(path+"/web.yaml", webManifest(v1, 3, "one"))
	scaled := repo.Commit("scale web to 3")

	if flash := b.pressSyncNow("scale", head, svc); flash == "" {
		t.Fatalf("no message confirms the sync request after pressing Sync now")
	} else {
		t.Logf("flash after Sync now: %q", flash)
	}
	b.waitText("the app page to show Synced with 3/3 ready", head+`+" || "+`+svc, 60*time.Second, func(s string) bool {
		return hasWord(s, "Synced") && hasWord(s, "Healthy") && !strings.Contains(s, "syncing") && strings.Contains(s, "3/3 ready")
	})
	b.requireSamePage("after-sync-scale")
	states := b.states()
	t.Logf("app page states seen after Sync now: %q", states)
	if len(states) < 2 {
		t.Fatalf("the app page never updated live after Sync now; states seen: %q", states)
	}
	// The agent publishes a pass's outcome when the pass ends; while it
	// rolls out, the page says so with "syncing…" (and would show
	// OutOfSync/Progressing if the agent reported them mid-pass).
	sawProgress := false
	for _, s := range states[:len(states)-1] {
		if hasWord(s, "OutOfSync") || hasWord(s, "Progressing") || strings.Contains(s, "syncing") {
			sawProgress = true
		}
	}
	if !sawProgress {
		t.Fatalf("the app page went to 3/3 without showing OutOfSync, Progressing or syncing… first; states seen: %q", states)
	}
	if running := b.text(`document.querySelector(".kv").innerText`); !strings.Contains(running, scaled[:7]) {
		t.Fatalf("app page source card does not name the running commit %s:\n%s", scaled[:7], running)
	}
	b.screenshot(filepath.Join(artifacts, "app.png"))

	// 3. git revert, Sync now again: history marks the entry as a revert of
	// the scaling commit.
	reverted := repo.Revert(scaled)
	if flash := b.pressSyncNow("revert"); flash == "" {
		t.Fatalf("no message confirms the second sync request")
	}
	b.waitText("the app page to show the revert running with 2/2 ready", head+`+" || "+`+svc+`+" || "+document.querySelector(".kv").innerText`,
		60*time.Second, func(s string) bool {
			return hasWord(s, "Synced") && !strings.Contains(s, "syncing") && strings.Contains(s, "2/2 ready") && strings.Contains(s, reverted[:7])
		})
	b.requireSamePage("after-sync-revert")

	b.run("open the history page", chromedp.Navigate(agent.URL+"/apps/"+app+"/history"))
	revertRow := fmt.Sprintf(`(() => { const r = Array.from(document.querySelectorAll("tr.k-sync"))
		.find(tr => tr.innerText.includes(%q)); return r ? r.innerText : ""; })()`, reverted[:7])
	row := b.text(revertRow)
	if !strings.Contains(row, "revert of "+scaled[:7]) || !strings.Contains(row, "synced revert") {
		t.Fatalf("history has no sync entry for %s marked as a revert of %s; row: %q\npage:\n%s",
			reverted[:7], scaled[:7], row, b.text(`document.querySelector("main").innerText`))
	}
	b.screenshot(filepath.Join(artifacts, "history.png"))

	// 4. The entry's page shows the plan that was applied.
	link := fmt.Sprintf(`//tr[contains(@class,"k-sync")][.//code[@title=%q]]//a[starts-with(@href,"/history/")]`, reverted)
	b.run("open the revert's history entry", chromedp.Click(link))
	plan := `(() => { const h = Array.from(document.querySelectorAll("section.card h3")).find(h => h.textContent === "Applied plan");
		return h ? h.parentElement.innerText : ""; })()`
	planText := b.waitText("the entry page to show the applied plan", plan, 10*time.Second, func(s string) bool {
		return strings.Contains(s, app+"-web-3")
	})
	t.Logf("applied plan of the revert:\n%s", planText)
	b.screenshot(filepath.Join(artifacts, "entry.png"))
	b.requireNoPageErrors()
}

// chromiumPath finds Debian's chromium. Without it the test is skipped
// locally but fails on CI, where it must run.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "/usr/bin/chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "the browser test needs Chromium: install it with `apt-get install chromium`"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// artifactDir is e2e/artifacts (gitignored), where screenshots are kept
// for people and CI to look at.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(testenv.RepoRoot(t), "e2e", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func hasWord(s, word string) bool {
	return strings.Contains(" "+strings.Join(strings.Fields(s), " ")+" ", " "+word+" ")
}

// browser is one headless Chromium tab plus the JavaScript errors it saw.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string
}

func startBrowser(t *testing.T, chrome string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.NoSandbox, // the tests run as root
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// No timeout on this context: the browser lives as long as the first
	// context it ran with. Each step gets its own deadline instead.
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })

	b := &browser{t: t, ctx: ctx}
	// Listen starts the browser and opens the tab.
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			text := d.Text
			if d.Exception != nil {
				text += " " + d.Exception.Description
			}
			b.problems = append(b.problems, fmt.Sprintf("exception: %s (%s:%d)", text, d.URL, d.LineNumber+1))
		case *log.EventEntryAdded:
			// CSP violations and failed loads of the page's own resources.
			if ev.Entry.Level == log.EntryLevelError {
				b.problems = append(b.problems, fmt.Sprintf("%s: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// text evaluates a JavaScript expression that yields a string.
func (b *browser) text(expr string) string {
	b.t.Helper()
	s, err := evaluate[string](b.ctx, expr)
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return s
}

// waitText polls expr until ok accepts its value. Evaluation errors (a
// navigation in flight) count as not yet.
func (b *browser) waitText(what, expr string, timeout time.Duration, ok func(string) bool) string {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	var lastErr error
	for {
		var s string
		s, lastErr = evaluate[string](b.ctx, expr)
		if lastErr == nil {
			last = s
			if ok(s) {
				return s
			}
		}
		if time.Now().After(deadline) || b.ctx.Err() != nil {
			b.t.Fatalf("timed out after %s waiting for %s; last: %q (err %v)", timeout, what, last, lastErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// markPage tags the current document: the tag lives exactly as long as
// the page is not reloaded or left.
func (b *browser) markPage(tag string) {
	b.t.Helper()
	b.run("mark the page", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.__driftlessPage = %q`, tag)))
}

func (b *browser) requireSamePage(tag string) {
	b.t.Helper()
	got := b.text(`String(window.__driftlessPage)`)
	if got != tag {
		b.t.Fatalf("the page was reloaded or left (marker %q, want %q): live updates must not reload", got, tag)
	}
}

// pressSyncNow clicks the app page's "Sync now" button (a form POST that
// redirects back to the app page). As soon as the new page is parsed — before
// a live update can replace its content — it marks the page with tag,
// starts recording the values of exprs (see states) and returns the
// one-shot flash message the redirect carried.
func (b *browser) pressSyncNow(tag string, exprs ...string) string {
	b.t.Helper()
	b.markPage("before-sync-" + tag)
	b.run("press Sync now", chromedp.Click(`//form[contains(@action,"/sync")]//button[normalize-space()="Sync now"]`))
	snap := `""`
	if len(exprs) > 0 {
		snap = strings.Join(exprs, `+" || "+`)
	}
	js := fmt.Sprintf(`(() => {
		if (window.__driftlessPage !== undefined || document.readyState === "loading") return "";
		window.__driftlessPage = %q;
		const snap = () => %s;
		window.__driftlessStates = [snap()];
		new MutationObserver(() => {
			const s = snap(), seen = window.__driftlessStates;
			if (seen[seen.length-1] !== s) seen.push(s);
		}).observe(document.body, {childList: true, subtree: true, characterData: true});
		const flash = document.querySelector(".flash");
		return "flash:" + (flash ? flash.innerText : "");
	})()`, "after-sync-"+tag, snap)
	got := b.waitText("the app page after Sync now", js, 10*time.Second, func(s string) bool { return s != "" })
	return strings.TrimPrefix(got, "flash:")
}

// states is every distinct value of the expressions given to pressSyncNow
// that the page has shown since, oldest first.
func (b *browser) states() []string {
	b.t.Helper()
	s, err := evaluate[[]string](b.ctx, `window.__driftlessStates || []`)
	if err != nil {
		b.t.Fatalf("read states: %v", err)
	}
	return s
}

func (b *browser) screenshot(file string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", file, err)
	}
	if err := os.WriteFile(file, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", file)
}

func (b *browser) requireNoPageErrors() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) > 0 {
		b.t.Fatalf("the browser reported errors:\n%s", strings.Join(b.problems, "\n"))
	}
}

func evaluate[T any](ctx context.Context, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}
