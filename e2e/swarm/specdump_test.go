package swarm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dswarm "github.com/driftless-dev/driftless/deploy/swarm"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/load"
)

// TestWriteSwarmSpecDumps regenerates deploy/swarm/testdata/rich: the
// spec a real Swarm returns for a service driftless created from
// testdata/rich/compose.yaml, and the same service after each kind of
// hand edit made with the docker CLI. deploy/swarm's unit tests compare
// them with the desired spec. It runs only when asked
// (DRIFTLESS_WRITE_SWARM_TESTDATA=1): the files are checked in.
func TestWriteSwarmSpecDumps(t *testing.T) {
	if os.Getenv("DRIFTLESS_WRITE_SWARM_TESTDATA") == "" {
		t.Skip("set DRIFTLESS_WRITE_SWARM_TESTDATA=1 to rewrite deploy/swarm/testdata/rich from a real Swarm")
	}
	dir := filepath.Join("..", "..", "deploy", "swarm", "testdata", "rich")
	app, err := appdir.LoadDirWith(dir, "shop", load.Options{Target: manifest.TargetSwarm})
	if err != nil {
		t.Fatal(err)
	}
	img := testenv.WorkloadImage(t, "v1")
	eng := startSwarm(t, img)
	eng.Docker("tag", img, app.Service("web").Spec.Image)
	se, err := dswarm.New(dswarm.Options{Host: eng.Host, RolloutTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	in := drift.Input{App: "shop", Desired: app, Options: drift.Options{Revision: "r1", Now: time.Now(), Target: manifest.TargetSwarm}}
	if in.Actual, err = se.ObserveForPlan(ctx, in); err != nil {
		t.Fatal(err)
	}
	res := se.Apply(ctx, app, drift.Compute(in), drift.ApplyOptions{})
	t.Logf("apply: %v", res.Err) // the tasks need not become healthy: only the spec counts
	write := func(name string) {
		out := eng.Docker("service", "inspect", "shop-web")
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(out+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("created")
	nets := eng.Docker("network", "ls", "--no-trunc", "--filter", "scope=swarm", "--format", "{{.ID}} {{.Name}}")
	if err := os.WriteFile(filepath.Join(dir, "networks.txt"), []byte(nets+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, edit := range [][]string{
		{"noop"},
		{"force", "--force"},
		{"env-add", "--env-add", "X=1"},
		{"env-rm", "--env-rm", "B"},
		{"label-add", "--label-add", "owner=ops"},
		{"container-label-add", "--container-label-add", "c=1"},
		{"mount-add", "--mount-add", "type=volume,source=extra,target=/extra"},
		{"limit-memory", "--limit-memory", "128m"},
		{"reserve-cpu", "--reserve-cpu", "0.1"},
		{"publish-add", "--publish-add", "19090:9090"},
		{"constraint-add", "--constraint-add", "node.hostname!=nope"},
		{"network-rm", "--network-rm", "shop-front"},
		{"health-interval", "--health-interval", "5s"},
		{"update-delay", "--update-delay", "3s"},
		{"restart-max-attempts", "--restart-max-attempts", "3"},
		{"user", "--user", "root"},
		{"image", "--image", img},
	} {
		args := append([]string{"service", "update", "--detach"}, edit[1:]...)
		eng.Docker(append(args, "shop-web")...)
		write("edit-" + edit[0])
		// Back to what driftless created, for the next edit.
		if out, err := eng.DockerTry("service", "rollback", "--detach", "shop-web"); err != nil && !strings.Contains(out, "does not have a previous spec") {
			t.Fatalf("rollback: %v %s", err, out)
		}
	}
}
