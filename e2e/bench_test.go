package e2e

// Wall-clock benchmarks against the real Docker engine, the real binary and
// a real git server. They are tests, not Go benchmarks, because most of them
// compare driftless with something else measured side by side in the same
// run (docker-compose, Docker's own create/start and restart policy), and
// because they need minutes, not b.N loops. Each prints markdown table rows
// with t.Logf; docs/benchmarks.md collects them.
//
// They only run with DRIFTLESS_BENCH=1:
//
//	DRIFTLESS_BENCH=1 go test -run TestBench -v -timeout 60m ./e2e/

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
)

// benchOnly skips unless DRIFTLESS_BENCH=1: these take minutes and load
// the machine, so plain `go test ./...` must not run them.
func benchOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("DRIFTLESS_BENCH") != "1" {
		t.Skip("benchmark: set DRIFTLESS_BENCH=1 to run")
	}
}

// benchInt reads an integer knob from the environment (trial counts), so a
// quick run can use fewer trials than the documented one.
func benchInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// quantile is the nearest-rank quantile of ds (q in [0,1]).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

func median(ds []time.Duration) time.Duration { return quantile(ds, 0.5) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// verdict reports whether a target was met; a missed target fails the
// benchmark (the numbers are still printed in full).
func verdict(t testing.TB, target string, ok bool) string {
	t.Helper()
	if ok {
		return "met"
	}
	t.Errorf("target missed: %s", target)
	return "NOT met"
}

func dockerClient(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// forEach runs fn(0..n-1) with at most par at once.
func forEach(n, par int, fn func(i int)) {
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

// plainService is a service with no readiness section: driftless counts it
// ready after running SettleTime (2s) without a restart.
func plainService(name, image string, replicas int) string {
	return fmt.Sprintf(`apiVersion: driftless.dev/v1
kind: Service
metadata:
  name: %s
spec:
  image: %s
  replicas: %d
  stopGracePeriodSeconds: 1
`, name, image, replicas)
}

// waitRunning polls inspect every 10ms until the container called name is
// running with an ID other than notID, and returns when it saw that.
func waitRunning(ctx context.Context, cli *client.Client, name, notID string) (time.Time, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		res, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		if err == nil && res.Container.ID != notID && res.Container.State != nil && res.Container.State.Running {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%s not running: %w", name, ctx.Err())
		case <-tick.C:
		}
	}
}

// waitAllRunning waits until n containers of the app are running.
func waitAllRunning(t *testing.T, cli *client.Client, app string, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		cs, err := cli.ContainerList(context.Background(), client.ContainerListOptions{
			Filters: make(client.Filters).Add("label", drift.LabelApp+"="+app).Add("status", "running")})
		if err == nil && len(cs.Items) >= n {
			return
		}
		if time.Now().After(deadline) {
			got := -1
			if err == nil {
				got = len(cs.Items)
			}
			t.Fatalf("app %s: %d of %d containers running after %s (err %v)", app, got, n, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// timeCmd runs a command to completion and returns its wall time.
func timeCmd(t *testing.T, dir string, env []string, name string, args ...string) time.Duration {
	t.Helper()
	return runCmd(t, dir, env, name, args...).wall
}

// TestBenchConverge50 compares `driftless apply` with `docker-compose up -d`
// on 50 single-replica services of the same image, from empty and as a
// no-op re-apply, alternating trials in one run.
//
// What differs, by design: driftless apply returns once every replica is
// ready; without a readiness section that means running for SettleTime (2s)
// without a restart. docker-compose 1.29 returns once the containers are
// started. Both create one network and give the containers the same
// restart policy (unless-stopped).
func TestBenchConverge50(t *testing.T) {
	benchOnly(t)
	const services = 50
	trials := benchInt("DRIFTLESS_BENCH_TRIALS", 3)
	parallels := []int{4, 16}
	if v := os.Getenv("DRIFTLESS_BENCH_PARALLEL"); v != "" {
		parallels = nil
		for _, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
				parallels = append(parallels, n)
			}
		}
	}
	compose := "/usr/bin/docker-compose"
	if _, err := os.Stat(compose); err != nil {
		t.Skipf("docker-compose not installed: %v", err)
	}
	image := testenv.WorkloadImage(t, "v1")
	bin := testenv.DriftlessBinary(t)
	cli := dockerClient(t)

	root := t.TempDir()
	dlDir := filepath.Join(root, "manifests")
	cpDir := filepath.Join(root, "compose")
	for _, d := range []string{dlDir, cpDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var yml strings.Builder
	yml.WriteString("version: \"2.4\"\nservices:\n")
	for i := 1; i <= services; i++ {
		name := fmt.Sprintf("s%02d", i)
		if err := os.WriteFile(filepath.Join(dlDir, name+".yaml"), []byte(plainService(name, image, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&yml, "  %s:\n    image: %s\n    restart: unless-stopped\n    stop_grace_period: 1s\n", name, image)
	}
	if err := os.WriteFile(filepath.Join(cpDir, "docker-compose.yml"), []byte(yml.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	type result struct{ converge, noop []time.Duration }
	dl := map[int]*result{}
	for _, p := range parallels {
		dl[p] = &result{}
	}
	var cp result
	var floor, diff, version []time.Duration
	runDriftless := func(trial int) {
		for _, p := range parallels {
			app := testenv.UniqueApp(t)
			args := []string{"apply", dlDir, "--app", app, "--parallel", strconv.Itoa(p)}
			c := timeCmd(t, root, nil, bin, args...)
			n := timeCmd(t, root, nil, bin, args...)
			dl[p].converge = append(dl[p].converge, c)
			dl[p].noop = append(dl[p].noop, n)
			// What a no-op is made of: one observation (diff) and process
			// start (version).
			diff = append(diff, timeCmd(t, root, nil, bin, "diff", dlDir, "--app", app))
			version = append(version, timeCmd(t, root, nil, bin, "version"))
			t.Logf("trial %d driftless --parallel %d: converge %s, no-op %s", trial+1, p, secs(c), ms(n))
			testenv.RemoveApp(t, app)
		}
	}
	runCompose := func(trial int) {
		project := "bench" + strconv.Itoa(trial) + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
		env := []string{"COMPOSE_PROJECT_NAME=" + project}
		c := timeCmd(t, cpDir, env, compose, "up", "-d")
		n := timeCmd(t, cpDir, env, compose, "up", "-d")
		cp.converge = append(cp.converge, c)
		cp.noop = append(cp.noop, n)
		t.Logf("trial %d docker-compose: converge %s, no-op %s", trial+1, secs(c), ms(n))
		timeCmd(t, cpDir, env, compose, "down", "-t", "1")
	}
	for trial := range trials {
		// Alternate who goes first, so neither always runs on a warmer engine.
		if trial%2 == 0 {
			runDriftless(trial)
			runCompose(trial)
		} else {
			runCompose(trial)
			runDriftless(trial)
		}
		f := engineFloor(t, cli, image, services, 16)
		floor = append(floor, f)
		t.Logf("trial %d engine alone, 50 create+start 16 at a time: %s", trial+1, secs(f))
	}

	cc, cn := median(cp.converge), median(cp.noop)
	t.Logf("| tool | converge 50 (median of %d) | no-op re-apply (median) | converge vs compose | no-op speed-up vs compose |", trials)
	t.Logf("|---|---|---|---|---|")
	t.Logf("| docker-compose 1.29 up -d | %s | %s | 1.00× | 1× |", secs(cc), ms(cn))
	for _, p := range parallels {
		c, n := median(dl[p].converge), median(dl[p].noop)
		t.Logf("| driftless apply --parallel %d | %s | %s | %.2f× (target ≤ 0.5×: %s) | %.1f× (target ≥ 20×: %s) |",
			p, secs(c), ms(n), c.Seconds()/cc.Seconds(), verdict(t, "converge in ≤ 0.5× docker-compose's time", c.Seconds() <= 0.5*cc.Seconds()),
			cn.Seconds()/n.Seconds(), verdict(t, "no-op apply ≥ 20× faster than docker-compose's", cn.Seconds() >= 20*n.Seconds()))
	}
	fl := median(floor)
	t.Logf("| engine alone: 50 × (create + start) via the API, 16 at a time, no waiting | %s | | %.2f× | |", secs(fl), fl.Seconds()/cc.Seconds())
	t.Logf("")
	t.Logf("no-op breakdown (medians): `driftless diff` (one cold observation) %s, `driftless version` (process start) %s", ms(median(diff)), ms(median(version)))
}

// engineFloor is how long the engine alone takes to create and start n
// containers of image on a fresh network, par at a time, with nothing
// waited for: no client can converge faster on this machine.
func engineFloor(t *testing.T, cli *client.Client, image string, n, par int) time.Duration {
	t.Helper()
	ctx := context.Background()
	label := map[string]string{"dev.driftless-bench.floor": "1"}
	netName := "driftless-bench-floor"
	_, _ = cli.NetworkRemove(ctx, netName, client.NetworkRemoveOptions{})
	t0 := time.Now()
	if _, err := cli.NetworkCreate(ctx, netName, client.NetworkCreateOptions{Labels: label}); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	var mu sync.Mutex
	var firstErr error
	forEach(n, par, func(i int) {
		created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:       fmt.Sprintf("driftless-bench-floor-%d", i),
			Config:     &container.Config{Image: image, Labels: label},
			HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(netName)},
		})
		if err == nil {
			ids[i] = created.ID
			_, err = cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{})
		}
		if err != nil {
			mu.Lock()
			firstErr = err
			mu.Unlock()
		}
	})
	d := time.Since(t0)
	forEach(n, 8, func(i int) {
		if ids[i] != "" {
			_, _ = cli.ContainerRemove(ctx, ids[i], client.ContainerRemoveOptions{Force: true})
		}
	})
	_, _ = cli.NetworkRemove(ctx, netName, client.NetworkRemoveOptions{})
	if firstErr != nil {
		t.Fatalf("engine floor: %v", firstErr)
	}
	return d
}

// TestBenchIdlePass1000 times one pass with nothing to do over 1,000
// containers the app owns: Observe (list calls + readiness from the
// prober's cache) and drift.Compute.
//
// Starting 1,000 containers would take minutes and gigabytes on a small
// machine, so one replica is created by driftless and 999 more are cloned
// from it with the engine API (same config and labels, their own slot),
// created but not started. The list call is as large as for running
// containers; before Compute their state is set to running, which is what
// the differ would see on a converged host.
func TestBenchIdlePass1000(t *testing.T) {
	benchOnly(t)
	const n = 1000
	passes := benchInt("DRIFTLESS_BENCH_PASSES", 20)
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	cli := dockerClient(t)
	t.Cleanup(func() { testenv.RemoveApp(t, app) })
	ctx := context.Background()

	dir := filepath.Join(t.TempDir(), app)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(replicas int) {
		if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(plainService("web", image, replicas)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	out, code := testenv.Run(t, actx, dir, "apply", dir, "--app", app)
	cancel()
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	first, err := cli.ContainerInspect(ctx, manifest.ContainerName(app, "web", 1), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	netName := manifest.ObjectName(app, manifest.DefaultNetwork)
	cloneStart := time.Now()
	var mu sync.Mutex
	var createErr error
	forEach(n-1, 8, func(i int) {
		slot := i + 2
		cfg := *first.Container.Config
		cfg.Labels = map[string]string{}
		for k, v := range first.Container.Config.Labels {
			cfg.Labels[k] = v
		}
		cfg.Labels[drift.LabelSlot] = strconv.Itoa(slot)
		cfg.Hostname = ""
		_, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:       manifest.ContainerName(app, "web", slot),
			Config:     &cfg,
			HostConfig: first.Container.HostConfig,
			NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
				netName: {Aliases: []string{"web"}}}},
		})
		if err != nil {
			mu.Lock()
			createErr = err
			mu.Unlock()
		}
	})
	if createErr != nil {
		t.Fatalf("clone replicas: %v", createErr)
	}
	t.Logf("created %d clones in %s", n-1, secs(time.Since(cloneStart)))
	write(n)
	desired, err := appdir.LoadDir(dir, app)
	if err != nil {
		t.Fatal(err)
	}

	eng, err := deploy.New(ctx, deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	running := func(a drift.Actual) drift.Actual {
		cs := slices.Clone(a.Containers)
		for i := range cs {
			cs[i].State, cs[i].Status, cs[i].Ready = drift.StateRunning, "Up 5 minutes", true
		}
		a.Containers = cs
		return a
	}
	// The first pass fills the prober's cache, as the agent's first pass does.
	warm, err := eng.Observe(ctx, app, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(warm.Containers) != n {
		t.Fatalf("observed %d containers, want %d", len(warm.Containers), n)
	}
	in := drift.Input{App: app, Desired: desired, Actual: running(warm), Options: drift.Options{Now: time.Now()}}
	if plan := drift.Compute(in); !plan.Empty() {
		t.Fatalf("plan over the cloned replicas is not empty:\n%s", plan.String())
	}

	filter := make(client.Filters).Add("label", drift.LabelApp+"="+app)
	var list, listAll, observe, observeForeign, compute, pass []time.Duration
	for range passes {
		t0 := time.Now()
		if _, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter}); err != nil {
			t.Fatal(err)
		}
		list = append(list, time.Since(t0))

		t0 = time.Now()
		if _, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true}); err != nil {
			t.Fatal(err)
		}
		listAll = append(listAll, time.Since(t0))

		t0 = time.Now()
		if _, err := eng.Observe(ctx, app, false); err != nil {
			t.Fatal(err)
		}
		observe = append(observe, time.Since(t0))

		// What the agent's pass does: Observe with foreign objects (a second,
		// unfiltered list) and Compute.
		t0 = time.Now()
		a, err := eng.Observe(ctx, app, true)
		if err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		in := drift.Input{App: app, Desired: desired, Actual: running(a), Options: drift.Options{Now: time.Now()}}
		t2 := time.Now()
		plan := drift.Compute(in)
		t3 := time.Now()
		if !plan.Empty() {
			t.Fatalf("plan not empty: %s", plan.Summary())
		}
		observeForeign = append(observeForeign, t1.Sub(t0))
		compute = append(compute, t3.Sub(t2))
		pass = append(pass, t1.Sub(t0)+t3.Sub(t2))
	}
	p := median(pass)
	t.Logf("| step, 1,000 owned containers (median of %d) | time |", passes)
	t.Logf("|---|---|")
	t.Logf("| ContainerList with the app label filter (raw engine call) | %s |", ms(median(list)))
	t.Logf("| ContainerList of every container, no filter (raw engine call; what Observe with the foreign check makes) | %s |", ms(median(listAll)))
	t.Logf("| Observe(app, withForeign=false) | %s |", ms(median(observe)))
	t.Logf("| Observe(app, withForeign=true), as the agent's pass | %s |", ms(median(observeForeign)))
	t.Logf("| drift.Compute (empty plan) | %s |", ms(median(compute)))
	t.Logf("| pass = Observe(withForeign) + Compute | %s (target < 50 ms: %s); its one unfiltered container list call = %.0f%% of it |",
		ms(p), verdict(t, "pass over 1,000 containers < 50 ms", p < 50*time.Millisecond), 100*median(listAll).Seconds()/p.Seconds())
}

// startRepoAgent commits manifests to a git daemon repo and runs
// `driftless run` following it.
func startRepoAgent(t *testing.T, app string, files map[string]string, extra ...string) (*gitserver.Repo, string, *testenv.Agent) {
	t.Helper()
	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	for name, body := range files {
		repo.WriteFile("apps/"+app+"/"+name, body)
	}
	repo.Commit("deploy " + app)
	url := repo.URL(server)
	args := append([]string{"run", "--repo", url, "--branch", "main", "--path", "apps/" + app, "--app", app, "--allow-insecure-transport"}, extra...)
	agent := testenv.StartAgent(t, t.TempDir(), args...)
	return repo, url, agent
}

// TestBenchHeal times self-healing: a replica removed with `docker rm -f`
// until its replacement runs, with polling too slow to matter (30s), next
// to the engine's own create-and-start time and its restart-policy delay
// after the container's process is killed.
//
// Each trial removes a different replica, so every trial starts from a
// quiet, converged app. (Removing the same one again would also be repaired
// at once: the crash backoff applies only to containers that stop again.)
func TestBenchHeal(t *testing.T) {
	benchOnly(t)
	trials := benchInt("DRIFTLESS_BENCH_HEAL_TRIALS", 50)
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	cli := dockerClient(t)
	t.Cleanup(func() { testenv.RemoveApp(t, app) })
	ctx := context.Background()
	_, _, agent := startRepoAgent(t, app, map[string]string{"web.yaml": plainService("web", image, trials)}, "--interval", "30s")
	waitAllRunning(t, cli, app, trials, 3*time.Minute)
	time.Sleep(3 * time.Second) // let the first pass finish waiting for readiness

	// heal counts from the moment the removal is done (the container is
	// gone, Docker has sent its destroy event); healRm includes the rm call.
	var heal, healRm, rm []time.Duration
	for i := 1; i <= trials; i++ {
		name := manifest.ContainerName(app, "web", i)
		old, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if _, err := cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		gone := time.Now()
		rm = append(rm, gone.Sub(t0))
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		t1, err := waitRunning(wctx, cli, name, old.Container.ID)
		cancel()
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", i, err, agent.Logs())
		}
		heal = append(heal, t1.Sub(gone))
		healRm = append(healRm, t1.Sub(t0))
		// The repair pass waits 2s for readiness; start the next trial
		// after it so trials do not queue behind each other.
		time.Sleep(2500 * time.Millisecond)
	}

	// The engine alone: create and start the same image on the same
	// network, then (first 10) kill its process and wait for the restart
	// policy.
	baseN, killN := benchInt("DRIFTLESS_BENCH_CREATE_TRIALS", 20), 10
	netName := manifest.ObjectName(app, manifest.DefaultNetwork)
	var createStart, restart []time.Duration
	for i := range baseN {
		name := fmt.Sprintf("%s-engine-%d", app, i)
		t0 := time.Now()
		created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:   name,
			Config: &container.Config{Image: image, Labels: map[string]string{drift.LabelApp + "-bench": app}},
			HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(netName),
				RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyAlways}},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = cli.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true})
		})
		if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		createStart = append(createStart, time.Since(t0))
		if i < killN {
			before, err := cli.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Kill the process, as a crash would: `docker kill` counts as a
			// manual stop, after which Docker does not apply the policy.
			t0 := time.Now()
			if err := syscall.Kill(before.Container.State.Pid, syscall.SIGKILL); err != nil {
				t.Fatalf("kill pid %d of %s: %v (the benchmark must run as root, like the engine)", before.Container.State.Pid, name, err)
			}
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			for {
				res, err := cli.ContainerInspect(wctx, created.ID, client.ContainerInspectOptions{})
				if err == nil && res.Container.State.Running && res.Container.State.StartedAt != before.Container.State.StartedAt {
					restart = append(restart, time.Since(t0))
					break
				}
				if wctx.Err() != nil {
					cancel()
					t.Fatalf("container %s not restarted by Docker", name)
				}
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}
		_, _ = cli.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true})
	}

	h50, h99, cs50, r50 := median(heal), quantile(heal, 0.99), median(createStart), median(restart)
	t.Logf("| measurement | p50 | p99 | n |")
	t.Logf("|---|---|---|---|")
	t.Logf("| heal: `docker rm -f` returned → replacement running (driftless run, interval 30s) | %s | %s | %d |", ms(h50), ms(h99), len(heal))
	t.Logf("| heal including the rm call itself | %s | %s | %d |", ms(median(healRm)), ms(quantile(healRm, 0.99)), len(healRm))
	t.Logf("| the `rm -f` call alone | %s | %s | %d |", ms(median(rm)), ms(quantile(rm, 0.99)), len(rm))
	t.Logf("| engine create + start, same image and network | %s | %s | %d |", ms(cs50), ms(quantile(createStart, 0.99)), len(createStart))
	t.Logf("| Docker restart policy: process SIGKILLed → running again (restart=always) | %s | %s | %d |", ms(r50), ms(quantile(restart, 0.99)), len(restart))
	t.Logf("| heal p50 / create+start p50 | %.2f× (target ≤ 1.2×: %s) | | |", h50.Seconds()/cs50.Seconds(), verdict(t, "heal p50 ≤ 1.2× create+start", h50.Seconds() <= 1.2*cs50.Seconds()))
	t.Logf("| heal p50 / restart-policy p50 | %.2f× | | |", h50.Seconds()/r50.Seconds())
}

// scaleTrials commits replicas 2, 3, ... and times push → the new replica
// running. notify, if set, is called right after each push.
func scaleTrials(t *testing.T, cli *client.Client, repo *gitserver.Repo, app, image string, trials int, notify func()) (commitToRunning, push []time.Duration) {
	t.Helper()
	ctx := context.Background()
	for i := range trials {
		replicas := i + 2
		repo.WriteFile("apps/"+app+"/web.yaml", plainService("web", image, replicas))
		t0 := time.Now()
		repo.Commit(fmt.Sprintf("scale web to %d", replicas))
		pushed := time.Now()
		if notify != nil {
			notify()
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		t1, err := waitRunning(wctx, cli, manifest.ContainerName(app, "web", replicas), "")
		cancel()
		if err != nil {
			t.Fatalf("trial %d: %v", i+1, err)
		}
		commitToRunning = append(commitToRunning, t1.Sub(pushed))
		push = append(push, pushed.Sub(t0))
		// The pass waits 2s for readiness; the random part spreads the
		// next push uniformly over the poll period, which is aligned to
		// whole seconds, so the poll wait is not the same in every trial.
		time.Sleep(2500*time.Millisecond + rand.N(time.Second))
	}
	return commitToRunning, push
}

// TestBenchCommitToRunning: polling every 1s, a pushed commit that adds a
// replica → that replica running.
func TestBenchCommitToRunning(t *testing.T) {
	benchOnly(t)
	trials := benchInt("DRIFTLESS_BENCH_COMMIT_TRIALS", 10)
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	cli := dockerClient(t)
	t.Cleanup(func() { testenv.RemoveApp(t, app) })
	repo, _, _ := startRepoAgent(t, app, map[string]string{"web.yaml": plainService("web", image, 1)}, "--interval", "1s")
	waitAllRunning(t, cli, app, 1, time.Minute)
	time.Sleep(3 * time.Second)
	got, push := scaleTrials(t, cli, repo, app, image, trials, nil)
	cs := engineCreateStart(t, cli, image, app, 10)
	p50 := median(got)
	budget := 500*time.Millisecond + 300*time.Millisecond + cs // mean poll wait (1s/2) + 300ms + start
	t.Logf("| measurement (poll every 1s) | p50 | p90 | n |")
	t.Logf("|---|---|---|---|")
	t.Logf("| push done → new replica running | %s | %s | %d |", ms(p50), ms(quantile(got, 0.9)), len(got))
	t.Logf("| git commit + push (not counted) | %s | | |", ms(median(push)))
	t.Logf("| engine create + start (same run) | %s | | 10 |", ms(cs))
	t.Logf("| target: mean poll wait 500 ms + 300 ms + create/start = %s | %s | | |", ms(budget), verdict(t, "commit → running within the poll budget", p50 <= budget))
	t.Logf("| driftless's own share: p50 − 500 ms − create/start | %s (target < 300 ms) | | |", ms(p50-500*time.Millisecond-cs))
}

// engineCreateStart is the p50 of Docker's create+start of image, for
// targets stated as "+ container start".
func engineCreateStart(t *testing.T, cli *client.Client, image, app string, n int) time.Duration {
	t.Helper()
	ctx := context.Background()
	netName := manifest.ObjectName(app, manifest.DefaultNetwork)
	var ds []time.Duration
	for i := range n {
		t0 := time.Now()
		created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:       fmt.Sprintf("%s-engine-%d", app, i),
			Config:     &container.Config{Image: image},
			HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(netName)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
		_, _ = cli.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true})
	}
	return median(ds)
}

// TestBenchWebhookToRunning: polling too slow to matter (10m), a signed
// /hooks/generic webhook sent right after the push → new replica running.
func TestBenchWebhookToRunning(t *testing.T) {
	benchOnly(t)
	trials := benchInt("DRIFTLESS_BENCH_WEBHOOK_TRIALS", 20)
	const secret = "bench-webhook-secret"
	t.Setenv("DRIFTLESS_WEBHOOK_SECRET", secret)
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	cli := dockerClient(t)
	t.Cleanup(func() { testenv.RemoveApp(t, app) })
	repo, url, agent := startRepoAgent(t, app, map[string]string{"web.yaml": plainService("web", image, 1)}, "--interval", "10m")
	waitAllRunning(t, cli, app, 1, time.Minute)
	time.Sleep(3 * time.Second)

	body := []byte(fmt.Sprintf(`{"repository": %q, "ref": "refs/heads/main"}`, url))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	var hook []time.Duration
	send := func() {
		req, err := http.NewRequest(http.MethodPost, agent.URL+"/hooks/generic", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Signature", sig)
		t0 := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		hook = append(hook, time.Since(t0))
		if resp.StatusCode/100 != 2 {
			t.Fatalf("webhook: HTTP %d", resp.StatusCode)
		}
	}
	got, _ := scaleTrials(t, cli, repo, app, image, trials, send)
	cs := engineCreateStart(t, cli, image, app, 10)
	p50 := median(got)
	budget := 500*time.Millisecond + cs
	t.Logf("| measurement (interval 10m, signed webhook) | p50 | p90 | n |")
	t.Logf("|---|---|---|---|")
	t.Logf("| push done → webhook → new replica running | %s | %s | %d |", ms(p50), ms(quantile(got, 0.9)), len(got))
	t.Logf("| webhook HTTP round trip | %s | | |", ms(median(hook)))
	t.Logf("| engine create + start (same run) | %s | | 10 |", ms(cs))
	t.Logf("| target: 500 ms + create/start = %s | %s | | |", ms(budget), verdict(t, "webhook → running within 500 ms + create/start", p50 <= budget))
	t.Logf("| driftless's own share: p50 − create/start | %s (target < 500 ms) | | |", ms(p50-cs))
}

// TestBenchIdleAgent: `driftless run` with 100 converged replicas, 60s of
// nothing happening: CPU and RSS of the agent process from /proc.
func TestBenchIdleAgent(t *testing.T) {
	benchOnly(t)
	const replicas = 100
	window := time.Duration(benchInt("DRIFTLESS_BENCH_IDLE_SECONDS", 60)) * time.Second
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	cli := dockerClient(t)
	t.Cleanup(func() { testenv.RemoveApp(t, app) })
	_, _, agent := startRepoAgent(t, app, map[string]string{"web.yaml": plainService("web", image, replicas)}, "--interval", "30s")
	waitAllRunning(t, cli, app, replicas, 5*time.Minute)
	time.Sleep(10 * time.Second) // readiness settle and the pass's bookkeeping
	pid := testenv.AgentPID(t, agent.Data)

	idle := testenv.SampleIdle(t, pid, window)
	elapsed, cpu, rss1, maxRSS := idle.Elapsed, idle.CPUPercent, idle.RSSKB, idle.MaxRSS
	t.Logf("agent pid %d: %d clock ticks of CPU in %s", pid, idle.Ticks, elapsed.Round(time.Millisecond))
	t.Logf("| idle agent, %d replicas, %s window | measured | target | |", replicas, window)
	t.Logf("|---|---|---|---|")
	t.Logf("| CPU (utime+stime delta) | %.2f%% of a core | < 1%% | %s |", cpu, verdict(t, "idle CPU < 1% of a core", cpu < 1))
	t.Logf("| RSS (VmRSS) at end / max over window | %.1f MB / %.1f MB | < 60 MB | %s |",
		float64(rss1)/1024, float64(maxRSS)/1024, verdict(t, "idle RSS < 60 MB", maxRSS < 60*1024))
}
