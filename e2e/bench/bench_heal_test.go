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
	"github.com/moby/moby/client"
)

// TestBenchHealInterference: replicas removed while the replacement is in
// its readiness wait (the new container is removed again as soon as it
// runs), and limits changed with `docker update`, each against the engine's
// own create+start time measured in the same run.
func TestBenchHealInterference(t *testing.T) {
	testenv.BenchOnly(t)
	trials := testenv.BenchInt("DRIFTLESS_BENCH_HEAL_TRIALS", 20)
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	cli := testenv.DockerClient(t)
	ctx := context.Background()
	svc := fmt.Sprintf(`apiVersion: driftless.dev/v1
kind: Service
metadata:
  name: web
spec:
  image: %s
  replicas: %d
  env: {WORKLOAD_READY_AFTER: "3s"}
  resources: {memory: 64Mi}
  readiness: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
  stopGracePeriodSeconds: 1
`, image, trials)
	_, _, agent := testenv.StartRepoAgent(t, app, map[string]string{"web.yaml": svc}, "--interval", "30s")
	testenv.WaitAllRunning(t, cli, app, trials, 3*time.Minute)
	time.Sleep(5 * time.Second) // let the first pass finish waiting for readiness

	// In-readiness removals: remove a ready replica, wait for its
	// replacement to run, remove that one too (it waits for readiness for
	// 3s), and time the second replacement from the moment the first
	// replacement is gone.
	var inWait []time.Duration
	for i := 1; i <= trials; i++ {
		name := manifest.ContainerName(app, "web", i)
		old, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		if _, err := testenv.WaitRunning(wctx, cli, name, old.Container.ID); err != nil {
			cancel()
			t.Fatalf("trial %d: %v\n%s", i, err, agent.Logs())
		}
		first, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if _, err := cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true}); err != nil {
			cancel()
			t.Fatal(err)
		}
		gone := time.Now()
		t1, err := testenv.WaitRunning(wctx, cli, name, first.Container.ID)
		cancel()
		if err != nil {
			t.Fatalf("trial %d (in readiness): %v\n%s", i, err, agent.Logs())
		}
		inWait = append(inWait, t1.Sub(gone))
		time.Sleep(4500 * time.Millisecond) // past the replacement's readiness wait
	}

	// docker update: memory raised by hand → back to 64Mi.
	var updates []time.Duration
	for i := 1; i <= min(trials, 10); i++ {
		name := manifest.ContainerName(app, "web", i)
		if out, err := exec.Command("docker", "update", "--memory", "128m", "--memory-swap", "256m", name).CombinedOutput(); err != nil {
			t.Fatalf("docker update: %v\n%s", err, out)
		}
		changed := time.Now()
		deadline := changed.Add(30 * time.Second)
		for {
			res, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
			if err == nil && res.Container.HostConfig.Memory == 64<<20 {
				updates = append(updates, time.Since(changed))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: memory not put back within 30s\n%s", name, agent.Logs())
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
	}
	cs := engineCreateStart(t, cli, image, app, 10)

	w50, w99, u50, u99 := testenv.Median(inWait), testenv.Quantile(inWait, 0.99), testenv.Median(updates), testenv.Quantile(updates, 0.99)
	t.Logf("| measurement | p50 | p99 | n |")
	t.Logf("|---|---|---|---|")
	t.Logf("| heal: replacement removed during its readiness wait → next replacement running | %s | %s | %d |", testenv.Ms(w50), testenv.Ms(w99), len(inWait))
	t.Logf("| engine create + start, same image and network | %s | | 10 |", testenv.Ms(cs))
	t.Logf("| in-readiness heal p50 / create+start | %.2f× (target ≤ 1.2×: %s) | | |", w50.Seconds()/cs.Seconds(),
		testenv.Verdict(t, "in-readiness heal p50 ≤ 1.2× create+start", w50.Seconds() <= 1.2*cs.Seconds()))
	t.Logf("| in-readiness heal p99 / create+start | %.2f× (target < 2×: %s) | | |", w99.Seconds()/cs.Seconds(),
		testenv.Verdict(t, "in-readiness heal p99 < 2× create+start", w99.Seconds() < 2*cs.Seconds()))
	t.Logf("| `docker update --memory` → put back in place | %s | %s | %d |", testenv.Ms(u50), testenv.Ms(u99), len(updates))
	t.Logf("| target: update repaired within 1 s | %s | | |", testenv.Verdict(t, "docker update repaired within 1 s (p99)", u99 <= time.Second))
	if h := agent.Logs(); strings.Contains(h, "fix the image") {
		t.Errorf("an interference was reported as a bad release:\n%s", h)
	}
}
