package deploy_test

// Real-engine tests: they create, change and remove containers on the
// local Docker engine. Each test uses its own app name and removes only
// what carries that app's label.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/moby/moby/client"
)

// images is the workload image made once per test process.
var images struct {
	once sync.Once
	ref  string
	err  error
}

// imageTag is unique per test process, so parallel CI jobs on one engine
// do not remove each other's image.
var imageTag = func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

func TestMain(m *testing.M) {
	code := m.Run()
	if images.ref != "" {
		if cli, err := client.New(client.FromEnv); err == nil {
			_, _ = cli.ImageRemove(context.Background(), images.ref, client.ImageRemoveOptions{Force: true})
			cli.Close()
		}
	}
	os.Exit(code)
}

func dockerAvailable(t *testing.T) {
	t.Helper()
	if os.Getenv("DOCKER_HOST") == "" {
		if _, err := os.Stat("/var/run/docker.sock"); err != nil {
			t.Skip("no Docker socket: real-engine test skipped")
		}
	}
}

// newEngine connects to the real engine.
func newEngine(t *testing.T, opts deploy.Options) *deploy.Engine {
	t.Helper()
	dockerAvailable(t)
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 20 * time.Second
	}
	if opts.SettleTime == 0 {
		opts.SettleTime = time.Second
	}
	eng, err := deploy.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := eng.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	return eng
}

func buildWorkload(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "workload")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./internal/workloadbin")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build workload: %v\n%s", err, out)
	}
	return bin
}

// workloadImage imports the workload server as an image (entrypoint
// /workload, serving :8080, /healthz) once per test process.
func workloadImage(t *testing.T, eng *deploy.Engine) string {
	t.Helper()
	images.once.Do(func() {
		dir, err := os.MkdirTemp("", "deploy-test-")
		if err != nil {
			images.err = err
			return
		}
		defer os.RemoveAll(dir)
		bin := buildWorkload(t, dir)
		ref := "driftless-deploy-test:" + imageTag
		if err := eng.ImportImage(context.Background(), bin, ref, nil, nil); err != nil {
			images.err = err
			return
		}
		images.ref = ref
	})
	if images.err != nil {
		t.Fatal(images.err)
	}
	return images.ref
}

// fixture is one test's app on the real engine.
type fixture struct {
	t     *testing.T
	eng   *deploy.Engine
	app   string
	image string
	cli   *client.Client
}

func newFixture(t *testing.T, opts deploy.Options) *fixture {
	t.Helper()
	// Each fixture has its own app, so the tests can share the engine.
	t.Parallel()
	eng := newEngine(t, opts)
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return &fixture{t: t, eng: eng, app: testenv.UniqueApp(t), image: workloadImage(t, eng), cli: cli}
}

// load parses manifests; {{image}} stands for the workload image.
func (f *fixture) load(docs ...string) *manifest.App {
	f.t.Helper()
	fsys := fstest.MapFS{}
	for i, d := range docs {
		fsys[fmt.Sprintf("m%d.yaml", i)] = &fstest.MapFile{Data: []byte(strings.ReplaceAll(d, "{{image}}", f.image))}
	}
	app, err := appdir.Load(fsys, ".", f.app)
	if err != nil {
		f.t.Fatalf("manifests: %v", err)
	}
	return app
}

func (f *fixture) observe() drift.Actual {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := f.eng.Observe(ctx, f.app, true)
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

func (f *fixture) plan(desired *manifest.App, opts drift.Options) drift.Plan {
	f.t.Helper()
	if opts.Revision == "" {
		opts.Revision = "rev1"
	}
	opts.Now = time.Now()
	return drift.Compute(drift.Input{App: f.app, Desired: desired, Actual: f.observe(), Options: opts})
}

// recorder collects progress events.
type recorder struct {
	mu     sync.Mutex
	events []drift.Event
}

func (r *recorder) add(e drift.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []drift.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]drift.Event(nil), r.events...)
}

func (f *fixture) apply(desired *manifest.App, plan drift.Plan) (drift.ApplyResult, *recorder) {
	f.t.Helper()
	rec := &recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := f.eng.Apply(ctx, desired, plan, drift.ApplyOptions{Progress: rec.add})
	if testing.Verbose() {
		for _, e := range rec.all() {
			f.t.Logf("%s %-8s %-20s %s", e.Time.Format("15:04:05.000"), e.Phase, e.Change.Name, e.Message)
		}
	}
	if len(res.Outcomes) != len(plan.Changes) {
		f.t.Fatalf("%d outcomes for %d changes", len(res.Outcomes), len(plan.Changes))
	}
	return res, rec
}

// converge plans and applies, requiring success and then an empty plan.
func (f *fixture) converge(desired *manifest.App, opts drift.Options) drift.Plan {
	f.t.Helper()
	plan := f.plan(desired, opts)
	if plan.Empty() {
		f.t.Fatalf("expected changes, plan is empty")
	}
	res, _ := f.apply(desired, plan)
	if res.Err != nil {
		f.t.Fatalf("apply: %v\ndegraded: %v", res.Err, res.Degraded)
	}
	f.requireConverged(desired, opts)
	return plan
}

func (f *fixture) requireConverged(desired *manifest.App, opts drift.Options) {
	f.t.Helper()
	if again := f.plan(desired, opts); !again.Empty() {
		f.t.Fatalf("after apply the plan is not empty:\n%s", describePlan(again))
	}
}

func describePlan(p drift.Plan) string {
	var b strings.Builder
	for _, c := range p.Changes {
		fmt.Fprintf(&b, "  %s %s %s: %s\n", c.Action, c.Kind, c.Name, c.Reason)
	}
	for _, c := range p.Conflicts {
		fmt.Fprintf(&b, "  conflict %s %s: %s\n", c.Kind, c.Name, c.Reason)
	}
	return b.String()
}

// service returns the observed containers of a service.
func service(a drift.Actual, name string) []drift.Container {
	var out []drift.Container
	for _, c := range a.Containers {
		if c.Service == name {
			out = append(out, c)
		}
	}
	return out
}

func readyCount(cs []drift.Container) int {
	n := 0
	for _, c := range cs {
		if c.Ready {
			n++
		}
	}
	return n
}

func webYAML(replicas int, extra string) string {
	return fmt.Sprintf(`apiVersion: driftless.dev/v1
kind: Service
metadata: {name: web, labels: {team: shop}}
spec:
  image: {{image}}
  replicas: %d
  stopGracePeriodSeconds: 1
  readiness:
    httpGet: {path: /healthz, port: 8080}
    periodSeconds: 1
%s`, replicas, extra)
}

// ---------------------------------------------------------------------------

func TestImportImageRunsBinaryAsEntrypoint(t *testing.T) {
	eng := newEngine(t, deploy.Options{})
	bin := buildWorkload(t, t.TempDir())
	ref := "driftless-deploy-test-import:" + imageTag
	ctx := context.Background()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	t.Cleanup(func() { _, _ = cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true}) })

	if err := eng.ImportImage(ctx, bin, ref, nil, []string{"-listen", ":9090"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := eng.ImageExists(ctx, ref); err != nil || !ok {
		t.Fatalf("ImageExists(%s) = %v, %v; want true", ref, ok, err)
	}
	if ok, err := eng.ImageExists(ctx, "driftless-deploy-test-import:never-made"); err != nil || ok {
		t.Fatalf("ImageExists(never-made) = %v, %v; want false, nil", ok, err)
	}
	img, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(img.Config.Entrypoint, img.Config.Cmd); got != "[/workload] [-listen :9090]" {
		t.Errorf("entrypoint and cmd = %s, want [/workload] [-listen :9090]", got)
	}
}

func TestApplyFromEmptyConvergesAndIsStable(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	desired := f.load(
		webYAML(3, `  networks: [backend, default]
  dependsOn: [cache]
  env: {MESSAGE: hello, API_TOKEN: s3cret}
  secretEnv: [API_TOKEN]`),
		`apiVersion: driftless.dev/v1
kind: Service
metadata: {name: cache}
spec:
  image: {{image}}
  replicas: 1
  networks: [backend]
  stopGracePeriodSeconds: 1
  volumes: [{name: data, mountPath: /data}]
  env: {WORKLOAD_DATA: /data}
  readiness:
    tcpSocket: {port: 8080}
    periodSeconds: 1
`,
		`apiVersion: driftless.dev/v1
kind: Network
metadata: {name: backend}
spec: {driver: bridge}
`,
		`apiVersion: driftless.dev/v1
kind: Volume
metadata: {name: data}
spec: {driver: local}
`)
	plan := f.plan(desired, drift.Options{})
	res, rec := f.apply(desired, plan)
	if res.Err != nil {
		t.Fatalf("apply: %v", res.Err)
	}
	for _, o := range res.Outcomes {
		if o.Result != drift.ResultDone {
			t.Errorf("%s %s: %s %s", o.Change.Action, o.Change.Name, o.Result, o.Error)
		}
	}

	a := f.observe()
	web, cache := service(a, "web"), service(a, "cache")
	if len(web) != 3 || readyCount(web) != 3 || len(cache) != 1 || readyCount(cache) != 1 {
		t.Fatalf("web %d (%d ready), cache %d (%d ready); want 3/3 and 1/1", len(web), readyCount(web), len(cache), readyCount(cache))
	}
	for _, c := range web {
		if c.SpecHash != desired.Service("web").Hash || c.Revision != "rev1" || c.Labels["team"] != "shop" {
			t.Errorf("%s labels: hash %s revision %s team %q", c.Name, c.SpecHash, c.Revision, c.Labels["team"])
		}
		if c.Spec == nil || c.Spec.Env["API_TOKEN"] == "s3cret" {
			t.Errorf("%s: the recorded spec must be redacted: %+v", c.Name, c.Spec)
		}
		if strings.Join(c.Networks, ",") != f.app+"-backend,"+f.app+"-default" {
			t.Errorf("%s networks = %v", c.Name, c.Networks)
		}
	}
	if len(a.Networks) != 2 || a.Networks[0].Resource != "backend" || len(a.Volumes) != 1 || a.Volumes[0].Resource != "data" {
		t.Errorf("networks %+v volumes %+v", a.Networks, a.Volumes)
	}

	// dependsOn: no web replica starts before the cache is ready.
	var cacheReady, firstWebStart time.Time
	for _, e := range rec.all() {
		if e.Change.Service == "cache" && e.Phase == drift.PhaseReady {
			cacheReady = e.Time
		}
		if e.Change.Service == "web" && e.Phase == drift.PhaseStart && firstWebStart.IsZero() {
			firstWebStart = e.Time
		}
	}
	if cacheReady.IsZero() || firstWebStart.Before(cacheReady) {
		t.Errorf("web started at %v, cache ready at %v: dependsOn not honoured", firstWebStart, cacheReady)
	}

	f.requireConverged(desired, drift.Options{})
	all, err := f.eng.ObserveAll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := all[f.app]; len(got.Containers) != 4 || readyCount(got.Containers) != 4 {
		t.Errorf("ObserveAll[%s]: %d containers, %d ready; want 4, 4", f.app, len(got.Containers), readyCount(got.Containers))
	}
}

// A dependency on condition "started" (compose's short depends_on) is met
// once the dependency's replicas run: its dependent is not held for its
// readiness wait, as it is on "healthy".
func TestDependsOnStartedDoesNotWaitForReadiness(t *testing.T) {
	f := newFixture(t, deploy.Options{SettleTime: 3 * time.Second})
	svc := func(name, extra string) string {
		return fmt.Sprintf(`apiVersion: driftless.dev/v1
kind: Service
metadata: {name: %s}
spec:
  image: {{image}}
  replicas: 1
  stopGracePeriodSeconds: 1
%s`, name, extra)
	}
	desired := f.load(svc("db", ""), svc("web", "  dependsOn: [db]\n  dependsOnCondition: {db: started}\n"),
		svc("worker", "  dependsOn: [db]\n"))
	res, rec := f.apply(desired, f.plan(desired, drift.Options{}))
	if res.Err != nil {
		t.Fatalf("apply: %v", res.Err)
	}
	at := map[string]time.Time{}
	for _, e := range rec.all() {
		key := e.Change.Service + " " + string(e.Phase)
		if _, seen := at[key]; !seen {
			at[key] = e.Time
		}
	}
	dbStarted, dbReady := at["db "+string(drift.PhaseStarted)], at["db "+string(drift.PhaseReady)]
	web, worker := at["web "+string(drift.PhaseStart)], at["worker "+string(drift.PhaseStart)]
	if dbStarted.IsZero() || dbReady.IsZero() || web.IsZero() || worker.IsZero() {
		t.Fatalf("missing events: %v", at)
	}
	if web.Before(dbStarted) || !web.Before(dbReady) {
		t.Errorf("web (started) began at %v; want after db started (%v) and before db was ready (%v)", web, dbStarted, dbReady)
	}
	if worker.Before(dbReady) {
		t.Errorf("worker (healthy) began at %v, before db was ready (%v)", worker, dbReady)
	}
}

func TestScaleUpAndDown(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	f.converge(f.load(webYAML(2, "")), drift.Options{})
	before := service(f.observe(), "web")

	f.converge(f.load(webYAML(4, "")), drift.Options{})
	up := service(f.observe(), "web")
	if len(up) != 4 || readyCount(up) != 4 {
		t.Fatalf("after scale up: %d replicas, %d ready", len(up), readyCount(up))
	}
	kept := map[string]bool{}
	for _, c := range up {
		kept[c.ID] = true
	}
	for _, c := range before {
		if !kept[c.ID] {
			t.Errorf("scaling up replaced %s", c.Name)
		}
	}

	f.converge(f.load(webYAML(1, "")), drift.Options{})
	down := service(f.observe(), "web")
	if len(down) != 1 || down[0].Slot != 1 || !down[0].Ready {
		t.Fatalf("after scale down: %+v", down)
	}
}

func TestRollingUpdateKeepsReadyReplicas(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	update := `  update: {strategy: rolling, maxSurge: 1, maxUnavailable: 1}
  env: {MESSAGE: %s}`
	f.converge(f.load(webYAML(3, fmt.Sprintf(update, "v1"))), drift.Options{})
	oldIDs := map[string]bool{}
	for _, c := range service(f.observe(), "web") {
		oldIDs[c.ID] = true
	}

	desired := f.load(webYAML(3, fmt.Sprintf(update, "v2")))
	plan := f.plan(desired, drift.Options{Revision: "rev2"})
	if len(plan.Changes) != 3 {
		t.Fatalf("want 3 replacements:\n%s", describePlan(plan))
	}

	// Sample the ready count during the rollout: replicas - maxUnavailable
	// is the floor.
	stop := make(chan struct{})
	minReady := make(chan int, 1)
	go func() {
		lowest := 3
		for {
			select {
			case <-stop:
				minReady <- lowest
				return
			case <-time.After(100 * time.Millisecond):
			}
			a, err := f.eng.Observe(context.Background(), f.app, false)
			if err == nil {
				lowest = min(lowest, readyCount(service(a, "web")))
			}
		}
	}()
	res, rec := f.apply(desired, plan)
	close(stop)
	lowest := <-minReady
	if res.Err != nil {
		t.Fatalf("apply: %v", res.Err)
	}
	if lowest < 2 {
		t.Errorf("ready replicas dropped to %d during the rollout; floor is 3-1=2", lowest)
	}
	var renamed bool
	for _, e := range rec.all() {
		if e.Phase == drift.PhaseRemoved && strings.Contains(e.Message, "old") {
			renamed = true
		}
	}
	if !renamed {
		t.Errorf("no old replica was removed after its replacement became ready")
	}
	web := service(f.observe(), "web")
	if len(web) != 3 || readyCount(web) != 3 {
		t.Fatalf("after rollout: %d replicas, %d ready", len(web), readyCount(web))
	}
	for _, c := range web {
		if oldIDs[c.ID] || c.Spec.Env["MESSAGE"] != "v2" || c.Revision != "rev2" || strings.Contains(c.Name, "-old-") {
			t.Errorf("%s (%s) not replaced: env %v revision %s", c.Name, c.ID[:12], c.Spec.Env, c.Revision)
		}
	}
	f.requireConverged(desired, drift.Options{Revision: "rev2"})
}

func TestRollingUpdateWithoutSurgeStopsOldReplicaFirst(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	port := 30000 + (int(b[0])<<8|int(b[1]))%10000
	spec := `  ports: [{containerPort: 8080, hostPort: %d}]
  update: {strategy: rolling, maxSurge: 0, maxUnavailable: 1}
  env: {MESSAGE: %s}`
	f.converge(f.load(webYAML(1, fmt.Sprintf(spec, port, "v1"))), drift.Options{})
	// A host port is held by one container at a time: the new replica can
	// only start once the old one is stopped.
	f.converge(f.load(webYAML(1, fmt.Sprintf(spec, port, "v2"))), drift.Options{})
	web := service(f.observe(), "web")
	if len(web) != 1 || !web[0].Ready || web[0].Spec.Env["MESSAGE"] != "v2" || fmt.Sprint(web[0].HostPorts) != fmt.Sprintf("[%d]", port) {
		t.Errorf("after update: %+v", web)
	}
}

func TestRecreateStrategyRemovesAllBeforeCreating(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	update := `  update: {strategy: recreate}
  env: {MESSAGE: %s}`
	f.converge(f.load(webYAML(2, fmt.Sprintf(update, "v1"))), drift.Options{})
	desired := f.load(webYAML(2, fmt.Sprintf(update, "v2")))
	plan := f.plan(desired, drift.Options{})
	res, rec := f.apply(desired, plan)
	if res.Err != nil {
		t.Fatalf("apply: %v", res.Err)
	}
	var lastRemoved, firstCreated time.Time
	for _, e := range rec.all() {
		switch e.Phase {
		case drift.PhaseRemoved:
			lastRemoved = e.Time
		case drift.PhaseCreated:
			if firstCreated.IsZero() {
				firstCreated = e.Time
			}
		}
	}
	if lastRemoved.IsZero() || firstCreated.Before(lastRemoved) {
		t.Errorf("recreate created a replica (%v) before removing every old one (%v)", firstCreated, lastRemoved)
	}
	web := service(f.observe(), "web")
	if len(web) != 2 || readyCount(web) != 2 || web[0].Spec.Env["MESSAGE"] != "v2" {
		t.Fatalf("after recreate: %+v", web)
	}
	f.requireConverged(desired, drift.Options{})
}

func TestRemovedContainerIsRestored(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	desired := f.load(webYAML(2, ""))
	f.converge(desired, drift.Options{})
	victim := service(f.observe(), "web")[1]
	if _, err := f.cli.ContainerRemove(context.Background(), victim.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	plan := f.converge(desired, drift.Options{})
	if len(plan.Changes) != 1 || plan.Changes[0].Action != drift.ActionCreate || plan.Changes[0].Name != victim.Name {
		t.Errorf("repair plan:\n%s", describePlan(plan))
	}
	if web := service(f.observe(), "web"); len(web) != 2 || readyCount(web) != 2 {
		t.Errorf("after repair: %d replicas, %d ready", len(web), readyCount(web))
	}
}

func TestStoppedContainerIsStartedInPlace(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	desired := f.load(webYAML(1, ""))
	f.converge(desired, drift.Options{})
	victim := service(f.observe(), "web")[0]
	if _, err := f.cli.ContainerStop(context.Background(), victim.ID, client.ContainerStopOptions{}); err != nil {
		t.Fatal(err)
	}
	plan := f.plan(desired, drift.Options{})
	if len(plan.Changes) != 1 || plan.Changes[0].Action != drift.ActionStart {
		t.Fatalf("want one start:\n%s", describePlan(plan))
	}
	if res, _ := f.apply(desired, plan); res.Err != nil {
		t.Fatal(res.Err)
	}
	web := service(f.observe(), "web")
	if len(web) != 1 || web[0].ID != victim.ID || !web[0].Ready {
		t.Errorf("after start: %+v", web)
	}
}

func TestNeverReadyUpdateStopsRolloutAndKeepsOldReplicas(t *testing.T) {
	f := newFixture(t, deploy.Options{ReadyTimeout: 5 * time.Second})
	f.converge(f.load(webYAML(2, "")), drift.Options{})
	old := service(f.observe(), "web")

	desired := f.load(webYAML(2, "  env: {WORKLOAD_NEVER_READY: \"true\"}"))
	plan := f.plan(desired, drift.Options{Revision: "rev2"})
	res, _ := f.apply(desired, plan)
	if res.Err == nil {
		t.Fatal("apply of a never-ready update succeeded")
	}
	reason := degraded(res, "web")
	if !strings.Contains(reason, "not ready after 5s") || !strings.Contains(reason, "503") {
		t.Errorf("degraded reason = %q; want the timeout and the probe's answer", reason)
	}
	results := []string{res.Outcomes[0].Result, res.Outcomes[1].Result}
	if results[0] != drift.ResultFailed || results[1] != drift.ResultSkipped {
		t.Errorf("outcomes = %v; want the first replacement failed and the rest skipped", results)
	}
	if f := res.Outcomes[0].Failure; f == nil || f.Cause != drift.FailureRollout {
		t.Errorf("failure %+v; want a rollout failure (the replica failed on its own)", f)
	}
	now := service(f.observe(), "web")
	if len(now) != 2 {
		t.Fatalf("after the stopped rollout: %d containers, want the 2 old ones", len(now))
	}
	for i, c := range now {
		if c.ID != old[i].ID || c.Name != old[i].Name || !c.Ready {
			t.Errorf("replica %s: id %s ready %v; want the old replica, ready, under its name", c.Name, c.ID[:12], c.Ready)
		}
	}
	// The old replicas kept serving.
	resp, err := http.Get("http://" + containerIP(t, f, now[0].ID) + ":8080/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("old replica answers %s", resp.Status)
	}
}

// degraded is the service's rollout failure as people read it, or "".
func degraded(res drift.ApplyResult, service string) string {
	if f := res.Degraded[service]; f != nil {
		return f.Error()
	}
	return ""
}

func containerIP(t *testing.T, f *fixture, id string) string {
	t.Helper()
	res, err := f.cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range res.Container.NetworkSettings.Networks {
		if ep.IPAddress.IsValid() {
			return ep.IPAddress.String()
		}
	}
	t.Fatalf("%s has no IP", id)
	return ""
}

func TestCrashLoopIsReportedFast(t *testing.T) {
	f := newFixture(t, deploy.Options{ReadyTimeout: 60 * time.Second})
	desired := f.load(webYAML(1, "  env: {WORKLOAD_CRASH: \"true\"}"))
	plan := f.plan(desired, drift.Options{})
	start := time.Now()
	res, _ := f.apply(desired, plan)
	took := time.Since(start)
	if res.Err == nil {
		t.Fatal("a crash-looping replica was reported ready")
	}
	reason := degraded(res, "web")
	if !strings.Contains(reason, "exited with code 1 (restarted") || !strings.Contains(reason, "crashing at start") {
		t.Errorf("degraded reason = %q; want exit code, restarts and the log line", reason)
	}
	if f := res.Degraded["web"]; f.Cause != drift.FailureRollout || f.ExitCode != 1 || f.Restarts < 1 || len(f.Logs) == 0 {
		t.Errorf("failure %+v; want a typed rollout failure with exit code, restarts and log lines", f)
	}
	if took > 30*time.Second {
		t.Errorf("took %s to notice the crash loop; it must not wait for ReadyTimeout (60s)", took)
	}
}

func TestExitingReplicaWithRestartNeverFailsAtOnce(t *testing.T) {
	f := newFixture(t, deploy.Options{ReadyTimeout: 60 * time.Second})
	desired := f.load(webYAML(1, "  restart: never\n  env: {WORKLOAD_CRASH: \"true\"}"))
	res, _ := f.apply(desired, f.plan(desired, drift.Options{}))
	if got := degraded(res, "web"); !strings.Contains(got, "exited with code 1; last log lines") {
		t.Errorf("degraded = %q", got)
	}
}

func TestExecReadinessUsesDockerHealthcheck(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	desired := f.load(`apiVersion: driftless.dev/v1
kind: Service
metadata: {name: web}
spec:
  image: {{image}}
  replicas: 1
  stopGracePeriodSeconds: 1
  readiness:
    exec: {command: [/workload, probe, "http://127.0.0.1:8080/healthz"]}
    periodSeconds: 1
`)
	f.converge(desired, drift.Options{})
	web := service(f.observe(), "web")
	if len(web) != 1 || web[0].Health != "healthy" || !web[0].Ready {
		t.Errorf("exec readiness: %+v", web)
	}
}

func TestForeignContainerWithOurNameIsLeftAlone(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	ctx := context.Background()
	name := manifest.ContainerName(f.app, "web", 1)
	foreign, err := f.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name, Image: f.image})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = f.cli.ContainerRemove(context.Background(), foreign.ID, client.ContainerRemoveOptions{Force: true})
	})
	desired := f.load(webYAML(2, ""))
	reported := false
	for _, c := range f.observe().ForeignContainers {
		reported = reported || c.ID == foreign.ID && c.Name == name && c.App == ""
	}
	if !reported {
		t.Fatalf("the foreign container named %s is not in Actual.ForeignContainers", name)
	}

	// Whatever the plan says, deploy refuses to touch what is not ours.
	plan := drift.Plan{App: f.app, Revision: "rev1", Changes: []drift.Change{
		{Action: drift.ActionCreate, Kind: drift.KindNetwork, Name: f.app + "-default", Resource: "default"},
		{Action: drift.ActionCreate, Kind: drift.KindContainer, Name: name, Service: "web", Slot: 1},
		{Action: drift.ActionCreate, Kind: drift.KindContainer, Name: manifest.ContainerName(f.app, "web", 2), Service: "web", Slot: 2},
		{Action: drift.ActionRemove, Kind: drift.KindContainer, Name: name, Service: "gone", Slot: 1, ID: foreign.ID},
	}}
	res, _ := f.apply(desired, plan)
	if got := res.Outcomes[1].Error; got != "name "+name+" is held by a container driftless does not own; rename or remove it" {
		t.Errorf("create over a foreign name: %q", got)
	}
	if res.Outcomes[2].Result != drift.ResultDone {
		t.Errorf("slot 2 should still be created: %+v", res.Outcomes[2])
	}
	if got := res.Outcomes[3].Error; !strings.Contains(got, "not owned by driftless") {
		t.Errorf("remove of a foreign container: %q", got)
	}
	if _, err := f.cli.ContainerInspect(ctx, foreign.ID, client.ContainerInspectOptions{}); err != nil {
		t.Errorf("the foreign container is gone: %v", err)
	}

	// The differ reports it as a conflict.
	if p := f.plan(desired, drift.Options{}); len(p.Conflicts) == 0 {
		t.Errorf("no conflict reported:\n%s", describePlan(p))
	}
}

func TestPruneRemovesServiceButKeepsVolume(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	cache := `apiVersion: driftless.dev/v1
kind: Service
metadata: {name: cache}
spec:
  image: {{image}}
  replicas: 1
  stopGracePeriodSeconds: 1
  volumes: [{name: data, mountPath: /data}]
---
apiVersion: driftless.dev/v1
kind: Volume
metadata: {name: data}
spec: {driver: local}
`
	f.converge(f.load(webYAML(1, ""), cache), drift.Options{})

	desired := f.load(webYAML(1, ""))
	opts := drift.Options{Prune: true}
	plan := f.plan(desired, opts)
	res, _ := f.apply(desired, plan)
	if res.Err != nil {
		t.Fatalf("apply: %v\n%s", res.Err, describePlan(plan))
	}
	a := f.observe()
	if len(service(a, "cache")) != 0 || len(service(a, "web")) != 1 {
		t.Errorf("after prune: %+v", a.Containers)
	}
	if len(a.Volumes) != 1 || a.Volumes[0].Name != f.app+"-data" {
		t.Errorf("the volume must survive prune without AllowVolumeRemoval: %+v", a.Volumes)
	}
}

func TestMissingImageFailsOnlyItsService(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	missing := "driftless-deploy-test-missing:v7"
	desired := f.load(webYAML(1, ""), `apiVersion: driftless.dev/v1
kind: Service
metadata: {name: api}
spec:
  image: `+missing+`
  replicas: 2
`)
	plan := f.plan(desired, drift.Options{})
	res, _ := f.apply(desired, plan)
	if res.Err == nil {
		t.Fatal("apply with a missing image succeeded")
	}
	for _, o := range res.Outcomes {
		switch o.Change.Service {
		case "api":
			if o.Result != drift.ResultFailed || !strings.HasPrefix(o.Error, "image "+missing+" could not be pulled from registry docker.io: ") {
				t.Errorf("%s: %s %q", o.Change.Name, o.Result, o.Error)
			}
		default:
			if o.Result != drift.ResultDone {
				t.Errorf("%s: %s %q; other services must still be applied", o.Change.Name, o.Result, o.Error)
			}
		}
	}
	if web := service(f.observe(), "web"); len(web) != 1 || !web[0].Ready {
		t.Errorf("web: %+v", web)
	}
}

func TestWatchReportsDie(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	f.converge(f.load(webYAML(1, "  restart: never")), drift.Options{})
	victim := service(f.observe(), "web")[0]

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 16)
	connected := make(chan struct{}, 1)
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- f.eng.Watch(ctx, func(ev drift.EngineEvent) {
			switch {
			case ev.Action == drift.EventConnected:
				connected <- struct{}{}
			case ev.App == f.app:
				got <- ev.Container + " " + ev.Action
			}
		})
	}()
	select {
	case <-connected: // the stream is up: the event cannot be missed
	case <-time.After(15 * time.Second):
		t.Fatal("the event stream never connected")
	}
	if _, err := f.cli.ContainerKill(context.Background(), victim.ID, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	want := victim.Name + " die"
	timeout := time.After(15 * time.Second)
	for {
		select {
		case ev := <-got:
			if ev == want {
				cancel()
				if err := <-watchDone; err != nil {
					t.Errorf("Watch returned %v after cancel", err)
				}
				return
			}
		case <-timeout:
			t.Fatalf("no %q event", want)
		}
	}
}

func TestPingNamesTheHost(t *testing.T) {
	dockerAvailable(t)
	eng, err := deploy.New(context.Background(), deploy.Options{Host: "unix:///nonexistent/docker.sock"})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	err = eng.Ping(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "Docker engine unreachable at unix:///nonexistent/docker.sock: ") || !errors.Is(err, drift.ErrEngineUnreachable) {
		t.Errorf("Ping error = %v; want it to say where, and to carry drift.ErrEngineUnreachable", err)
	}
	if _, err := eng.Observe(context.Background(), "shop", true); !errors.Is(err, drift.ErrEngineUnreachable) {
		t.Errorf("Observe error = %v; want drift.ErrEngineUnreachable in its chain", err)
	}
}

func TestFailingExecReadinessReportsHealthcheckOutput(t *testing.T) {
	f := newFixture(t, deploy.Options{ReadyTimeout: 5 * time.Second})
	desired := f.load(`apiVersion: driftless.dev/v1
kind: Service
metadata: {name: web}
spec:
  image: {{image}}
  replicas: 1
  stopGracePeriodSeconds: 1
  readiness:
    exec: {command: [/workload, probe, "http://127.0.0.1:1/healthz"]}
    periodSeconds: 1
    failureThreshold: 1
`)
	res, _ := f.apply(desired, f.plan(desired, drift.Options{}))
	reason := degraded(res, "web")
	if !strings.Contains(reason, "not ready after 5s: healthcheck") || !strings.Contains(reason, "connection refused") {
		t.Errorf("degraded = %q; want the healthcheck's output", reason)
	}
}
