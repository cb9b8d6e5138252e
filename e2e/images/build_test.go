package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// buildDockerfile runs the driftless binary (committed next to it) as the
// workload server: there is no base image and no registry, so FROM scratch.
const buildDockerfile = "FROM scratch\nCOPY driftless /driftless\nCOPY version.txt /version.txt\nENTRYPOINT [\"/driftless\", \"workload\"]\n"

// commitBuildContext writes a build context into the repository: the
// Dockerfile, the static driftless binary (executable) and a version file.
func commitBuildContext(t *testing.T, repo *gitserver.Repo, dir, version string) {
	t.Helper()
	bin, err := os.ReadFile(testenv.DriftlessBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	repo.WriteFile(dir+"/Dockerfile", buildDockerfile)
	repo.WriteFile(dir+"/driftless", string(bin))
	if err := os.Chmod(filepath.Join(repo.Work, filepath.FromSlash(dir+"/driftless")), 0o755); err != nil {
		t.Fatal(err)
	}
	repo.WriteFile(dir+"/version.txt", version)
}

// sorted is refs in builtImages' order.
func sorted(refs ...string) []string {
	slices.Sort(refs)
	return refs
}

// buildScenario is one app whose image the agent builds from a real
// git server's repository.
type buildScenario struct {
	t     *testing.T
	app   string
	path  string
	repo  *gitserver.Repo
	agent *testenv.Agent
	api   *web.Client
}

// image is the name driftless gives the build of web's context at HEAD.
func (b *buildScenario) image() string {
	return "driftless/" + b.app + "-web:tree-" + b.repo.Git("rev-parse", "HEAD:"+b.path+"/web")[:12]
}

// builds counts the builds the agent logged.
func (b *buildScenario) builds() int {
	return strings.Count(b.agent.Logs(), "msg=\"building image\"")
}

func (b *buildScenario) expectBuilds(n int, when string) {
	b.t.Helper()
	if got := b.builds(); got != n {
		b.t.Errorf("%s: %d builds logged, want %d", when, got, n)
	}
}

// enforced: sha runs image, healthy. With a newer revision refused, the
// app is OutOfSync with its branch while the old one keeps running.
func enforced(sha, image string) func(status.AppStatus) bool {
	return func(st status.AppStatus) bool {
		if st.Applied == nil || st.Applied.SHA != sha || st.Health != drift.HealthHealthy || len(st.Services) != 1 {
			return false
		}
		svc := st.Services[0]
		return svc.Ready == 1 && len(svc.Containers) == 1 && svc.Containers[0].Image == image
	}
}

func synced(sha, image string) func(status.AppStatus) bool {
	return func(st status.AppStatus) bool { return st.Sync == drift.SyncSynced && enforced(sha, image)(st) }
}

// TestBuildFromRepository deploys a service whose image is built from the
// repository, with the real agent, a real git server and the real engine:
// the image is named after the Git tree hash of its context; a commit that
// leaves the context alone builds nothing; a changed context is built and
// rolled out; a revert reuses the earlier image without building; a
// Dockerfile that fails is refused with its failing step and the end of
// the build's output while the running container stays; prune-images
// removes the unused built image and keeps the one in use.
func TestBuildFromRepository(t *testing.T) {
	t.Parallel()
	testenv.RequireDocker(t)
	b := &buildScenario{t: t}
	// Registered first, so it runs last: after the agent stopped and the
	// app's containers are gone, nothing uses the images any more.
	t.Cleanup(func() { testenv.RemoveBuiltImages(t, b.app) })
	b.app = testenv.UniqueApp(t)
	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	b.repo = gitserver.Init(t, base, "infra")
	b.path = "apps/" + b.app
	b.repo.WriteFile(b.path+"/compose.yaml", "services:\n  web:\n    build: ./web\n")
	commitBuildContext(t, b.repo, b.path+"/web", "v1")
	first := b.repo.Commit("web, built from the repository")
	firstImage := b.image()
	b.agent = testenv.StartAgent(t, t.TempDir(), "run", "--repo", b.repo.URL(server), "--branch", "main",
		"--path", b.path, "--app", b.app, "--interval", "1s", "--allow-insecure-transport")
	b.api = b.agent.Client()

	// The first commit is built and deployed under the context's tree hash.
	st := waitStatus(t, b.api, b.app, "the built image to run", synced(first, firstImage))
	if got := testenv.BuiltImages(t, b.app); !slices.Equal(got, []string{firstImage}) {
		t.Fatalf("built images %v, want [%s]", got, firstImage)
	}
	b.expectBuilds(1, "first commit")
	firstID := testenv.ContainerIDs(st)

	// A commit outside the context: nothing is built, nothing replaced.
	b.repo.WriteFile(b.path+"/README.md", "the shop\n")
	st = waitStatus(t, b.api, b.app, "the docs commit to be applied", synced(b.repo.Commit("docs"), firstImage))
	b.expectBuilds(1, "a commit outside the context")
	if got := testenv.ContainerIDs(st); !slices.Equal(got, firstID) {
		t.Errorf("a commit outside the context replaced the container: %v -> %v", firstID, got)
	}

	// A changed context is built and rolled out.
	b.repo.WriteFile(b.path+"/web/version.txt", "v2")
	second := b.repo.Commit("web v2")
	secondImage := b.image()
	st = waitStatus(t, b.api, b.app, "the rebuilt image to roll out", synced(second, secondImage))
	if got := testenv.ContainerIDs(st); slices.Equal(got, firstID) {
		t.Error("the changed context did not replace the container")
	}
	b.expectBuilds(2, "a changed context")
	if got, want := testenv.BuiltImages(t, b.app), sorted(firstImage, secondImage); !slices.Equal(got, want) {
		t.Errorf("built images %v, want %v", got, want)
	}

	// git revert: the earlier image comes back, without a build.
	reverted := b.repo.Revert(second)
	st = waitStatus(t, b.api, b.app, "the revert to run the earlier image", synced(reverted, firstImage))
	b.expectBuilds(2, "the revert")

	b.failingBuild(reverted, firstImage, testenv.ContainerIDs(st))
	b.prune(reverted, firstImage, secondImage)
}

// failingBuild commits a Dockerfile that fails: the revision is refused
// with the failing step, the last good one keeps running untouched, and
// the refused revision is not built again on every poll.
func (b *buildScenario) failingBuild(good, image string, ids []string) {
	t := b.t
	b.repo.WriteFile(b.path+"/web/Dockerfile", buildDockerfile+"COPY missing-file /x\n")
	broken := b.repo.Commit("copy a file that is not there")
	st := waitStatus(t, b.api, b.app, "the failing build to be refused", func(st status.AppStatus) bool {
		return st.Refused != nil && st.Refused.Revision.SHA == broken
	})
	if !regexp.MustCompile(`failed at "Step 5/\d+ : COPY missing-file /x"`).MatchString(st.Refused.Reason) {
		t.Errorf("refusal reason %q, want the failing step", st.Refused.Reason)
	}
	if !slices.ContainsFunc(st.Refused.Errors, func(e string) bool { return strings.Contains(e, "Step 4/") }) {
		t.Errorf("refusal errors %q, want the end of the build output", st.Refused.Errors)
	}
	st = waitStatus(t, b.api, b.app, "the last good revision to keep running", enforced(good, image))
	if got := testenv.ContainerIDs(st); !slices.Equal(got, ids) {
		t.Errorf("the refused build replaced the container: %v -> %v", ids, got)
	}
	refused := testenv.History(t, b.api, b.app, string(status.KindRefused))
	if len(refused) != 1 || refused[0].Revision == nil || refused[0].Revision.SHA != broken {
		t.Errorf("refused history entries %+v, want one for %s", refused, broken[:7])
	}
	time.Sleep(3 * time.Second) // three more polls of the same head
	b.expectBuilds(3, "polls of the refused revision (the failing build once)")
}

// prune runs prune-images: a dry run first, then the unused image goes
// and the one in use stays.
func (b *buildScenario) prune(good, inUse, unused string) {
	t := b.t
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, code := testenv.Run(t, ctx, t.TempDir(), "prune-images", b.app)
	if code != 0 || !strings.Contains(out, "would remove  "+unused) || !strings.Contains(out, "keep          "+inUse) || !strings.Contains(out, "dry run") {
		t.Fatalf("prune-images (dry run) exit %d:\n%s", code, out)
	}
	if got := testenv.BuiltImages(t, b.app); len(got) != 2 {
		t.Fatalf("the dry run removed images: %v", got)
	}
	out, code = testenv.Run(t, ctx, t.TempDir(), "prune-images", b.app, "--yes")
	if code != 0 || !regexp.MustCompile(`Removed 1 image\(s\) built or pulled for app `+b.app+`, [0-9.]+ [kMG]B freed`).MatchString(out) {
		t.Fatalf("prune-images --yes exit %d:\n%s", code, out)
	}
	if got := testenv.BuiltImages(t, b.app); !slices.Equal(got, []string{inUse}) {
		t.Errorf("after pruning, built images %v, want only the one in use %s", got, inUse)
	}
	waitStatus(t, b.api, b.app, "the app to stay healthy after pruning", enforced(good, inUse))
}

// TestBuildApplyCLI: `driftless apply` builds a compose service's image
// from the directory, printing the build's steps, and a second apply
// builds nothing.
func TestBuildApplyCLI(t *testing.T) {
	t.Parallel()
	app, dir, bin := buildCLIApp(t)
	writeTree(t, dir, map[string]string{
		"compose.yaml":       "services:\n  web:\n    image: " + app + "/web:dev\n    build:\n      context: web\n      args: {GREETING: hello}\n",
		"web/Dockerfile":     "FROM scratch\nARG GREETING\nCOPY driftless /driftless\nCOPY version.txt /version.txt\nENV GREETING=$GREETING\nENTRYPOINT [\"/driftless\", \"workload\"]\n",
		"web/version.txt":    "v1",
		"web/.dockerignore":  "notes.md\n",
		"web/notes.md":       "not sent",
		"web/driftless":      string(bin),
		"web/nested/keep.md": "sent",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, code := testenv.Run(t, ctx, dir, "apply", ".", "--app", app)
	if code != 0 {
		t.Fatalf("apply exit %d:\n%s", code, out)
	}
	for _, want := range []string{"\nBuilding:\n", "Step 1/9 : FROM scratch", "Step 6/9 : ENTRYPOINT", "Successfully tagged " + app + "/web:dev", "built in", "Apply complete"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}
	images := testenv.BuiltImages(t, app)
	if len(images) != 2 || !slices.Contains(images, app+"/web:dev") {
		t.Errorf("built images %v, want the content tag and %s/web:dev", images, app)
	}
	env := testenv.DockerStdout(t, "inspect", "--format", "{{range .Config.Env}}{{println .}}{{end}}", app+"-web-1")
	if !strings.Contains(env, "GREETING=hello") {
		t.Errorf("the build arg did not reach the image: env %q", env)
	}
	out, code = testenv.Run(t, ctx, dir, "apply", ".", "--app", app)
	if code != 0 || strings.Contains(out, "Building:") || !strings.Contains(out, "No changes") {
		t.Errorf("second apply exit %d, want no build and no changes:\n%s", code, out)
	}

	// A failing step: exit 1 with the step and the end of the output, and
	// the running container is left alone.
	id := testenv.DockerStdout(t, "inspect", "--format", "{{.Id}}", app+"-web-1")
	df := filepath.Join(dir, "web", "Dockerfile")
	if err := os.WriteFile(df, []byte("FROM scratch\nCOPY missing-file /x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = testenv.Run(t, ctx, dir, "apply", ".", "--app", app)
	if code != 1 || !strings.Contains(out, "Last lines of the build:") || !strings.Contains(out, `failed at "Step 2/5 : COPY missing-file /x"`) || !strings.Contains(out, "nothing was changed") {
		t.Errorf("apply of a failing Dockerfile exit %d:\n%s", code, out)
	}
	if got := testenv.DockerStdout(t, "inspect", "--format", "{{.Id}}", app+"-web-1"); got != id {
		t.Errorf("the failed build replaced the container: %s -> %s", id, got)
	}
}

// buildCLIApp is a new app for the CLI's builds: its name, a directory
// named after it, and the driftless binary to build images of. The
// images built for it are removed at the end.
func buildCLIApp(t *testing.T) (app, dir string, bin []byte) {
	t.Helper()
	testenv.RequireDocker(t)
	t.Cleanup(func() { testenv.RemoveBuiltImages(t, app) })
	app = testenv.UniqueApp(t)
	bin, err := os.ReadFile(testenv.DriftlessBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	return app, filepath.Join(t.TempDir(), app), bin
}

// writeTree writes files (slash paths relative to dir), all executable.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBuildOptionsApplyCLI: compose's dockerfile_inline, build labels,
// tags, no_cache and pull on the real engine. The inline Dockerfile is
// built and run; the image carries the labels and the extra names; on a
// rebuild the build with no_cache uses none of the engine's build cache
// while one without it does; pull: true asks the registry for the base
// image (here one that cannot answer) where pull: false builds from the
// engine's copy.
func TestBuildOptionsApplyCLI(t *testing.T) {
	t.Parallel()
	app, dir, bin := buildCLIApp(t)
	inline := func(extra string) string {
		return "      dockerfile_inline: |\n        FROM scratch\n        COPY driftless /driftless\n        COPY version.txt /version.txt\n" + extra +
			"        ENTRYPOINT [\"/driftless\", \"workload\"]\n"
	}
	writeTree(t, dir, map[string]string{
		"compose.yaml": "services:\n" +
			"  web:\n    image: " + app + "/web:dev\n    build:\n      context: web\n" + inline("") +
			"      labels: {org.example.team: shop}\n      tags: [\"" + app + "/web:extra\"]\n      no_cache: true\n" +
			"  cached:\n    build:\n      context: web\n" + inline("        LABEL cached=1\n"),
		"web/version.txt": "v1",
		"web/driftless":   string(bin),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, code := testenv.Run(t, ctx, dir, "apply", ".", "--app", app)
	if code != 0 {
		t.Fatalf("apply exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "COPY version.txt /version.txt") || !strings.Contains(out, "Apply complete") {
		t.Errorf("apply output lacks the inline Dockerfile's steps:\n%s", out)
	}
	images := testenv.BuiltImages(t, app)
	for _, want := range []string{app + "/web:dev", app + "/web:extra"} {
		if !slices.Contains(images, want) {
			t.Errorf("built images %v lack %s", images, want)
		}
	}
	image := func(container string) string {
		return testenv.DockerStdout(t, "inspect", "--format", "{{.Image}}", container)
	}
	webImage := image(app + "-web-1")
	if got := testenv.DockerStdout(t, "image", "inspect", "--format", "{{index .Config.Labels \"org.example.team\"}} {{index .Config.Labels \"dev.driftless.app\"}}", webImage); got != "shop "+app {
		t.Errorf("web's image labels %q, want the manifest's and driftless's", got)
	}
	if got := testenv.DockerStdout(t, "image", "inspect", "--format", "{{.Id}}", app+"/web:extra"); got != webImage {
		t.Errorf("%s/web:extra is %s, web runs %s", app, got, webImage)
	}
	if state := testenv.DockerStdout(t, "inspect", "--format", "{{.State.Status}} {{.Path}}", app+"-web-1"); state != "running /driftless" {
		t.Errorf("web from the inline Dockerfile: %q", state)
	}

	// A changed context rebuilds both: web without the engine's cache,
	// cached with it. apply prefixes each build line with its image.
	writeTree(t, dir, map[string]string{"web/version.txt": "v2"})
	out, code = testenv.Run(t, ctx, dir, "apply", ".", "--app", app)
	if code != 0 {
		t.Fatalf("apply of v2 exit %d:\n%s", code, out)
	}
	usedCache := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "build" && strings.Contains(line, "Using cache") {
			usedCache[f[1][:strings.LastIndex(f[1], ":")]] = true
		}
	}
	if usedCache[app+"/web"] || !usedCache["driftless/"+app+"-cached"] {
		t.Errorf("build cache used by %v, want by cached only (web has no_cache):\n%s", usedCache, out)
	}

	// pull: true asks the base image's registry, even with the image here.
	base := "127.0.0.1:1/" + app + "-base:v1"
	testenv.DockerQuiet(t, "tag", webImage, base)
	t.Cleanup(func() { testenv.DockerQuiet(t, "image", "rm", base) })
	pullDir := filepath.Join(t.TempDir(), app)
	compose := func(pull bool) string {
		return fmt.Sprintf("services:\n  derived:\n    build:\n      context: .\n      dockerfile_inline: \"FROM %s\\nLABEL derived=1\\n\"\n      pull: %v\n", base, pull)
	}
	writeTree(t, pullDir, map[string]string{"compose.yaml": compose(true)})
	out, code = testenv.Run(t, ctx, pullDir, "apply", ".", "--app", app+"-p")
	if code == 0 || !strings.Contains(out, "127.0.0.1:1") {
		t.Errorf("pull: true with an unreachable registry: exit %d:\n%s", code, out)
	}
	writeTree(t, pullDir, map[string]string{"compose.yaml": compose(false)})
	t.Cleanup(func() { testenv.RemoveApp(t, app+"-p"); testenv.RemoveBuiltImages(t, app+"-p") })
	if out, code := testenv.Run(t, ctx, pullDir, "apply", ".", "--app", app+"-p"); code != 0 {
		t.Errorf("pull: false from the engine's copy: exit %d:\n%s", code, out)
	}
}
