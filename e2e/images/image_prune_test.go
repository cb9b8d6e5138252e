package images

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/registry"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// pushOnly pushes a fresh variant of the workload image as repoTag and
// leaves the engine without any name for it, so the agent's pull is the
// only name it will have.
func pushOnly(t *testing.T, reg *registry.Registry, app, gen, repoTag string) string {
	t.Helper()
	local := variantImage(t, testenv.WorkloadImage(t, "v1"), "driftless-e2e-"+app+":"+gen, "IMAGE_GEN="+gen)
	ref, _ := reg.Push(t, local, repoTag)
	testenv.DockerQuiet(t, "image", "rm", local, ref)
	t.Cleanup(func() {
		// The app's containers first, so the image is deleted, not untagged.
		testenv.RemoveApp(t, app)
		testenv.DockerQuiet(t, "image", "rm", "--force", ref)
	})
	return ref
}

func imageExists(ref string) bool {
	return exec.Command("docker", "image", "inspect", ref).Run() == nil
}

// TestPrunePulledImages: the agent pulls web:v1 and side:v1 from a TLS
// registry; a commit moves web to v2 and drops side, which a container of
// someone else's now uses. prune-images offers v1 only (v2 runs, side is
// used by the foreign container), and --yes removes v1 only.
func TestPrunePulledImages(t *testing.T) {
	t.Parallel()
	testenv.RequireDocker(t)
	start := time.Now()
	reg := registry.StartTLS(t, "deployer", "pw")
	app := testenv.UniqueApp(t)
	v1 := pushOnly(t, reg, app, "1", pushedRepo(app, "web")+":v1")
	v2 := pushOnly(t, reg, app, "2", pushedRepo(app, "web")+":v2")
	side := pushOnly(t, reg, app, "side", pushedRepo(app, "side")+":v1")

	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	repo.WriteFile("apps/"+app+"/web.yaml", testenv.WebManifest(v1, 1, "one"))
	repo.WriteFile("apps/"+app+"/side.yaml", strings.Replace(testenv.WebManifest(side, 1, "side"), "name: web", "name: side", 1))
	first := repo.Commit("web v1 and side")
	cfg := writeConfig(t, fmt.Sprintf("apps:\n  - name: %s\n    repo: %s\n    allowInsecureTransport: true\n    path: apps/%s\n    interval: 1s\n    prune: true\n", app, repo.URL(server), app))
	data := t.TempDir()
	agent := testenv.StartAgentEnv(t, agentEnv(reg.DockerConfig), data, "run", "--config", cfg)
	testenv.WaitApp(t, agent, 90*time.Second, "web v1 and side deployed", statusOf(app), func(st status.AppStatus) bool {
		return st.Applied != nil && st.Applied.SHA == first && st.Sync == drift.SyncSynced && st.Health == drift.HealthHealthy && len(st.Services) == 2
	})

	// Someone else's container uses the side image (no driftless labels).
	foreign := app + "-someone-else"
	testenv.Docker(t, "create", "--name", foreign, side)
	t.Cleanup(func() { testenv.DockerQuiet(t, "rm", "--force", foreign) })

	repo.WriteFile("apps/"+app+"/web.yaml", testenv.WebManifest(v2, 1, "two"))
	repo.Remove("apps/" + app + "/side.yaml")
	second := repo.Commit("web v2, no side")
	testenv.WaitApp(t, agent, 90*time.Second, "web v2 alone", statusOf(app), convergedOn(second, 1))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, code := testenv.Run(t, ctx, t.TempDir(), "prune-images", app, "--data", data)
	t.Logf("prune-images (dry run):\n%s", out)
	if code != 0 || !strings.Contains(out, "would remove  "+v1+"  (pulled, ") ||
		!strings.Contains(out, "keep          "+v2+"  (pulled, ") || !strings.Contains(out, "used by "+app+"-web-1") ||
		!strings.Contains(out, "keep          "+side+"  (pulled, ") || !strings.Contains(out, "used by "+foreign) ||
		!strings.Contains(out, "Would remove 1 image(s) built or pulled for app "+app) {
		t.Fatalf("prune-images dry run exit %d: want v1 offered, v2 and side kept", code)
	}
	if !imageExists(v1) {
		t.Fatalf("the dry run removed %s", v1)
	}
	out, code = testenv.Run(t, ctx, t.TempDir(), "prune-images", app, "--data", data, "--yes")
	t.Logf("prune-images --yes:\n%s", out)
	if code != 0 || !strings.Contains(out, "Removed 1 image(s) built or pulled for app "+app) {
		t.Fatalf("prune-images --yes exit %d", code)
	}
	if imageExists(v1) {
		t.Errorf("%s is still on the engine after pruning", v1)
	}
	for _, ref := range []string{v2, side} {
		if !imageExists(ref) {
			t.Errorf("%s was removed, but a container uses it", ref)
		}
	}
	testenv.WaitApp(t, agent, 30*time.Second, "the app still healthy", statusOf(app), convergedOn(second, 1))
	t.Logf("took %v", time.Since(start).Round(time.Second))
}

// TestRegistryTLSTrustAndCredentialsApply: `driftless apply` against a TLS
// registry. Without the CA in /etc/docker/certs.d the pull fails naming
// the certificate and where the CA goes; with it and without credentials
// it is an authentication failure; with the credentials it deploys.
func TestRegistryTLSTrustAndCredentialsApply(t *testing.T) {
	t.Parallel()
	testenv.RequireDocker(t)
	start := time.Now()
	reg := registry.StartTLS(t, "deployer", "pw")
	app := testenv.UniqueApp(t)
	ref := pushOnly(t, reg, app, "1", pushedRepo(app, "web")+":v1")
	dir := filepath.Join(t.TempDir(), app)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(testenv.WebManifest(ref, 1, "tls")), 0o644); err != nil {
		t.Fatal(err)
	}

	if reg.Verified {
		reg.RemoveCA(t)
		out, code := applyCLI(t, reg.DockerConfig, dir, app)
		want := "TLS certificate not trusted: install the registry's CA on the engine's host as /etc/docker/certs.d/" + reg.Host + "/ca.crt"
		if code == 0 || !strings.Contains(out, want) {
			t.Errorf("apply without the CA exited %d, want a failure saying %q:\n%s", code, want, out)
		}
		reg.InstallCA(t)
	} else {
		t.Logf("the registry listens on loopback, which the engine does not verify: the untrusted-CA step is skipped")
	}
	out, code := applyCLI(t, t.TempDir(), dir, app)
	want := fmt.Sprintf("image %s could not be pulled from registry %s: authentication failed (401/denied)", ref, reg.Host)
	if code == 0 || !strings.Contains(out, want) {
		t.Errorf("apply without credentials exited %d, want a failure saying %q:\n%s", code, want, out)
	}
	out, code = applyCLI(t, reg.DockerConfig, dir, app)
	if code != 0 {
		t.Fatalf("apply with the credentials exited %d:\n%s", code, out)
	}
	if ids := containerImageIDs(t, app); len(ids) != 1 || ids[0] != imageID(t, ref) {
		t.Errorf("running %v, want the pulled %s", ids, ref)
	}
	t.Logf("registry %s (engine verifies its certificate: %v); took %v", reg.Host, reg.Verified, time.Since(start).Round(time.Second))
}
