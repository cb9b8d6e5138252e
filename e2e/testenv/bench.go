package testenv

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/moby/moby/client"
)

// BenchOnly skips unless DRIFTLESS_BENCH=1: these take minutes and load
// the machine, so plain `go test ./...` must not run them.
func BenchOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("DRIFTLESS_BENCH") != "1" {
		t.Skip("benchmark: set DRIFTLESS_BENCH=1 to run")
	}
}

// BenchInt reads an integer knob from the environment (trial counts), so a
// quick run can use fewer trials than the documented one.
func BenchInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// Quantile is the nearest-rank quantile of ds (q in [0,1]).
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Median is the middle of ds (see Quantile).
func Median(ds []time.Duration) time.Duration { return Quantile(ds, 0.5) }

// Ms formats d in milliseconds with one decimal, as the benchmark tables do.
func Ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// Verdict reports whether a target was met; a missed target fails the
// benchmark (the numbers are still printed in full).
func Verdict(t testing.TB, target string, ok bool) string {
	t.Helper()
	if ok {
		return "met"
	}
	t.Errorf("target missed: %s", target)
	return "NOT met"
}

// DockerClient is an API client for the engine of DOCKER_HOST (or the
// default socket), closed when the test ends.
func DockerClient(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// ForEach runs fn(0..n-1) with at most par at once.
func ForEach(n, par int, fn func(i int)) {
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

// PlainService is a service with no readiness section: driftless counts it
// ready after running SettleTime (2s) without a restart.
func PlainService(name, image string, replicas int) string {
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

// WaitRunning polls inspect every 10ms until the container called name is
// running with an ID other than notID, and returns when it saw that.
func WaitRunning(ctx context.Context, cli *client.Client, name, notID string) (time.Time, error) {
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

// StartedAt is the engine's State.StartedAt of a container.
func StartedAt(t testing.TB, cli *client.Client, id string) time.Time {
	t.Helper()
	res, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339Nano, res.Container.State.StartedAt)
	if err != nil {
		t.Fatalf("StartedAt of %s: %v", id, err)
	}
	return at
}

// WaitAllRunning waits until n containers of the app are running.
func WaitAllRunning(t *testing.T, cli *client.Client, app string, n int, timeout time.Duration) {
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

// StartRepoAgent commits manifests to a git daemon repo and runs
// `driftless run` following it.
func StartRepoAgent(t *testing.T, app string, files map[string]string, extra ...string) (*gitserver.Repo, string, *Agent) {
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
	agent := StartAgent(t, t.TempDir(), args...)
	return repo, url, agent
}

// EventLog holds the time of each container event by container ID and
// action, from the engine's own clock.
type EventLog struct {
	mu    sync.Mutex
	times map[string]time.Time
}

// RecordEvents follows the engine's container events until the test ends.
func RecordEvents(t *testing.T, cli *client.Client) *EventLog {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l := &EventLog{times: map[string]time.Time{}}
	res := cli.Events(ctx, client.EventsListOptions{Filters: make(client.Filters).Add("type", "container")})
	go func() {
		for m := range res.Messages {
			l.mu.Lock()
			l.times[m.Actor.ID+"/"+string(m.Action)] = time.Unix(0, m.TimeNano)
			l.mu.Unlock()
		}
	}()
	return l
}

// At is when container id had event action; it waits a moment for the
// event to arrive.
func (l *EventLog) At(id, action string) time.Time {
	for range 200 {
		l.mu.Lock()
		ts, ok := l.times[id+"/"+action]
		l.mu.Unlock()
		if ok {
			return ts
		}
		time.Sleep(5 * time.Millisecond)
	}
	panic("no " + action + " event for container " + id)
}
