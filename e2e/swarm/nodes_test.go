package swarm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	swarmtypes "github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// The nodes' hostnames: what status shows as the node of a task.
const (
	managerHost = "dle-manager"
	workerHost  = "dle-worker"
)

// startTwoNodes starts a Swarm of two private engines, a manager and a
// worker, each in a network namespace of its own and joined by a veth
// pair (so neither shares Swarm's fixed ports with the other, nor with any
// other engine of the machine), with the images loaded on both: a task
// placed on a node needs the image there. It returns once both nodes are
// ready; the manager is where driftless connects.
func startTwoNodes(t *testing.T, images ...string) (mgr, wrk *privengine.Engine) {
	t.Helper()
	t0 := time.Now()
	mgr = privengine.StartIsolated(t, managerHost)
	wrk = privengine.StartIsolated(t, workerHost)
	mAddr, wAddr := privengine.Link(mgr, wrk)
	started := time.Since(t0)
	t1 := time.Now()
	mgr.LoadImages(images...)
	wrk.LoadImages(images...)
	loaded := time.Since(t1)
	t2 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mc := apiClient(t, mgr)
	wc := apiClient(t, wrk)
	if _, err := mc.SwarmInit(ctx, client.SwarmInitOptions{ListenAddr: mAddr + ":2377", AdvertiseAddr: mAddr}); err != nil {
		t.Fatalf("swarm init on the manager: %v", err)
	}
	sw, err := mc.SwarmInspect(ctx, client.SwarmInspectOptions{})
	if err != nil {
		t.Fatalf("swarm inspect on the manager: %v", err)
	}
	if _, err := wc.SwarmJoin(ctx, client.SwarmJoinOptions{ListenAddr: wAddr + ":2377", AdvertiseAddr: wAddr,
		RemoteAddrs: []string{mAddr + ":2377"}, JoinToken: sw.Swarm.JoinTokens.Worker}); err != nil {
		t.Fatalf("the worker joining the manager at %s: %v\nworker log:\n%s", mAddr, err, wrk.LogTail(20))
	}
	var nodes []string
	ready := pollUntil(time.Minute, func() bool {
		nodes = nil
		list, err := mc.NodeList(ctx, client.NodeListOptions{})
		if err != nil {
			return false
		}
		for _, n := range list.Items {
			if n.Status.State == swarmtypes.NodeStateReady {
				nodes = append(nodes, n.Description.Hostname+"/"+string(n.Spec.Role))
			}
		}
		slices.Sort(nodes)
		return slices.Equal(nodes, []string{managerHost + "/manager", workerHost + "/worker"})
	})
	if !ready {
		t.Fatalf("the Swarm's ready nodes are %v, want %s (manager) and %s (worker)", nodes, managerHost, workerHost)
	}
	t.Logf("two-node Swarm: engines started and linked in %s, images loaded on both in %s, init and join until both nodes ready %s",
		started.Round(time.Millisecond), loaded.Round(time.Millisecond), time.Since(t2).Round(time.Millisecond))
	return mgr, wrk
}

func apiClient(t *testing.T, e *privengine.Engine) *client.Client {
	t.Helper()
	c, err := client.New(client.WithHost(e.Host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// placementCompose: "pinned" may run only on workers, "everywhere" runs
// one task on every node, and "spread" spreads its two tasks over the
// nodes' zone label (one node in each zone).
func placementCompose(image string) string {
	return fmt.Sprintf(`services:
  pinned:
    image: %[1]s
    deploy:
      replicas: 2
      placement:
        constraints: [node.role == worker]
  everywhere:
    image: %[1]s
    deploy:
      mode: global
  spread:
    image: %[1]s
    deploy:
      replicas: 2
      placement:
        preferences: [{spread: node.labels.zone}]
`, image)
}

// nodesOf are the nodes of a service's task rows, sorted, and whether
// every row is a ready task.
func nodesOf(st status.AppStatus, service string) ([]string, bool) {
	for _, s := range st.Services {
		if s.Name != service {
			continue
		}
		var nodes []string
		ready := len(s.Containers) > 0
		for _, c := range s.Containers {
			nodes = append(nodes, c.Node)
			ready = ready && c.Ready
		}
		slices.Sort(nodes)
		return nodes, ready
	}
	return nil, false
}

// serviceOf is the status of one service of the app.
func serviceOf(st status.AppStatus, service string) (status.ServiceStatus, bool) {
	for _, s := range st.Services {
		if s.Name == service {
			return s, true
		}
	}
	return status.ServiceStatus{}, false
}

// placed: the revision is applied, Synced and Healthy, and each service's
// ready tasks run on exactly the nodes given.
func placed(sha string, want map[string][]string) func(status.AppStatus) bool {
	return func(st status.AppStatus) bool {
		if st.Applied == nil || st.Applied.SHA != sha || st.Sync != drift.SyncSynced || st.Health != drift.HealthHealthy {
			return false
		}
		for svc, nodes := range want {
			got, ready := nodesOf(st, svc)
			if !ready || !slices.Equal(got, nodes) {
				return false
			}
		}
		return true
	}
}

func describe(st status.AppStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s: %s", st.Sync, st.Health, st.Message)
	for _, s := range st.Services {
		fmt.Fprintf(&b, "\n  %s %d/%d %s: %s", s.Name, s.Ready, s.Desired, s.Health, s.Message)
		for _, c := range s.Containers {
			fmt.Fprintf(&b, "\n    %s on %q ready=%v: %s", c.Name, c.Node, c.Ready, c.Status)
		}
	}
	return b.String()
}

// TestSwarmPlacementTwoNodes drives an app with target swarm on a Swarm
// of two nodes, a manager (where the agent connects) and a worker:
// placement constraints, global mode and spread preferences place the
// tasks where they say, status shows the node of each task, and draining
// the worker by hand moves what may move and reports what may not as
// Degraded, with Swarm's reason, until the node is active again.
func TestSwarmPlacementTwoNodes(t *testing.T) {
	total := time.Now()
	v1 := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	mgr, _ := startTwoNodes(t, v1)
	mgr.Docker("node", "update", "--label-add", "zone=a", managerHost)
	mgr.Docker("node", "update", "--label-add", "zone=b", workerHost)

	gitBase := t.TempDir()
	url := gitserver.StartDaemon(t, gitBase)
	repo := gitserver.Init(t, gitBase, app)
	repo.WriteFile("app/compose.yaml", placementCompose(v1))
	first := repo.Commit("three services placed across the nodes")
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			ps, _ := mgr.DockerTry("service", "ps", "--no-trunc", "--format", "{{.Name}} {{.Node}} {{.CurrentState}} {{.DesiredState}} {{.Error}}",
				app+"-pinned", app+"-everywhere", app+"-spread")
			t.Logf("tasks at the end:\n%s", ps)
		}
	})
	agent := testenv.StartAgentEnv(t, mgr.Env(), data, "run", "--repo", repo.URL(url), "--path", "app", "--app", app,
		"--target", "swarm", "--allow-insecure-transport", "--interval", "2s")
	r := &rig{t: t, eng: mgr, repo: repo, agent: agent, app: app}

	// Placed as declared.
	t0 := time.Now()
	both := []string{managerHost, workerHost}
	st := r.wait(150*time.Second, "pinned on the worker, everywhere and spread on both nodes", placed(first, map[string][]string{
		"pinned":     {workerHost, workerHost},
		"everywhere": both,
		"spread":     both,
	}))
	if s, _ := serviceOf(st, "everywhere"); s.Desired != 2 || s.Ready != 2 || len(s.Containers) != 2 {
		t.Errorf("the global service shows %d/%d tasks ready in %d rows, want one task on each of the 2 nodes", s.Ready, s.Desired, len(s.Containers))
	}
	t.Logf("placed across the nodes in %s:\n%s", time.Since(t0).Round(time.Millisecond), describe(st))
	pinned, _ := serviceOf(st, "pinned")
	r.showsNodes(pinned.Containers[0].Name, workerHost)

	// The worker drained by hand: what may run on the manager moves
	// there; the service pinned to workers cannot run anywhere, which
	// status must say rather than Synced and Healthy.
	t0 = time.Now()
	mgr.Docker("node", "update", "--availability", "drain", workerHost)
	st = r.wait(120*time.Second, "the worker drained: spread and everywhere on the manager, pinned Degraded with Swarm's reason", func(st status.AppStatus) bool {
		p, ok := serviceOf(st, "pinned")
		spread, spreadReady := nodesOf(st, "spread")
		every, everyReady := nodesOf(st, "everywhere")
		return ok && st.Health == drift.HealthDegraded && p.Health == drift.HealthDegraded && p.Ready == 0 &&
			strings.Contains(p.Message, "no suitable node") &&
			spreadReady && slices.Equal(spread, []string{managerHost, managerHost}) &&
			everyReady && slices.Equal(every, []string{managerHost})
	})
	p, _ := serviceOf(st, "pinned")
	if st.Sync != drift.SyncSynced {
		t.Errorf("while the worker is drained the app is %s, want Synced (Git's spec is what runs; the node is the problem)", st.Sync)
	}
	for _, svc := range []string{"spread", "everywhere"} {
		if s, _ := serviceOf(st, svc); s.Health != drift.HealthHealthy {
			t.Errorf("service %s is %s while the worker is drained, want Healthy on the manager: %s", svc, s.Health, s.Message)
		}
	}
	t.Logf("drained in %s: app %s/%s: %q; pinned: %q", time.Since(t0).Round(time.Millisecond), st.Sync, st.Health, st.Message, p.Message)
	r.cliShows(p.Message)
	if e := r.history(); len(e) > 0 && e[0].Kind == status.KindRepair {
		t.Errorf("draining a node was treated as drift: %s", e[0].Summary)
	}

	// The worker active again: the pinned tasks run there, the global
	// service has its task on it again, and the app is Healthy.
	t0 = time.Now()
	mgr.Docker("node", "update", "--availability", "active", workerHost)
	st = r.wait(120*time.Second, "the worker active again and the app Healthy", placed(first, map[string][]string{
		"pinned":     {workerHost, workerHost},
		"everywhere": both,
	}))
	t.Logf("active again, Healthy in %s:\n%s", time.Since(t0).Round(time.Millisecond), describe(st))
	t.Logf("TestSwarmPlacementTwoNodes took %s", time.Since(total).Round(time.Millisecond))
}

// showsNodes: the dashboard's app page shows the task on its node.
func (r *rig) showsNodes(task, node string) {
	r.t.Helper()
	resp, err := http.Get(r.agent.URL + "/apps/" + r.app)
	if err != nil {
		r.t.Fatalf("dashboard: %v", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), task) || !strings.Contains(string(page), "on node <b>"+node+"</b>") {
		r.t.Errorf("the dashboard's app page does not show task %s on node %s", task, node)
	}
}

// cliShows: `driftless status APP` shows the pinned service Degraded with
// Swarm's reason, and the moved tasks on the manager.
func (r *rig) cliShows(reason string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, code := testenv.Run(r.t, ctx, r.t.TempDir(), "status", r.app, "--server="+r.agent.URL)
	if code != 0 {
		r.t.Fatalf("driftless status: exit %d:\n%s", code, out)
	}
	var pinnedLine string
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "pinned ") {
			pinnedLine = line
		}
	}
	if !strings.Contains(pinnedLine, "Degraded") || !strings.Contains(pinnedLine, "no suitable node") ||
		!strings.Contains(out, "running on "+managerHost) {
		r.t.Errorf("driftless status %s should show pinned Degraded (%q) and tasks running on %s:\n%s", r.app, reason, managerHost, out)
	}
}
