package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// writeApp writes manifests into a fresh directory named after the app.
func writeApp(t *testing.T, app string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), app)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func webService(image string, replicas int, message string) string {
	return testenv.ServiceManifest(image, replicas, map[string]string{"MESSAGE": message})
}

func TestValidateReportsEveryErrorWithPosition(t *testing.T) {
	t.Parallel()
	dir := writeApp(t, "broken", map[string]string{
		"web.yaml": `apiVersion: driftless.dev/v1
kind: Service
metadata:
  name: web
spec:
  image: shop/web:v7
  replicas: -1
  resources: {memory: 512Mo}
  networks: [nowhere]
`,
		"db.yaml": `apiVersion: driftless.dev/v1
kind: Service
metadata: {name: db}
spec:
  image: shop/db:v1
  colour: blue
`,
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, code := testenv.Run(t, ctx, filepath.Dir(dir), "validate", "broken")
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{
		"broken/web.yaml:7:13: spec.replicas: must be >= 0",
		"broken/web.yaml:8:23: spec.resources.memory:",
		"broken/web.yaml:9:14: spec.networks[0]:",
		"broken/db.yaml:6:3: spec.colour: unknown field",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestApplyDiffRoundTrip drives the CLI the way a user does: diff on an empty
// engine, apply, diff again, re-apply, change the spec, scale down.
func TestApplyDiffRoundTrip(t *testing.T) {
	t.Parallel()
	app := testenv.UniqueApp(t)
	image := testenv.WorkloadImage(t, "v1")
	dir := writeApp(t, app, map[string]string{"web.yaml": webService(image, 2, "one")})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	out, code := testenv.Run(t, ctx, dir, "diff")
	if code != 1 || !strings.Contains(out, "+ container "+app+"-web-1") || !strings.Contains(out, "+ container "+app+"-web-2") {
		t.Fatalf("diff on empty engine: exit %d (want 1), output:\n%s", code, out)
	}

	out, code = testenv.Run(t, ctx, dir, "apply")
	if code != 0 {
		t.Fatalf("apply: exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "2/2 ready") {
		t.Fatalf("apply output should report 2/2 ready:\n%s", out)
	}

	out, code = testenv.Run(t, ctx, dir, "diff")
	if code != 0 || !strings.Contains(out, "No changes") {
		t.Fatalf("diff after apply: exit %d (want 0):\n%s", code, out)
	}
	out, code = testenv.Run(t, ctx, dir, "apply")
	if code != 0 || !strings.Contains(out, "No changes") {
		t.Fatalf("second apply must do nothing: exit %d:\n%s", code, out)
	}

	// A spec change is a replace with the field-level before/after.
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(webService(image, 1, "two")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = testenv.Run(t, ctx, dir, "diff")
	if code != 1 || !strings.Contains(out, "env.MESSAGE: one → two") || !strings.Contains(out, "- container "+app+"-web-2") {
		t.Fatalf("diff after change: exit %d:\n%s", code, out)
	}
	out, code = testenv.Run(t, ctx, dir, "apply")
	if code != 0 {
		t.Fatalf("apply change: exit %d:\n%s", code, out)
	}
	names := testenv.DockerNames(t, app)
	if strings.Join(names, ",") != app+"-web-1" {
		t.Fatalf("after scale down to 1 the containers are %v", names)
	}
}

// TestDiffSeesHandMadeContainers shows that identity comes from labels: a
// container made by hand with driftless's labels is part of the plan.
func TestDiffSeesHandMadeContainers(t *testing.T) {
	t.Parallel()
	app := testenv.UniqueApp(t)
	image := testenv.WorkloadImage(t, "v1")
	dir := writeApp(t, app, map[string]string{"web.yaml": webService(image, 1, "one")})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	testenv.Docker(t, "run", "-d", "--name", app+"-web-3",
		"--label", "dev.driftless.app="+app, "--label", "dev.driftless.service=web",
		"--label", "dev.driftless.slot=3", "--label", "dev.driftless.spec-hash=handmade",
		image)
	out, code := testenv.Run(t, ctx, dir, "diff")
	if code != 1 {
		t.Fatalf("diff: exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{"+ container " + app + "-web-1", "- container " + app + "-web-3", "scale down"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
}
