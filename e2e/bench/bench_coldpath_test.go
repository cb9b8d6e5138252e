package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// compose50 is one docker-compose.yml of n single-replica services of
// image, which both docker-compose 1.29 and driftless read.
func compose50(image string, n int) string {
	var b strings.Builder
	b.WriteString("version: \"2.4\"\nservices:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  s%02d:\n    image: %s\n    restart: unless-stopped\n    stop_grace_period: 1s\n", i, image)
	}
	return b.String()
}

// TestBenchNoopApply50 compares a no-op `driftless apply` with a no-op
// `docker-compose up -d` on the same docker-compose.yml of 50 services,
// side by side: both converge once, then each no-op is run in turn,
// alternating which goes first. Beside them, in the same rounds: process
// start (`driftless version`), process start plus loading the file
// (`driftless validate`) and one cold observation (`driftless diff`). One
// more no-op apply goes through a counting proxy to count its Docker API
// calls.
func TestBenchNoopApply50(t *testing.T) {
	testenv.BenchOnly(t)
	const services = 50
	rounds := testenv.BenchInt("DRIFTLESS_BENCH_NOOP_TRIALS", 11)
	compose := "/usr/bin/docker-compose"
	if _, err := os.Stat(compose); err != nil {
		t.Skipf("docker-compose not installed: %v", err)
	}
	image := testenv.WorkloadImage(t, "v1")
	bin := testenv.DriftlessBinary(t)
	app := testenv.UniqueApp(t)
	project := "c" + app
	dir := filepath.Join(t.TempDir(), app)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "docker-compose.yml"), []byte(compose50(image, services)), 0o644); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	env := []string{"COMPOSE_PROJECT_NAME=" + project, "DRIFTLESS_DATA=" + data}
	t.Cleanup(func() {
		cmd := exec.Command(compose, "down", "-t", "1")
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		_ = cmd.Run()
	})
	apply := []string{"apply", ".", "--app", app}
	t.Logf("converge: driftless apply %s, docker-compose up -d %s",
		secs(timeCmd(t, dir, env, bin, apply...)), secs(timeCmd(t, dir, env, compose, "up", "-d")))

	// Each command's wall time and CPU time (user + system): on this
	// shared machine the CPU time is the steadier measure of the work.
	var dl, dlOff, dlNoMemo, cp, diff, load, loadOff, start runs
	uncached := append(slices.Clone(env), "DRIFTLESS_LOAD_CACHE=off")
	noMemo := append(slices.Clone(env), "DRIFTLESS_INSPECT_MEMO=off")
	for r := range rounds {
		d := func() { dl.add(runCmd(t, dir, env, bin, apply...)) }
		c := func() { cp.add(runCmd(t, dir, env, compose, "up", "-d")) }
		if r%2 == 0 {
			d()
			c()
		} else {
			c()
			d()
		}
		dlOff.add(runCmd(t, dir, uncached, bin, apply...))
		dlNoMemo.add(runCmd(t, dir, noMemo, bin, apply...))
		diff.add(runCmd(t, dir, env, bin, "diff", ".", "--app", app))
		load.add(runCmd(t, dir, env, bin, "validate", ".", "--app", app))
		loadOff.add(runCmd(t, dir, uncached, bin, "validate", ".", "--app", app))
		start.add(runCmd(t, dir, env, bin, "version"))
	}
	// The memo belongs to one engine address: the first apply through the
	// proxy writes the proxy's, the second is the one counted.
	proxy := testenv.StartCountingProxy(t)
	viaProxy := append(slices.Clone(env), "DOCKER_HOST="+proxy.Host())
	timeCmd(t, dir, viaProxy, bin, apply...)
	proxy.Reset()
	timeCmd(t, dir, viaProxy, bin, apply...)
	memoCalls := proxy.Summary()
	proxy.Reset()
	timeCmd(t, dir, append(viaProxy, "DRIFTLESS_INSPECT_MEMO=off"), bin, apply...)
	noMemoCalls := proxy.Summary()

	cm, dm := cp.medians(), dl.medians()
	t.Logf("| no-op on the same docker-compose.yml, 50 services (median of %d) | wall | CPU (user+sys) |", rounds)
	t.Logf("|---|---|---|")
	t.Logf("| `docker-compose up -d` (1.29) | %s | %s |", testenv.Ms(cm.wall), testenv.Ms(cm.cpu))
	t.Logf("| **`driftless apply`** | **%s** | **%s** |", testenv.Ms(dm.wall), testenv.Ms(dm.cpu))
	t.Logf("| `driftless apply`, load cache off | %s | %s |", testenv.Ms(dlOff.medians().wall), testenv.Ms(dlOff.medians().cpu))
	t.Logf("| `driftless apply`, inspect memo off | %s | %s |", testenv.Ms(dlNoMemo.medians().wall), testenv.Ms(dlNoMemo.medians().cpu))
	t.Logf("| `driftless version` (process start) | %s | %s |", testenv.Ms(start.medians().wall), testenv.Ms(start.medians().cpu))
	t.Logf("| `driftless validate` (process start + load, from the cache) | %s | %s |", testenv.Ms(load.medians().wall), testenv.Ms(load.medians().cpu))
	t.Logf("| `driftless validate`, load cache off | %s | %s |", testenv.Ms(loadOff.medians().wall), testenv.Ms(loadOff.medians().cpu))
	t.Logf("| `driftless diff` (process start + load + one cold observation) | %s | %s |", testenv.Ms(diff.medians().wall), testenv.Ms(diff.medians().cpu))
	t.Logf("| speed-up of the no-op apply (CPU time: %.1f×) | %.1f× (target ≥ 50×: %s) | |",
		cm.cpu.Seconds()/dm.cpu.Seconds(), cm.wall.Seconds()/dm.wall.Seconds(),
		testenv.Verdict(t, "no-op apply ≥ 50× faster than docker-compose's", cm.wall.Seconds() >= 50*dm.wall.Seconds()))
	t.Logf("Docker API calls of one no-op apply: %s; with the inspect memo off: %s", testenv.FormatCalls(memoCalls), testenv.FormatCalls(noMemoCalls))
}

// benchLabel marks the containers a benchmark fills the engine with, so
// they are all removed by label at the end, even after a failure.
const benchLabel = "dev.driftless-bench.filler"

// fillEngine creates n stopped containers of image labelled benchLabel=app
// (1,000 running ones would need gigabytes), and removes every container
// with that label when the test ends.
func fillEngine(t *testing.T, cli *client.Client, image, app string, n int) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() {
		res, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", benchLabel+"="+app)})
		if err != nil {
			t.Logf("cleanup of the filler containers: %v", err)
			return
		}
		testenv.ForEach(len(res.Items), 8, func(i int) {
			_, _ = cli.ContainerRemove(context.Background(), res.Items[i].ID, client.ContainerRemoveOptions{Force: true})
		})
	})
	errs := make([]error, n)
	testenv.ForEach(n, 8, func(i int) {
		_, errs[i] = cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:   fmt.Sprintf("%s-filler-%04d", app, i),
			Config: &container.Config{Image: image, Labels: map[string]string{benchLabel: app}},
		})
	})
	for _, err := range errs {
		if err != nil {
			t.Fatalf("fill the engine: %v", err)
		}
	}
}

// TestBenchHeal1000 is TestBenchHeal with 1,000 other containers on the
// engine: `docker rm -f` of a replica → its replacement running, next to
// the engine's own create+start of the same container, trials alternating.
// In the same setting it times the one-shot CLI's cold observation of the
// app, the full one (every object on the engine) against the cheap one.
func TestBenchHeal1000(t *testing.T) {
	testenv.BenchOnly(t)
	trials := testenv.BenchInt("DRIFTLESS_BENCH_HEAL_TRIALS", 20)
	const replicas = 10
	fill := testenv.BenchInt("DRIFTLESS_BENCH_FILL", 1000)
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	cli := testenv.DockerClient(t)
	ctx := context.Background()
	t0 := time.Now()
	fillEngine(t, cli, image, app, fill)
	total, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d filler containers in %s; %d containers on the engine", fill, secs(time.Since(t0)), len(total.Items))

	_, _, agent := testenv.StartRepoAgent(t, app, map[string]string{"web.yaml": testenv.PlainService("web", image, replicas)}, "--interval", "30s")
	testenv.WaitAllRunning(t, cli, app, replicas, 3*time.Minute)
	time.Sleep(3 * time.Second) // the first pass's readiness wait

	netName := manifest.ObjectName(app, manifest.DefaultNetwork)
	var heal, createStart []time.Duration
	for i := range trials {
		name := manifest.ContainerName(app, "web", i%replicas+1)
		old, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		gone := time.Now()
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		done, err := testenv.WaitRunning(wctx, cli, name, old.Container.ID)
		cancel()
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", i+1, err, agent.Logs())
		}
		heal = append(heal, done.Sub(gone))
		time.Sleep(2500 * time.Millisecond) // past the repair pass's readiness wait

		// The engine's own create+start of the same container, on the
		// same network, polled the same way.
		t1 := time.Now()
		created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:       fmt.Sprintf("%s-engine-%d", app, i),
			Config:     &container.Config{Image: image, Labels: map[string]string{benchLabel: app}},
			HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(netName)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		createStart = append(createStart, time.Since(t1))
		_, _ = cli.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true})
	}

	// The CLI's cold observation of the same app on the same engine.
	desired, err := appdir.Load(fstest.MapFS{"web.yaml": {Data: []byte(testenv.PlainService("web", image, replicas))}}, ".", app)
	if err != nil {
		t.Fatal(err)
	}
	in := drift.Input{App: app, Desired: desired, Options: drift.Options{Now: time.Now()}}
	var full, cheap []time.Duration
	for range 10 {
		for _, path := range []struct {
			out     *[]time.Duration
			observe func(*deploy.Engine) (drift.Actual, error)
		}{
			{&full, func(e *deploy.Engine) (drift.Actual, error) { return e.ObserveCold(ctx, app, true) }},
			{&cheap, func(e *deploy.Engine) (drift.Actual, error) { return e.ObserveForPlan(ctx, in) }},
		} {
			t1 := time.Now()
			if _, err := testenv.ObserveWith(ctx, "", path.observe); err != nil {
				t.Fatal(err)
			}
			*path.out = append(*path.out, time.Since(t1))
		}
	}

	h50, cs50 := testenv.Median(heal), testenv.Median(createStart)
	t.Logf("| %d containers on the engine (%d stopped fillers) | p50 | p99 | n |", len(total.Items), fill)
	t.Logf("|---|---|---|---|")
	t.Logf("| heal: `docker rm -f` returned → replacement running | %s | %s | %d |", testenv.Ms(h50), testenv.Ms(testenv.Quantile(heal, 0.99)), len(heal))
	t.Logf("| engine create + start, same image and network | %s | %s | %d |", testenv.Ms(cs50), testenv.Ms(testenv.Quantile(createStart, 0.99)), len(createStart))
	t.Logf("| heal p50 / create+start p50 | %.2f× (target ≤ 1.2×: %s) | | |", h50.Seconds()/cs50.Seconds(),
		testenv.Verdict(t, "heal p50 ≤ 1.2× create+start with 1,000 containers", h50.Seconds() <= 1.2*cs50.Seconds()))
	t.Logf("| CLI cold observation of the %d-replica app, full (every object on the engine) | %s | | %d |", replicas, testenv.Ms(testenv.Median(full)), len(full))
	t.Logf("| CLI cold observation, cheap (ObserveForPlan) | %s | | %d |", testenv.Ms(testenv.Median(cheap)), len(cheap))
}

// run is one command's wall time and CPU time (user + system).
type run struct{ wall, cpu time.Duration }

type runs []run

func (r *runs) add(x run) { *r = append(*r, x) }

// medians are the median wall time and the median CPU time, each on its
// own.
func (r runs) medians() run {
	var wall, cpu []time.Duration
	for _, x := range r {
		wall, cpu = append(wall, x.wall), append(cpu, x.cpu)
	}
	return run{wall: testenv.Median(wall), cpu: testenv.Median(cpu)}
}

// runCmd runs a command to completion and returns the wall time and the
// CPU time the process used.
func runCmd(t *testing.T, dir string, env []string, name string, args ...string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return run{wall: d, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
}
