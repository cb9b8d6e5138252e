package engines

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestRepositoryFilesOnRemoteEngine: a compose app on an ssh:// engine
// (always another host as far as the agent knows) binds a repository file
// and a repository directory; they are in its container, read-only by
// mode, with nothing written under the agent's files directory for that
// engine. A commit that leaves the files alone keeps the container; one
// that changes the file replaces it, and the new content is there. Its
// state directory ./data is a volume on that engine, kept by the
// replacement.
func TestRepositoryFilesOnRemoteEngine(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	eng, ssh := farEngine(t, image)

	app := prefix() + "-files"
	dir := "apps/" + app + "/"
	repo, url := platformRepo(t)
	repo.WriteFile(dir+"compose.yaml", fmt.Sprintf(`services:
  web:
    image: %s
    environment: {MESSAGE: files}
    stop_grace_period: 1s
    volumes:
      - ./conf/app.conf:/etc/app.conf:ro
      - ./site:/srv/www/site:ro
      - ./data:/var/lib/web
`, image))
	repo.WriteFile(dir+"conf/app.conf", "greeting = one\n")
	repo.WriteFile(dir+"site/index.html", "<h1>hello</h1>\n")
	repo.WriteFile(dir+"site/css/site.css", "h1 { color: red }\n")
	first := repo.Commit("an app with repository files on the ssh engine")
	cfg := fmt.Sprintf(`engines:
%sapps:
  - {name: %s, repo: %s, branch: main, path: apps/%[2]s, interval: 2s, allowInsecureTransport: true, engine: far}
`, farEntry(ssh), app, url)
	path := writeConfig(t, cfg)
	data := testenv.DataDir(t)
	agent := testenv.StartAgent(t, data, "run", "--config", path, "--ping-timeout", sshPingTimeout)

	st := testenv.WaitAppStatus(t, agent, app, remoteWait, "converged with repository files", testenv.ConvergedServices(first, map[string]int{"web": 1}))
	name := app + "-web-1"
	want := map[string]string{
		"app.conf 444":          "greeting = one\n",
		"site/ 555":             "",
		"site/index.html 444":   "<h1>hello</h1>\n",
		"site/css/ 555":         "",
		"site/css/site.css 444": "h1 { color: red }\n",
	}
	got := containerFiles(t, eng, name, "/etc/app.conf")
	for k, v := range containerFiles(t, eng, name, "/srv/www/site") {
		got[k] = v
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("files in %s on the remote engine:\n%v\nwant\n%v", name, got, want)
	}
	files := filepath.Join(data, "engines", "far", "files")
	if ents, err := os.ReadDir(files); err == nil {
		for _, e := range ents {
			t.Errorf("the agent's files directory for the remote engine holds %s", e.Name())
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}

	// The state directory ./data is a volume on the remote engine.
	stateVolume := manifest.StateVolumeName(app, "data")
	if got := eng.Docker("inspect", "--format", "{{range .Mounts}}{{if eq .Destination \"/var/lib/web\"}}{{.Type}} {{.Name}}{{end}}{{end}}", name); strings.TrimSpace(got) != "volume "+stateVolume {
		t.Errorf("/var/lib/web in %s is mounted from %q, want the volume %s", name, strings.TrimSpace(got), stateVolume)
	}

	// Another file of the app changes, not the ones it binds: same container.
	repo.WriteFile(dir+"README.md", "notes\n")
	second := repo.Commit("notes")
	kept := testenv.WaitAppStatus(t, agent, app, remoteWait, "at the commit that changes no bound file", testenv.ConvergedServices(second, map[string]int{"web": 1}))
	if a, b := testenv.ContainerIDs(st), testenv.ContainerIDs(kept); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("containers %v became %v at a commit that changes no bound file", a, b)
	}

	// The bound file changes: a new container with the new content.
	repo.WriteFile(dir+"conf/app.conf", "greeting = two\n")
	third := repo.Commit("a new greeting")
	testenv.WaitAppStatus(t, agent, app, remoteWait, "replaced with the new file", func(st status.AppStatus) bool {
		ids := testenv.ContainerIDs(st)
		return testenv.ConvergedServices(third, map[string]int{"web": 1})(st) && len(ids) == 1 && ids[0] != testenv.ContainerIDs(kept)[0]
	})
	if got := containerFiles(t, eng, name, "/etc/app.conf"); got["app.conf 444"] != "greeting = two\n" || len(got) != 1 {
		t.Errorf("after the change, /etc/app.conf in %s: %v, want the new content", name, got)
	}
	if got := eng.Docker("inspect", "--format", "{{range .Mounts}}{{if eq .Destination \"/var/lib/web\"}}{{.Name}}{{end}}{{end}}", name); strings.TrimSpace(got) != stateVolume {
		t.Errorf("the replacement mounts %q at /var/lib/web, want the same state volume %s", strings.TrimSpace(got), stateVolume)
	}
}

// containerFiles copies path out of a container on the private engine
// (docker cp: the workload image has no shell) and returns each entry,
// by its path relative to path's parent and its mode, with the content
// of regular files.
func containerFiles(t *testing.T, eng *privengine.Engine, container, path string) map[string]string {
	t.Helper()
	out := testenv.CopyOut(t, eng.Env(), container, path)
	files := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[fmt.Sprintf("%s %o", h.Name, h.Mode&0o7777)] = string(b)
	}
}
