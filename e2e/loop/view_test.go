package loop

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/deploy/view"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"
)

// testLogger writes the engine's log lines into the test's output, so a
// divergence's "what differed" shows up when the test fails.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// watchedEngine connects an engine with its view followed from the event
// stream, checked against a fresh list every resync, and waits until
// Observe reads the view.
func watchedEngine(t *testing.T, resync time.Duration) *deploy.Engine {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	eng, err := deploy.New(ctx, deploy.Options{Logger: log, ViewResync: resync})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = eng.Watch(ctx, func(drift.EngineEvent) {})
	}()
	t.Cleanup(func() { cancel(); <-done; eng.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for !eng.ViewLive() {
		if time.Now().After(deadline) {
			t.Fatal("the engine view was not built within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return eng
}

// churner makes changes to its own labelled objects with the engine API
// directly, as other actors on the host would.
type churner struct {
	t     *testing.T
	cli   *client.Client
	app   string
	image string
	nets  []string
	// leave makes the workers' stops, removals and disconnects one at a
	// time: on Docker before 20.10.27 two containers leaving one network
	// at once can deadlock the engine (deploy/internal/netleave), and
	// this test's engine is every test's.
	leave  sync.Mutex
	mu     sync.Mutex
	live   []string // container IDs not yet removed
	ops    map[string]int
	errors []string
}

func (c *churner) note(op string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.errors = append(c.errors, op+": "+err.Error())
		return
	}
	c.ops[op]++
}

// pick returns a live container, or "" when there is none.
func (c *churner) pick(r *rand.Rand, remove bool) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.live) == 0 {
		return ""
	}
	i := r.IntN(len(c.live))
	id := c.live[i]
	if remove {
		c.live = slices.Delete(c.live, i, i+1)
	}
	return id
}

// step makes one random change; every change is one engine API call (two
// for a start+stop), on containers that only this test touches. Some
// carry the app's label, some do not (foreign to every app).
func (c *churner) step(ctx context.Context, r *rand.Rand, worker, i int) {
	c.mu.Lock()
	few := len(c.live) < 4
	c.mu.Unlock()
	switch op := r.IntN(10); {
	case op < 3 || few:
		labels := map[string]string{drift.LabelApp: c.app, "churn.worker": fmt.Sprint(worker)}
		if r.IntN(3) == 0 {
			// Foreign: not this app's, and not any app's.
			labels = map[string]string{"churn.app": c.app}
		}
		res, err := c.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:   fmt.Sprintf("%s-w%d-%d", c.app, worker, i),
			Config: &container.Config{Image: c.image, Labels: labels},
			// On a network of the test's own, not Docker's default bridge,
			// which other packages' containers leave at any time.
			HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(c.nets[0])},
		})
		c.note("create", err)
		if err == nil {
			c.mu.Lock()
			c.live = append(c.live, res.ID)
			c.mu.Unlock()
		}
	case op == 3:
		if id := c.pick(r, true); id != "" {
			c.leave.Lock()
			_, err := c.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
			c.leave.Unlock()
			c.note("remove", err)
		}
	case op == 4:
		if id := c.pick(r, false); id != "" {
			_, err := c.cli.ContainerRename(ctx, id, client.ContainerRenameOptions{NewName: fmt.Sprintf("%s-w%d-r%d", c.app, worker, i)})
			c.note("rename", err)
		}
	case op == 5:
		if id := c.pick(r, false); id != "" {
			_, err := c.cli.ContainerUpdate(ctx, id, client.ContainerUpdateOptions{Resources: &container.Resources{CPUShares: int64(512 + r.IntN(512))}})
			c.note("update", ignoreConflict(err))
		}
	case op == 6:
		if id := c.pick(r, false); id != "" {
			_, err := c.cli.NetworkConnect(ctx, c.nets[r.IntN(len(c.nets))], client.NetworkConnectOptions{Container: id})
			c.note("connect", ignoreConflict(err))
		}
	case op == 7:
		if id := c.pick(r, false); id != "" {
			c.leave.Lock()
			_, err := c.cli.NetworkDisconnect(ctx, c.nets[r.IntN(len(c.nets))], client.NetworkDisconnectOptions{Container: id, Force: true})
			c.leave.Unlock()
			c.note("disconnect", ignoreConflict(err))
		}
	case op == 8:
		if id := c.pick(r, false); id != "" {
			_, err := c.cli.ContainerStart(ctx, id, client.ContainerStartOptions{})
			c.note("start", ignoreConflict(err))
			timeout := 0
			c.leave.Lock()
			_, err = c.cli.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &timeout})
			c.leave.Unlock()
			c.note("stop", ignoreConflict(err))
		}
	default:
		name := fmt.Sprintf("%s-v%d-%d", c.app, worker, i)
		_, err := c.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: map[string]string{drift.LabelApp: c.app}})
		c.note("volume create", err)
		if err == nil && r.IntN(2) == 0 {
			_, err = c.cli.VolumeRemove(ctx, name, client.VolumeRemoveOptions{})
			c.note("volume remove", err)
		}
	}
}

// ignoreConflict drops the errors two actors racing on one container
// cause (already connected, not connected, removed meanwhile, updated
// while its process is being deleted): the change simply did not happen.
func ignoreConflict(err error) error {
	if err == nil {
		return nil
	}
	// Lower case: the engine words the same race "No such container" or
	// "no such container" depending on the call.
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"already exists", "is not connected", "no such container", "not found", "not running", "stopped container", "already started", "marked for removal", "in progress", "deleted process"} {
		if strings.Contains(msg, s) {
			return nil
		}
	}
	return err
}

// TestViewStaysExactUnderChurn: several actors create, remove, rename,
// update, start and stop containers, connect and disconnect them from
// networks and create and remove volumes, all at once, while the view
// checks itself against a fresh list every two seconds. Afterwards the
// view must equal a fresh observation, and no check may have found a
// divergence: every change reached the view through its event.
func TestViewStaysExactUnderChurn(t *testing.T) {
	// Not parallel: it checks the view of the whole engine against the engine
	// (divergence 0); the package's other tests' churn would show up in it.
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	cli := testenv.DockerClient(t)
	ctx := context.Background()
	t.Cleanup(func() { removeForeignChurn(t, cli, app) })
	eng := watchedEngine(t, 2*time.Second)

	c := &churner{t: t, cli: cli, app: app, image: image, ops: map[string]int{}}
	for i := range 2 {
		name := fmt.Sprintf("%s-net%d", app, i)
		if _, err := cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Labels: map[string]string{drift.LabelApp: app}}); err != nil {
			t.Fatal(err)
		}
		c.nets = append(c.nets, name)
	}

	const workers, steps = 4, 90
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for i := range steps {
				c.step(ctx, r, w, i)
			}
		})
	}
	wg.Wait()
	if len(c.errors) > 0 {
		t.Fatalf("churn: %d engine calls failed, first: %s", len(c.errors), c.errors[0])
	}
	total := 0
	for _, n := range c.ops {
		total += n
	}
	t.Logf("churn: %d changes %v", total, c.ops)
	if total < 300 || c.ops["rename"] == 0 || c.ops["connect"] == 0 || c.ops["disconnect"] == 0 || c.ops["remove"] == 0 {
		t.Fatalf("churn too thin to prove anything: %v", c.ops)
	}

	requireViewExact(t, eng, app)
}

// requireViewExact checks the view against a fresh list once more (no
// divergence then, none counted before) and compares the app's
// observation from the view with a fresh listing.
func requireViewExact(t *testing.T, eng *deploy.Engine, app string) {
	t.Helper()
	ctx := context.Background()
	r := requireNoDivergence(t, eng)

	view, err := eng.Observe(ctx, app, false)
	if err != nil {
		t.Fatal(err)
	}
	cold, err := eng.ObserveCold(ctx, app, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summarize(view), summarize(cold); got != want {
		t.Errorf("the view's observation differs from a fresh list:\nview:\n%s\nfresh:\n%s", got, want)
	}
	if own := len(cold.Containers) + len(cold.Networks) + len(cold.Volumes); r.Compared < own {
		t.Errorf("the final check compared %d objects; this app alone has %d", r.Compared, own)
	}
	if len(cold.Containers) == 0 || len(cold.Volumes) == 0 || len(cold.Networks) != 2 {
		t.Errorf("fresh observation holds %d containers, %d volumes, %d networks: the churn left nothing to compare",
			len(cold.Containers), len(cold.Volumes), len(cold.Networks))
	}
}

// requireNoDivergence checks the view against a fresh list once more: no
// divergence then, none counted before.
func requireNoDivergence(t *testing.T, eng *deploy.Engine) view.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := eng.CheckView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range r.Divergences {
		t.Errorf("divergence: %s", d)
	}
	if n := divergenceTotal(t, eng); n != 0 {
		t.Errorf("driftless_observation_divergence_total = %v, want 0 (see the log for what differed)", n)
	}
	return r
}

// divergenceTotal sums driftless_observation_divergence_total over kinds,
// as /metrics would export it.
func divergenceTotal(t *testing.T, eng *deploy.Engine) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(eng.Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != "driftless_observation_divergence_total" {
			continue // the engine's collector also counts Docker requests
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// summarize is what an observation says of each object, one line each,
// without the status's age.
func summarize(a drift.Actual) string {
	var b strings.Builder
	for _, c := range a.Containers {
		fmt.Fprintf(&b, "container %s %s %s nets=%v ports=%v labels=%v\n", c.ID[:12], c.Name, c.State, c.Networks, c.HostPorts, c.Labels)
	}
	for _, n := range a.Networks {
		fmt.Fprintf(&b, "network %s %s\n", n.Name, n.Driver)
	}
	for _, v := range a.Volumes {
		fmt.Fprintf(&b, "volume %s %s\n", v.Name, v.Driver)
	}
	return b.String()
}

// removeForeignChurn removes the churn's containers that carry no app
// label (UniqueApp's cleanup removes the labelled ones).
func removeForeignChurn(t *testing.T, cli *client.Client, app string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", "churn.app="+app)})
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	for _, c := range res.Items {
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Logf("cleanup %s: %v", c.ID, err)
		}
	}
}

// TestAgentObservesFromTheView: the agent, following a git repository,
// builds its view of the engine at start, heals a replica removed behind
// its back (the removal reaches the pass through the view, fed by the
// event), and exports a divergence count of zero.
func TestAgentObservesFromTheView(t *testing.T) {
	// Not parallel: it checks the view of the whole engine against the engine
	// (divergence 0); the package's other tests' churn would show up in it.
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	cli := testenv.DockerClient(t)
	ctx := context.Background()
	_, _, agent := testenv.StartRepoAgent(t, app, map[string]string{"web.yaml": testenv.PlainService("web", image, 3)}, "--interval", "10m")
	testenv.WaitAllRunning(t, cli, app, 3, 3*time.Minute)
	if !strings.Contains(agent.Logs(), "engine view built") {
		t.Fatalf("the agent did not build its engine view:\n%s", agent.Logs())
	}

	name := manifest.ContainerName(app, "web", 2)
	old, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerRemove(ctx, old.Container.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	hctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := testenv.WaitRunning(hctx, cli, name, old.Container.ID); err != nil {
		t.Fatalf("replica removed with docker rm -f was not replaced (the poll is 10 minutes away): %v\n%s", err, agent.Logs())
	}

	metrics := scrape(t, agent.URL+"/metrics")
	for _, kind := range []string{"container", "network", "volume"} {
		line := fmt.Sprintf(`driftless_observation_divergence_total{kind=%q} 0`, kind)
		if !strings.Contains(metrics, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	// Where the passes' time went: the first deployment fetched and
	// loaded the revision, it and the repair observed, computed, applied
	// and wrote status.
	for _, phase := range []string{"fetch", "load", "observe", "compute", "apply", "status"} {
		prefix := fmt.Sprintf(`driftless_pass_phase_seconds_count{phase=%q} `, phase)
		_, rest, ok := strings.Cut(metrics, prefix)
		count, _, _ := strings.Cut(rest, "\n")
		if !ok || count == "0" {
			t.Errorf("/metrics: %s%s, want a pass phase recorded", prefix, count)
		}
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// TestBenchViewPass1000 times one pass's observation (withForeign, as the
// agent's pass) of an app with 20 running replicas on a host holding
// 1,000 more containers of another owner (created, not started: a list
// costs the same), from the view and by listing, medians of
// DRIFTLESS_BENCH_PASSES. DRIFTLESS_BENCH=1 only; every container it
// creates is removed.
func TestBenchViewPass1000(t *testing.T) {
	// Not parallel: a benchmark (DRIFTLESS_BENCH=1) times passes; other tests' load would be in its numbers.
	testenv.BenchOnly(t)
	const replicas, others = 20, 1000
	passes := testenv.BenchInt("DRIFTLESS_BENCH_PASSES", 50)
	image := testenv.WorkloadImage(t, "v1")
	app, other := testenv.UniqueApp(t), testenv.UniqueApp(t)
	cli := testenv.DockerClient(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), app)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(testenv.PlainService("web", image, replicas)), 0o644); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	out, code := testenv.Run(t, actx, dir, "apply", dir, "--app", app)
	cancel()
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	var mu sync.Mutex
	var createErr error
	testenv.ForEach(others, 8, func(i int) {
		_, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:   fmt.Sprintf("%s-x-%d", other, i),
			Config: &container.Config{Image: image, Labels: map[string]string{drift.LabelApp: other}},
		})
		if err != nil {
			mu.Lock()
			createErr = err
			mu.Unlock()
		}
	})
	if createErr != nil {
		t.Fatalf("create the other containers: %v", createErr)
	}

	eng := watchedEngine(t, 5*time.Minute)
	for range 2 { // the prober's first sight, as an agent's first pass
		if _, err := eng.Observe(ctx, app, true); err != nil {
			t.Fatal(err)
		}
	}
	var fromView, fromList []time.Duration
	for range passes {
		t0 := time.Now()
		a, err := eng.Observe(ctx, app, true)
		if err != nil {
			t.Fatal(err)
		}
		fromView = append(fromView, time.Since(t0))
		t0 = time.Now()
		c, err := eng.ObserveCold(ctx, app, true)
		if err != nil {
			t.Fatal(err)
		}
		fromList = append(fromList, time.Since(t0))
		if len(a.Containers) != replicas || summarize(a) != summarize(c) {
			t.Fatalf("view and list disagree:\n%s\n%s", summarize(a), summarize(c))
		}
	}
	r, err := eng.CheckView(ctx)
	if err != nil || len(r.Divergences) != 0 {
		t.Errorf("check after the benchmark: %v, %v", r.Divergences, err)
	}
	v, l := testenv.Median(fromView), testenv.Median(fromList)
	t.Logf("| observation of a 20-replica app, %d containers on the engine (median of %d) | time |", r.Compared, passes)
	t.Logf("|---|---|")
	t.Logf("| from the list calls (Observe before the view; the CLI's path) | %s |", testenv.Ms(l))
	t.Logf("| from the event-fed view (the agent's path; one ping, no list) | %s (target ≤ 5 ms: %s) |", testenv.Ms(v), testenv.Verdict(t, "observation from the view ≤ 5 ms", v <= 5*time.Millisecond))
}

// TestViewFollowsAMovedImageTag: a list shows a container's image by its
// tag only while the tag names the container's image. Moving the tag to
// another image (as a pull or a build does) emits an event for the image
// it moved to, none for the container: the view re-lists containers on
// image tag events, so it stays exact with no divergence to repair.
func TestViewFollowsAMovedImageTag(t *testing.T) {
	// Not parallel: it checks the view of the whole engine (divergence 0).
	v1, v2 := testenv.WorkloadImage(t, "v1"), testenv.WorkloadImage(t, "v2")
	id1, id2 := testenv.Docker(t, "image", "inspect", "-f", "{{.Id}}", v1), testenv.Docker(t, "image", "inspect", "-f", "{{.Id}}", v2)
	if id1 == id2 {
		t.Fatalf("%s and %s are one image: nothing to move", v1, v2)
	}
	app := testenv.UniqueApp(t)
	tag := "driftless-test-moved/" + app + ":stable"
	testenv.Docker(t, "tag", v1, tag)
	t.Cleanup(func() { testenv.DockerQuiet(t, "rmi", "-f", tag) })
	name := app + "-web-1"
	// Running: the observation of an app with a stopped container re-lists it.
	testenv.Docker(t, "run", "-d", "--name", name, "--label", drift.LabelApp+"="+app, tag)
	t.Cleanup(func() { testenv.DockerQuiet(t, "rm", "-f", name) })
	// Resync far away: only the final check compares, and counts.
	eng := watchedEngine(t, time.Hour)

	image := func() string {
		a, err := eng.Observe(context.Background(), app, false)
		if err != nil || len(a.Containers) != 1 {
			t.Fatalf("observe: %v, %d containers", err, len(a.Containers))
		}
		return a.Containers[0].Image
	}
	if got := image(); got != tag {
		t.Fatalf("the view shows the container's image as %q, want %q", got, tag)
	}
	testenv.Docker(t, "tag", v2, tag)
	deadline := time.Now().Add(10 * time.Second)
	for image() != id1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := image(); got != id1 {
		t.Errorf("after the tag moved, the view shows the container's image as %q, want its ID %s as a list shows it", got, id1)
	}
	requireNoDivergence(t, eng)
}
