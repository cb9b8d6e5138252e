package engines

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestEngineStallingMidPassDoesNotDelayLocalHeal: engine slow answers its
// pings and its event stream, but from some point never answers a
// container create. Three of its apps lose their containers, and their
// passes hang in the create; with two workers, one of them at a time may
// hold a worker, so the local app's container, removed by hand, is still
// healed. (With no limit per engine two hung passes held both workers and
// the heal never came.)
func TestEngineStallingMidPassDoesNotDelayLocalHeal(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	eng := privengine.Start(t)
	eng.LoadImages(image)
	proxy, hung := hangingCreates(t, eng)

	p := prefix()
	local := p + "-local"
	slowApps := []string{p + "-m1", p + "-m2", p + "-m3"}
	t.Cleanup(func() { testenv.RemoveApp(t, local) })
	repo, url := platformRepo(t)
	manifest := func(app string) string {
		return fmt.Sprintf("apiVersion: driftless.dev/v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  image: %s\n  replicas: 1\n  env: {MESSAGE: %s}\n  stopGracePeriodSeconds: 1\n", image, app)
	}
	for _, app := range append([]string{local}, slowApps...) {
		repo.WriteFile("apps/"+app+"/web.yaml", manifest(app))
	}
	sha := repo.Commit("one local app, three on an engine that will stall")
	cfg := fmt.Sprintf("engines:\n  - {name: slow, host: tcp://%s, allowInsecureEngine: true}\napps:\n", proxy)
	for _, a := range slowApps {
		cfg += appEntry(a, url, "slow")
	}
	cfg += appEntry(local, url, "local")
	path := writeConfig(t, cfg)
	agent := testenv.StartAgent(t, testenv.DataDir(t), "run", "--config", path, "--workers", "2")
	converged := testenv.ConvergedServices(sha, map[string]int{"web": 1})
	for _, a := range append([]string{local}, slowApps...) {
		testenv.WaitAppStatus(t, agent, a, 90*time.Second, "converged", converged)
	}

	// slow stalls: its apps' repairs hang in their creates.
	hung.stall.Store(true)
	for _, a := range slowApps {
		eng.Docker("rm", "-f", a+"-web-1")
	}
	deadline := time.Now().Add(30 * time.Second)
	for hung.waiting.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no repair on the slow engine reached its create within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}

	before := testenv.ContainerIDs(testenv.AppStatus(t, agent, local))
	removed := time.Now()
	testenv.Docker(t, "rm", "-f", local+"-web-1")
	testenv.WaitAppStatus(t, agent, local, 60*time.Second, "healed while the slow engine hangs", func(st status.AppStatus) bool {
		ids := testenv.ContainerIDs(st)
		return converged(st) && len(ids) == 1 && ids[0] != before[0]
	})
	t.Logf("local app healed %s after its container was removed, with %d create(s) hanging on the slow engine", time.Since(removed).Round(10*time.Millisecond), hung.waiting.Load())
	if n := hung.waiting.Load(); n != 1 {
		t.Errorf("%d creates hang on the slow engine, want 1 (one pass at a time there with two workers)", n)
	}
}

// TestEngineRequestLeftUnansweredFailsThePass: with --request-timeout 3s,
// a container create the engine never answers fails the pass after 3 s as
// the engine not answering, naming the request, instead of holding the
// app for as long as the connection stays open. The pass is retried, and
// once the engine answers creates again the app converges by itself.
func TestEngineRequestLeftUnansweredFailsThePass(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	eng := privengine.Start(t)
	eng.LoadImages(image)
	proxy, hung := hangingCreates(t, eng)
	hung.stall.Store(true) // from the first deploy on

	app := prefix() + "-unanswered"
	repo, url := platformRepo(t)
	repo.WriteFile("apps/"+app+"/web.yaml", fmt.Sprintf("apiVersion: driftless.dev/v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  image: %s\n  replicas: 1\n  stopGracePeriodSeconds: 1\n", image))
	sha := repo.Commit("an app on an engine that will not answer its creates")
	cfg := fmt.Sprintf("engines:\n  - {name: slow, host: tcp://%s, allowInsecureEngine: true}\napps:\n", proxy) + appEntry(app, url, "slow")
	agent := testenv.StartAgent(t, testenv.DataDir(t), "run", "--config", writeConfig(t, cfg), "--request-timeout", "3s")

	const said = "no answer to POST /containers/create within 3s"
	var reported status.Condition
	testenv.WaitAppStatus(t, agent, app, 60*time.Second, "the engine reported not answering the create", func(st status.AppStatus) bool {
		for _, c := range st.Errors {
			if strings.Contains(c.Message, said) && strings.Contains(c.Message, "Docker engine unreachable at tcp://"+proxy) {
				reported = c
				return true
			}
		}
		return false
	})
	t.Logf("status while creates go unanswered: %s: %s", reported.Kind, reported.Message)
	// Retried, not held: later passes send creates of their own.
	deadline := time.Now().Add(30 * time.Second)
	for hung.waiting.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d creates reached the engine in 30 s after the first went unanswered; want the pass retried", hung.waiting.Load())
		}
		time.Sleep(100 * time.Millisecond)
	}
	hung.stall.Store(false)
	testenv.WaitAppStatus(t, agent, app, remoteWait, "converged once the engine answers", testenv.ConvergedServices(sha, map[string]int{"web": 1}))
}

// createStall is the state of hangingCreates' proxy.
type createStall struct {
	stall   atomic.Bool  // hold every container create from now on
	waiting atomic.Int32 // creates held
}

// hangingCreates serves the private engine's API on a loopback TCP port,
// passing everything through while stall is not set; while it is, a
// container create is held, unanswered, until the test ends or its client
// gives up: an engine that answers its pings and events but stalls in the
// middle of a pass.
func hangingCreates(t *testing.T, eng *privengine.Engine) (string, *createStall) {
	t.Helper()
	sock := strings.TrimPrefix(eng.Host, "unix://")
	target, _ := url.Parse("http://docker")
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // the event stream
	rp.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	s := &createStall{}
	done := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.stall.Load() && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/containers/create") {
			s.waiting.Add(1)
			select {
			case <-done:
			case <-r.Context().Done(): // the client gave up on it
			}
			return
		}
		rp.ServeHTTP(w, r)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		close(done)
		_ = srv.Close()
	})
	return ln.Addr().String(), s
}
