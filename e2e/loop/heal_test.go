package loop

import (
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// healManifest is a web service that becomes ready 4s after start, with a
// memory limit, so both the readiness wait and `docker update` can be
// interfered with. The wait is long enough for waitForContainer to see a
// replica inside it on a loaded machine (with 2s, its docker ps and
// inspects once missed both replicas of a rollout).
func healManifest(image string, replicas int, message string) string {
	return strings.Replace(testenv.ServiceManifest(image, replicas, map[string]string{"MESSAGE": message, "WORKLOAD_READY_AFTER": "4s"}),
		"  readiness:", "  resources: {memory: 64Mi}\n  readiness:", 1)
}

// TestHealAtAnyMoment: a replica removed while its replacement waits to
// become ready is drift, healed at once and recorded as a repair, never a
// failed rollout; limits and restart policy changed with docker update, a
// network disconnect and a rename are put back in place.
func TestHealAtAnyMoment(t *testing.T) {
	// Not parallel: it times how soon the rollout finishes after a removal
	// (30 s at most: two replicas' create and 4 s readiness wait, on a
	// loaded machine).
	v1 := testenv.WorkloadImage(t, "v1")
	r := testenv.StartRig(t, func(app string) string { return healManifest(v1, 2, "one") })
	r.WaitConverged("first deploy", r.Repo.Head(), 2, v1)

	// 1. A rollout, and the new replica removed during its readiness wait.
	second := r.Commit("new message", healManifest(v1, 2, "two"))
	victim := waitForContainer(t, r.App, func(c testenv.DockerContainer, ready bool) bool {
		return strings.HasPrefix(c.Name, r.App+"-web-") && !strings.Contains(c.Name, "-old-") && c.State == "running" && !ready
	})
	removedAt := time.Now()
	testenv.Docker(t, "rm", "-f", victim)
	st := r.Wait(60*time.Second, "the rollout finished after the removal", testenv.ConvergedTo(second, 2, v1))
	took := time.Since(removedAt)
	t.Logf("removed %s during its readiness wait; the rollout finished %s later", victim, took.Round(time.Millisecond))
	if took > 30*time.Second {
		t.Errorf("the rollout took %s to finish after the removal; interference must not back off", took)
	}
	if strings.Contains(st.Message, "fix the image") {
		t.Errorf("status blames the image: %q", st.Message)
	}
	r.WaitRepair("removed outside driftless while waiting for it to become ready", 10*time.Second)

	// 2. docker update is put back in place: the same container, the
	//    declared limit and restart policy.
	web1 := r.App + "-web-1"
	before := testenv.Docker(t, "inspect", "-f", "{{.Id}}", web1)
	testenv.Docker(t, "update", "--memory", "128m", "--memory-swap", "256m", "--restart", "no", web1)
	testenv.WaitInspect(t, web1, "{{.HostConfig.Memory}} {{.HostConfig.RestartPolicy.Name}}", "67108864 unless-stopped", 10*time.Second)
	if after := testenv.Docker(t, "inspect", "-f", "{{.Id}}", web1); after != before {
		t.Errorf("docker update was repaired by a new container (%s → %s), not in place", before[:12], after[:12])
	}
	r.WaitRepair(web1+" was changed outside Git (resources.memory, restart)", 10*time.Second)
	t.Logf("docker update repaired in place")

	// 3. A network disconnect is reconnected, with the service's alias.
	web2 := r.App + "-web-2"
	net := r.App + "-default"
	testenv.Docker(t, "network", "disconnect", net, web2)
	testenv.WaitInspect(t, web2, `{{with index .NetworkSettings.Networks "`+net+`"}}{{range .Aliases}}{{if eq . "web"}}alias{{end}}{{end}}{{end}}`, "alias", 10*time.Second)
	r.WaitRepair(web2+" was changed outside Git (networks)", 10*time.Second)

	// 4. A rename is undone.
	testenv.Docker(t, "rename", web1, r.App+"-hotfix")
	testenv.WaitInspect(t, web1, "{{.Id}}", before, 10*time.Second)

	final := r.Wait(30*time.Second, "synced and healthy", func(s status.AppStatus) bool {
		return s.Sync == drift.SyncSynced && s.Health == drift.HealthHealthy
	})
	if len(final.Errors) != 0 {
		t.Errorf("errors after the repairs: %+v", final.Errors)
	}
}

// waitForContainer polls the app's containers until one matches, and
// returns its name. Readiness is not in docker ps, so ready is judged by
// age: a container started less than 1.5s ago is still in its 2s
// readiness wait.
func waitForContainer(t *testing.T, app string, match func(c testenv.DockerContainer, ready bool) bool) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range testenv.DockerContainers(t, app) {
			started, err := testenv.DockerTry("inspect", "-f", "{{.State.StartedAt}}", c.ID)
			if err != nil {
				continue // replaced between the list and the inspect
			}
			at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(started))
			young := err == nil && time.Since(at) < 3500*time.Millisecond // not ready before 4s
			if match(c, !young) {
				return c.Name
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no matching container appeared")
	return ""
}

// TestConflictClearedIsRetriedAtOnce: a container driftless does not own
// holds a replica's name; when someone removes it, the replica is created
// at once — not at the next poll (here ten minutes away).
func TestConflictClearedIsRetriedAtOnce(t *testing.T) {
	// Not parallel: it times how soon the event-driven retry follows (15 s at most).
	v1 := testenv.WorkloadImage(t, "v1")
	var app string
	r := testenv.StartRigWith(t, func(a string) string {
		app = a
		// The squatter exists before the agent's first pass.
		t.Cleanup(func() { _, _ = testenv.DockerTry("rm", "-f", a+"-web-1") }) // also if the run below fails half-way
		testenv.Docker(t, "run", "-d", "--network", "none", "--name", a+"-web-1", "--entrypoint", "/driftless", v1, "workload")
		return testenv.WebManifest(v1, 1, "one")
	}, "--interval", "10m")
	r.Wait(30*time.Second, "the conflict reported", func(s status.AppStatus) bool {
		return s.Sync == drift.SyncOutOfSync && s.Drift != nil && len(s.Drift.Conflicts) == 1
	})
	squatter := testenv.Docker(t, "inspect", "-f", "{{.Id}}", app+"-web-1")
	testenv.Docker(t, "rm", "-f", app+"-web-1")
	removed := time.Now()
	st := r.Wait(30*time.Second, "the replica created once the name is free", func(s status.AppStatus) bool {
		return s.Sync == drift.SyncSynced && s.Health == drift.HealthHealthy
	})
	if took := time.Since(removed); took > 15*time.Second {
		t.Errorf("the replica came %s after the conflict cleared; the poll is 10 minutes away, so only the event can explain it", took)
	}
	if id := testenv.Docker(t, "inspect", "-f", "{{.Id}}", app+"-web-1"); id == squatter || len(st.Services) != 1 {
		t.Fatalf("web-1 is still the squatter (%s)", id)
	}
}
