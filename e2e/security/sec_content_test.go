package security

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
)

// TestRepoFilesContentAddressed: a repository file is mounted from the
// directory named by its full content hash, and only while that directory
// holds exactly its content.
//
// Content addressed by 16 hex characters could be made to collide (2^32
// work): a pusher of one app could prepare a file whose directory another
// app's mount then reuses. Such a collision is stood in for by planting
// other content under the 16-character name before the app first deploys:
// the replicas must not get it. Then the directory the agent wrote is
// changed on the host: the next replica created must get the repository's
// content again, not the changed one.
func TestRepoFilesContentAddressed(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	const good = "listen 80;\n"
	hash := (&manifest.RepoTree{Files: []manifest.RepoFile{{Data: []byte(good)}}}).Hash()
	if len(hash) != 64 {
		t.Fatalf("content hash %q: want all 64 hex characters", hash)
	}
	manifestFor := func(replicas int) string {
		return testenv.ServiceManifest(v1, replicas, map[string]string{"MESSAGE": "m"}) + `  binds:
    - repoPath: app.conf
      mountPath: /etc/app.conf
`
	}

	app := testenv.UniqueApp(t)
	r := &testenv.AgentRig{T: t, App: app, Path: "apps/" + app, Data: t.TempDir()}
	base := t.TempDir()
	r.Server = gitserver.RunDaemon(t, base)
	r.Repo = gitserver.Init(t, base, "infra")
	r.Repo.WriteFile(r.Path+"/web.yaml", manifestFor(2))
	r.Repo.WriteFile(r.Path+"/app.conf", good)
	first := r.Repo.Commit("deploy web with its config")

	files := filepath.Join(r.Data, "files")
	planted := filepath.Join(files, hash[:manifest.LegacyContentIDLen])
	if err := os.MkdirAll(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(planted, "file"), []byte("evil\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	r.Args = []string{"run", "--repo", r.Repo.URL(r.Server.URL), "--branch", "main", "--path", r.Path,
		"--app", app, "--allow-insecure-transport", "--interval", "1s"}
	r.Agent = testenv.StartAgent(t, r.Data, r.Args...)
	r.WaitConverged("first deploy", first, 2, v1)

	source := filepath.Join(files, hash, "file")
	for _, c := range []string{app + "-web-1", app + "-web-2"} {
		if got := testenv.ContainerFile(t, c, "/etc/app.conf"); got != good {
			t.Errorf("%s:/etc/app.conf = %q, want the repository's %q", c, got, good)
		}
		if got := mountSource(t, c, "/etc/app.conf"); got != source {
			t.Errorf("%s: bind source %s, want %s", c, got, source)
		}
	}

	// Changed on the host, under the full name.
	dir := filepath.Join(files, hash)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(source, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(source, []byte("evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	third := r.Commit("scale to 3", manifestFor(3))
	r.Wait(90*time.Second, "scaled to 3", testenv.ConvergedTo(third, 3, v1))
	if got := testenv.ContainerFile(t, app+"-web-3", "/etc/app.conf"); got != good {
		t.Errorf("new replica's /etc/app.conf = %q, want the repository's %q", got, good)
	}
	if b, err := os.ReadFile(source); err != nil || string(b) != good {
		t.Errorf("%s = %q (%v), want it written again", source, b, err)
	}
	if !strings.Contains(r.Agent.Logs(), "do not match their content hash") {
		t.Error("the agent did not say it wrote the changed files again")
	}
}

// mountSource is the host source of a container's mount at dest.
func mountSource(t *testing.T, container, dest string) string {
	t.Helper()
	mounts, _ := testenv.Inspect(t, "container", container)["Mounts"].([]any)
	for _, m := range mounts {
		if testenv.FieldString(m, "Destination") == dest {
			return testenv.FieldString(m, "Source")
		}
	}
	return ""
}
