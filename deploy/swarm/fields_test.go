package swarm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	swarmtypes "github.com/moby/moby/api/types/swarm"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/load"
)

// richDump is a service as `docker service inspect` printed it, from
// testdata/rich (see e2e/swarm TestWriteSwarmSpecDumps).
func richDump(t *testing.T, name string) swarmtypes.Service {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "rich", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var svcs []swarmtypes.Service
	if err := json.Unmarshal(b, &svcs); err != nil || len(svcs) != 1 {
		t.Fatalf("%s: %v (%d services)", name, err, len(svcs))
	}
	return svcs[0]
}

func richNetworks(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "rich", "networks.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		id, name, _ := strings.Cut(line, " ")
		m[id] = name
	}
	return m
}

func richApp(t *testing.T) *manifest.App {
	t.Helper()
	app, err := appdir.LoadDirWith(filepath.Join("testdata", "rich"), "shop", load.Options{Target: manifest.TargetSwarm})
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// observed is the app's Actual with the dumped service running as it is.
func observed(t *testing.T, app *manifest.App, dump string) drift.Actual {
	t.Helper()
	s := richDump(t, dump)
	o := observeService(s)
	o.Spec = Fields(s.Spec, richNetworks(t))
	cfg := s.Spec.TaskTemplate.ContainerSpec.Configs[0]
	return drift.Actual{Services: []drift.SwarmService{o},
		Networks: []drift.Network{{ID: "7m4cu9gf1znb911jbmv34kjf1", Name: "shop-front", App: "shop", Resource: "front", Driver: "overlay", SpecHash: app.Network("front").Hash}},
		Objects:  []drift.SwarmObject{{ID: cfg.ConfigID, Name: cfg.ConfigName, Kind: drift.KindConfig, App: "shop", Resource: "greeting"}}}
}

// TestSwarmDriftFromRealSpecs: the spec a real Swarm returns after
// driftless created the service is no drift, nor are a `docker service
// update` without flags and one with --force; each hand edit is drift
// naming what differs.
func TestSwarmDriftFromRealSpecs(t *testing.T) {
	app := richApp(t)
	if h := richDump(t, "created").Spec.Labels[drift.LabelSpecHash]; h != app.Service("web").Hash {
		t.Fatalf("testdata/rich/created.json has spec hash %s, the compose file gives %s: regenerate it (e2e/swarm TestWriteSwarmSpecDumps)", h, app.Service("web").Hash)
	}
	for _, tc := range []struct{ dump, want string }{
		{"created", ""},
		{"edit-noop", ""},
		{"edit-force", ""},
		{"edit-env-add", "env.X: 1 → (unset)"},
		{"edit-env-rm", "env.B: (unset) → 2"},
		{"edit-label-add", "labels.owner: ops → (unset)"},
		{"edit-container-label-add", "container.labels.c: 1 → (unset)"},
		{"edit-mount-add", "container.mounts[/extra]: source=extra target=/extra type=volume → (unset)"},
		{"edit-limit-memory", "resources.limits.memoryBytes: 128MiB → 64MiB"},
		{"edit-reserve-cpu", "resources.reservations.nanoCPUs: 100000000 → (unset)"},
		{"edit-publish-add", "endpointSpec.ports[19090:9090/tcp]: publishedPort=19090 targetPort=9090 → (unset)"},
		{"edit-constraint-add", `placement.constraints: "node.hostname!=nope" "node.role==manager" → "node.role==manager"`},
		{"edit-network-rm", `networks[shop-front]: (unset) → aliases="web" "www" target=shop-front`},
		{"edit-health-interval", "container.healthcheck.interval: 5s → 2s"},
		{"edit-update-delay", "updateConfig.delay: 3s → (unset)"},
		{"edit-restart-max-attempts", "restartPolicy.maxAttempts: 3 → (unset)"},
		{"edit-user", "container.user: root → 1000"},
		{"edit-image", "image: driftless-test-workload:e188713d4ecf-v1 → driftless-test-workload:rich"},
	} {
		t.Run(tc.dump, func(t *testing.T) {
			in := drift.Input{App: "shop", Desired: app, Actual: observed(t, app, tc.dump), Options: drift.Options{Revision: "r1",
				Target: manifest.TargetSwarm, SwarmSpecs: RenderSpecs(app), Applied: map[string]drift.AppliedService{"web": {Hash: app.Service("web").Hash, Replicas: 2}}}}
			plan := drift.Compute(in)
			if tc.want == "" {
				if !plan.Empty() {
					t.Errorf("a service as Swarm returns it is drift:\n%s", plan)
				}
				return
			}
			if len(plan.Changes) != 1 {
				t.Fatalf("want one update, got:\n%s", plan)
			}
			c := plan.Changes[0]
			var got []string
			for _, f := range c.Fields {
				got = append(got, f.Path+": "+f.Before+" → "+f.After)
			}
			if c.Action != drift.ActionUpdate || c.Cause != drift.CauseDrift || strings.Join(got, "; ") != tc.want {
				t.Errorf("got %s %s %q, want an update for drift with %q", c.Action, c.Cause, got, tc.want)
			}
		})
	}
}
