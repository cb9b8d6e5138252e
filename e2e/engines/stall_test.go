package engines

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestStalledEngineDoesNotDelayAnotherEnginesHeal: engine stuck accepts
// connections and never answers. Three apps on it, more than the loop's two
// workers, and one app on local: the local app converges, and once its
// container is removed by hand it is healed, and the stuck apps show their
// engine unreachable; healed again once they do. Before passes were bounded, the stuck apps'
// passes held both workers for ever and the heal never came.
func TestStalledEngineDoesNotDelayAnotherEnginesHeal(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	stuck := stalledListener(t)

	p := prefix()
	local := p + "-local"
	stuckApps := []string{p + "-s1", p + "-s2", p + "-s3"}
	t.Cleanup(func() { testenv.RemoveApp(t, local) })
	repo, url := platformRepo(t)
	for _, app := range append([]string{local}, stuckApps...) {
		repo.WriteFile("apps/"+app+"/web.yaml", testenv.WebManifest(image, 1, app))
	}
	sha := repo.Commit("one local app, three on a stalled engine")
	cfg := fmt.Sprintf("engines:\n  - {name: stuck, host: tcp://%s, allowInsecureEngine: true}\napps:\n", stuck)
	for _, a := range stuckApps {
		cfg += appEntry(a, url, "stuck")
	}
	cfg += appEntry(local, url, "local")
	path := writeConfig(t, cfg)
	agent := testenv.StartAgent(t, testenv.DataDir(t), "run", "--config", path, "--workers", "2")

	converged := testenv.ConvergedServices(sha, map[string]int{"web": 1})
	testenv.WaitAppStatus(t, agent, local, 90*time.Second, "converged beside a stalled engine", converged)

	// Removed by hand, the local app's container is healed: first right
	// after the agent started, then once the stuck apps show they wait on
	// their engine.
	heal := func(when string) {
		t.Helper()
		before := testenv.ContainerIDs(testenv.AppStatus(t, agent, local))
		removed := time.Now()
		testenv.Docker(t, "rm", "-f", local+"-web-1")
		testenv.WaitAppStatus(t, agent, local, 60*time.Second, "healed "+when, func(st status.AppStatus) bool {
			ids := testenv.ContainerIDs(st)
			return converged(st) && len(ids) == 1 && ids[0] != before[0]
		})
		t.Logf("local app healed %s after its container was removed %s (to the status poll that saw it)", time.Since(removed).Round(10*time.Millisecond), when)
	}
	heal("right after the agent started beside a stalled engine")

	for _, a := range stuckApps {
		st := testenv.WaitAppStatus(t, agent, a, 60*time.Second, "engine unreachable", func(st status.AppStatus) bool {
			return st.Sync == status.SyncUnknown && testenv.HasCondition(st, "engine")
		})
		if st.Engine != "stuck" {
			t.Errorf("%s: status engine %q, want stuck", a, st.Engine)
		}
		t.Logf("%s: %q", a, st.Message)
	}
	heal("with the stalled engine's apps shown unreachable")
}

// stalledListener listens on a loopback port, accepts every connection and
// never answers, holding connections open until the test ends: an engine
// that hangs rather than refuses.
func stalledListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}
