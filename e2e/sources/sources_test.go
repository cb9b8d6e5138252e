// Package sources tests, end to end, apps declared by a source repository
// (sources: in driftless.yaml): discovery from directories and from a
// driftless-apps.yaml, apps added and removed by commits and webhooks,
// prune on and off, and a refused set of apps. It is a package of its own
// so `go test ./...` runs it beside the other e2e packages.
package sources

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 2)) }

const secret = "e2e-sources-secret"

// prefix makes this run's app names unique on the shared engine.
func prefix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "s" + hex.EncodeToString(b)
}

// hook sends a signed generic push webhook for the repository.
func hook(t *testing.T, agent *testenv.Agent, repoURL string, ref ...string) string {
	t.Helper()
	r := "refs/heads/main"
	if len(ref) > 0 {
		r = ref[0]
	}
	body := []byte(fmt.Sprintf(`{"repository": %q, "ref": %q}`, repoURL, r))
	return sendHook(t, agent, "generic", body, func(h http.Header, sig string) { h.Set("X-Signature", "sha256="+sig) })
}

// forgeHook sends a branch create or delete event for the repository
// signed as GitHub (X-Hub-Signature-256) or Gitea (X-Gitea-Signature)
// sign it.
func forgeHook(t *testing.T, agent *testenv.Agent, forge, event, repoURL, branch string) {
	t.Helper()
	body := []byte(fmt.Sprintf(`{"ref": %q, "ref_type": "branch", "pusher_type": "user", "repository": {"name": "shop", "clone_url": %q, "default_branch": "main"}, "sender": {"login": "octocat"}}`, branch, repoURL))
	sendHook(t, agent, forge, body, func(h http.Header, sig string) {
		switch forge {
		case "github":
			h.Set("X-GitHub-Event", event)
			h.Set("X-Hub-Signature-256", "sha256="+sig)
		case "gitea":
			h.Set("X-Gitea-Event", event)
			h.Set("X-Gitea-Signature", sig)
		}
	})
}

// sendHook posts body to /hooks/PROVIDER with the headers sign sets from
// the body's hex HMAC-SHA256, and wants it accepted with a source queued.
func sendHook(t *testing.T, agent *testenv.Agent, provider string, body []byte, sign func(h http.Header, sig string)) string {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, agent.URL+"/hooks/"+provider, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	sign(req.Header, hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(b.String(), "source:") {
		t.Fatalf("%s webhook: HTTP %d %s", provider, resp.StatusCode, b.String())
	}
	return b.String()
}

func apps(ctx context.Context, c *web.Client) ([]status.AppStatus, error) { return c.Apps(ctx) }

func sourcesOf(ctx context.Context, c *web.Client) ([]status.SourceSet, error) { return c.Sources(ctx) }

// synced accepts when exactly the named apps are listed and every one is
// synced with one ready replica.
func synced(names ...string) func([]status.AppStatus) bool {
	return func(as []status.AppStatus) bool {
		var got []string
		for _, a := range as {
			ready := 0
			for _, s := range a.Services {
				ready += s.Ready
			}
			if a.Sync != drift.SyncSynced || ready != 1 {
				return false
			}
			got = append(got, a.Name)
		}
		return slices.Equal(got, names)
	}
}

// objects counts what the engine holds of an app.
func objects(t *testing.T, cli *client.Client, app string) (containers, networks, volumes int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := make(client.Filters).Add("label", drift.LabelApp+"="+app)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs.Items), len(ns.Items), len(vs.Items)
}

func dockerClient(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// removeApps cleans up every object of the apps.
func removeApps(t *testing.T, names ...string) {
	t.Cleanup(func() {
		for _, app := range names {
			testenv.RemoveApp(t, app)
		}
	})
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "driftless.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSourceDirectoriesFollowTheRepository: a source discovers an app in
// each of three directories (two native, one compose with a volume); a
// commit adding a fourth directory deploys it as soon as the webhook
// arrives; a commit removing the compose app's directory removes its
// containers and network and keeps its volume (prune: true); and after a
// restart with the repository unreachable every app is still there.
func TestSourceDirectoriesFollowTheRepository(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	p := prefix()
	shop, blog, wiki, chat := p+"-shop", p+"-blog", p+"-wiki", p+"-chat"
	removeApps(t, shop, blog, wiki, chat)
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "platform")
	repo.WriteFile("apps/"+shop+"/web.yaml", testenv.WebManifest(image, 1, "shop"))
	repo.WriteFile("apps/"+blog+"/web.yaml", testenv.WebManifest(image, 1, "blog"))
	repo.WriteFile("apps/"+wiki+"/compose.yaml", fmt.Sprintf("services:\n  web:\n    image: %s\n    volumes: [data:/data]\nvolumes:\n  data: {}\n", image))
	repo.WriteFile("apps/"+p+"-notes/README.md", "not an app: no compose file or manifest\n")
	repo.WriteFile("README.md", "platform\n")
	repo.Commit("three apps")
	url := repo.URL(server.URL)
	cfg := writeConfig(t, fmt.Sprintf(`sources:
  - name: platform
    repo: %s
    branch: main
    interval: 10m
    allowInsecureTransport: true
    directories: ['apps/*']
    prune: true
`, url))
	cli := dockerClient(t)
	env := append(os.Environ(), "DRIFTLESS_WEBHOOK_SECRET="+secret)
	data := t.TempDir()
	agent := testenv.StartAgentEnv(t, env, data, "run", "--config", cfg)
	testenv.WaitApp(t, agent, 2*time.Minute, "three discovered apps synced", apps, synced(blog, shop, wiki))

	srcs := testenv.WaitApp(t, agent, 10*time.Second, "the source lists its apps", sourcesOf, func(s []status.SourceSet) bool { return len(s) == 1 && len(s[0].Apps) == 3 })
	if s := srcs[0]; s.Name != "platform" || s.Revision == nil || s.Revision.SHA != repo.Head() || s.Generator != "directories apps/*" {
		t.Fatalf("source status %+v", s)
	}
	st, err := agent.Client().App(context.Background(), shop)
	if err != nil || st.FromSource != "platform" || st.Source.Path != "apps/"+shop {
		t.Fatalf("generated app %+v, %v", st, err)
	}

	// A new directory deploys on the webhook (the poll is 10 minutes).
	repo.WriteFile("apps/"+chat+"/web.yaml", testenv.WebManifest(image, 1, "chat"))
	repo.Commit("a fourth app")
	hook(t, agent, url)
	testenv.WaitApp(t, agent, time.Minute, "the fourth app deployed after the webhook", apps, synced(blog, chat, shop, wiki))

	// Removing a directory removes the app; its volume stays.
	if c, n, v := objects(t, cli, wiki); c != 1 || n != 1 || v != 1 {
		t.Fatalf("before removal %s has %d containers, %d networks, %d volumes; want 1 each", wiki, c, n, v)
	}
	repo.Remove("apps/" + wiki)
	removedAt := repo.Commit("retire the wiki")
	hook(t, agent, url)
	testenv.WaitApp(t, agent, time.Minute, "the removed app is gone", apps, synced(blog, chat, shop))
	if c, n, v := objects(t, cli, wiki); c != 0 || n != 0 || v != 1 {
		t.Fatalf("after removal %s has %d containers, %d networks, %d volumes; want 0, 0, 1 (volumes are kept)", wiki, c, n, v)
	}
	hist, err := agent.Client().History(context.Background(), "", []string{string(status.KindApps)}, 0, 0)
	if err != nil || !slices.ContainsFunc(hist.Entries, func(e status.HistoryEntry) bool {
		return e.App == wiki && strings.Contains(e.Summary, "removed: source platform no longer declares it at "+removedAt[:7])
	}) {
		t.Fatalf("no removal in the history: %+v %v", hist, err)
	}

	// A restart with the repository unreachable keeps every app.
	agent.Stop(t)
	server.Stop()
	agent = testenv.StartAgentEnv(t, env, data, "run", "--config", cfg)
	testenv.WaitApp(t, agent, time.Minute, "the apps survive a restart without their source", apps, func(as []status.AppStatus) bool {
		var names []string
		for _, a := range as {
			names = append(names, a.Name)
		}
		return slices.Equal(names, []string{blog, chat, shop})
	})
	for _, app := range []string{blog, chat, shop} {
		if c, _, _ := objects(t, cli, app); c != 1 {
			t.Errorf("app %s has %d containers after the restart, want 1", app, c)
		}
	}
}

// TestSourceFileRefusedAndPruneOff: a driftless-apps.yaml lists two apps
// (one on its own interval); a commit dropping one leaves it running and
// shown as "no longer in Git" (the source does not prune); a commit whose
// file asks for host power is refused with file:line, and the apps keep
// running.
func TestSourceFileRefusedAndPruneOff(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	p := prefix()
	api, worker := p+"-api", p+"-worker"
	removeApps(t, api, worker)
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "catalog")
	repo.WriteFile("svc/api/web.yaml", testenv.WebManifest(image, 1, "api"))
	repo.WriteFile("svc/worker/web.yaml", testenv.WebManifest(image, 1, "worker"))
	list := func(entries ...string) string { return "apps:\n" + strings.Join(entries, "") }
	apiEntry := fmt.Sprintf("  - name: %s\n    path: svc/api\n", api)
	workerEntry := fmt.Sprintf("  - name: %s\n    path: svc/worker\n    interval: 5m\n", worker)
	repo.WriteFile("driftless-apps.yaml", list(apiEntry, workerEntry))
	repo.Commit("two apps")
	url := repo.URL(server.URL)
	cfg := writeConfig(t, fmt.Sprintf(`sources:
  - name: catalog
    repo: %s
    branch: main
    interval: 10m
    allowInsecureTransport: true
    file: driftless-apps.yaml
`, url))
	cli := dockerClient(t)
	env := append(os.Environ(), "DRIFTLESS_WEBHOOK_SECRET="+secret)
	agent := testenv.StartAgentEnv(t, env, t.TempDir(), "run", "--config", cfg)
	testenv.WaitApp(t, agent, 2*time.Minute, "both listed apps synced", apps, synced(api, worker))

	repo.WriteFile("driftless-apps.yaml", list(apiEntry))
	dropped := repo.Commit("drop the worker")
	hook(t, agent, url)
	as := testenv.WaitApp(t, agent, time.Minute, "the worker shown as no longer in Git", apps, func(as []status.AppStatus) bool {
		return len(as) == 2 && as[1].Name == worker && as[1].LeftGit != nil
	})
	if w := as[1]; w.LeftGit.Source != "catalog" || w.LeftGit.Revision != dropped || !strings.Contains(w.Message, "no longer in Git") {
		t.Fatalf("worker status %+v", w)
	}
	if c, _, _ := objects(t, cli, worker); c != 1 {
		t.Fatalf("the worker has %d containers; a source without prune must leave it running", c)
	}

	repo.WriteFile("driftless-apps.yaml", list(apiEntry, fmt.Sprintf("  - name: %s-root\n    path: svc/api\n    allow: [privileged]\n", p)))
	refused := repo.Commit("ask for host power")
	hook(t, agent, url)
	srcs := testenv.WaitApp(t, agent, time.Minute, "the set of apps refused", sourcesOf, func(s []status.SourceSet) bool {
		return len(s) == 1 && s[0].Refused != nil && s[0].Refused.Revision.SHA == refused
	})
	r := srcs[0].Refused
	if len(r.Errors) == 0 || !strings.Contains(r.Errors[0], "driftless-apps.yaml:6:5: apps[1].allow: host power is a local setting") {
		t.Fatalf("refusal %+v: want driftless-apps.yaml:6:5 naming allow as a local setting", r)
	}
	if s := srcs[0]; s.Revision == nil || s.Revision.SHA != dropped {
		t.Fatalf("accepted revision %+v, want %s kept", s.Revision, dropped)
	}
	testenv.WaitApp(t, agent, 10*time.Second, "the apps keep running", apps, func(as []status.AppStatus) bool {
		return len(as) == 2 && as[0].Name == api && as[0].Sync == drift.SyncSynced
	})
	if c, _, _ := objects(t, cli, p+"-root"); c != 0 {
		t.Fatalf("the refused app has %d containers", c)
	}
}
