package engines

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
)

// TestBenchRemoteHeal (issue 29, Speed): a heal on an engine reached over
// TCP with TLS, against that engine's own create+start through the same
// kind of connection (a TLS client of the test), alternating in one run.
// A heal is timed from the moment the removal returns (as "Heal as a user
// times it" does on the local engine), create+start from the moment the
// create is sent, both to the new container's StartedAt, the engine's own
// stamp.
// Target: heal ≤ 1.3× create+start (medians). Run with DRIFTLESS_BENCH=1.
func TestBenchRemoteHeal(t *testing.T) {
	testenv.BenchOnly(t)
	trials := testenv.BenchInt("DRIFTLESS_BENCH_REMOTE_HEAL_TRIALS", 10)
	image := testenv.WorkloadImage(t, "v1")
	certs := makeCerts(t)
	tcp := testenv.FreeAddr(t)
	b := privengine.StartWithArgs(t, "--host", "tcp://"+tcp, "--tlsverify",
		"--tlscacert", certs.ca, "--tlscert", certs.serverCert, "--tlskey", certs.serverKey)
	b.LoadImages(image)
	cli, err := client.New(client.WithHost("tcp://"+tcp), client.WithTLSClientConfig(certs.ca, certs.clientCert, certs.clientKey))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })

	app := prefix() + "-heal"
	repo, url := platformRepo(t)
	repo.WriteFile("apps/"+app+"/web.yaml", testenv.PlainService("web", image, trials))
	repo.Commit("one app on b")
	cfg := fmt.Sprintf(`engines:
  - {name: b, host: 'tcp://%s', tls: {caFile: %s, certFile: %s, keyFile: %s}}
apps:
  - {name: %s, repo: %s, branch: main, path: apps/%s, interval: 10m, allowInsecureTransport: true, engine: b}
`, tcp, certs.ca, certs.clientCert, certs.clientKey, app, url, app)
	path := writeConfig(t, cfg)
	agent := testenv.StartAgent(t, testenv.DataDir(t), "run", "--config", path)
	testenv.WaitAllRunning(t, cli, app, trials, 3*time.Minute)
	time.Sleep(3 * time.Second) // the first pass's readiness wait

	ctx := context.Background()
	netName := manifest.ObjectName(app, manifest.DefaultNetwork)
	evs := testenv.RecordEvents(t, cli)
	// Where a heal's time goes, by the engine's own event stamps: the
	// removal until its destroy event, destroy until the agent's create,
	// create until StartedAt.
	var heal, engine, toDestroy, react, createStart []time.Duration
	for i := 1; i <= trials; i++ {
		// The engine's own create+start of the same work, on the app's network.
		t0 := time.Now()
		created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:   fmt.Sprintf("%s-engine-%d", app, i),
			Config: &container.Config{Image: image},
			HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(netName),
				RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyUnlessStopped}},
			NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{netName: {Aliases: []string{"web"}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		engine = append(engine, testenv.StartedAt(t, cli, created.ID).Sub(t0))
		_, _ = cli.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true})

		// A heal: one replica removed by hand.
		name := manifest.ContainerName(app, "web", i)
		old, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		if _, err := cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		t0 = time.Now() // as a user times it: from the removal's return
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		_, err = testenv.WaitRunning(wctx, cli, name, old.Container.ID)
		cancel()
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", i, err, agent.Logs())
		}
		started := testenv.StartedAt(t, cli, name)
		heal = append(heal, started.Sub(t0))
		res, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		destroyed, createdAt := evs.At(old.Container.ID, "destroy"), evs.At(res.Container.ID, "create")
		toDestroy, react, createStart = append(toDestroy, destroyed.Sub(sent)), append(react, createdAt.Sub(destroyed)), append(createStart, started.Sub(createdAt))
		time.Sleep(2500 * time.Millisecond) // the repair pass's readiness wait
	}
	h, e := testenv.Median(heal), testenv.Median(engine)
	ratio := float64(h) / float64(e)
	t.Logf("engine over TCP+TLS, %d trials: heal median %s (p90 %s), create+start median %s (p90 %s): %.2f× %s",
		trials, testenv.Ms(h), testenv.Ms(testenv.Quantile(heal, 0.9)), testenv.Ms(e), testenv.Ms(testenv.Quantile(engine, 0.9)), ratio,
		testenv.Verdict(t, "≤ 1.3×", ratio <= 1.3))
	// Idle cost of the engine: requests over a quiet minute (the app polls
	// every 10 minutes; nothing changes).
	idle := testenv.BenchInt("DRIFTLESS_BENCH_IDLE_SECONDS", 60)
	time.Sleep(5 * time.Second)
	before := engineRequests(t, agent.URL, "b")
	time.Sleep(time.Duration(idle) * time.Second)
	after := engineRequests(t, agent.URL, "b")
	t.Logf("idle engine b: %.0f Docker requests in %d s (by op: %s; %.0f since the agent started)", total(after)-total(before), idle, diffOps(before, after), total(after))
	t.Logf("heal split (medians): removal sent → its destroy event %s, destroy → the agent's create %s, create → StartedAt %s",
		testenv.Ms(testenv.Median(toDestroy)), testenv.Ms(testenv.Median(react)), testenv.Ms(testenv.Median(createStart)))
}

// engineRequests reads driftless_docker_requests_total of one engine by op.
func engineRequests(t *testing.T, agentURL, engine string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	prefix := `driftless_docker_requests_total{engine="` + engine + `",op="`
	for _, line := range strings.Split(get(t, agentURL+"/metrics"), "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		op, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err == nil {
			out[op] = v
		}
	}
	return out
}

func total(m map[string]float64) float64 {
	var n float64
	for _, v := range m {
		n += v
	}
	return n
}

// diffOps lists the ops whose count changed, as "op +n".
func diffOps(before, after map[string]float64) string {
	var parts []string
	for op, v := range after {
		if d := v - before[op]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s +%.0f", op, d))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
