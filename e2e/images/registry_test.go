package images

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/deploy"
	deployregistry "github.com/driftless-dev/driftless/deploy/registry"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/registry"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// variantImage makes a local image that differs from base (a new image
// ID) by the image environment env ("K=V"), with docker commit: no
// registry and no builder. It is removed when the test ends.
func variantImage(t *testing.T, base, ref string, env ...string) string {
	t.Helper()
	id := testenv.Docker(t, "create", base)
	defer testenv.DockerQuiet(t, "rm", "--force", id)
	args := []string{"commit"}
	for _, e := range env {
		args = append(args, "--change", "ENV "+e)
	}
	testenv.Docker(t, append(args, id, ref)...)
	t.Cleanup(func() { testenv.DockerQuiet(t, "image", "rm", "--force", ref) })
	return ref
}

// imageID is the ID of the image a reference names on the engine.
func imageID(t *testing.T, ref string) string {
	return testenv.Docker(t, "image", "inspect", "--format", "{{.Id}}", ref)
}

// containerImageIDs are the image IDs the app's containers run.
func containerImageIDs(t *testing.T, app string) []string {
	t.Helper()
	var ids []string
	for _, c := range testenv.DockerContainers(t, app) {
		ids = append(ids, testenv.Docker(t, "inspect", "--format", "{{.Image}}", c.ID))
	}
	return ids
}

// agentEnv is this process's environment with DOCKER_CONFIG set to dir:
// the agent never sees the machine's own ~/.docker/config.json.
func agentEnv(dockerConfig string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DOCKER_CONFIG=") {
			env = append(env, kv)
		}
	}
	return append(env, "DOCKER_CONFIG="+dockerConfig)
}

// pushedRepo is a repository name in the registry no other test uses.
func pushedRepo(app, name string) string { return app + "/" + name }

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "driftless.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func statusOf(name string) func(ctx context.Context, c *web.Client) (status.AppStatus, error) {
	return func(ctx context.Context, c *web.Client) (status.AppStatus, error) { return c.App(ctx, name) }
}

func convergedOn(sha string, ready int) func(status.AppStatus) bool {
	return func(st status.AppStatus) bool {
		return st.Applied != nil && st.Applied.SHA == sha && st.Sync == drift.SyncSynced &&
			st.Health == drift.HealthHealthy && len(st.Services) == 1 && st.Services[0].Ready == ready
	}
}

// TestPrivateImageWithDockerConfig: the agent pulls a private image from
// a TLS registry (its CA in /etc/docker/certs.d) with the credentials of a
// config.json in DOCKER_CONFIG (auths, base64 user:password), as `docker
// login` leaves them.
func TestPrivateImageWithDockerConfig(t *testing.T) {
	t.Parallel()
	testenv.RequireDocker(t)
	reg := registry.StartTLS(t, "deployer", "correct horse")
	app := testenv.UniqueApp(t)
	ref, _ := reg.Push(t, testenv.WorkloadImage(t, "v1"), pushedRepo(app, "web")+":v1")
	reg.RemoveLocal(t, ref)

	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	repo.WriteFile("apps/"+app+"/web.yaml", testenv.WebManifest(ref, 1, "private"))
	sha := repo.Commit("private image")
	cfg := writeConfig(t, fmt.Sprintf("apps:\n  - name: %s\n    repo: %s\n    allowInsecureTransport: true\n    path: apps/%s\n    interval: 1s\n", app, repo.URL(server), app))

	agent := testenv.StartAgentEnv(t, agentEnv(reg.DockerConfig), t.TempDir(), "run", "--config", cfg)
	testenv.WaitApp(t, agent, 90*time.Second, "the private image deployed", statusOf(app), convergedOn(sha, 1))
	// The same workload image may carry other tests' tags too, so look for
	// ours among them rather than at the first.
	tags := testenv.Docker(t, "image", "inspect", "--format", "{{range .RepoTags}}{{println .}}{{end}}", ref)
	if !slices.Contains(strings.Fields(tags), ref) {
		t.Errorf("the engine's image tags are %q, want the pulled %s among them", tags, ref)
	}
}

// TestPrivateImageWithConfigRegistries: the credentials come from
// driftless.yaml's registries: (username inline, the password from a
// file); Docker's config.json is empty.
func TestPrivateImageWithConfigRegistries(t *testing.T) {
	t.Parallel()
	testenv.RequireDocker(t)
	reg := registry.StartTLS(t, "deployer", "s3cret-pass")
	app := testenv.UniqueApp(t)
	ref, _ := reg.Push(t, testenv.WorkloadImage(t, "v1"), pushedRepo(app, "web")+":v1")
	reg.RemoveLocal(t, ref)

	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	repo.WriteFile("apps/"+app+"/web.yaml", testenv.WebManifest(ref, 2, "private"))
	sha := repo.Commit("private image")
	passFile := filepath.Join(t.TempDir(), "registry-password")
	if err := os.WriteFile(passFile, []byte("s3cret-pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, fmt.Sprintf(`registries:
  - host: %s
    username: deployer
    passwordFile: %s
apps:
  - name: %s
    repo: %s
    allowInsecureTransport: true
    path: apps/%s
    interval: 1s
`, reg.Host, passFile, app, repo.URL(server), app))

	agent := testenv.StartAgentEnv(t, agentEnv(t.TempDir()), t.TempDir(), "run", "--config", cfg)
	testenv.WaitApp(t, agent, 90*time.Second, "the private image deployed", statusOf(app), convergedOn(sha, 2))
}

// TestWrongRegistryPasswordKeepsLastGood: a commit moves the service to a
// private image the agent has the wrong password for. The status names
// the image, the registry and says it is an authentication failure; the
// replica of the previous commit keeps running. Then the registry goes
// down: the status says it is unreachable, and the replica still runs.
func TestWrongRegistryPasswordKeepsLastGood(t *testing.T) {
	t.Parallel()
	testenv.RequireDocker(t)
	reg := registry.StartTLS(t, "deployer", "the-real-one")
	app := testenv.UniqueApp(t)
	v1 := testenv.WorkloadImage(t, "v1")
	private := variantImage(t, v1, "driftless-e2e-"+app+":private", "IMAGE_GEN=private")
	ref, _ := reg.Push(t, private, pushedRepo(app, "web")+":v2")
	reg.RemoveLocal(t, ref)

	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	repo.WriteFile("apps/"+app+"/web.yaml", testenv.WebManifest(v1, 1, "good"))
	good := repo.Commit("local image")
	cfg := writeConfig(t, fmt.Sprintf(`apps:
  - name: %s
    repo: %s
    allowInsecureTransport: true
    path: apps/%s
    interval: 1s
    registries:
      - host: %s
        username: deployer
        passwordEnv: E2E_WRONG_REGISTRY_PASSWORD
`, app, repo.URL(server), app, reg.Host))
	env := append(agentEnv(t.TempDir()), "E2E_WRONG_REGISTRY_PASSWORD=not-it")
	agent := testenv.StartAgentEnv(t, env, t.TempDir(), "run", "--config", cfg)
	testenv.WaitApp(t, agent, 90*time.Second, "the local image deployed", statusOf(app), convergedOn(good, 1))
	before := testenv.DockerContainers(t, app)

	repo.WriteFile("apps/"+app+"/web.yaml", testenv.WebManifest(ref, 1, "private"))
	repo.Commit("private image, wrong password")
	want := fmt.Sprintf("image %s could not be pulled from registry %s: authentication failed (401/denied)", ref, reg.Host)
	st := testenv.WaitApp(t, agent, 90*time.Second, "the auth failure reported", statusOf(app), func(st status.AppStatus) bool {
		b, _ := json.Marshal(st)
		return st.Health == drift.HealthDegraded && strings.Contains(string(b), want)
	})
	t.Logf("status message: %s", st.Message)
	after := testenv.DockerContainers(t, app)
	if len(after) != 1 || after[0].ID != before[0].ID || after[0].State != "running" {
		t.Errorf("the last good replica must keep running untouched: before %+v, after %+v", before, after)
	}
	if ids := containerImageIDs(t, app); len(ids) != 1 || ids[0] != imageID(t, v1) {
		t.Errorf("running image IDs %v, want the last good %s", ids, imageID(t, v1))
	}

	// The registry goes away: the status says it is unreachable, and the
	// last good replica still runs.
	reg.Stop()
	down := reg.Host + "/" + pushedRepo(app, "web") + ":v3"
	repo.WriteFile("apps/"+app+"/web.yaml", testenv.WebManifest(down, 1, "registry down"))
	repo.Commit("private image, registry down")
	want = fmt.Sprintf("image %s could not be pulled from registry %s: registry unreachable", down, reg.Host)
	testenv.WaitApp(t, agent, 90*time.Second, "the unreachable registry reported", statusOf(app), func(st status.AppStatus) bool {
		b, _ := json.Marshal(st)
		return st.Health == drift.HealthDegraded && strings.Contains(string(b), want)
	})
	if after := testenv.DockerContainers(t, app); len(after) != 1 || after[0].ID != before[0].ID || after[0].State != "running" {
		t.Errorf("the last good replica must keep running with the registry down: before %+v, after %+v", before, after)
	}
}

// applyCLI runs `driftless apply` with DOCKER_CONFIG set.
func applyCLI(t *testing.T, dockerConfig, dir, app string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.DriftlessBinary(t), "apply", dir, "--app", app, "--ready-timeout", "30s")
	cmd.Env = agentEnv(dockerConfig)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("driftless apply: %v", err)
	}
	return string(out), 0
}

func pullManifest(image, policy, message string) string {
	return strings.Replace(testenv.WebManifest(image, 1, message), "spec:\n", "spec:\n  pullPolicy: "+policy+"\n", 1)
}

// TestPullPolicies: with pullPolicy: always, a tag pushed again is picked
// up by the next rollout (an env change here), and `driftless apply`
// shows the pull per layer; with never, a missing image is a clear
// failure and nothing is pulled.
func TestPullPolicies(t *testing.T) {
	t.Parallel()
	testenv.RequireDocker(t)
	reg := registry.Start(t, "deployer", "pw")
	app := testenv.UniqueApp(t)
	v1 := testenv.WorkloadImage(t, "v1")
	gen1 := variantImage(t, v1, "driftless-e2e-"+app+":gen1", "IMAGE_GEN=1")
	gen2 := variantImage(t, v1, "driftless-e2e-"+app+":gen2", "IMAGE_GEN=2")
	ref, _ := reg.Push(t, gen1, pushedRepo(app, "web")+":stable")
	t.Cleanup(func() { reg.RemoveLocal(t, ref) })
	reg.RemoveLocal(t, ref)

	dir := filepath.Join(t.TempDir(), app)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(body string) {
		if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(pullManifest(ref, "always", "one"))
	out, code := applyCLI(t, reg.DockerConfig, dir, app)
	if code != 0 {
		t.Fatalf("first apply exited %d:\n%s", code, out)
	}
	if !strings.Contains(out, "pull "+ref+": ") {
		t.Errorf("apply did not show the pull's progress:\n%s", out)
	}
	if ids := containerImageIDs(t, app); len(ids) != 1 || ids[0] != imageID(t, gen1) {
		t.Fatalf("after the first apply the replica runs %v, want gen1 %s", ids, imageID(t, gen1))
	}

	// The tag moves in the registry; the engine still holds gen1 under it.
	reg.Push(t, gen2, pushedRepo(app, "web")+":stable")
	testenv.Docker(t, "tag", gen1, ref)
	write(pullManifest(ref, "always", "two"))
	out, code = applyCLI(t, reg.DockerConfig, dir, app)
	if code != 0 {
		t.Fatalf("second apply exited %d:\n%s", code, out)
	}
	if ids := containerImageIDs(t, app); len(ids) != 1 || ids[0] != imageID(t, gen2) {
		t.Errorf("after a rollout with pullPolicy always the replica runs %v, want the re-pushed gen2 %s\n%s", ids, imageID(t, gen2), out)
	}

	missing := reg.Host + "/" + pushedRepo(app, "absent") + ":v1"
	write(pullManifest(missing, "never", "three"))
	out, code = applyCLI(t, reg.DockerConfig, dir, app)
	if code == 0 {
		t.Fatalf("apply of an absent image with pullPolicy never succeeded:\n%s", out)
	}
	if want := "image " + missing + " is not on the engine and pullPolicy is never"; !strings.Contains(out, want) {
		t.Errorf("apply output does not say %q:\n%s", want, out)
	}
	if ids := containerImageIDs(t, app); len(ids) != 1 || ids[0] != imageID(t, gen2) {
		t.Errorf("the failed rollout must keep the gen2 replica: %v", ids)
	}
}

// TestImageUpdateRollsOutMovedTag: a service follows :stable every 2s.
// A new image pushed under the tag is rolled out with a history entry
// naming both digests, and the status shows the new digest per replica;
// a crashing image pushed under the tag is backed off and reported
// Degraded while the previous replica keeps serving.
func TestImageUpdateRollsOutMovedTag(t *testing.T) {
	t.Parallel()
	testenv.RequireDocker(t)
	reg := registry.StartTLS(t, "deployer", "pw")
	app := testenv.UniqueApp(t)
	v1 := testenv.WorkloadImage(t, "v1")
	gen1 := variantImage(t, v1, "driftless-e2e-"+app+":gen1", "IMAGE_GEN=1")
	gen2 := variantImage(t, v1, "driftless-e2e-"+app+":gen2", "IMAGE_GEN=2")
	crash := variantImage(t, v1, "driftless-e2e-"+app+":crash", "WORKLOAD_CRASH=true")
	ref, d1 := reg.Push(t, gen1, pushedRepo(app, "web")+":stable")

	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	manifest := strings.Replace(testenv.WebManifest(ref, 1, "followed"), "spec:\n", "spec:\n  imageUpdate: {interval: 2s}\n", 1)
	repo.WriteFile("apps/"+app+"/web.yaml", manifest)
	sha := repo.Commit("follow stable")
	cfg := writeConfig(t, fmt.Sprintf("apps:\n  - name: %s\n    repo: %s\n    allowInsecureTransport: true\n    path: apps/%s\n    interval: 30s\n", app, repo.URL(server), app))
	agent := testenv.StartAgentEnv(t, agentEnv(reg.DockerConfig), t.TempDir(), "run", "--config", cfg)

	onDigest := func(d string) func(status.AppStatus) bool {
		return func(st status.AppStatus) bool {
			if !convergedOn(sha, 1)(st) || len(st.Services[0].Containers) != 1 {
				return false
			}
			c := st.Services[0].Containers[0]
			return c.ImageDigest == d && c.Ready
		}
	}
	st := testenv.WaitApp(t, agent, 90*time.Second, "pinned to the first digest", statusOf(app), onDigest(d1))
	if img := st.Services[0].Image; img != ref+"@"+d1 {
		t.Errorf("the service's desired image is %q, want the tag pinned to %s", img, d1)
	}

	_, d2 := reg.Push(t, gen2, pushedRepo(app, "web")+":stable")
	testenv.WaitApp(t, agent, 90*time.Second, "the moved tag rolled out", statusOf(app), onDigest(d2))
	if ids := containerImageIDs(t, app); len(ids) != 1 || ids[0] != imageID(t, gen2) {
		t.Errorf("running %v, want gen2 %s", ids, imageID(t, gen2))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	page, err := agent.Client().History(ctx, app, []string{string(status.KindImage)}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := "web: image " + ref + " moved from " + d1 + " to " + d2
	if len(page.Entries) != 1 || page.Entries[0].Summary != want {
		var got []string
		for _, e := range page.Entries {
			got = append(got, e.Summary)
		}
		t.Errorf("image history %q, want [%q]", got, want)
	}
	syncs, err := agent.Client().History(ctx, app, []string{string(status.KindSync)}, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(syncs.Entries) != 1 || syncs.Entries[0].Digests[app+"-web-1"] != d2 {
		t.Errorf("the rollout's history entry must record the digest it runs: %+v", syncs.Entries)
	}
	serving := testenv.DockerContainers(t, app)

	_, d3 := reg.Push(t, crash, pushedRepo(app, "web")+":stable")
	st = testenv.WaitApp(t, agent, 120*time.Second, "the crashing digest backed off", statusOf(app), func(st status.AppStatus) bool {
		return st.Health == drift.HealthDegraded && len(st.Services) == 1 && strings.Contains(st.Services[0].Message, "keeps failing") && strings.Contains(st.Services[0].Message, "not before")
	})
	t.Logf("after the crashing digest %s: %s / %s", d3, st.Message, st.Services[0].Message)
	after := testenv.DockerContainers(t, app)
	if len(after) != 1 || after[0].ID != serving[0].ID || after[0].State != "running" {
		t.Errorf("the previous replica must keep serving: before %+v, after %+v", serving, after)
	}
	if ids := containerImageIDs(t, app); len(ids) != 1 || ids[0] != imageID(t, gen2) {
		t.Errorf("running %v, want gen2 %s still", ids, imageID(t, gen2))
	}
}

// TestBenchImageUpdateCheck measures what the tag checks of 100
// services following 100 unchanged tags cost: one round resolves each tag
// once (Engine.ResolveDigest, as a pass does for each due service),
// nothing pulled. The registry serves TLS, its CA in certs.d, with
// htpasswd auth. Timing is direct to the registry; a counting proxy in
// front of it counts the registry requests of one round, which must be
// one HEAD per check. For comparison, the same round through the engine
// (GET /distribution/{image}/json, what driftless did before).
func TestBenchImageUpdateCheck(t *testing.T) {
	// Not parallel: a benchmark (DRIFTLESS_BENCH=1) times the checks; other tests' load would be in its numbers.
	testenv.BenchOnly(t)
	testenv.RequireDocker(t)
	reg := registry.StartTLS(t, "deployer", "pw")
	proxy := reg.StartProxy(t)
	app := testenv.UniqueApp(t)
	repoName := pushedRepo(app, "web")
	ref, digest := reg.Push(t, testenv.WorkloadImage(t, "v1"), repoName+":stable")
	const n = 100
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("svc%03d", i)
	}
	reg.Retag(t, repoName, "stable", tags...)
	_ = ref
	creds := &deployregistry.Logins{Docker: &deployregistry.DockerConfig{Dir: reg.ConfigDir(t, "deployer", "pw", proxy.Host)}}
	eng, err := deploy.New(context.Background(), deploy.Options{Credentials: creds, FilesDir: filepath.Join(t.TempDir(), "files")})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()
	round := func(host string) time.Duration {
		start := time.Now()
		for _, tag := range tags {
			img := host + "/" + repoName + ":" + tag
			d, err := eng.ResolveDigest(ctx, app, img)
			if err != nil || d != digest {
				t.Fatalf("resolve %s: %q %v, want %s", img, d, err, digest)
			}
		}
		return time.Since(start)
	}
	round(reg.Host) // learn the auth scheme, as a running agent has
	var samples []time.Duration
	for range 5 {
		samples = append(samples, round(reg.Host))
	}
	slices.Sort(samples)
	round(proxy.Host)
	proxy.Reset()
	viaProxy := round(proxy.Host)
	counts := proxy.Counts()
	engineStart := time.Now()
	for _, tag := range tags {
		if d, err := eng.ResolveDigestViaEngine(ctx, app, reg.Host+"/"+repoName+":"+tag); err != nil || d != digest {
			t.Fatalf("resolve through the engine: %q %v", d, err)
		}
	}
	viaEngine := time.Since(engineStart)
	var kinds []string
	total := 0
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		kinds = append(kinds, fmt.Sprintf("%s: %d", k, counts[k]))
		total += counts[k]
	}
	t.Logf("imageUpdate checks of %d unchanged tags (TLS registry %s, engine verifies: %v): %v per round of %d (median of 5; min %v, max %v), %v per service",
		n, reg.Host, reg.Verified, samples[2].Round(time.Millisecond), n, samples[0].Round(time.Millisecond), samples[4].Round(time.Millisecond), (samples[2] / n).Round(10*time.Microsecond))
	t.Logf("registry requests for one round of %d checks (through the counting proxy, %v): %d in all, %.2f per check: %s",
		n, viaProxy.Round(time.Millisecond), total, float64(total)/n, strings.Join(kinds, ", "))
	t.Logf("the same round through the engine's distribution endpoint: %v", viaEngine.Round(time.Millisecond))
	if counts["HEAD manifest"] != n || total != n {
		t.Errorf("one round of %d checks made %v requests, want exactly one HEAD of the manifest per check", n, counts)
	}
}
