package engines

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestOneShotCommandsOnANamedEngine: apply, diff and logs with --engine
// NAME --config driftless.yaml work on that engine of the file's
// engines: (here over TCP with TLS, written out or as a Docker context),
// not on the one DOCKER_HOST names;
// an engine the file does not declare is a usage error naming the known
// ones.
func TestOneShotCommandsOnANamedEngine(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	certs := makeCerts(t)
	tcp := testenv.FreeAddr(t)
	b := privengine.StartWithArgs(t, "--host", "tcp://"+tcp, "--tlsverify",
		"--tlscacert", certs.ca, "--tlscert", certs.serverCert, "--tlskey", certs.serverKey)
	b.LoadImages(image)
	app := prefix() + "-cli"
	t.Cleanup(func() { testenv.RemoveApp(t, app) })

	dir := filepath.Join(t.TempDir(), app)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(testenv.WebManifest(image, 1, "cli")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "driftless.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("engines:\n  - {name: b, host: 'tcp://%s', tls: {caFile: %s, certFile: %s, keyFile: %s}}\napps: []\n",
		tcp, certs.ca, certs.clientCert, certs.clientKey)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := t.TempDir()
	run := func(args ...string) (string, int) {
		return testenv.Run(t, ctx, "", append(args, "--data", data)...)
	}

	if out, code := run("apply", dir, "--engine", "b", "--config", cfg); code != 0 {
		t.Fatalf("apply --engine b: exit %d\n%s", code, out)
	}
	if n := len((engineCLI{b}).containers(t, app)); n != 1 {
		t.Errorf("engine b holds %d containers of %s after apply --engine b, want 1", n, app)
	}
	if n := len((engineCLI{}).containers(t, app)); n != 0 {
		t.Errorf("the engine DOCKER_HOST names holds %d containers of %s, want none", n, app)
	}
	if out, code := run("diff", dir, "--engine", "b", "--config", cfg); code != 0 {
		t.Errorf("diff --engine b after apply: exit %d, want 0 (nothing to change)\n%s", code, out)
	}
	if out, code := run("diff", dir); code != 1 {
		t.Errorf("diff on the engine DOCKER_HOST names: exit %d, want 1 (the app is not there)\n%s", code, out)
	}
	if out, code := testenv.Run(t, ctx, "", "logs", app, "--engine", "b", "--config", cfg); code != 0 {
		t.Errorf("logs --engine b: exit %d\n%s", code, out)
	}
	// The same engine as a Docker context, made by the docker CLI.
	dockerConfig := t.TempDir()
	ctxCmd := exec.Command("docker", "context", "create", "bctx", "--docker",
		fmt.Sprintf("host=tcp://%s,ca=%s,cert=%s,key=%s", tcp, certs.ca, certs.clientCert, certs.clientKey))
	ctxCmd.Env = append(os.Environ(), "DOCKER_CONFIG="+dockerConfig)
	if out, err := ctxCmd.CombinedOutput(); err != nil {
		t.Fatalf("docker context create: %v\n%s", err, out)
	}
	cfgCtx := filepath.Join(t.TempDir(), "driftless.yaml")
	if err := os.WriteFile(cfgCtx, []byte("engines:\n  - {name: b, context: bctx}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "DOCKER_CONFIG="+dockerConfig)
	if out, code := testenv.RunEnv(t, ctx, env, "", "diff", dir, "--engine", "b", "--config", cfgCtx, "--data", data); code != 0 {
		t.Errorf("diff --engine b through the Docker context bctx: exit %d, want 0 (applied there)\n%s", code, out)
	}

	out, code := run("diff", dir, "--engine", "nope", "--config", cfg)
	if code != 2 || !strings.Contains(out, `no engine "nope" under engines: (known: local, b)`) {
		t.Errorf("diff --engine nope: exit %d, want 2 naming the known engines\n%s", code, out)
	}
}
