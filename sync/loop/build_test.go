package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/status"
)

// buildingEngine is the fake engine plus builds: an image is built once,
// and a Dockerfile that copies "missing" fails.
type buildingEngine struct {
	*fakeEngine
	images   map[string]bool
	attempts int // builds started
	// during, if set, runs while a build is under way.
	during func()
}

func (e *buildingEngine) EnsureImages(ctx context.Context, app *manifest.App, progress func(drift.BuildEvent)) error {
	for ref, bc := range app.Builds {
		if e.images[ref] {
			continue
		}
		e.attempts++
		progress(drift.BuildEvent{Image: ref, Services: bc.Services, Phase: drift.BuildStart})
		progress(drift.BuildEvent{Image: ref, Services: bc.Services, Phase: drift.BuildLog, Line: "Step 1/2 : FROM scratch"})
		if e.during != nil {
			e.during()
		}
		for _, f := range bc.Files.Files {
			if f.Path == "Dockerfile" && strings.Contains(string(f.Data), "missing") {
				return &drift.BuildError{Image: ref, Services: bc.Services, Step: "Step 2/2 : COPY missing /x",
					Tail: []string{"Step 1/2 : FROM scratch", "Step 2/2 : COPY missing /x"}, Err: errors.New("COPY failed")}
			}
		}
		e.images[ref] = true
	}
	return nil
}

// newBuildHarness is a harness whose engine builds.
func newBuildHarness(t *testing.T) (*harness, *buildingEngine) {
	h := &harness{t: t, dir: t.TempDir(), engine: &fakeEngine{}, sources: map[string]*fakeSource{"shop": newFakeSource()},
		clock: &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, apps: []config.AppConfig{appConfig("shop")}}
	eng := &buildingEngine{fakeEngine: h.engine, images: map[string]bool{}}
	a, err := New(Options{DataDir: h.dir, Apps: h.apps, Engine: eng, Now: h.clock.Now,
		NewSource: func(c config.AppConfig) (Source, error) { return h.sources[c.Name], nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	h.agent = a
	return h, eng
}

// checkBuildRefusal checks that bad was refused for its failing build and
// that nothing was changed.
func checkBuildRefusal(t *testing.T, h *harness, st status.AppStatus, err error, bad, applied string, running []string) {
	t.Helper()
	var stalled *stalledError
	if !errors.As(err, &stalled) {
		t.Fatalf("pass error %v, want stalled (wait for a new commit)", err)
	}
	if st.Refused == nil || st.Refused.Revision.SHA != bad || !strings.Contains(st.Refused.Reason, `failed at "Step 2/2 : COPY missing /x"`) ||
		!slices.Equal(st.Refused.Errors, []string{"build: Step 1/2 : FROM scratch", "build: Step 2/2 : COPY missing /x"}) {
		t.Fatalf("refusal %+v", st.Refused)
	}
	if st.Applied.SHA != applied || !slices.Equal(h.engine.running("shop"), running) {
		t.Fatalf("after the failed build applied %s running %v, want %s untouched", st.Applied.Short(), h.engine.running("shop"), applied[:7])
	}
}

func TestBuildFailureRefusesTheRevisionOnce(t *testing.T) {
	h, eng := newBuildHarness(t)
	src := h.sources["shop"]
	files := map[string]string{
		"compose.yaml":   "services:\n  web:\n    build: ./web\n",
		"web/Dockerfile": "FROM scratch\nCOPY app /app\n",
		"web/app":        "v1",
	}
	with := func(k, v string) map[string]string {
		out := map[string]string{}
		for fk, fv := range files {
			out[fk] = fv
		}
		out[k] = v
		return out
	}

	good := src.commit("web", files)
	var live string
	eng.during = func() { st, _ := h.agent.App("shop"); live = st.Message }
	st, err := h.pass("shop", "startup")
	eng.during = nil
	if !strings.HasPrefix(live, "building driftless/shop-web:tree-") || !strings.HasSuffix(live, " for web: Step 1/2 : FROM scratch") {
		t.Errorf("live status during the build %q, want the image and the step being run", live)
	}
	if err != nil || st.Applied == nil || st.Applied.SHA != good || eng.attempts != 1 {
		t.Fatalf("first commit: err %v, applied %v, builds %d", err, st.Applied, eng.attempts)
	}
	image := st.Services[0].Containers[0].Image
	if !strings.HasPrefix(image, "driftless/shop-web:tree-") {
		t.Fatalf("running image %q, want the built one", image)
	}

	// Outside the context: no build, nothing replaced.
	docs := src.commit("docs", with("README.md", "hello"))
	if st, err = h.pass("shop", "poll"); err != nil || st.Applied.SHA != docs || eng.attempts != 1 {
		t.Fatalf("docs commit: err %v, applied %s, builds %d", err, st.Applied.Short(), eng.attempts)
	}
	running := h.engine.running("shop")

	// A failing build refuses the revision, with the step and the output.
	bad := src.commit("broken", with("web/Dockerfile", "FROM scratch\nCOPY missing /x\n"))
	st, err = h.pass("shop", "poll")
	checkBuildRefusal(t, h, st, err, bad, docs, running)

	// Polling the same head again does not build again.
	h.pass("shop", "poll")
	if eng.attempts != 2 || len(h.history("shop", status.KindRefused)) != 1 {
		t.Fatalf("after a second poll: %d builds, %d refusals; want 2 and 1", eng.attempts, len(h.history("shop", status.KindRefused)))
	}

	// The next commit is tried again.
	fixed := src.commit("fix", with("web/app", "v2"))
	st, err = h.pass("shop", "poll")
	if err != nil || st.Refused != nil || st.Applied.SHA != fixed || eng.attempts != 3 || st.Services[0].Containers[0].Image == image {
		t.Fatalf("after the fix: err %v refused %+v applied %s builds %d", err, st.Refused, st.Applied.Short(), eng.attempts)
	}
}

// Revisions with the same context hold one copy of its files.
func TestRevisionsShareBuildContexts(t *testing.T) {
	src := newFakeSource()
	files := map[string]string{"compose.yaml": "services:\n  web:\n    build: ./web\n", "web/Dockerfile": "FROM scratch\n", "web/app": "v1"}
	a := src.commit("a", files)
	files["README.md"] = "docs"
	b := src.commit("b", files)
	cache := newRevisionCache()
	ctx := context.Background()
	ra, err := cache.loadSHA(ctx, src, appConfig("shop"), a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := cache.loadSHA(ctx, src, appConfig("shop"), b)
	if err != nil {
		t.Fatal(err)
	}
	ref := ra.app.Service("web").Spec.Image
	if rb.app.Service("web").Spec.Image != ref || ra.app.Builds[ref] == nil || ra.app.Builds[ref] != rb.app.Builds[ref] {
		t.Errorf("two revisions with one context hold two copies of it (%p, %p)", ra.app.Builds[ref], rb.app.Builds[ref])
	}
}

// Apply fails, as the engine would, when a built image is missing.
func (e *buildingEngine) Apply(ctx context.Context, desired *manifest.App, plan drift.Plan, opts drift.ApplyOptions) drift.ApplyResult {
	for _, s := range desired.Services {
		if s.Spec.Build != nil && !e.images[s.Spec.Image] {
			return drift.ApplyResult{Err: fmt.Errorf("create %s: no such image %s", s.Name, s.Spec.Image)}
		}
	}
	return e.fakeEngine.Apply(ctx, desired, plan, opts)
}

// An image removed behind driftless's back is built again when the
// enforced revision needs it.
func TestRemovedImageIsBuiltAgain(t *testing.T) {
	h, eng := newBuildHarness(t)
	src := h.sources["shop"]
	good := src.commit("web", map[string]string{"compose.yaml": "services:\n  web:\n    build: ./web\n", "web/Dockerfile": "FROM scratch\n"})
	if _, err := h.pass("shop", "startup"); err != nil || eng.attempts != 1 {
		t.Fatalf("deploy: %v, %d builds", err, eng.attempts)
	}
	eng.images = map[string]bool{}
	h.engine.rm("shop-web-1")
	h.pass("shop", "docker-event") // the create fails: the image is gone
	st, err := h.pass("shop", "docker-event")
	if err != nil || eng.attempts != 2 || !slices.Equal(h.engine.running("shop"), []string{"shop-web-1@" + good[:7]}) {
		t.Fatalf("after the image was removed: err %v, %d builds, running %v, message %q", err, eng.attempts, h.engine.running("shop"), st.Message)
	}
}
