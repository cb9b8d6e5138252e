package faults

import (
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestFaultEngineRestart runs the agent against a private Docker engine
// and restarts the engine under it, as `systemctl restart docker` would:
// the engine stops every container (a neighbour that ignores its stop
// signal keeps the engine's shutdown going for 5s, as a database might)
// and starts them again by their restart policy. While the engine is away
// the API reports the app Unknown with an engine error, /readyz fails and
// the agent keeps running; nothing is "repaired" — the containers were
// stopped by the engine, not outside Git. Once the engine is back the app
// is Synced and Healthy within seconds and stays so, with the very same
// containers (same IDs: restarted by Docker, not replaced), no duplicate,
// orphan or foreign object touched, and drift heals again from the
// reconnected event stream.
func TestFaultEngineRestart(t *testing.T) {
	// Not parallel: it times how soon a private engine stops and how soon the agent heals after it is back (seconds).
	row := recordFault(t, "engine stop + start")
	r, eng, dk := engineRig(t)
	before := idsOf(dk.appContainers(t, r.app))

	mark := r.lastHistoryID()
	stop := eng.Stop()
	row.add(1)
	if down := r.waitEngineDown("the engine stopped"); down > 5*time.Second {
		// The agent's event stream ended when the engine did; the status
		// should not wait for the next poll to say so.
		t.Errorf("the API still said Synced and Healthy %s after the engine had stopped (the poll interval is 10s); want the engine error within a few seconds",
			down.Round(100*time.Millisecond))
	}
	time.Sleep(2 * time.Second) // several polls fail meanwhile
	r.requireAlive("while the engine is stopped")
	start := eng.Start()
	back := time.Now()
	r.waitHead(30*time.Second, "the app to converge once the engine is back")
	recovered := time.Since(back)
	r.requireStable(5*time.Second, before, "after the engine restart")
	r.checkRunning("after the engine restart")
	r.waitReadyz(http.StatusOK, 30*time.Second, "after the engine restart")
	r.requireNoChangesSince(mark, "across the engine restart")
	t.Logf("engine stop took %s (a neighbour ignores SIGTERM for 5s), start %s; the app was Synced and Healthy %s after the engine answered again",
		stop.Round(time.Millisecond), start.Round(time.Millisecond), recovered.Round(time.Millisecond))
	row.note("dockerd stop %s, start %s; Synced+Healthy %s after start", stop.Round(100*time.Millisecond),
		start.Round(100*time.Millisecond), recovered.Round(100*time.Millisecond))

	// Drift heals again: the agent's event stream reconnected.
	healed := r.healOne(dk, r.app+"-web-2", "after the engine restart")
	// healOne fails after 30 s, far below the 5-minute resync, so a heal
	// proves the event stream came back; how fast is the engine's own
	// create+start, a figure for the summary, not a pass mark (a loaded
	// machine took 5 s to start the container).
	row.note("a replica removed afterwards was back in %s", healed.Round(100*time.Millisecond))
	r.checkHistory("at the end", nil)
}

// TestFaultEngineSocketGone takes the private engine's socket away while
// the engine and its containers keep running, and puts it back. The
// running agent, and one started while the socket is gone, report the app
// Unknown with an engine error, /readyz fails and nothing is changed; once
// the socket is back the same containers are Synced and Healthy within
// seconds and drift heals.
func TestFaultEngineSocketGone(t *testing.T) {
	// Not parallel: it times how soon a private engine stops and how soon the agent heals after it is back (seconds).
	row := recordFault(t, "engine socket gone + back")
	r, eng, dk := engineRig(t)
	hidden := dockerCLI{env: eng.HiddenEnv()}

	eng.HideSocket()
	row.add(1)
	// The running agent opens a connection per request, so it sees the
	// engine as down at its next pass (the 10s poll at the latest), says
	// so, and changes nothing.
	r.dk = hidden
	before := idsOf(hidden.appContainers(t, r.app))
	noticed := r.waitEngineDown("the running agent, once the socket is gone")

	// An agent (re)started now cannot reach the engine.
	mark := r.lastHistoryID()
	r.agent.Stop(t)
	r.start()
	r.waitEngineDown("an agent started while the engine's socket is gone")
	time.Sleep(2 * time.Second)
	r.requireAlive("while the engine's socket is gone")
	if after := idsOf(hidden.appContainers(t, r.app)); !maps.Equal(after, before) {
		t.Fatalf("containers changed while the socket was gone: %v, want %v", after, before)
	}
	eng.RestoreSocket()
	r.dk = dk
	back := time.Now()
	r.waitHead(30*time.Second, "the app to converge once the socket is back")
	recovered := time.Since(back)
	r.requireStable(3*time.Second, before, "after the socket came back")
	r.checkRunning("after the socket came back")
	r.waitReadyz(http.StatusOK, 30*time.Second, "after the socket came back")
	r.requireNoChangesSince(mark, "while the socket was gone")
	healed := r.healOne(dk, r.app+"-web-3", "after the socket came back")
	row.note("a running agent reported the engine down after %s; a new one converged %s after the socket was back; a removed replica back in %s",
		noticed.Round(100*time.Millisecond), recovered.Round(100*time.Millisecond), healed.Round(100*time.Millisecond))
	r.checkHistory("at the end", nil)
}

// engineRig starts a private engine with the workload image, foreign
// objects (one slow to stop) and an agent driving three replicas on it,
// converged and ready.
func engineRig(t *testing.T) (*faultRig, *privengine.Engine, dockerCLI) {
	t.Helper()
	v1 := testenv.WorkloadImage(t, "v1")
	eng := privengine.Start(t)
	load := eng.LoadImages(v1)
	dk := dockerCLI{env: eng.Env()}
	first := svcState{Image: v1, Replicas: 3, Env: map[string]string{"MESSAGE": "one"}}
	// A 10s poll: what happens within seconds comes from the engine's
	// event stream and from retries, not from polling.
	r := newFaultRig(t, first, rigOptions{env: eng.Env(), dk: dk, noStart: true, flags: []string{"--interval", "10s"}})
	r.foreign = plantForeign(t, dk, r.app, v1)
	// A neighbour that takes 5s to stop: an engine shutdown lasts that
	// long, and so does the window in which the engine still answers on
	// connections already open.
	r.foreign.addSlowStopper(t, dk, r.app+"-db", v1, 5*time.Second)
	t.Cleanup(func() {
		if t.Failed() && eng.Running() {
			out, _ := dk.try("events", "--since", "2m", "--until", strconv.FormatInt(time.Now().Unix(), 10), "--format",
				"{{.TimeNano}} {{.Type}} {{.Action}} {{.Actor.Attributes.name}} {{.Actor.Attributes.container}}")
			t.Logf("private engine events since its last start:\n%s", out)
		}
	})
	r.start()
	deployed := r.waitHead(60*time.Second, "the first deploy on the private engine")
	r.checkRunning("after the first deploy")
	r.waitReadyz(http.StatusOK, 30*time.Second, "while the engine runs")
	starts, _ := eng.Durations()
	t.Logf("private engine at %s started in %s; image loaded in %s; 3 replicas deployed in %s",
		eng.Host, starts[0].Round(time.Millisecond), load.Round(time.Millisecond), deployed.Round(time.Millisecond))
	return r, eng, dk
}

// requireStable polls the API for d: the app must stay Synced and Healthy
// with exactly the containers ids, all ready.
func (r *faultRig) requireStable(d time.Duration, ids map[string]string, what string) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		st, err := r.status()
		if err != nil {
			r.t.Fatalf("%s: status: %v", what, err)
		}
		got := map[string]string{}
		ready := true
		for _, svc := range st.Services {
			for _, c := range svc.Containers {
				got[c.Name] = c.ID
				ready = ready && c.Ready
			}
		}
		if st.Sync != drift.SyncSynced || st.Health != drift.HealthHealthy || !ready || !maps.Equal(got, ids) {
			r.t.Fatalf("%s: the app did not stay converged with the same containers: %s/%s, %q, containers %v (want %v, all ready: %v)",
				what, st.Sync, st.Health, st.Message, got, ids, ready)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitEngineDown waits for the API to report the app Unknown with an
// engine error and /readyz to fail, and returns how long the first took.
func (r *faultRig) waitEngineDown(what string) time.Duration {
	r.t.Helper()
	t0 := time.Now()
	st := r.wait(20*time.Second, "the app Unknown with an engine error: "+what, func(st status.AppStatus) bool {
		return st.Sync == status.SyncUnknown && st.Health == status.HealthUnknown && testenv.HasCondition(st, "engine")
	})
	took := time.Since(t0)
	r.t.Logf("%s: status %s/%s after %s, message %q", what, st.Sync, st.Health, took.Round(time.Millisecond), st.Message)
	if !strings.Contains(strings.ToLower(st.Message), "engine") {
		r.t.Errorf("%s: the message %q does not say the engine is at fault", what, st.Message)
	}
	r.waitReadyz(http.StatusServiceUnavailable, 10*time.Second, what)
	return took
}

// waitReadyz waits until /readyz answers code.
func (r *faultRig) waitReadyz(code int, timeout time.Duration, what string) {
	r.t.Helper()
	var got int
	if !pollUntil(timeout, 100*time.Millisecond, func() bool { got = r.readyz(); return got == code }) {
		r.t.Fatalf("%s: /readyz answers %d, want %d within %s", what, got, code, timeout)
	}
}

// requireAlive fails the test if the agent process ended.
func (r *faultRig) requireAlive(what string) {
	r.t.Helper()
	if exited, err := r.agent.Exited(); exited {
		r.t.Fatalf("%s: the agent exited (%v)", what, err)
	}
}

// lastHistoryID is the newest history entry's ID, 0 if none.
func (r *faultRig) lastHistoryID() uint64 {
	r.t.Helper()
	var last uint64
	for _, e := range r.history() {
		last = max(last, e.ID)
	}
	return last
}

// requireNoChangesSince fails if history after mark records a sync or a
// repair: nothing was changed or "repaired" because of the fault.
func (r *faultRig) requireNoChangesSince(mark uint64, what string) {
	r.t.Helper()
	for _, e := range r.history() {
		if e.ID > mark && (e.Kind == status.KindSync || e.Kind == status.KindRepair) {
			r.t.Errorf("%s: history #%d %s: %s (%s); nothing should have been changed", what, e.ID, e.Kind, e.Summary, e.Result)
		}
	}
}

// healOne removes a replica with docker rm -f and waits until the agent
// has it running (and the app converged) again; it returns how long that
// took.
func (r *faultRig) healOne(dk dockerCLI, name, what string) time.Duration {
	r.t.Helper()
	old := dk.run(r.t, "inspect", "-f", "{{.Id}}", name)
	t0 := time.Now()
	dk.run(r.t, "rm", "-f", name)
	if !pollUntil(30*time.Second, 50*time.Millisecond, func() bool {
		out, err := dk.try("inspect", "-f", "{{.Id}} {{.State.Running}}", name)
		return err == nil && !strings.HasPrefix(out, old) && strings.HasSuffix(out, "true")
	}) {
		r.t.Fatalf("%s: %s removed by hand was not recreated within 30s", what, name)
	}
	took := time.Since(t0)
	r.waitHead(30*time.Second, "converged after the repair "+what)
	r.checkRunning("after the repair " + what)
	return took
}
