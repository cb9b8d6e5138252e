package e2e

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
	"github.com/driftless-dev/driftless/drift/manifest"
	"github.com/driftless-dev/driftless/e2e/testenv"
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
	app := testenv.UniqueApp(t)
	image := testenv.WorkloadImage(t, "v1")
	port := freePorts(t, 1)
	dir := writeApp(t, app, map[string]string{
		"web.yaml": plainService("web", image, 3) + "  resources: {memory: 64Mi}\n",
		"api.yaml": plainService("api", image, 1),
		"pub.yaml": plainService("pub", image, 1) + fmt.Sprintf("  ports: [{containerPort: 8080, hostPort: %d, hostIP: 127.0.0.1}]\n  update: {strategy: recreate}\n", port),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := t.TempDir()
	if out, code := testenv.Run(t, ctx, dir, "apply", dir, "--app", app, "--data", data); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	desired, err := manifest.LoadDirWith(dir, app, manifest.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.StartCountingProxy(t)
	owned := func() int { return len(dockerNames(t, app)) }

	// foreignMatters says the situation is one a look at the app's own
	// objects alone gets wrong, so the lookups are what makes it right.
	check := func(situation string, foreignMatters bool, want ...string) {
		t.Helper()
		in := drift.Input{App: app, Desired: desired, Options: drift.Options{Revision: "local", Now: time.Now()}}
		fullIn, cheapIn := in, in
		var err error
		fullIn.Actual, err = observeWith(ctx, "", func(e *deploy.Engine) (drift.Actual, error) { return e.ObserveCold(ctx, app, true) })
		if err != nil {
			t.Fatalf("%s: full observation: %v", situation, err)
		}
		proxy.Reset()
		cheapIn.Actual, err = observeWith(ctx, proxy.Host(), func(e *deploy.Engine) (drift.Actual, error) { return e.ObserveForPlan(ctx, in) })
		if err != nil {
			t.Fatalf("%s: cheap observation: %v", situation, err)
		}
		calls := proxy.Summary()
		full, cheap := drift.Compute(fullIn), drift.Compute(cheapIn)
		if a, b := decisions(t, full), decisions(t, cheap); a != b {
			t.Errorf("%s: the plans differ\nfull observation:\n%s\ncheap observation:\n%s", situation, full.String(), cheap.String())
		}
		if a, b := decisions(t, drift.Assess(fullIn, full)), decisions(t, drift.Assess(cheapIn, cheap)); a != b {
			t.Errorf("%s: the health verdicts differ\nfull: %s\ncheap: %s", situation, a, b)
		}
		if foreignMatters {
			ownIn := in
			if ownIn.Actual, err = observeWith(ctx, "", func(e *deploy.Engine) (drift.Actual, error) { return e.ObserveCold(ctx, app, false) }); err != nil {
				t.Fatal(err)
			}
			if decisions(t, drift.Compute(ownIn)) == decisions(t, full) {
				t.Errorf("%s: the app's own objects alone give the same plan; the situation does not test the lookups", situation)
			}
		}
		text := full.String()
		for _, c := range full.Conflicts {
			text += "\n" + c.Name + ": " + c.Reason
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: the plan does not show %q:\n%s", situation, w, text)
			}
		}
		// Never the whole engine's containers, never an image.
		if n := calls["GET /containers/json"]; n == 0 {
			t.Errorf("%s: no container list counted: %v", situation, calls)
		}
		for _, c := range proxy.Calls() {
			if strings.Contains(c, "/images/") {
				t.Errorf("%s: the cheap observation inspected an image: %s", situation, c)
			}
		}
		if got, want := calls["GET /containers/{id}/json"], owned(); got != want {
			t.Errorf("%s: %d inspects, want one per owned container (%d)", situation, got, want)
		}
		t.Logf("%s: %s; plan: %s", situation, testenv.FormatCalls(calls), full.Summary())
	}
	// foreign starts a container driftless does not own, removed at the end.
	foreign := func(name string, args ...string) {
		t.Helper()
		t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
		docker(t, append(append([]string{}, args...), "--name", name, "--label", "dev.driftless-test.owner="+app, image)...)
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
	t.Logf("driftless diff, no-op, %d owned containers: %s", owned(), testenv.FormatCalls(proxy.Summary()))

	check("no-op", false, "No changes")
	docker(t, "rm", "-f", app+"-web-2")
	check("missing replica", false, app+"-web-2", "removed outside Git")
	foreign(app+"-web-2", "create")
	check("foreign container holding a needed name", true, app+"-web-2: name is held by a container driftless does not own")
	docker(t, "rm", "-f", app+"-pub-1")
	foreign(app+"-squatter", "run", "-d", "-p", fmt.Sprintf("127.0.0.1:%d:8080", port))
	check("foreign container holding a needed host port", true, fmt.Sprintf("publishes host port %d", port))
	docker(t, "stop", "-t", "1", app+"-api-1")
	check("stopped replica", false, app+"-api-1", "stopped outside Git")
	docker(t, "update", "--memory", "96m", "--memory-swap", "192m", app+"-web-1")
	check("docker update", false, app+"-web-1", "resources.memory")
}

// observeWith observes through a fresh engine (an empty readiness cache,
// as a new CLI process has) at host ("" = the default).
func observeWith(ctx context.Context, host string, observe func(*deploy.Engine) (drift.Actual, error)) (drift.Actual, error) {
	eng, err := deploy.New(ctx, deploy.Options{Host: host})
	if err != nil {
		return drift.Actual{}, err
	}
	defer eng.Close()
	return observe(eng)
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
