package bench

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// TestBenchHealUserTimed times healing as a user would with a stopwatch and
// the docker CLI: from the moment `docker rm -f` returns to the
// replacement's State.StartedAt, next to `docker run -d` of the same image
// → that container's StartedAt, alternating in one run.
//
// TestBenchHeal counts differently: it stops when its 10 ms inspect poll
// sees the replacement running (up to a poll period plus an inspect after
// StartedAt), and its create+start baseline stops when the start call
// returns (also after StartedAt) and runs after all heal trials rather than
// between them. Here both ends are the engine's own StartedAt stamp.
//
// The engine baseline is run twice per trial: on the default bridge, as a
// user types it, and on the app's network with the restart policy and
// alias the agent gives its replicas, which is the work a heal asks of
// the engine.
func TestBenchHealUserTimed(t *testing.T) {
	testenv.BenchOnly(t)
	trials := testenv.BenchInt("DRIFTLESS_BENCH_HEAL_USER_TRIALS", 12)
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skipf("docker CLI not installed: %v", err)
	}
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	cli := testenv.DockerClient(t)
	t.Cleanup(func() { testenv.RemoveApp(t, app) })
	ctx := context.Background()
	// Replicas 1..trials are removed with the CLI, the next ones with the API.
	_, _, agent := testenv.StartRepoAgent(t, app, map[string]string{"web.yaml": testenv.PlainService("web", image, 2*trials)}, "--interval", "30s")
	testenv.WaitAllRunning(t, cli, app, 2*trials, 3*time.Minute)
	time.Sleep(3 * time.Second) // let the first pass finish waiting for readiness
	netName := manifest.ObjectName(app, manifest.DefaultNetwork)
	evs := testenv.RecordEvents(t, cli)

	run := func(args ...string) (string, time.Time) {
		out, err := exec.CommandContext(ctx, docker, args...).CombinedOutput()
		returned := time.Now()
		if err != nil {
			t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), returned
	}
	startedAt := func(id string) time.Time { return testenv.StartedAt(t, cli, id) }
	var healAgent, healEngine, runCLI, runEngine, healWindow, rmLag, apiCreate []time.Duration
	engine := func(args ...string) (toStarted, toReturned time.Duration) {
		t0 := time.Now()
		id, returned := run(append([]string{"run", "-d"}, append(args, image)...)...)
		at := startedAt(id)
		created := evs.At(id, "create")
		runCLI, runEngine = append(runCLI, created.Sub(t0)), append(runEngine, at.Sub(created))
		run("rm", "-f", id)
		return at.Sub(t0), returned.Sub(t0)
	}

	// apiEngine is the same on the app's network through the API, as
	// TestBenchHeal's baseline: create + start, no CLI process.
	apiEngine := func(i int) (toStarted, toReturned time.Duration) {
		t0 := time.Now()
		created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:   fmt.Sprintf("%s-engine-%d", app, i),
			Config: &container.Config{Image: image},
			HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(netName),
				RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyUnlessStopped}},
			NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
				netName: {Aliases: []string{"web"}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		returned := time.Now()
		at := startedAt(created.ID)
		apiCreate = append(apiCreate, evs.At(created.ID, "create").Sub(t0))
		_, _ = cli.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true})
		return at.Sub(t0), returned.Sub(t0)
	}

	var heal, healPoll, healAPI, bridge, bridgeRet, onNet, onNetRet, api, apiRet []time.Duration
	healOnce := func(i int, viaAPI bool) {
		name := manifest.ContainerName(app, "web", i)
		old, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var gone time.Time
		if viaAPI {
			if _, err := cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			gone = time.Now()
		} else {
			_, gone = run("rm", "-f", name)
		}
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		seen, err := testenv.WaitRunning(wctx, cli, name, old.Container.ID)
		cancel()
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", i, err, agent.Logs())
		}
		if viaAPI {
			healAPI = append(healAPI, startedAt(name).Sub(gone))
		} else {
			res, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			created := evs.At(res.Container.ID, "create")
			healAgent = append(healAgent, created.Sub(gone))
			destroyed := evs.At(old.Container.ID, "destroy")
			healWindow, rmLag = append(healWindow, created.Sub(destroyed)), append(rmLag, gone.Sub(destroyed))
			healEngine = append(healEngine, startedAt(name).Sub(created))
			heal = append(heal, startedAt(name).Sub(gone))
			healPoll = append(healPoll, seen.Sub(gone))
		}
		// The repair pass waits 2s for readiness; start the next trial
		// after it so trials do not queue behind each other.
		time.Sleep(2500 * time.Millisecond)
	}
	engineOnce := func(i int) {
		s, r := engine()
		bridge, bridgeRet = append(bridge, s), append(bridgeRet, r)
		s, r = engine("--network", netName, "--network-alias", "web", "--restart", "unless-stopped")
		onNet, onNetRet = append(onNet, s), append(onNetRet, r)
		s, r = apiEngine(i)
		api, apiRet = append(api, s), append(apiRet, r)
	}
	for i := 1; i <= trials; i++ {
		// Alternate who goes first, so neither always runs on a warmer engine.
		if i%2 == 0 {
			healOnce(i, false)
			engineOnce(i)
			healOnce(trials+i, true)
		} else {
			healOnce(trials+i, true)
			engineOnce(i)
			healOnce(i, false)
		}
	}

	h, b, n := testenv.Median(heal), testenv.Median(bridge), testenv.Median(onNet)
	t.Logf("| measurement, alternating in one run | p50 | p90 | n |")
	t.Logf("|---|---|---|---|")
	row := func(what string, ds []time.Duration) {
		t.Logf("| %s | %s | %s | %d |", what, testenv.Ms(testenv.Median(ds)), testenv.Ms(testenv.Quantile(ds, 0.9)), len(ds))
	}
	row("heal: `docker rm -f` returned → replacement's StartedAt", heal)
	row("heal: `docker rm -f` returned → a 10 ms poll sees it running (as TestBenchHeal)", healPoll)
	row("of which `rm -f` returned → the replacement's create event (the agent: event, pass, create call)", healAgent)
	row("`destroy` event → the replacement's `create` event", healWindow)
	row("`destroy` event → `docker rm -f` returned", rmLag)
	row("API create call made → `create` event", apiCreate)
	row("of which create event → StartedAt (the engine)", healEngine)
	row("`docker run -d` (default bridge) → StartedAt", bridge)
	row("`docker run -d` (default bridge) → the CLI returns", bridgeRet)
	row("`docker run -d` on the app's network, alias, restart policy → StartedAt", onNet)
	row("`docker run -d` on the app's network → the CLI returns", onNetRet)
	row("`docker run -d`, both networks: CLI started → create event (CLI start, ping, create call)", runCLI)
	row("`docker run -d`, both networks: create event → StartedAt (the engine)", runEngine)
	row("heal: API remove returned → replacement's StartedAt", healAPI)
	row("API create + start on the app's network → StartedAt", api)
	row("API create + start on the app's network → start returns (TestBenchHeal's baseline)", apiRet)
	t.Logf("| heal p50 / `docker run -d` (bridge) p50, both to StartedAt | %.2f× (target ≤ 1.1×: %s) | | |", h.Seconds()/b.Seconds(), testenv.Verdict(t, "user-timed heal p50 ≤ 1.1× docker run -d", h.Seconds() <= 1.1*b.Seconds()))
	t.Logf("| heal p50 / `docker run -d` (app network) p50, both to StartedAt | %.2f× | | |", h.Seconds()/n.Seconds())
	t.Logf("| heal (API rm) p50 / API create+start p50, both to StartedAt | %.2f× | | |", testenv.Median(healAPI).Seconds()/testenv.Median(api).Seconds())
}
