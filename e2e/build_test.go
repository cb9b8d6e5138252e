package e2e

import (
	"context"
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
	dsync "github.com/driftless-dev/driftless/sync"
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

// builtImages lists the images driftless built for app, as "name:tag".
func builtImages(t *testing.T, app string) []string {
	t.Helper()
	out := dockerStdout(t, "images", "--format", "{{.Repository}}:{{.Tag}}",
		"--filter", "label="+drift.LabelBuilt+"=true", "--filter", "label="+drift.LabelApp+"="+app)
	var refs []string
	for _, l := range strings.Fields(out) {
		refs = append(refs, l)
	}
	slices.Sort(refs)
	return refs
}

// removeBuiltImages removes the images built for app, and only those.
func removeBuiltImages(t *testing.T, app string) {
	t.Helper()
	if app == "" {
		return
	}
	for _, ref := range builtImages(t, app) {
		dockerQuiet(t, "image", "rm", ref)
	}
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
	testenv.RequireDocker(t)
	var app string
	// Registered first, so it runs last: after the agent stopped and the
	// app's containers are gone, nothing uses the images any more.
	t.Cleanup(func() { removeBuiltImages(t, app) })
	app = testenv.UniqueApp(t)

	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	path := "apps/" + app
	repo.WriteFile(path+"/compose.yaml", "services:\n  web:\n    build: ./web\n")
	commitBuildContext(t, repo, path+"/web", "v1")
	first := repo.Commit("web, built from the repository")
	firstTree := repo.Git("rev-parse", "HEAD:"+path+"/web")
	firstImage := "driftless/" + app + "-web:tree-" + firstTree[:12]

	agent := testenv.StartAgent(t, t.TempDir(), "run", "--repo", repo.URL(server), "--branch", "main",
		"--path", path, "--app", app, "--interval", "1s")
	api := agent.Client()
	// enforced: sha runs image, healthy. With a newer revision refused,
	// the app is OutOfSync with its branch while the old one keeps running.
	enforced := func(sha, image string) func(dsync.AppStatus) bool {
		return func(st dsync.AppStatus) bool {
			if st.Applied == nil || st.Applied.SHA != sha || st.Health != drift.HealthHealthy || len(st.Services) != 1 {
				return false
			}
			svc := st.Services[0]
			return svc.Ready == 1 && len(svc.Containers) == 1 && svc.Containers[0].Image == image
		}
	}
	running := func(sha, image string) func(dsync.AppStatus) bool {
		return func(st dsync.AppStatus) bool { return st.Sync == drift.SyncSynced && enforced(sha, image)(st) }
	}
	builds := func() int { return strings.Count(agent.Logs(), "msg=\"building image\"") }

	// The first commit is built and deployed under the context's tree hash.
	st := waitStatus(t, api, app, "the built image to run", running(first, firstImage))
	if got := builtImages(t, app); !slices.Equal(got, []string{firstImage}) {
		t.Fatalf("built images %v, want [%s]", got, firstImage)
	}
	if n := builds(); n != 1 {
		t.Fatalf("%d builds logged, want 1", n)
	}
	firstID := containerIDs(st)

	// A commit outside the context: nothing is built, nothing replaced.
	repo.WriteFile(path+"/README.md", "the shop\n")
	unrelated := repo.Commit("docs")
	st = waitStatus(t, api, app, "the docs commit to be applied", running(unrelated, firstImage))
	if n := builds(); n != 1 {
		t.Errorf("a commit outside the context built %d more image(s)", n-1)
	}
	if got := containerIDs(st); !slices.Equal(got, firstID) {
		t.Errorf("a commit outside the context replaced the container: %v -> %v", firstID, got)
	}

	// A changed context is built and rolled out.
	repo.WriteFile(path+"/web/version.txt", "v2")
	second := repo.Commit("web v2")
	secondImage := "driftless/" + app + "-web:tree-" + repo.Git("rev-parse", "HEAD:"+path+"/web")[:12]
	st = waitStatus(t, api, app, "the rebuilt image to roll out", running(second, secondImage))
	if got := containerIDs(st); slices.Equal(got, firstID) {
		t.Error("the changed context did not replace the container")
	}
	if n := builds(); n != 2 {
		t.Errorf("%d builds logged after the context changed, want 2", n)
	}
	if got, want := builtImages(t, app), []string{firstImage, secondImage}; !slices.Equal(got, want) {
		t.Errorf("built images %v, want %v", got, want)
	}

	// git revert: the earlier image comes back, without a build.
	reverted := repo.Revert(second)
	st = waitStatus(t, api, app, "the revert to run the earlier image", running(reverted, firstImage))
	if n := builds(); n != 2 {
		t.Errorf("the revert built again: %d builds logged, want 2", n)
	}
	goodID := containerIDs(st)

	// A Dockerfile that fails is refused; the container keeps running.
	repo.WriteFile(path+"/web/Dockerfile", buildDockerfile+"COPY missing-file /x\n")
	broken := repo.Commit("copy a file that is not there")
	st = waitStatus(t, api, app, "the failing build to be refused", func(st dsync.AppStatus) bool {
		return st.Refused != nil && st.Refused.Revision.SHA == broken
	})
	if !regexp.MustCompile(`failed at "Step 5/\d+ : COPY missing-file /x"`).MatchString(st.Refused.Reason) {
		t.Errorf("refusal reason %q, want the failing step", st.Refused.Reason)
	}
	if len(st.Refused.Errors) == 0 || !slices.ContainsFunc(st.Refused.Errors, func(e string) bool { return strings.Contains(e, "Step 4/") }) {
		t.Errorf("refusal errors %q, want the end of the build output", st.Refused.Errors)
	}
	st = waitStatus(t, api, app, "the last good revision to keep running", enforced(reverted, firstImage))
	if got := containerIDs(st); !slices.Equal(got, goodID) {
		t.Errorf("the refused build replaced the container: %v -> %v", goodID, got)
	}
	refused := history(t, api, app, string(dsync.KindRefused))
	if len(refused) != 1 || refused[0].Revision == nil || refused[0].Revision.SHA != broken {
		t.Errorf("refused history entries %+v, want one for %s", refused, broken[:7])
	}
	// The refused revision is not built again on every poll.
	time.Sleep(3 * time.Second)
	if n := strings.Count(agent.Logs(), "msg=\"building image\""); n != 3 {
		t.Errorf("%d builds logged, want 3 (the failing one once)", n)
	}

	// prune-images: a dry run first, then the unused image goes and the
	// one in use stays.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, code := testenv.Run(t, ctx, t.TempDir(), "prune-images", app)
	if code != 0 || !strings.Contains(out, "would remove  "+secondImage) || !strings.Contains(out, "keep          "+firstImage) || !strings.Contains(out, "dry run") {
		t.Fatalf("prune-images (dry run) exit %d:\n%s", code, out)
	}
	if got := builtImages(t, app); len(got) != 2 {
		t.Fatalf("the dry run removed images: %v", got)
	}
	out, code = testenv.Run(t, ctx, t.TempDir(), "prune-images", app, "--yes")
	if code != 0 || !regexp.MustCompile(`Removed 1 image\(s\) built for app `+app+`, [0-9.]+ [kMG]B freed`).MatchString(out) {
		t.Fatalf("prune-images --yes exit %d:\n%s", code, out)
	}
	if got := builtImages(t, app); !slices.Equal(got, []string{firstImage}) {
		t.Errorf("after pruning, built images %v, want only the one in use %s", got, firstImage)
	}
	waitStatus(t, api, app, "the app to stay healthy after pruning", enforced(reverted, firstImage))
}

// TestBuildApplyCLI: `driftless apply` builds a compose service's image
// from the directory, printing the build's steps, and a second apply
// builds nothing.
func TestBuildApplyCLI(t *testing.T) {
	testenv.RequireDocker(t)
	var app string
	t.Cleanup(func() { removeBuiltImages(t, app) })
	app = testenv.UniqueApp(t)
	dir := filepath.Join(t.TempDir(), app)
	bin, err := os.ReadFile(testenv.DriftlessBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"compose.yaml":       "services:\n  web:\n    image: " + app + "/web:dev\n    build:\n      context: web\n      args: {GREETING: hello}\n",
		"web/Dockerfile":     "FROM scratch\nARG GREETING\nCOPY driftless /driftless\nCOPY version.txt /version.txt\nENV GREETING=$GREETING\nENTRYPOINT [\"/driftless\", \"workload\"]\n",
		"web/version.txt":    "v1",
		"web/.dockerignore":  "notes.md\n",
		"web/notes.md":       "not sent",
		"web/driftless":      string(bin),
		"web/nested/keep.md": "sent",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
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
	images := builtImages(t, app)
	if len(images) != 2 || !slices.Contains(images, app+"/web:dev") {
		t.Errorf("built images %v, want the content tag and %s/web:dev", images, app)
	}
	env := dockerStdout(t, "inspect", "--format", "{{range .Config.Env}}{{println .}}{{end}}", app+"-web-1")
	if !strings.Contains(env, "GREETING=hello") {
		t.Errorf("the build arg did not reach the image: env %q", env)
	}
	out, code = testenv.Run(t, ctx, dir, "apply", ".", "--app", app)
	if code != 0 || strings.Contains(out, "Building:") || !strings.Contains(out, "No changes") {
		t.Errorf("second apply exit %d, want no build and no changes:\n%s", code, out)
	}
}
