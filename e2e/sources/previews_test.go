package sources

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// get fetches url, "" when it does not answer.
func get(url string) string {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestPreviewPerBranch: a source of previews gives each preview/* branch
// its own app as soon as the webhook arrives (a Gitea create event, a
// generic push) — its own network and
// volume, reachable on a host port of its own block — two previews of the
// same compose file do not collide, and deleting a branch (a GitHub
// delete event) removes its preview with every object, volumes included.
func TestPreviewPerBranch(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	p := prefix()
	login, search := p+"-preview-login", p+"-preview-search"
	removeApps(t, login, search)
	_, portText, _ := net.SplitHostPort(testenv.FreeAddr(t))
	from, _ := strconv.Atoi(portText)
	compose := func(msg string) string {
		return fmt.Sprintf("services:\n  web:\n    image: %s\n    ports: ['8080:8080']\n    environment: {MESSAGE: %s}\n    volumes: [data:/data]\nvolumes:\n  data: {}\n", image, msg)
	}
	repo, url, agent := startPreviews(t, p, compose("main"), fmt.Sprintf(`
    preview:
      ports: {range: %d-%d, perPreview: 1}
      url: 'https://{{.Slug}}.preview.example.com'
`, from, from+1))

	repo.Branch("preview/login")
	repo.WriteFile("deploy/compose.yaml", compose("login"))
	repo.Commit("login page")
	forgeHook(t, agent, "gitea", "create", url, "preview/login")
	repo.Branch("preview/search")
	repo.WriteFile("deploy/compose.yaml", compose("search"))
	repo.Commit("search page")
	hook(t, agent, url, "refs/heads/preview/search")
	as := testenv.WaitApp(t, agent, 2*time.Minute, "both previews synced", apps, synced(login, search))
	ports := map[string]string{}
	for _, a := range as {
		if a.Preview == nil || a.Preview.URL != "https://preview-"+strings.TrimPrefix(a.Name, p+"-preview-")+".preview.example.com" {
			t.Fatalf("app %s: preview %+v", a.Name, a.Preview)
		}
		ports[a.Name] = a.Preview.Ports
	}
	if ports[login] == ports[search] || ports[login] == "" {
		t.Fatalf("preview ports %v: want one block each", ports)
	}
	for app, msg := range map[string]string{login: "login", search: "search"} {
		port, _, _ := strings.Cut(ports[app], "-")
		if body := get("http://127.0.0.1:" + port + "/"); !strings.Contains(body, msg) {
			t.Errorf("preview %s on host port %s answers %q, want %q", app, port, body, msg)
		}
	}
	cli := dockerClient(t)
	for _, app := range []string{login, search} {
		if c, n, v := objects(t, cli, app); c != 1 || n != 1 || v != 1 {
			t.Fatalf("preview %s has %d containers, %d networks, %d volumes; want its own 1 of each", app, c, n, v)
		}
	}

	deleteBranch(t, repo, agent, url, "preview/login")
	testenv.WaitApp(t, agent, time.Minute, "the deleted branch's preview removed", apps, synced(search))
	if c, n, v := objects(t, cli, login); c != 0 || n != 0 || v != 0 {
		t.Fatalf("after its branch was deleted, %s still has %d containers, %d networks, %d volumes", login, c, n, v)
	}
}

// startPreviews runs an agent whose source p makes a preview of each
// preview/* branch of a new repository (served by git daemon, its main
// branch holding deploy/compose.yaml), polled every 10 minutes so that
// only webhooks move it; preview is more YAML of the source entry. It
// returns once the source has listed the branches.
func startPreviews(t *testing.T, p, compose, preview string) (*gitserver.Repo, string, *testenv.Agent) {
	t.Helper()
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "shop")
	repo.WriteFile("deploy/compose.yaml", compose)
	repo.Commit("the shop")
	url := repo.URL(server.URL)
	cfg := writeConfig(t, fmt.Sprintf(`sources:
  - name: %s
    repo: %s
    interval: 10m
    allowInsecureTransport: true
    branches: {match: 'preview/*', path: deploy}
`, p, url)+strings.TrimPrefix(preview, "\n"))
	env := append(os.Environ(), "DRIFTLESS_WEBHOOK_SECRET="+secret)
	agent := testenv.StartAgentEnv(t, env, t.TempDir(), "run", "--config", cfg)
	srcs := testenv.WaitApp(t, agent, time.Minute, "the source listed its branches", sourcesOf, func(s []status.SourceSet) bool {
		return len(s) == 1 && !s[0].Source.LastFetch.IsZero()
	})
	if len(srcs[0].Apps) != 0 {
		t.Fatalf("main got a preview: %+v", srcs[0])
	}
	return repo, url, agent
}

// deleteBranch deletes branch on the remote and sends its webhook: a
// delete event signed as GitHub signs it.
func deleteBranch(t *testing.T, repo *gitserver.Repo, agent *testenv.Agent, url, branch string) {
	t.Helper()
	repo.Git("push", "--quiet", "origin", "--delete", branch)
	forgeHook(t, agent, "github", "delete", url, branch)
}
