package security

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestBuildContextMatchesDockerBuild (issue 24, item 9): a pushed build
// context's .dockerignore means what it means to docker build. The agent
// builds the image from Git, and the files in the running container are
// exactly the ones `docker build` puts there from the same directory: a
// file the .dockerignore leaves out for docker ("ax" under "[!a]x", a
// class of '!' and 'a', not a negation; "build/keep", in a directory
// docker skips whole) is not shipped in the image, and one docker sends
// ("bx") is not dropped. The service says pull_policy: build, as files
// written for docker compose do: driftless builds it, as it does anyway.
func TestBuildContextMatchesDockerBuild(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	var app string
	t.Cleanup(func() { testenv.RemoveBuiltImages(t, app) })
	app = testenv.UniqueApp(t)
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	path := "apps/" + app
	repo.WriteFile(path+"/compose.yaml", `services:
  web:
    build: web
    pull_policy: build
    stop_grace_period: 1s
    x-driftless:
      readiness: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
`)
	repo.WriteFile(path+"/web/Dockerfile", "FROM "+v1+"\nCOPY . /ctx\n")
	repo.WriteFile(path+"/web/.dockerignore", "# not for the image\n[!a]x\nbuild\n!**/keep\n*.md\n!README.md\n")
	for _, f := range []string{"ax", "bx", "!x", "build/out.o", "build/keep", "sub/keep", "sub/out.o", "README.md", "notes.md", "app.conf"} {
		repo.WriteFile(path+"/web/"+f, "content of "+f+"\n")
	}
	head := repo.Commit("a service built from its context")
	agent := testenv.StartConfigAgent(t, []testenv.ComposeAppConfig{{Name: app, Repo: repo.URL(server.URL), Branch: "main", Path: path, Interval: "1s"}})
	testenv.WaitAppStatus(t, agent, app, 3*time.Minute, "built and deployed", testenv.ConvergedServices(head, map[string]int{"web": 1}))

	ours := exportedFiles(t, app+"-web-1", "ctx/")
	theirs := dockerBuildContextFiles(t, filepath.Join(repo.Work, filepath.FromSlash(path+"/web")))
	if !slices.Equal(ours, theirs) {
		t.Errorf("the image driftless built holds %q;\ndocker build's holds %q", ours, theirs)
	}
	for _, f := range []string{"ax", "build/keep"} {
		if slices.Contains(ours, f) {
			t.Errorf("%s was shipped in the image, though the .dockerignore leaves it out", f)
		}
	}
}

// dockerBuildContextFiles builds dir with the docker client's legacy
// builder (it filters the context on the client, as driftless does) and
// lists the files under /ctx in the image.
func dockerBuildContextFiles(t *testing.T, dir string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tag := "driftless-test-dockerignore:" + testenv.RandHex(6)
	cmd := exec.CommandContext(ctx, "docker", "build", "-q", "-t", tag, dir)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { testenv.DockerQuiet(t, "rmi", "-f", tag) })
	id := testenv.DockerStdout(t, "create", tag)
	t.Cleanup(func() { testenv.DockerQuiet(t, "rm", "-f", id) })
	return exportedFiles(t, id, "ctx/")
}

// exportedFiles lists the regular files and symlinks under prefix in a
// container's file system, sorted, without the prefix.
func exportedFiles(t *testing.T, container, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", "export", container)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("docker export %s: %v", container, err)
	}
	var files []string
	tr := tar.NewReader(&out)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := strings.CutPrefix(h.Name, prefix); ok && (h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeSymlink) {
			files = append(files, p)
		}
	}
	slices.Sort(files)
	return files
}
