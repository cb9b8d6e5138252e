package manyapps

// The scale run of issue 30 item 4: one agent with many apps, measured in
// one run. Opt-in:
//
//	DRIFTLESS_BENCH=1 go test -count=1 -run TestBenchScaleRun -v -timeout 120m ./e2e/manyapps/
//
// Knobs: DRIFTLESS_BENCH_SCALE_APPS (200), DRIFTLESS_BENCH_SCALE_REPLICAS
// (10), DRIFTLESS_BENCH_SCALE_SMALL_APPS (5), DRIFTLESS_BENCH_HEAL_TRIALS
// (20), DRIFTLESS_BENCH_COMMIT_TRIALS (5), DRIFTLESS_BENCH_IDLE_SECONDS
// (60).

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// TestBenchScaleRun: one agent deploys N apps × R replicas from one
// repository (deploy time), then idles (CPU, RSS, Docker requests); a
// second agent with a few apps × R, the control, is started beside it.
// Heals (`docker rm -f` of a random replica of a random app) and commits
// (an env change to one random app, pushed, then a webhook signed with
// that app's own secret, so only it is queued) alternate between the two
// agents trial by trial, on the same engine holding the same containers,
// so the large/small ratios show what the number of apps costs the agent.
func TestBenchScaleRun(t *testing.T) {
	testenv.BenchOnly(t)
	nApps := testenv.BenchInt("DRIFTLESS_BENCH_SCALE_APPS", 200)
	replicas := testenv.BenchInt("DRIFTLESS_BENCH_SCALE_REPLICAS", 10)
	nSmall := testenv.BenchInt("DRIFTLESS_BENCH_SCALE_SMALL_APPS", 5)
	healTrials := testenv.BenchInt("DRIFTLESS_BENCH_HEAL_TRIALS", 20)
	commitTrials := testenv.BenchInt("DRIFTLESS_BENCH_COMMIT_TRIALS", 5)
	window := time.Duration(testenv.BenchInt("DRIFTLESS_BENCH_IDLE_SECONDS", 60)) * time.Second
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("seed %d", seed)
	cli := testenv.DockerClient(t)

	// Pools of their own (/24s, as the default pool's), so neither fleet
	// takes the default pool's subnets from other tests on the engine.
	large := startScaleFleet(t, nApps, replicas, "10.216.0.0/16")
	statuses := testenv.WaitApp(t, large.agent, 60*time.Minute, "every app converged", allApps, converged(large.apps, replicas))
	deployTime := time.Since(large.started)
	containers := nApps * replicas
	t.Logf("%d apps × %d replicas (%d containers) converged in %s: %.0f ms per container", len(statuses), replicas, containers,
		deployTime.Round(time.Second), float64(deployTime.Milliseconds())/float64(containers))
	time.Sleep(15 * time.Second) // readiness settle and the last passes' bookkeeping, as TestBenchIdleFiftyApps

	pid := testenv.AgentPID(t, large.data)
	req0 := dockerRequests(t, large.agent.URL)
	idle := testenv.SampleIdle(t, pid, window)
	req1 := dockerRequests(t, large.agent.URL)
	var requests float64
	for op, v := range req1 {
		requests += v - req0[op]
	}

	smallStart := time.Now()
	small := startScaleFleet(t, nSmall, replicas, "10.217.0.0/20")
	testenv.WaitApp(t, small.agent, 10*time.Minute, "every small app converged", allApps, converged(small.apps, replicas))
	t.Logf("control: %d apps × %d replicas converged in %s", nSmall, replicas, time.Since(smallStart).Round(time.Second))
	time.Sleep(5 * time.Second)

	// Alternate which agent goes first, so neither always meets a warmer
	// engine.
	var healL, healS []time.Duration
	for i := range healTrials {
		if i%2 == 0 {
			healL = append(healL, large.heal(t, cli, rng))
			healS = append(healS, small.heal(t, cli, rng))
		} else {
			healS = append(healS, small.heal(t, cli, rng))
			healL = append(healL, large.heal(t, cli, rng))
		}
	}
	var firstL, firstS, allL, allS, readyL, readyS []time.Duration
	for i := range commitTrials {
		order := []*scaleFleet{large, small}
		if i%2 == 1 {
			order = []*scaleFleet{small, large}
		}
		for _, f := range order {
			first, all, ready := f.commit(t, cli, rng, i)
			if f == large {
				firstL, allL, readyL = append(firstL, first), append(allL, all), append(readyL, ready)
			} else {
				firstS, allS, readyS = append(firstS, first), append(allS, all), append(readyS, ready)
			}
		}
	}

	med := testenv.Median
	ratio := func(l, s []time.Duration) float64 { return med(l).Seconds() / med(s).Seconds() }
	p99 := func(ds []time.Duration) time.Duration { return testenv.Quantile(ds, 0.99) }
	t.Logf("| scale run: %d apps × %d replicas (%d containers), control %d apps × %d | measured | target | |", nApps, replicas, containers, nSmall, replicas)
	t.Logf("|---|---|---|---|")
	t.Logf("| deploy: agent start → every replica ready (API) | %s (%.0f ms per container) | | |", deployTime.Round(time.Second), float64(deployTime.Milliseconds())/float64(containers))
	t.Logf("| idle CPU (utime+stime delta: %d ticks in %s) | %.2f%% of a core | < 1%% (§10's) | %s |", idle.Ticks, idle.Elapsed.Round(10*time.Millisecond), idle.CPUPercent,
		testenv.Verdict(t, "idle CPU < 1% of a core", idle.CPUPercent < 1))
	t.Logf("| idle RSS (VmRSS) at end / max over the window | %.1f MB / %.1f MB | < 80 MB (§10's) | %s |", float64(idle.RSSKB)/1024, float64(idle.MaxRSS)/1024,
		testenv.Verdict(t, "idle RSS < 80 MB", idle.MaxRSS < 80*1024))
	t.Logf("| idle Docker API requests per minute | %.1f | | |", requests/idle.Elapsed.Minutes())
	t.Logf("| heal: `docker rm -f` returned → replacement's StartedAt, p50 (n = %d each) | %s; control %s | | |", len(healL), testenv.Ms(med(healL)), testenv.Ms(med(healS)))
	t.Logf("| heal p99 (nearest rank: with n = %d, the max) | %s; control %s | | |", len(healL), testenv.Ms(p99(healL)), testenv.Ms(p99(healS)))
	t.Logf("| heal p50 large / control | %.2f× | ≤ 1.25× | %s |", ratio(healL, healS), testenv.Verdict(t, "heal p50 independent of the app count (≤ 1.25×)", ratio(healL, healS) <= 1.25))
	t.Logf("| heal p99 large / control | %.2f× | | |", p99(healL).Seconds()/p99(healS).Seconds())
	t.Logf("| commit: push done → first new replica's StartedAt, median (n = %d each) | %s; control %s | | |", len(firstL), testenv.Ms(med(firstL)), testenv.Ms(med(firstS)))
	t.Logf("| commit: push done → last of %d new replicas' StartedAt, median | %s; control %s | | |", replicas, testenv.Ms(med(allL)), testenv.Ms(med(allS)))
	t.Logf("| commit: push done → app synced, %d replicas ready (API poll, 200 ms) | %s; control %s | | |", replicas, testenv.Ms(med(readyL)), testenv.Ms(med(readyS)))
	t.Logf("| commit → first new replica, median large / control | %.2f× | ≤ 1.25× | %s |", ratio(firstL, firstS), testenv.Verdict(t, "commit → running independent of the app count (≤ 1.25×)", ratio(firstL, firstS) <= 1.25))
	t.Logf("| commit → all new replicas, median large / control | %.2f× | ≤ 1.25× | %s |", ratio(allL, allS), testenv.Verdict(t, "commit → all replicas independent of the app count (≤ 1.25×)", ratio(allL, allS) <= 1.25))
	t.Logf("heal samples large %v", healL)
	t.Logf("heal samples control %v", healS)
	t.Logf("commit first/all samples large %v / %v", firstL, allL)
	t.Logf("commit first/all samples control %v / %v", firstS, allS)
}

// scaleFleet is a fleet whose apps each have a webhook secret of their own,
// followed by one agent polling at the default interval.
type scaleFleet struct {
	*fleet
	replicas int
	secrets  map[string]string
	data     string
	agent    *testenv.Agent
	started  time.Time
}

func startScaleFleet(t *testing.T, n, replicas int, pool string) *scaleFleet {
	t.Helper()
	dir := t.TempDir()
	secrets := map[string]string{}
	f := newFleet(t, n, replicas, "", "addressPool: {base: "+pool+", size: 24}", func(app string) string {
		secrets[app] = "hook-" + app + "-" + testenv.RandHex(8)
		file := filepath.Join(dir, app)
		if err := os.WriteFile(file, []byte(secrets[app]), 0o600); err != nil {
			t.Fatal(err)
		}
		return ", webhookSecretFile: " + file
	})
	s := &scaleFleet{fleet: f, replicas: replicas, secrets: secrets, data: t.TempDir(), started: time.Now()}
	s.agent = testenv.StartAgent(t, s.data, "run", "--config", f.config)
	return s
}

// heal removes one random replica of a random app with `docker rm -f` and
// returns the time from the command's return to the replacement's
// StartedAt.
func (s *scaleFleet) heal(t *testing.T, cli *client.Client, rng *rand.Rand) time.Duration {
	t.Helper()
	ctx := context.Background()
	app := s.apps[rng.IntN(len(s.apps))]
	name := manifest.ContainerName(app, "web", 1+rng.IntN(s.replicas))
	old, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("docker", "rm", "-f", name).CombinedOutput(); err != nil {
		t.Fatalf("docker rm -f %s: %v\n%s", name, err, out)
	}
	gone := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	_, err = testenv.WaitRunning(wctx, cli, name, old.Container.ID)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	d := testenv.StartedAt(t, cli, name).Sub(gone)
	// The repair pass waits 2 s for readiness: let it end so trials do not
	// queue behind each other.
	time.Sleep(2500 * time.Millisecond)
	return d
}

// commit changes an env var of one random app, pushes, sends a generic
// webhook signed with that app's secret, and returns the times from the
// push's return to the first and the last new replica's StartedAt, and to
// the API reporting the app synced with every replica ready.
func (s *scaleFleet) commit(t *testing.T, cli *client.Client, rng *rand.Rand, trial int) (first, all, ready time.Duration) {
	t.Helper()
	app := s.apps[rng.IntN(len(s.apps))]
	byApp := func(ctx context.Context, c *web.Client) (status.AppStatus, error) { return c.App(ctx, app) }
	before := testenv.WaitApp(t, s.agent, time.Minute, app+" converged before the commit", byApp, func(st status.AppStatus) bool {
		return st.Applied != nil && testenv.ConvergedTo(st.Applied.SHA, s.replicas, s.image)(st)
	})
	old := testenv.ContainerIDs(before)
	s.repo.WriteFile("apps/"+app+"/web.yaml", testenv.PlainService("web", s.image, s.replicas)+fmt.Sprintf("  env:\n    BENCH_TRIAL: \"%d\"\n", trial))
	sha := s.repo.Commit(fmt.Sprintf("%s: trial %d", app, trial))
	pushed := time.Now()
	s.webhook(t, app)
	st := testenv.WaitApp(t, s.agent, 5*time.Minute, app+" runs the commit", byApp, testenv.ConvergedTo(sha, s.replicas, s.image))
	ready = time.Since(pushed)
	for i, id := range testenv.ContainerIDs(st) {
		if slices.Contains(old, id) {
			t.Fatalf("%s: container %s survived the env change", app, id)
		}
		d := testenv.StartedAt(t, cli, id).Sub(pushed)
		if i == 0 || d < first {
			first = d
		}
		all = max(all, d)
	}
	time.Sleep(2 * time.Second)
	return first, all, ready
}

// webhook sends a signed generic push hook naming the fleet's repository
// and checks that it queued app alone.
func (s *scaleFleet) webhook(t *testing.T, app string) {
	t.Helper()
	body := fmt.Appendf(nil, `{"repository": %q, "ref": "refs/heads/main"}`, s.url)
	mac := hmac.New(sha256.New, []byte(s.secrets[app]))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, s.agent.URL+"/hooks/generic", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Queued []string `json:"queued"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook: HTTP %d (%v)", resp.StatusCode, err)
	}
	if !slices.Equal(answer.Queued, []string{app}) {
		t.Fatalf("webhook for %s queued %s", app, strings.Join(answer.Queued, ", "))
	}
}
