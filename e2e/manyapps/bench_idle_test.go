package manyapps

// The idle-agent benchmark of issue 18: one agent, 50 apps × 20 replicas
// (1,000 containers, 50 app networks), nothing happening. Opt-in:
//
//	DRIFTLESS_BENCH=1 go test -run TestBenchIdleFiftyApps -v -timeout 60m ./e2e/manyapps/
//
// DRIFTLESS_BENCH_IDLE_SECONDS sets the window (default 60).

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

func TestBenchIdleFiftyApps(t *testing.T) {
	if os.Getenv("DRIFTLESS_BENCH") != "1" {
		t.Skip("benchmark: set DRIFTLESS_BENCH=1 to run")
	}
	apps := benchInt("DRIFTLESS_BENCH_APPS", 50)
	replicas := benchInt("DRIFTLESS_BENCH_REPLICAS", 20)
	window := time.Duration(benchInt("DRIFTLESS_BENCH_IDLE_SECONDS", 60)) * time.Second
	f := newFleet(t, apps, replicas, "", "", nil) // the default poll interval, 30s
	data := t.TempDir()
	start := time.Now()
	agent := testenv.StartAgent(t, data, "run", "--config", f.config)
	testenv.WaitApp(t, agent, 45*time.Minute, "every app converged", allApps, converged(f.apps, replicas))
	t.Logf("%d apps × %d replicas converged in %s", apps, replicas, time.Since(start).Round(time.Second))
	time.Sleep(15 * time.Second) // readiness settle and the last passes' bookkeeping
	pid := testenv.AgentPID(t, data)

	req0 := dockerRequests(t, agent.URL)
	idle := testenv.SampleIdle(t, pid, window)
	req1 := dockerRequests(t, agent.URL)
	elapsed, cpu, rss1, maxRSS := idle.Elapsed, idle.CPUPercent, idle.RSSKB, idle.MaxRSS
	perMin := func(n float64) float64 { return n / elapsed.Minutes() }
	var total float64
	var ops []string
	for op, v := range req1 {
		if d := v - req0[op]; d > 0 {
			total += d
			ops = append(ops, fmt.Sprintf("%s %.0f", op, perMin(d)))
		}
	}
	slices.Sort(ops)
	t.Logf("agent pid %d: %d clock ticks of CPU in %s", pid, idle.Ticks, elapsed.Round(time.Millisecond))
	t.Logf("| idle agent, %d apps × %d replicas, %s window | measured | target | |", apps, replicas, window)
	t.Logf("|---|---|---|---|")
	t.Logf("| CPU (utime+stime delta) | %.2f%% of a core | < 1%% | %s |", cpu, verdict(t, "idle CPU < 1% of a core", cpu < 1))
	t.Logf("| RSS (VmRSS) at end / max over window | %.1f MB / %.1f MB | < 80 MB | %s |", float64(rss1)/1024, float64(maxRSS)/1024, verdict(t, "idle RSS < 80 MB", maxRSS < 80*1024))
	t.Logf("| Docker API requests per minute | %.1f (%s) | only the resync's | |", perMin(total), strings.Join(ops, ", "))
}

// verdict marks a target met or missed; a missed one fails the benchmark.
func verdict(t *testing.T, what string, ok bool) string {
	t.Helper()
	if ok {
		return "met"
	}
	t.Errorf("target missed: %s", what)
	return "MISSED"
}

func benchInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// dockerRequests reads driftless_docker_requests_total by op from the
// agent's /metrics.
func dockerRequests(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	const prefix = `driftless_docker_requests_total{op="`
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		op, rest, ok := strings.Cut(line[len(prefix):], `"} `)
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(rest, 64)
		out[op] = v
	}
	if len(out) == 0 {
		t.Fatalf("no driftless_docker_requests_total on %s/metrics", url)
	}
	return out
}
