package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/moby/moby/client"
)

// TestColdObservationPlansLikeTheFullOne checks the one-shot CLI's cheap
// observation (ObserveForPlan: label-filtered lists, name and port lookups
// only for what the plan would take) against the full one (ObserveCold:
// every container, network and volume on the engine), situation by
// situation on the real engine: the plans and health verdicts computed
// from the two must be the same, and must show the situation. Each
// observation uses an engine of its own, as a fresh CLI process does. The
// cheap one goes through a counting proxy, which shows it never lists
// the whole engine.
func TestColdObservationPlansLikeTheFullOne(t *testing.T) {
	// Not parallel: it counts the engine requests of the CLI through a proxy and compares them with what a quiet engine needs.
	app := testenv.UniqueApp(t)
	image := testenv.WorkloadImage(t, "v1")
	port := testenv.FreePorts(t, 1)
	dir := writeApp(t, app, map[string]string{
		"web.yaml": testenv.PlainService("web", image, 3) + "  resources: {memory: 64Mi}\n",
		"api.yaml": testenv.PlainService("api", image, 1),
		"pub.yaml": testenv.PlainService("pub", image, 1) + fmt.Sprintf("  ports: [{containerPort: 8080, hostPort: %d, hostIP: 127.0.0.1}]\n  update: {strategy: recreate}\n", port),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := t.TempDir()
	if out, code := testenv.Run(t, ctx, dir, "apply", dir, "--app", app, "--data", data); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	desired, err := appdir.LoadDirWith(dir, app, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.StartCountingProxy(t)
	c := &coldCheck{t: t, ctx: ctx, app: app, desired: desired, proxy: proxy}
	// foreign starts a container driftless does not own, removed at the end.
	foreign := func(name string, args ...string) {
		t.Helper()
		t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
		testenv.Docker(t, append(append([]string{}, args...), "--name", name, "--label", "dev.driftless-test.owner="+app, image)...)
	}

	// The CLI itself on the converged app, through the proxy.
	proxy.Reset()
	cmd := exec.CommandContext(ctx, testenv.DriftlessBinary(t), "diff", dir, "--app", app, "--data", data)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+proxy.Host())
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "No changes") {
		t.Fatalf("driftless diff on the converged app: %v\n%s", err, out)
	}
	for _, c := range proxy.Calls() {
		if strings.Contains(c, "/containers/json") && !strings.Contains(c, "filters=") {
			t.Errorf("driftless diff listed every container on the engine: %s", c)
		}
	}
	t.Logf("driftless diff, no-op, %d owned containers: %s", len(testenv.DockerNames(t, app)), testenv.FormatCalls(proxy.Summary()))

	c.check("no-op", false, "No changes")
	for try := 0; try < 3 && c.memoInspects != 0; try++ {
		c.check("no-op, again", false, "No changes")
	}
	if c.memoInspects != 0 {
		t.Errorf("no-op after a no-op: the inspect memo path made %d inspects, want none", c.memoInspects)
	}
	testenv.Docker(t, "rm", "-f", app+"-web-2")
	c.check("missing replica", false, app+"-web-2", "removed outside Git")
	foreign(app+"-web-2", "create")
	c.check("foreign container holding a needed name", true, app+"-web-2: name is held by a container driftless does not own")
	testenv.Docker(t, "rm", "-f", app+"-pub-1")
	foreign(app+"-squatter", "run", "-d", "-p", fmt.Sprintf("127.0.0.1:%d:8080", port))
	c.check("foreign container holding a needed host port", true, fmt.Sprintf("publishes host port %d", port))
	testenv.Docker(t, "stop", "-t", "1", app+"-api-1")
	c.check("stopped replica", false, app+"-api-1", "stopped outside Git")
	testenv.Docker(t, "update", "--memory", "96m", "--memory-swap", "192m", app+"-web-1")
	c.check("docker update", false, app+"-web-1", "resources.memory")
	if c.memoInspects == 0 {
		t.Errorf("docker update: the inspect memo inspected nothing; the updated replica must be inspected again")
	}
	network := strings.Fields(testenv.Docker(t, "inspect", "-f", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}", app+"-web-3"))[0]
	testenv.Docker(t, "network", "disconnect", network, app+"-web-3")
	c.check("network disconnect", false, app+"-web-3", "networks: (none)")

	// A memo whose anchor was pushed out of Docker's event buffer (256
	// events) proves nothing: everything is inspected, and a docker update
	// whose own event was pushed out with it is still seen.
	testenv.Docker(t, "update", "--memory", "128m", "--memory-swap", "256m", app+"-web-3")
	floodEvents(t, ctx, image, 300)
	c.check("docker update, then 300 other events", false, "resources.memory: 128Mi → 64Mi")
	if owned := len(testenv.DockerNames(t, app)); c.memoInspects != owned {
		t.Errorf("after 300 events: the inspect memo path made %d inspects, want all %d", c.memoInspects, owned)
	}
}

// TestInspectMemoOfTheCLI runs the CLI itself: a second no-op diff
// inspects nothing, and a docker update between two runs is seen.
func TestInspectMemoOfTheCLI(t *testing.T) {
	// Not parallel: it counts the engine requests of the CLI through a proxy and compares them with what a quiet engine needs.
	app := testenv.UniqueApp(t)
	image := testenv.WorkloadImage(t, "v1")
	dir := writeApp(t, app, map[string]string{"web.yaml": testenv.PlainService("web", image, 3) + "  resources: {memory: 64Mi}\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := t.TempDir()
	if out, code := testenv.Run(t, ctx, dir, "apply", dir, "--app", app, "--data", data); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	proxy := testenv.StartCountingProxy(t)
	diff := func() (string, int) {
		t.Helper()
		proxy.Reset()
		cmd := exec.CommandContext(ctx, testenv.DriftlessBinary(t), "diff", dir, "--app", app, "--data", data)
		cmd.Env = append(os.Environ(), "DOCKER_HOST="+proxy.Host())
		out, _ := cmd.CombinedOutput()
		return string(out), proxy.Summary()["GET /containers/{id}/json"]
	}
	if out, _ := diff(); !strings.Contains(out, "No changes") {
		t.Fatalf("first diff through the proxy:\n%s", out)
	}
	// Other tests share the engine: a burst of their events can push the
	// memo's anchor out of the buffer, which costs inspects, not truth.
	inspects := -1
	for try := 0; try < 3 && inspects != 0; try++ {
		var out string
		if out, inspects = diff(); !strings.Contains(out, "No changes") {
			t.Fatalf("second diff:\n%s", out)
		}
	}
	if inspects != 0 {
		t.Errorf("a no-op diff after a no-op diff inspected %d containers, want none", inspects)
	}
	testenv.Docker(t, "update", "--memory", "96m", "--memory-swap", "192m", app+"-web-2")
	out, inspects := diff()
	if !strings.Contains(out, app+"-web-2") || !strings.Contains(out, "resources.memory") {
		t.Errorf("diff after docker update does not show it:\n%s", out)
	}
	if inspects < 1 {
		t.Errorf("diff after docker update inspected nothing")
	}
	t.Logf("diff after docker update: %d inspect(s)\n%s", inspects, out)
}

// floodEvents makes n engine events that concern no container: tags of
// image, then their removal.
func floodEvents(t *testing.T, ctx context.Context, image string, n int) {
	t.Helper()
	cli := testenv.DockerClient(t)
	tag := fmt.Sprintf("driftless-flood-%d", time.Now().UnixNano())
	for i := range n / 2 {
		if _, err := cli.ImageTag(ctx, client.ImageTagOptions{Source: image, Target: fmt.Sprintf("%s:%d", tag, i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n / 2 {
		if _, err := cli.ImageRemove(ctx, fmt.Sprintf("%s:%d", tag, i), client.ImageRemoveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// coldCheck compares, in one situation, the plan and health from the
// cheap observation with those from the full one.
type coldCheck struct {
	t       *testing.T
	ctx     context.Context
	app     string
	desired *manifest.App
	proxy   *testenv.CountingProxy
	// memo is the inspect memo the last observation with one left;
	// memoInspects how many containers that observation inspected.
	memo         []byte
	memoInspects int
}

// check compares the two and requires the plan to show want.
// foreignMatters says the situation is one a look at the app's own
// objects alone gets wrong, so the lookups are what makes it right.
func (c *coldCheck) check(situation string, foreignMatters bool, want ...string) {
	t, ctx, app := c.t, c.ctx, c.app
	t.Helper()
	in := drift.Input{App: app, Desired: c.desired, Options: drift.Options{Revision: "local", Now: time.Now()}}
	fullIn, cheapIn := in, in
	var err error
	fullIn.Actual, err = testenv.ObserveWith(ctx, "", func(e *deploy.Engine) (drift.Actual, error) { return e.ObserveCold(ctx, app, true) })
	if err != nil {
		t.Fatalf("%s: full observation: %v", situation, err)
	}
	c.proxy.Reset()
	cheapIn.Actual, err = testenv.ObserveWith(ctx, c.proxy.Host(), func(e *deploy.Engine) (drift.Actual, error) { return e.ObserveForPlan(ctx, in) })
	if err != nil {
		t.Fatalf("%s: cheap observation: %v", situation, err)
	}
	full, cheap := drift.Compute(fullIn), drift.Compute(cheapIn)
	if a, b := decisions(t, full), decisions(t, cheap); a != b {
		t.Errorf("%s: the plans differ\nfull observation:\n%s\ncheap observation:\n%s", situation, full.String(), cheap.String())
	}
	if a, b := decisions(t, drift.Assess(fullIn, full)), decisions(t, drift.Assess(cheapIn, cheap)); a != b {
		t.Errorf("%s: the health verdicts differ\nfull: %s\ncheap: %s", situation, a, b)
	}
	if foreignMatters {
		ownIn := in
		if ownIn.Actual, err = testenv.ObserveWith(ctx, "", func(e *deploy.Engine) (drift.Actual, error) { return e.ObserveCold(ctx, app, false) }); err != nil {
			t.Fatal(err)
		}
		if decisions(t, drift.Compute(ownIn)) == decisions(t, full) {
			t.Errorf("%s: the app's own objects alone give the same plan; the situation does not test the lookups", situation)
		}
	}
	text := full.String()
	for _, conf := range full.Conflicts {
		text += "\n" + conf.Name + ": " + conf.Reason
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s: the plan does not show %q:\n%s", situation, w, text)
		}
	}
	c.checkCalls(situation, full)

	// The same, as the next CLI process sees it with the memo the last
	// one left: the memo must not change what is seen.
	c.proxy.Reset()
	memoIn := in
	memoIn.Actual, err = testenv.ObserveWith(ctx, c.proxy.Host(), func(e *deploy.Engine) (drift.Actual, error) {
		e.UseInspectMemo(app, "test", c.memo)
		actual, err := e.ObserveForPlan(ctx, in)
		c.memo = e.InspectMemo(app)
		return actual, err
	})
	if err != nil {
		t.Fatalf("%s: observation with the inspect memo: %v", situation, err)
	}
	c.memoInspects = c.proxy.Summary()["GET /containers/{id}/json"]
	withMemo := drift.Compute(memoIn)
	if a, b := decisions(t, full), decisions(t, withMemo); a != b {
		t.Errorf("%s: the plans differ\nfull observation:\n%s\nwith the inspect memo:\n%s", situation, full.String(), withMemo.String())
	}
	if a, b := decisions(t, drift.Assess(fullIn, full)), decisions(t, drift.Assess(memoIn, withMemo)); a != b {
		t.Errorf("%s: the health verdicts differ\nfull: %s\nwith the inspect memo: %s", situation, a, b)
	}
	t.Logf("%s: with the inspect memo, %d inspect(s)", situation, c.memoInspects)
}

// checkCalls requires of the cheap observation's calls: container lists,
// one inspect per owned container, never an image.
func (c *coldCheck) checkCalls(situation string, plan drift.Plan) {
	t := c.t
	t.Helper()
	calls := c.proxy.Summary()
	if n := calls["GET /containers/json"]; n == 0 {
		t.Errorf("%s: no container list counted: %v", situation, calls)
	}
	for _, call := range c.proxy.Calls() {
		if strings.Contains(call, "/images/") {
			t.Errorf("%s: the cheap observation inspected an image: %s", situation, call)
		}
	}
	if got, want := calls["GET /containers/{id}/json"], len(testenv.DockerNames(t, c.app)); got != want {
		t.Errorf("%s: %d inspects, want one per owned container (%d)", situation, got, want)
	}
	t.Logf("%s: %s; plan: %s", situation, testenv.FormatCalls(calls), plan.Summary())
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dockerTimeRE matches the relative times Docker writes into a status
// ("Exited (0) 2 seconds ago", "Up About a minute"), which reasons quote.
var dockerTimeRE = regexp.MustCompile(`(Less than a second|About an? (minute|hour)|\d+ (second|minute|hour|day|week|month|year)s?)( ago)?`)

// decisions is v as JSON without Docker's relative times: two
// observations a second apart see the same state in other words.
func decisions(t *testing.T, v any) string {
	t.Helper()
	return dockerTimeRE.ReplaceAllString(asJSON(t, v), "<time>")
}
