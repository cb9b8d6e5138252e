package testenv

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
)

// ChromiumPath finds Debian's chromium. Without it the test is skipped
// locally but fails on CI, where it must run.
func ChromiumPath(t *testing.T) string {
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

// ArtifactDir is e2e/artifacts (gitignored), where screenshots are kept
// for people and CI to look at.
func ArtifactDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "e2e", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// HasWord reports whether word appears in s as a whole word, whitespace
// normalised.
func HasWord(s, word string) bool {
	return strings.Contains(" "+strings.Join(strings.Fields(s), " ")+" ", " "+word+" ")
}

// Browser is one headless Chromium tab plus the JavaScript errors it saw.
type Browser struct {
	T   *testing.T
	Ctx context.Context

	Mu       sync.Mutex
	Problems []string
}

// StartBrowser starts headless Chromium (the binary at chrome) with one
// tab that records the page's JavaScript errors; it ends with the test.
func StartBrowser(t *testing.T, chrome string) *Browser {
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

	b := &Browser{T: t, Ctx: ctx}
	// Listen starts the browser and opens the tab.
	err := chromedp.Listen(ctx, func(ev any) {
		b.Mu.Lock()
		defer b.Mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			text := d.Text
			if d.Exception != nil {
				text += " " + d.Exception.Description
			}
			b.Problems = append(b.Problems, fmt.Sprintf("exception: %s (%s:%d)", text, d.URL, d.LineNumber+1))
		case *log.EventEntryAdded:
			// CSP violations and failed loads of the page's own resources.
			// Not ERR_NETWORK_CHANGED: Chromium cancels loads in flight
			// whenever the host's interfaces change, and the tests beside
			// this one create bridges and veth pairs all the time. That is
			// the machine, not the page (a real failure to load still
			// shows as the page not updating).
			if ev.Entry.Level == log.EntryLevelError && !strings.Contains(ev.Entry.Text, "net::ERR_NETWORK_CHANGED") {
				b.Problems = append(b.Problems, fmt.Sprintf("%s: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

// Run runs actions in the tab within 30 s and fails the test, naming
// what, if they fail.
func (b *Browser) Run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.T.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.T.Fatalf("%s: %v", what, err)
	}
}

// Text evaluates a JavaScript expression that yields a string.
func (b *Browser) Text(expr string) string {
	b.T.Helper()
	s, err := Evaluate[string](b.Ctx, expr)
	if err != nil {
		b.T.Fatalf("evaluate %s: %v", expr, err)
	}
	return s
}

// WaitText polls expr until ok accepts its value. Evaluation errors (a
// navigation in flight) count as not yet.
func (b *Browser) WaitText(what, expr string, timeout time.Duration, ok func(string) bool) string {
	b.T.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	var lastErr error
	for {
		var s string
		s, lastErr = Evaluate[string](b.Ctx, expr)
		if lastErr == nil {
			last = s
			if ok(s) {
				return s
			}
		}
		if time.Now().After(deadline) || b.Ctx.Err() != nil {
			b.T.Fatalf("timed out after %s waiting for %s; last: %q (err %v)", timeout, what, last, lastErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// MarkPage tags the current document: the tag lives exactly as long as
// the page is not reloaded or left.
func (b *Browser) MarkPage(tag string) {
	b.T.Helper()
	b.Run("mark the page", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.__driftlessPage = %q`, tag)))
}

// RequireSamePage fails the test unless the page still carries the
// marker tag: live updates must not reload it.
func (b *Browser) RequireSamePage(tag string) {
	b.T.Helper()
	got := b.Text(`String(window.__driftlessPage)`)
	if got != tag {
		b.T.Fatalf("the page was reloaded or left (marker %q, want %q): live updates must not reload", got, tag)
	}
}

// PressSyncNow clicks the app page's "Sync now" button (a form POST that
// redirects back to the app page). As soon as the new page is parsed — before
// a live update can replace its content — it marks the page with tag,
// starts recording the values of exprs (see states) and returns the
// one-shot flash message the redirect carried.
func (b *Browser) PressSyncNow(tag string, exprs ...string) string {
	b.T.Helper()
	b.MarkPage("before-sync-" + tag)
	b.Run("press Sync now", chromedp.Click(`//form[contains(@action,"/sync")]//button[normalize-space()="Sync now"]`))
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
	got := b.WaitText("the app page after Sync now", js, 10*time.Second, func(s string) bool { return s != "" })
	return strings.TrimPrefix(got, "flash:")
}

// States is every distinct value of the expressions given to pressSyncNow
// that the page has shown since, oldest first.
func (b *Browser) States() []string {
	b.T.Helper()
	s, err := Evaluate[[]string](b.Ctx, `window.__driftlessStates || []`)
	if err != nil {
		b.T.Fatalf("read states: %v", err)
	}
	return s
}

// Screenshot writes a full-page PNG of the tab to file.
func (b *Browser) Screenshot(file string) {
	b.T.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.T.Fatalf("screenshot %s: %v", file, err)
	}
	if err := os.WriteFile(file, png, 0o644); err != nil {
		b.T.Fatal(err)
	}
	b.T.Logf("screenshot: %s", file)
}

// RequireNoPageErrors fails the test if the page reported JavaScript
// errors.
func (b *Browser) RequireNoPageErrors() {
	b.T.Helper()
	b.Mu.Lock()
	defer b.Mu.Unlock()
	if len(b.Problems) > 0 {
		b.T.Fatalf("the browser reported errors:\n%s", strings.Join(b.Problems, "\n"))
	}
}

// Evaluate evaluates the JavaScript expr in the tab of ctx within 10 s.
func Evaluate[T any](ctx context.Context, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}
