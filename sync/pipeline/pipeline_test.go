package pipeline

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/config"
)

// render is a Renderer that names each service's image.
type render struct{}

func (render) SwarmSpecs(app *manifest.App) map[string]drift.SwarmSpec {
	out := map[string]drift.SwarmSpec{}
	for _, s := range app.Services {
		out[s.Name] = drift.SwarmSpec{"image": s.Spec.Image}
	}
	return out
}

func composeApp() *manifest.App {
	return &manifest.App{Name: "shop", Services: []manifest.Service{{Name: "web", Spec: manifest.ServiceSpec{Image: "nginx"}}},
		Volumes: []manifest.Volume{{Name: "data", ComposeName: "data"}}}
}

// composeVolume is the volume docker compose made for project's "data".
func composeVolume(project string) drift.Actual {
	return drift.Actual{ForeignVolumes: []drift.Volume{{Name: project + "_data",
		Labels: map[string]string{drift.LabelComposeProject: project, drift.LabelComposeVolume: "data"}}}}
}

func TestDesiredAdoptsTheComposeProjectsVolumes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		s        Settings
		actual   drift.Actual
		external string // "" not adopted
	}{
		{"not adopting", Settings{App: "shop"}, composeVolume("shop"), ""},
		{"the project is the app's name", Settings{App: "shop", Adopt: true}, composeVolume("shop"), "shop_data"},
		{"a project of another name", Settings{App: "shop", Adopt: true, ComposeProject: "legacy"}, composeVolume("legacy"), "legacy_data"},
		{"another project's volume is left alone", Settings{App: "shop", Adopt: true}, composeVolume("legacy"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := composeApp()
			got := Desired(tc.s, app, tc.actual)
			if v := got.Volume("data"); v.Spec.ExternalName != tc.external || v.Spec.External != (tc.external != "") {
				t.Errorf("volume data = %+v, want external %q", v.Spec, tc.external)
			}
			if app.Volume("data").Spec.External {
				t.Error("the app passed in was changed")
			}
			in := Prepare(tc.s, State{}, app, tc.actual, NoRender{})
			if in.Desired.Volume("data").Spec.ExternalName != tc.external {
				t.Error("Prepare does not adopt as Desired does")
			}
		})
	}
}

func TestPrepareCarriesSettingsStateAndRenderedSpecs(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	cfg := config.AppConfig{Name: "shop", Path: "apps/shop", Prune: true, SelfHeal: false, Target: "swarm",
		ComposeProject: "legacy", Shared: drift.Shared{Networks: []string{"proxy"}}}
	s := FromConfig(cfg)
	want := Settings{App: "shop", Prune: true, Target: "swarm", ComposeProject: "legacy", Shared: cfg.Shared, SourceDir: "apps/shop"}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("FromConfig = %+v, want %+v", s, want)
	}
	st := State{Revision: "abc", Now: now, ReadyDeadline: time.Minute,
		Applied: map[string]drift.AppliedService{"web": {Hash: "h"}}, Backoff: map[string]time.Time{"shop-web-1": now}}
	in := Prepare(s, st, composeApp(), drift.Actual{}, render{})
	o := in.Options
	if in.App != "shop" || o.Revision != "abc" || !o.Now.Equal(now) || !o.Prune || !o.NoSelfHeal || o.Target != "swarm" ||
		o.ComposeProject != "legacy" || o.SourceDir != "apps/shop" || o.ReadyDeadline != time.Minute || o.Applied["web"].Hash != "h" ||
		o.Backoff["shop-web-1"] != now || len(o.Shared.Networks) != 1 {
		t.Errorf("options = %+v", o)
	}
	if o.SwarmSpecs["web"]["image"] != "nginx" {
		t.Errorf("SwarmSpecs = %v, want web rendered", o.SwarmSpecs)
	}
	if in := Prepare(s, st, composeApp(), drift.Actual{}, NoRender{}); in.Options.SwarmSpecs != nil {
		t.Errorf("NoRender rendered %v", in.Options.SwarmSpecs)
	}
}

func TestNoBuildsRefusesLikeAFailedBuild(t *testing.T) {
	var be *drift.BuildError
	if err := (NoBuilds{}).EnsureImages(context.Background(), composeApp(), nil); !errors.As(err, &be) {
		t.Fatalf("EnsureImages = %v, want a *drift.BuildError (the revision is refused, not retried)", err)
	}
}
