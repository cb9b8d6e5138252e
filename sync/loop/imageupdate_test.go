package loop

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/status"
)

func followedApp() *manifest.App {
	spec := manifest.ServiceSpec{Image: "reg:5000/shop/web:stable", Replicas: 2}
	other := manifest.ServiceSpec{Image: "reg:5000/shop/db:1", Replicas: 1}
	return &manifest.App{Name: "shop", Services: []manifest.Service{
		{Name: "db", Spec: other, Hash: manifest.HashService(nil, nil, other)},
		{Name: "web", Spec: spec, Hash: manifest.HashService(nil, nil, spec), ImageUpdate: &manifest.ImageUpdate{Interval: "1h"}},
	}}
}

func TestPinTagsPinsOnlyFollowedResolvedTags(t *testing.T) {
	app := followedApp()
	if got := pinTags(app, map[string]*followedTag{"web": {image: "reg:5000/shop/web:stable"}}); got != app {
		t.Error("an unresolved tag must leave the app as it is")
	}
	tags := map[string]*followedTag{
		"web": {image: "reg:5000/shop/web:stable", digest: "sha256:aaa"},
		"db":  {image: "reg:5000/shop/db:1", digest: "sha256:bbb"}, // not followed by the manifest
	}
	got := pinTags(app, tags)
	web, db := got.Service("web"), got.Service("db")
	if web.Spec.Image != "reg:5000/shop/web:stable@sha256:aaa" || web.Hash != manifest.HashService(nil, nil, web.Spec) {
		t.Errorf("web pinned to %q with hash %s", web.Spec.Image, web.Hash)
	}
	if web.Hash == app.Service("web").Hash {
		t.Error("pinning must change the hash, so the planner sees a moved tag as a change")
	}
	if db.Spec.Image != "reg:5000/shop/db:1" {
		t.Errorf("db is not followed, got %q", db.Spec.Image)
	}
	if app.Service("web").Spec.Image != "reg:5000/shop/web:stable" {
		t.Error("pinTags changed the cached revision's app")
	}
	// A commit that follows another tag is not pinned to the old digest.
	tags["web"].image = "reg:5000/shop/web:beta"
	if got := pinTags(app, tags); got.Service("web").Spec.Image != "reg:5000/shop/web:stable" {
		t.Errorf("pinned a digest of another tag: %q", got.Service("web").Spec.Image)
	}
}

func TestRunningDigestSeedsFromPinnedReplicas(t *testing.T) {
	pinned := manifest.ServiceSpec{Image: "reg:5000/shop/web:stable@sha256:ccc"}
	plain := manifest.ServiceSpec{Image: "reg:5000/shop/web:stable"}
	actual := drift.Actual{Containers: []drift.Container{
		{Service: "web", Spec: &plain},
		{Service: "web", Spec: &pinned},
	}}
	if got := runningDigest(actual, "web", "reg:5000/shop/web:stable"); got != "sha256:ccc" {
		t.Errorf("got %q", got)
	}
	if got := runningDigest(actual, "web", "reg:5000/shop/web:beta"); got != "" {
		t.Errorf("another tag: got %q", got)
	}
}

func TestTagMoveHistory(t *testing.T) {
	es := tagHistory("shop", []tagMove{{service: "web", image: "shop/web:stable", from: "sha256:aaa", to: "sha256:bbb"}}, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	if len(es) != 1 || es[0].Kind != status.KindImage || es[0].Summary != "web: image shop/web:stable moved from sha256:aaa to sha256:bbb" {
		t.Errorf("got %+v", es)
	}
}

// resolvingEngine is the fake engine with a registry behind it: the tag's
// digest is whatever the test set last.
type resolvingEngine struct {
	*fakeEngine
	digest string
	calls  int
}

func (e *resolvingEngine) ResolveDigest(ctx context.Context, app, image string) (string, error) {
	e.calls++
	return e.digest, nil
}

func (e *resolvingEngine) images(app string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, c := range e.containers {
		if c.App == app {
			out = append(out, c.Name+"="+c.Image)
		}
	}
	slices.Sort(out)
	return out
}

// A followed tag: pinned at the first pass, checked once per interval,
// rolled out with a history entry when it moves, and a digest whose
// rollout fails leaves the old replica serving and the service Degraded.
func TestImageUpdateFollowsTag(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	eng := &resolvingEngine{fakeEngine: h.engine, digest: "sha256:aaa"}
	h.agent.Close()
	a, err := New(Options{DataDir: h.dir, Apps: h.apps, Engine: eng, Tags: eng, Now: h.clock.Now,
		NewSource: func(c config.AppConfig) (Source, error) { return h.sources[c.Name], nil }})
	if err != nil {
		t.Fatal(err)
	}
	h.agent = a
	t.Cleanup(func() { a.Close() })

	h.sources["shop"].commit("follow stable", map[string]string{"web.yaml": service("web", "demo:stable", 1) + "  imageUpdate: {interval: 1h}\n"})
	if _, err := h.pass("shop", "startup"); err != nil {
		t.Fatal(err)
	}
	if got := eng.images("shop"); !slices.Equal(got, []string{"shop-web-1=demo:stable@sha256:aaa"}) {
		t.Fatalf("after the first pass: %v", got)
	}
	if st, _ := h.agent.App("shop"); st.Services[0].Image != "demo:stable@sha256:aaa" {
		t.Errorf("status shows the image %q, want the pinned tag", st.Services[0].Image)
	}
	if h.lastResult.ImageCheckAfter != time.Hour {
		t.Errorf("next check in %v, want 1h", h.lastResult.ImageCheckAfter)
	}

	eng.digest = "sha256:bbb"
	h.clock.Advance(time.Minute)
	h.pass("shop", "poll")
	if eng.calls != 1 {
		t.Errorf("the tag was resolved %d times before it was due, want 1", eng.calls)
	}

	h.clock.Advance(time.Hour)
	st, err := h.pass("shop", TriggerImageUpdate)
	if err != nil {
		t.Fatal(err)
	}
	if got := eng.images("shop"); !slices.Equal(got, []string{"shop-web-1=demo:stable@sha256:bbb"}) {
		t.Fatalf("after the tag moved: %v", got)
	}
	if es := h.history("shop", status.KindImage); len(es) != 1 || es[0].Summary != "web: image demo:stable moved from sha256:aaa to sha256:bbb" {
		t.Errorf("image history = %v", summaries(es))
	}
	if st.Health != drift.HealthHealthy {
		t.Errorf("health %s: %s", st.Health, st.Message)
	}

	eng.digest, eng.badImage = "sha256:ccc", "demo:stable@sha256:ccc"
	h.clock.Advance(time.Hour)
	st, err = h.pass("shop", TriggerImageUpdate)
	if err == nil {
		t.Error("a failed rollout of a new digest must be an error (backoff)")
	}
	if got := eng.images("shop"); !slices.Equal(got, []string{"shop-web-1=demo:stable@sha256:bbb"}) {
		t.Errorf("the old replica must keep serving: %v", got)
	}
	applies := eng.applyCount()
	h.clock.Advance(time.Second)
	st, _ = h.pass("shop", "poll")
	if msg := st.Services[0].Message; st.Health != drift.HealthDegraded || !strings.Contains(msg, "keeps failing") || !strings.Contains(msg, "not before") {
		t.Errorf("health %s, want Degraded with the reason and the backoff: %q", st.Health, st.Services[0].Message)
	}
	if eng.applyCount() != applies {
		t.Error("the failed digest was rolled out again within its backoff")
	}
	if got := eng.images("shop"); !slices.Equal(got, []string{"shop-web-1=demo:stable@sha256:bbb"}) {
		t.Errorf("the old replica must keep serving: %v", got)
	}
}

// A registry that cannot be reached is retried at the base delay; a
// failure of the image itself backs off longer each time.
func TestUnreachableRegistryDoesNotGrowTheBackoff(t *testing.T) {
	app := followedApp()
	web := app.Service("web")
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	fail := func(transient bool) drift.ApplyResult {
		f := &drift.Failure{Cause: drift.FailureRollout, Summary: "image could not be pulled", Transient: transient}
		return drift.ApplyResult{Outcomes: []drift.Outcome{{Change: drift.Change{Kind: drift.KindContainer, Action: drift.ActionReplace, Service: "web"}, Result: drift.ResultFailed, Failure: f}}}
	}
	for _, tt := range []struct {
		transient bool
		want      []time.Duration
	}{
		{true, []time.Duration{crashBaseDelay, crashBaseDelay, crashBaseDelay}},
		{false, []time.Duration{crashBaseDelay, 2 * crashBaseDelay, 4 * crashBaseDelay}},
	} {
		m := newMemory()
		for i, want := range tt.want {
			noteRolloutFailures(&m, app, fail(tt.transient), now)
			b := m.failed["web"]
			if b.Hash != web.Hash || b.NotBefore.Sub(now) != want {
				t.Errorf("transient %v, failure %d: next attempt in %v, want %v", tt.transient, i+1, b.NotBefore.Sub(now), want)
			}
		}
	}
}

// A Swarm service whose rollout failed is forgiven once a change of it
// completes, like a one-engine service: an old failure must not colour
// its health later.
func TestSwarmRolloutFailureForgivenAfterASuccess(t *testing.T) {
	app := &manifest.App{Name: "shop", Services: []manifest.Service{{Name: "web", Hash: "h1"}}}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	update := drift.Change{Kind: drift.KindService, Action: drift.ActionUpdate, Service: "web", Name: "shop-web"}
	m := newMemory()
	noteRolloutFailures(&m, app, drift.ApplyResult{Outcomes: []drift.Outcome{{Change: update, Result: drift.ResultFailed,
		Failure: &drift.Failure{Cause: drift.FailureRollout, Summary: "Swarm did not finish rolling shop-web"}}}}, now)
	if _, failed := m.failed["web"]; !failed {
		t.Fatal("the failed Swarm rollout was not noted")
	}
	noteRolloutFailures(&m, app, drift.ApplyResult{Outcomes: []drift.Outcome{{Change: update, Result: drift.ResultDone}}}, now.Add(time.Minute))
	if f, failed := m.failed["web"]; failed {
		t.Errorf("still failed after a completed update: %+v", f)
	}
}
