package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// AgentRig is one app in a git repository followed by one agent process.
type AgentRig struct {
	T      *testing.T
	App    string
	Path   string // apps/<app>: the manifest directory in the repository
	Repo   *gitserver.Repo
	Server *gitserver.Server
	Data   string
	Args   []string
	Agent  *Agent
}

// StartRig commits manifest as apps/<app>/web.yaml and starts an agent
// polling every second.
func StartRig(t *testing.T, manifest func(app string) string) *AgentRig {
	t.Helper()
	return StartRigWith(t, manifest, "--interval", "1s")
}

// StartRigWith is StartRig with the agent's flags after the source flags.
func StartRigWith(t *testing.T, manifest func(app string) string, flags ...string) *AgentRig {
	t.Helper()
	return StartRigEnv(t, nil, manifest, flags...)
}

// StartRigEnv is StartRigWith with the agent's environment set to env
// (nil: this process's).
func StartRigEnv(t *testing.T, env []string, manifest func(app string) string, flags ...string) *AgentRig {
	t.Helper()
	app := UniqueApp(t)
	base := t.TempDir()
	r := &AgentRig{T: t, App: app, Path: "apps/" + app, Server: gitserver.RunDaemon(t, base), Data: t.TempDir()}
	r.Repo = gitserver.Init(t, base, "infra")
	r.Repo.WriteFile(r.Path+"/web.yaml", manifest(app))
	r.Repo.Commit("deploy web")
	r.Args = append([]string{"run", "--repo", r.Repo.URL(r.Server.URL), "--branch", "main", "--path", r.Path,
		"--app", app, "--allow-insecure-transport"}, flags...)
	r.Agent = StartAgentEnv(t, env, r.Data, r.Args...)
	return r
}

// Restart starts a new agent process on the same data directory.
func (r *AgentRig) Restart() {
	r.T.Helper()
	r.Agent = StartAgent(r.T, r.Data, r.Args...)
}

// Commit replaces the manifest and pushes it.
func (r *AgentRig) Commit(msg, manifest string) string {
	r.T.Helper()
	r.Repo.WriteFile(r.Path+"/web.yaml", manifest)
	return r.Repo.Commit(msg)
}

// Wait polls the app's status through the API.
func (r *AgentRig) Wait(timeout time.Duration, what string, ok func(status.AppStatus) bool) status.AppStatus {
	r.T.Helper()
	return WaitApp(r.T, r.Agent, timeout, what, func(ctx context.Context, c *web.Client) (status.AppStatus, error) {
		return c.App(ctx, r.App)
	}, ok)
}

// WaitConverged waits until sha is applied and runs as `replicas` ready
// replicas of image. Replicas are not checked for sha: scaling up keeps the
// existing ones, which carry the revision that created them.
func (r *AgentRig) WaitConverged(what, sha string, replicas int, image string) status.AppStatus {
	r.T.Helper()
	return r.Wait(60*time.Second, what, ConvergedTo(sha, replicas, image))
}

// ConvergedTo is true of a status once the app applied sha and is synced
// and healthy with its one service at replicas ready containers of image.
func ConvergedTo(sha string, replicas int, image string) func(status.AppStatus) bool {
	return func(st status.AppStatus) bool {
		if st.Applied == nil || st.Applied.SHA != sha || st.Sync != drift.SyncSynced || st.Health != drift.HealthHealthy || len(st.Services) != 1 {
			return false
		}
		svc := st.Services[0]
		if svc.Ready != replicas || len(svc.Containers) != replicas {
			return false
		}
		for _, c := range svc.Containers {
			if c.Image != image {
				return false
			}
		}
		return true
	}
}

// Call runs one API call with a timeout and fails the test on error.
func (r *AgentRig) Call(what string, do func(ctx context.Context, c *web.Client, app string) error) {
	r.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := do(ctx, r.Agent.Client(), r.App); err != nil {
		r.T.Fatalf("%s: %v", what, err)
	}
}

// ServiceManifest is a web service with readiness on the workload's
// /healthz and the given env.
func ServiceManifest(image string, replicas int, env map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: driftless.dev/v1
kind: Service
metadata:
  name: web
spec:
  image: %s
  replicas: %d
  env:
`, image, replicas)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(&b, "    %s: %q\n", k, env[k])
	}
	b.WriteString(`  readiness:
    httpGet: {path: /healthz, port: 8080}
    periodSeconds: 1
  stopGracePeriodSeconds: 1
`)
	return b.String()
}

// DockerContainer is one of the app's containers as `docker ps` sees it.
type DockerContainer struct {
	Name, ID, State, SpecHash string
}

// DockerContainers lists every container with the app's label, by name.
func DockerContainers(t *testing.T, app string) []DockerContainer {
	t.Helper()
	out := Docker(t, "ps", "-a", "--no-trunc", "--filter", "label="+drift.LabelApp+"="+app,
		"--format", `{{.Names}}|{{.ID}}|{{.State}}|{{.Label "`+drift.LabelSpecHash+`"}}`)
	var cs []DockerContainer
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 4 {
			t.Fatalf("unexpected docker ps line %q", line)
		}
		cs = append(cs, DockerContainer{Name: f[0], ID: f[1], State: f[2], SpecHash: f[3]})
	}
	slices.SortFunc(cs, func(a, b DockerContainer) int { return strings.Compare(a.Name, b.Name) })
	return cs
}

// IDsByName maps container names to IDs.
func IDsByName(cs []DockerContainer) map[string]string {
	m := make(map[string]string, len(cs))
	for _, c := range cs {
		m[c.Name] = c.ID
	}
	return m
}

// RevShort is the revision's short SHA, or "none".
func RevShort(r *gitsource.Revision) string {
	if r == nil {
		return "none"
	}
	return r.Short()
}

// Repairs lists the app's repair summaries from the API, oldest first.
func (r *AgentRig) Repairs() []string {
	r.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	page, err := r.Agent.Client().History(ctx, r.App, []string{"repair"}, 0, 500)
	if err != nil {
		r.T.Fatal(err)
	}
	var out []string
	for i := len(page.Entries) - 1; i >= 0; i-- {
		out = append(out, page.Entries[i].Summary)
	}
	return out
}

// WaitRepair waits until a repair summary containing want is recorded.
func (r *AgentRig) WaitRepair(want string, timeout time.Duration) {
	r.T.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, s := range r.Repairs() {
			if strings.Contains(s, want) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.T.Fatalf("no repair %q within %s; repairs: %q", want, timeout, r.Repairs())
}

// WaitInspect waits until docker inspect -f format on the container
// prints want.
func WaitInspect(t *testing.T, container, format, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var got string
	for time.Now().Before(deadline) {
		out, err := DockerTry("inspect", "-f", format, container)
		if got = strings.TrimSpace(out); err == nil && got == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("docker inspect -f %q %s = %q, want %q within %s", format, container, got, want, timeout)
}

// DockerTry runs docker and returns its output and error without failing.
func DockerTry(args ...string) (string, error) {
	out, err := exec.Command("docker", args...).CombinedOutput()
	return string(out), err
}

// ForcePush rewrites the branch in one push: a commit with manifest on
// top of base replaces the remote head. (Resetting and pushing twice would
// let the agent see the intermediate head.)
func (r *AgentRig) ForcePush(base, msg, manifest string) string {
	r.T.Helper()
	r.Repo.Git("reset", "--quiet", "--hard", base)
	r.Repo.WriteFile(r.Path+"/web.yaml", manifest)
	r.Repo.Git("add", "--all")
	r.Repo.Git("commit", "--quiet", "-m", msg)
	r.Repo.Git("push", "--quiet", "--force", "origin", "HEAD")
	return r.Repo.Head()
}

// ForcePushEntries are the app's force-push history entries, newest first.
func (r *AgentRig) ForcePushEntries() []status.HistoryEntry {
	r.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	page, err := r.Agent.Client().History(ctx, r.App, []string{string(status.KindForcePush)}, 0, 50)
	if err != nil {
		r.T.Fatalf("history: %v", err)
	}
	return page.Entries
}

// AppPage is the app's dashboard page.
func (r *AgentRig) AppPage() string {
	r.T.Helper()
	resp, err := http.Get(r.Agent.URL + "/apps/" + r.App)
	if err != nil {
		r.T.Fatalf("app page: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		r.T.Fatalf("app page: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// HistoryEntries are the IDs of the app's history entries.
func (r *AgentRig) HistoryEntries() []string {
	r.T.Helper()
	var page struct {
		Entries []struct {
			ID json.Number `json:"id"`
		} `json:"entries"`
	}
	body := APIGet(r.T, r.Agent.URL+"/api/v1/apps/"+r.App+"/history")
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		r.T.Fatalf("history: %v: %s", err, body)
	}
	var ids []string
	for _, e := range page.Entries {
		ids = append(ids, e.ID.String())
	}
	return ids
}

// APIGet is the raw body of a GET, as a browser or curl would see it.
func APIGet(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}

// WebManifest is ServiceManifest for image with MESSAGE set to message.
func WebManifest(image string, replicas int, message string) string {
	return ServiceManifest(image, replicas, map[string]string{"MESSAGE": message})
}

// ContainerIDs are the IDs of every container the status lists.
func ContainerIDs(st status.AppStatus) []string {
	var ids []string
	for _, s := range st.Services {
		for _, c := range s.Containers {
			ids = append(ids, c.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// WaitReady waits until app runs sha with every replica of its one
// service ready.
func WaitReady(t *testing.T, agent *Agent, app, sha string, replicas int) status.AppStatus {
	t.Helper()
	return WaitApp(t, agent, 90*time.Second, fmt.Sprintf("app runs %s with %d ready", sha[:7], replicas), func(ctx context.Context, c *web.Client) (status.AppStatus, error) {
		return c.App(ctx, app)
	}, func(st status.AppStatus) bool {
		return st.Applied != nil && st.Applied.SHA == sha && st.Sync == drift.SyncSynced && len(st.Services) == 1 &&
			st.Services[0].Ready == replicas && st.Services[0].Desired == replicas
	})
}

// HasCondition reports whether the status has an error condition of kind.
func HasCondition(st status.AppStatus, kind string) bool {
	return slices.ContainsFunc(st.Errors, func(c status.Condition) bool { return c.Kind == kind })
}
