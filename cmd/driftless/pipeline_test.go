package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spf13/pflag"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/internal/loadcache"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/pipeline"
)

// planEngine is a back end for a plan only: it shows actual and renders
// every service's image, as a Swarm back end renders its specs.
type planEngine struct {
	pipeline.NoBuilds
	actual drift.Actual
	render bool
}

func (e planEngine) ObserveForPlan(context.Context, drift.Input) (drift.Actual, error) {
	return e.actual, nil
}

func (e planEngine) SwarmSpecs(app *manifest.App) map[string]drift.SwarmSpec {
	if !e.render {
		return nil
	}
	out := map[string]drift.SwarmSpec{}
	for _, svc := range app.Services {
		out[svc.Name] = drift.SwarmSpec{"image": svc.Spec.Image}
	}
	return out
}

func (planEngine) Apply(context.Context, *manifest.App, drift.Plan, drift.ApplyOptions) drift.ApplyResult {
	return drift.ApplyResult{}
}

func (planEngine) Close() error { return nil }

// TestAgentAndCLIPlanTheSame: the same app described in driftless.yaml
// (the agent) and with flags (driftless diff and apply) gives the same
// settings, the same prepared input and the same plan. It fails when one
// side forgets a setting, or to adopt the compose project's volume or to
// render the Swarm specs.
func TestAgentAndCLIPlanTheSame(t *testing.T) {
	composeVolume := drift.Volume{Name: "shop_data", Labels: map[string]string{drift.LabelComposeProject: "shop", drift.LabelComposeVolume: "data"}}
	for _, tc := range []struct {
		name, yaml string
		flags      []string
		eng        planEngine
		check      func(t *testing.T, in drift.Input)
	}{
		{
			name:  "compose adopted, pruned, sharing another app's network",
			yaml:  "    prune: true\n    adopt: compose\n    shared: {networks: [proxy], volumes: [media]}\n",
			flags: []string{"--prune", "--adopt", "compose", "--shared-network", "proxy", "--shared-volume", "media"},
			eng:   planEngine{actual: drift.Actual{ForeignVolumes: []drift.Volume{composeVolume}}},
			check: func(t *testing.T, in drift.Input) {
				if v := in.Desired.Volume("data"); v == nil || !v.Spec.External || v.Spec.ExternalName != "shop_data" {
					t.Errorf("compose's volume was not adopted: %+v", v)
				}
			},
		},
		{
			name:  "target swarm",
			yaml:  "    target: swarm\n    selfHeal: true\n",
			flags: []string{"--target", "swarm"},
			eng:   planEngine{render: true},
			check: func(t *testing.T, in drift.Input) {
				if in.Options.SwarmSpecs["web"] == nil {
					t.Errorf("the Swarm specs were not rendered: %v", in.Options.SwarmSpecs)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			app := filepath.Join(dir, "shop")
			writeFile(t, filepath.Join(app, "compose.yaml"), "services:\n  web:\n    image: nginx:1.27\n    volumes: [data:/data]\nvolumes:\n  data: {}\n")
			writeFile(t, filepath.Join(dir, "driftless.yaml"), "apps:\n  - name: shop\n    repo: https://git.example.com/infra.git\n"+tc.yaml)
			cfg, err := config.LoadConfig(filepath.Join(dir, "driftless.yaml"))
			if err != nil {
				t.Fatal(err)
			}

			// The CLI: flags, then loadLocal as diff and apply call it.
			fs := pflag.NewFlagSet("diff", pflag.ContinueOnError)
			prune := fs.Bool("prune", false, "")
			var lf loadFlags
			lf.register(fs)
			if err := fs.Parse(tc.flags); err != nil {
				t.Fatal(err)
			}
			ml, err := lf.manifestLoad(nil)
			if err != nil {
				t.Fatal(err)
			}
			_, cli, err := loadLocal(context.Background(), nil, app, "shop", ml, tc.eng, *prune)
			if err != nil {
				t.Fatal(err)
			}

			// The agent: its pass prepares the input from the app's
			// config with the same function (sync/loop computeInput).
			settings := pipeline.FromConfig(cfg.Apps[0])
			if want := ml.settings("shop", *prune); !reflect.DeepEqual(settings, want) {
				t.Fatalf("settings differ:\ndriftless.yaml %+v\nflags          %+v", settings, want)
			}
			// The app's files are read as the CLI reads them (from disk,
			// positions named by their path there, where the agent names
			// them as its checkout does) with the config's load options.
			var cache *loadcache.Cache
			loaded, _, err := cache.Load(loadcache.Request{Dir: app, App: "shop", Opts: cfg.Apps[0].LoadOptions()})
			if err != nil {
				t.Fatal(err)
			}
			st := pipeline.State{Revision: cli.Options.Revision, Now: cli.Options.Now}
			agent := pipeline.Prepare(settings, st, loaded, tc.eng.actual, tc.eng)

			if !reflect.DeepEqual(agent, cli) {
				t.Errorf("prepared inputs differ:\nagent %+v\ncli   %+v", agent, cli)
			}
			if a, c := drift.Compute(agent).String(), drift.Compute(cli).String(); a != c {
				t.Errorf("plans differ:\nagent:\n%s\ncli:\n%s", a, c)
			}
			tc.check(t, cli)
		})
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
