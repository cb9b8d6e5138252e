package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/deploy/logstream"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/registry"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// buildRig is one Swarm, a registry, one repository and one agent
// deploying an app whose images are built from the repository.
type buildRig struct {
	t     *testing.T
	eng   *privengine.Engine
	reg   *registry.Registry
	repo  *gitserver.Repo
	agent *testenv.Agent
	app   string
	base  string // the workload image the Dockerfile starts FROM
}

// compose: web is built from ./web and named in the registry, so it is
// pushed; worker is built from the same context with no image:, which a
// single-node Swarm runs from the manager's copy. A repository file
// reaches web's tasks as a Swarm config.
func (r *buildRig) compose() string {
	return fmt.Sprintf(`services:
  web:
    build: ./web
    image: %s/%s/web
    volumes: [./conf/greeting.txt:/etc/greeting.txt:ro]
    healthcheck:
      test: [CMD, /driftless, workload, probe, "http://127.0.0.1:8080/healthz"]
      interval: 1s
      timeout: 2s
      retries: 2
      start_period: 1s
    deploy:
      update_config: {order: start-first}
  worker:
    build: ./web
`, r.reg.Host, r.app)
}

func (r *buildRig) wait(timeout time.Duration, what string, ok func(status.AppStatus) bool) status.AppStatus {
	r.t.Helper()
	return testenv.WaitApp(r.t, r.agent, timeout, what, func(ctx context.Context, c *web.Client) (status.AppStatus, error) {
		return c.App(ctx, r.app)
	}, ok)
}

// running: sha is applied, Synced and Healthy, every service with one
// ready task.
func running(sha string) func(status.AppStatus) bool {
	return func(st status.AppStatus) bool {
		if st.Applied == nil || st.Applied.SHA != sha || st.Sync != drift.SyncSynced || st.Health != drift.HealthHealthy || len(st.Services) != 2 {
			return false
		}
		for _, s := range st.Services {
			if s.Ready != 1 {
				return false
			}
		}
		return true
	}
}

// tags lists the registry's tags of repo.
func (r *buildRig) tags(repo string) []string {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+r.reg.Host+"/v2/"+repo+"/tags/list", nil)
	req.SetBasicAuth(r.reg.User, r.reg.Password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("registry tags: %v", err)
	}
	defer resp.Body.Close()
	var out struct {
		Tags []string `json:"tags"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	slices.Sort(out.Tags)
	return out.Tags
}

// TestSwarmBuildLogsAndFiles: images built from the repository run on a
// single-node Swarm (one pushed to the registry its image: names, one
// only on the manager), an unchanged context is not rebuilt on the next
// commit, a repository file reaches the tasks as a Swarm config, and
// `driftless logs` and the dashboard's log view read the tasks' logs
// through the manager.
func TestSwarmBuildLogsAndFiles(t *testing.T) {
	total := time.Now()
	base := testenv.WorkloadImage(t, "v1")
	reg := registry.Start(t, "builder", "push-pw-5c1d")
	eng := startSwarm(t, base)
	r := &buildRig{t: t, eng: eng, reg: reg, app: testenv.UniqueApp(t), base: base}
	gitBase := t.TempDir()
	gitURL := gitserver.StartDaemon(t, gitBase)
	r.repo = gitserver.Init(t, gitBase, r.app)
	r.repo.WriteFile("app/web/Dockerfile", "FROM "+base+"\nCOPY version.txt /version.txt\n")
	r.repo.WriteFile("app/web/version.txt", "one\n")
	r.repo.WriteFile("app/conf/greeting.txt", "hello\n")
	r.repo.WriteFile("app/compose.yaml", r.compose())
	first := r.repo.Commit("web and worker built from ./web")
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	// The agent pushes with the credentials of Docker's config.json, as
	// docker push would.
	env := append(eng.Env(), "DOCKER_CONFIG="+reg.DockerConfig)
	r.agent = testenv.StartAgentEnv(t, env, data, "run", "--repo", r.repo.URL(gitURL), "--path", "app", "--app", r.app,
		"--target", "swarm", "--allow-insecure-transport", "--interval", "2s")

	// 1. Built on the manager, the registry's one pushed, both running.
	t0 := time.Now()
	st := r.wait(240*time.Second, "both built services running", running(first))
	tag := "tree-" + r.repo.Git("rev-parse", "HEAD:app/web")[:12]
	webImage := reg.Host + "/" + r.app + "/web:" + tag
	workerImage := "driftless/" + r.app + "-worker:" + tag
	images := map[string]string{}
	for _, s := range st.Services {
		images[s.Name] = s.Image
	}
	if images["web"] != webImage || images["worker"] != workerImage {
		t.Errorf("service images = %v, want web %s and worker %s (named after the context's tree)", images, webImage, workerImage)
	}
	if got := r.tags(r.app + "/web"); !slices.Equal(got, []string{tag}) {
		t.Errorf("registry tags of %s/web = %v, want [%s] (the content-addressed tag, pushed)", r.app, got, tag)
	}
	webID := eng.Docker("image", "inspect", "--format", "{{.Id}}", webImage)
	t.Logf("built, pushed and running in %s", time.Since(t0).Round(time.Millisecond))

	// 2. The repository file is a Swarm config with the file's content.
	svc := r.app + "-web"
	cfg := eng.Docker("service", "inspect", "--format", "{{range .Spec.TaskTemplate.ContainerSpec.Configs}}{{.ConfigName}} {{.File.Name}}{{end}}", svc)
	name, target, _ := strings.Cut(cfg, " ")
	if !strings.HasPrefix(name, r.app+"_conf-greeting.txt_") || target != "/etc/greeting.txt" {
		t.Errorf("web's configs = %q, want %s_conf-greeting.txt_<hash8> at /etc/greeting.txt", cfg, r.app)
	} else if got := eng.Docker("config", "inspect", "--format", "{{printf \"%s\" .Spec.Data}}", name); got != "hello" {
		t.Errorf("config %s holds %q, want the file's content", name, got)
	}

	// 3. Logs through the manager: the CLI names each line's task and
	// node; the dashboard's API serves one task's lines.
	r.logs(st)

	// 4. A commit that leaves the context alone rebuilds nothing: the same
	// image runs, the new file content is a new config version.
	builds := strings.Count(r.agent.Logs(), `msg="building image"`)
	r.repo.WriteFile("app/conf/greeting.txt", "hello again\n")
	second := r.repo.Commit("greeting changed, context unchanged")
	st = r.wait(180*time.Second, "the second revision running", running(second))
	for _, s := range st.Services {
		if want := map[string]string{"web": webImage, "worker": workerImage}[s.Name]; s.Image != want {
			t.Errorf("%s runs %s after a commit that did not touch its context, want %s", s.Name, s.Image, want)
		}
	}
	if got := strings.Count(r.agent.Logs(), `msg="building image"`); got != builds {
		t.Errorf("the agent built %d more images for a commit that left the context alone", got-builds)
	}
	if id := eng.Docker("image", "inspect", "--format", "{{.Id}}", webImage); id != webID {
		t.Errorf("web's image was rebuilt: %s, was %s", id, webID)
	}
	if got := eng.Docker("service", "inspect", "--format", "{{range .Spec.TaskTemplate.ContainerSpec.Configs}}{{.ConfigName}}{{end}}", svc); got == name {
		t.Errorf("web still uses config %s after the file changed", got)
	}
	t.Logf("TestSwarmBuildLogsAndFiles took %s (%d image builds in all)", time.Since(total).Round(time.Millisecond), builds)
}

// logs checks `driftless logs APP web` and the API's log view of a task.
func (r *buildRig) logs(st status.AppStatus) {
	t := r.t
	var task, node string
	for _, s := range st.Services {
		if s.Name == "web" && len(s.Containers) == 1 {
			task, node = s.Containers[0].Name, s.Containers[0].Node
		}
	}
	if task == "" || node == "" {
		t.Fatalf("no task row with a node for web: %+v", st.Services)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The workload logs "workload serving" when it starts.
	var out []byte
	ok := pollUntil(30*time.Second, func() bool {
		cmd := exec.CommandContext(ctx, testenv.DriftlessBinary(t), "logs", r.app, "web", "--tail", "50")
		cmd.Env = r.eng.Env()
		var err error
		out, err = cmd.CombinedOutput()
		return err == nil && strings.Contains(string(out), task+"@"+node+" | ") && strings.Contains(string(out), "workload serving")
	})
	if !ok {
		t.Errorf("driftless logs %s web: want lines prefixed %s@%s | with the workload's start line; got:\n%s", r.app, task, node, out)
	}
	// The dashboard's API: one task, as the app page links it.
	resp, err := http.Get(r.agent.URL + "/api/v1/apps/" + r.app + "/logs?" + url.Values{"container": {task}, "tail": {"50"}}.Encode())
	if err != nil {
		t.Fatalf("logs API: %v", err)
	}
	defer resp.Body.Close()
	var body struct {
		Lines []logstream.Line `json:"lines"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("logs API: %s %v", resp.Status, err)
	}
	if len(body.Lines) == 0 || body.Lines[0].Container != task || body.Lines[0].Node != node {
		t.Errorf("logs API lines = %+v, want the lines of %s on %s", body.Lines, task, node)
	}
	t.Logf("driftless logs: %s", firstLineOf(string(out)))
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
