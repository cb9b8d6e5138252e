package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/deploy/logstream"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// faceManifest is one web replica of the workload whose MESSAGE (which the
// workload logs at start) is marked secretEnv when secret is set.
func faceManifest(image, message string, secret bool) string {
	m := fmt.Sprintf(`apiVersion: driftless.dev/v1
kind: Service
metadata:
  name: web
spec:
  image: %s
  replicas: 1
  env:
    MESSAGE: %s
    LOG_LEVEL: info
`, image, message)
	if secret {
		m += "  secretEnv: [MESSAGE]\n"
	}
	return m + `  readiness:
    httpGet: {path: /healthz, port: 8080}
    periodSeconds: 1
  stopGracePeriodSeconds: 1
`
}

// startFaceAgent serves one app from path deploy of a repository on a
// git:// server, with link templates that map the server to a fake host.
func startFaceAgent(t *testing.T, app string, repo *gitserver.Repo, server string) *testenv.Agent {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "driftless.yaml")
	body := fmt.Sprintf(`apps:
  - name: %s
    repo: %s
    branch: main
    path: deploy
    interval: 1s
    allowInsecureTransport: true
    commitURLTemplate: https://git.example.test/acme/shop/commit/{sha}
    treeURLTemplate: https://git.example.test/acme/shop/src/{sha}/{path}
`, app, repo.URL(server))
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return testenv.StartAgent(t, t.TempDir(), "run", "--config", cfg)
}

func waitApplied(t *testing.T, agent *testenv.Agent, app, sha string) status.AppStatus {
	t.Helper()
	return testenv.WaitApp(t, agent, 90*time.Second, "app runs "+sha[:7], func(ctx context.Context, c *web.Client) (status.AppStatus, error) {
		return c.App(ctx, app)
	}, func(st status.AppStatus) bool {
		ready := 0
		for _, s := range st.Services {
			ready += s.Ready
		}
		return st.Applied != nil && st.Applied.SHA == sha && st.Sync == drift.SyncSynced && ready == 1
	})
}

func faceGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestFaceEntryShowsDiffAndCommitLinks: after a real commit, the sync's
// history entry shows the Git diff of the app's path with the changed
// lines classed, the secretEnv value redacted, and links to the commit and
// tree through the configured templates; the API serves the same diff.
func TestFaceEntryShowsDiffAndCommitLinks(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "face")
	repo.WriteFile("deploy/web.yaml", faceManifest(image, "first-secret-value", true))
	repo.WriteFile("README.md", "outside the app's path\n")
	c1 := repo.Commit("first")
	agent := startFaceAgent(t, app, repo, server)
	waitApplied(t, agent, app, c1)

	repo.WriteFile("deploy/web.yaml", strings.Replace(faceManifest(image, "second-secret-value", true), "LOG_LEVEL: info", "LOG_LEVEL: debug", 1))
	repo.WriteFile("README.md", "changed outside the app's path\n")
	c2 := repo.Commit("debug logging")
	waitApplied(t, agent, app, c2)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	page, err := agent.Client().History(ctx, app, []string{"sync"}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var entry uint64
	for _, e := range page.Entries {
		if e.Revision != nil && e.Revision.SHA == c2 && e.Result == "succeeded" {
			entry = e.ID
			break
		}
	}
	if entry == 0 {
		t.Fatalf("no succeeded sync of %s in history: %+v", c2, page.Entries)
	}
	code, body := faceGet(t, fmt.Sprintf("%s/history/%d", agent.URL, entry))
	if code != http.StatusOK {
		t.Fatalf("entry page: %d\n%s", code, body)
	}
	for _, want := range []string{
		"What the revision changed in Git",
		`<span class="d-del">-    LOG_LEVEL: info</span>`,
		`<span class="d-add">&#43;    LOG_LEVEL: debug</span>`,
		`<span class="d-add">&#43;    MESSAGE: ` + logstream.Redacted + `</span>`,
		`<code>` + c1[:7] + `</code> → <code>` + c2[:7] + `</code>`,
		`href="https://git.example.test/acme/shop/commit/` + c2 + `"`,
		`href="https://git.example.test/acme/shop/src/` + c2 + `/deploy"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("entry page lacks %q", want)
		}
	}
	for _, leak := range []string{"first-secret-value", "second-secret-value", "README.md"} {
		if strings.Contains(body, leak) {
			t.Errorf("entry page shows %q", leak)
		}
	}

	// The app page shows the running revision's diff and links.
	_, appPage := faceGet(t, agent.URL+"/apps/"+app)
	if !strings.Contains(appPage, `<span class="d-add">&#43;    LOG_LEVEL: debug</span>`) ||
		!strings.Contains(appPage, `href="https://git.example.test/acme/shop/commit/`+c2+`"`) {
		t.Error("app page lacks the running revision's diff or commit link")
	}

	code, raw := faceGet(t, agent.URL+"/api/v1/apps/"+app+"/diff")
	var d struct {
		From, To, Text string
		Files          int
	}
	if err := json.Unmarshal([]byte(raw), &d); err != nil || code != http.StatusOK {
		t.Fatalf("diff API: %d %s", code, raw)
	}
	if d.From != c1 || d.To != c2 || d.Files != 1 || !strings.Contains(d.Text, "+    LOG_LEVEL: debug\n") || strings.Contains(d.Text, "secret-value") {
		t.Errorf("diff API = %+v", d)
	}
	code, raw = faceGet(t, agent.URL+"/api/v1/apps/"+app)
	if code != http.StatusOK || !strings.Contains(raw, `"commit":"https://git.example.test/acme/shop/commit/`+c2+`"`) {
		t.Errorf("app API lacks the commit link: %s", raw)
	}
}

func waitOutput(t *testing.T, buf *testenv.LockedBuffer, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(buf.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output lacks %q after %s:\n%s", want, timeout, buf.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFaceLogs: `driftless logs APP web` prints the workload's start line
// with its secretEnv value redacted, -f follows a new line, a foreign
// container is refused by the CLI and the API, and the dashboard's logs
// page and API show the same lines.
func TestFaceLogs(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo := gitserver.Init(t, base, "face")
	secret := "face-secret-" + app
	repo.WriteFile("deploy/web.yaml", faceManifest(image, secret, true))
	c1 := repo.Commit("first")
	agent := startFaceAgent(t, app, repo, server)
	st := waitApplied(t, agent, app, c1)
	ctr := st.Services[0].Containers[0].Name

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, code := testenv.Run(t, ctx, t.TempDir(), "logs", app, "web")
	if code != 0 || !strings.Contains(out, "workload serving") || !strings.Contains(out, "message="+logstream.Redacted) || strings.Contains(out, secret) {
		t.Fatalf("driftless logs %s web: exit %d\n%s", app, code, out)
	}

	// A container that is not the app's.
	foreign := "face-foreign-" + app
	testenv.Docker(t, "create", "--name", foreign, image)
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", foreign).Run() })
	out, code = testenv.Run(t, ctx, t.TempDir(), "logs", app, foreign)
	if code != 1 || !strings.Contains(out, "is neither a container nor a service of app "+app) {
		t.Errorf("driftless logs %s %s: exit %d\n%s", app, foreign, code, out)
	}
	if code, body := faceGet(t, agent.URL+"/api/v1/apps/"+app+"/logs?container="+foreign); code != http.StatusNotFound {
		t.Errorf("logs API for a foreign container: %d %s", code, body)
	}

	// The API and the page show the container's lines, redacted.
	code, raw := faceGet(t, agent.URL+"/api/v1/apps/"+app+"/logs?container="+ctr+"&tail=20")
	if code != http.StatusOK || !strings.Contains(raw, "workload serving") || strings.Contains(raw, secret) {
		t.Errorf("logs API: %d %s", code, raw)
	}
	code, page := faceGet(t, agent.URL+"/apps/"+app+"/logs/"+ctr)
	if code != http.StatusOK || !strings.Contains(page, "workload serving") || !strings.Contains(page, logstream.Redacted) || strings.Contains(page, secret) {
		t.Errorf("logs page: %d\n%s", code, page)
	}

	// -f follows: a line written after the command started shows up. The
	// workload logs "stopping on signal" on SIGTERM.
	buf := &testenv.LockedBuffer{}
	cmd := exec.CommandContext(ctx, testenv.DriftlessBinary(t), "logs", app, "web", "-f", "--tail", "5")
	cmd.Stdout, cmd.Stderr = buf, buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitOutput(t, buf, "workload serving", 30*time.Second)
	if strings.Contains(buf.String(), "stopping on signal") {
		t.Fatal("the line to follow is already there before the signal")
	}
	// The API follows too, over server-sent events.
	sse := &testenv.LockedBuffer{}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, agent.URL+"/api/v1/apps/"+app+"/logs?container="+ctr+"&tail=5&follow=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	go func() { _, _ = io.Copy(sse, resp.Body) }()
	waitOutput(t, sse, "workload serving", 30*time.Second)

	testenv.Docker(t, "kill", "--signal", "TERM", ctr)
	waitOutput(t, buf, "stopping on signal", 30*time.Second)
	waitOutput(t, sse, `"text":"`, 5*time.Second)
	waitOutput(t, sse, "stopping on signal", 30*time.Second)
	waitOutput(t, sse, "event: end", 30*time.Second)
	if strings.Contains(sse.String(), secret) {
		t.Error("the follow stream shows the secret value")
	}
}
