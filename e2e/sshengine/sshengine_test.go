package sshengine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/deploy/dockerssh"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest/appdir"
)

// TestEngineOverSSH: an engine reached only through sshd, as a remote
// host would be. driftless's engine, given the SSH Dialer, pings it,
// deploys an app there, observes it and follows its events; a removal
// made on the engine itself arrives as an event. All of it over one SSH
// login (connection sharing), which Close ends. A host key that is not
// the one in known_hosts, and a key the server does not know, are refused
// with errors that say so.
func TestEngineOverSSH(t *testing.T) {
	image := testenv.WorkloadImage(t, "v1")
	priv := privengine.Start(t)
	priv.LoadImages(image)
	srv := Start(t, priv.Host)

	t.Run("deploy, observe and watch", func(t *testing.T) { deployObserveWatch(t, priv, srv, image) })

	t.Run("unknown host key", func(t *testing.T) {
		// known_hosts vouches for another key than the server's.
		other := filepath.Join(t.TempDir(), "other_host_key")
		NewKey(t, other)
		knownHosts := filepath.Join(t.TempDir(), "known_hosts")
		srv.WriteKnownHosts(t, knownHosts, other+".pub")
		err := pingErr(t, srv.URL, srv.KeyFile, knownHosts)
		if !errors.Is(err, dockerssh.ErrHostKey) || !strings.Contains(err.Error(), "differs from the one in "+knownHosts) {
			t.Fatalf("ping with a changed host key: %v", err)
		}

		// An empty known_hosts: the host is unknown.
		empty := filepath.Join(t.TempDir(), "known_hosts")
		copyFile(t, "/dev/null", empty)
		err = pingErr(t, srv.URL, srv.KeyFile, empty)
		if !errors.Is(err, dockerssh.ErrHostKey) || !strings.Contains(err.Error(), "is not in "+empty) || !strings.Contains(err.Error(), "Host key verification failed") {
			t.Fatalf("ping with an unknown host: %v", err)
		}
	})

	t.Run("key not authorized", func(t *testing.T) {
		stranger := filepath.Join(t.TempDir(), "id_stranger")
		NewKey(t, stranger)
		err := pingErr(t, srv.URL, stranger, srv.KnownHostsFile)
		if !errors.Is(err, dockerssh.ErrAuth) || !strings.Contains(err.Error(), "Permission denied (publickey)") {
			t.Fatalf("ping with a key the server does not know: %v", err)
		}
	})
}

func uniqueApp() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "tssh" + hex.EncodeToString(b)
}

func dialer(t *testing.T, url, key, knownHosts string) *dockerssh.Dialer {
	t.Helper()
	d, err := dockerssh.New(url, dockerssh.Options{KeyFile: key, KnownHostsFile: knownHosts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close the dialer: %v", err)
		}
	})
	return d
}

func engine(t *testing.T, url string, d *dockerssh.Dialer) *deploy.Engine {
	t.Helper()
	files := filepath.Join(t.TempDir(), "files")
	eng, err := deploy.New(context.Background(), deploy.Options{Host: url, Dial: d.DialContext, FilesDir: files,
		SettleTime: time.Second, ReadyTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// pingErr is the error of a ping through a fresh Dialer.
func pingErr(t *testing.T, url, key, knownHosts string) error {
	t.Helper()
	eng := engine(t, url, dialer(t, url, key, knownHosts))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := eng.Ping(ctx)
	if err == nil {
		t.Fatal("ping succeeded")
	}
	if !errors.Is(err, drift.ErrEngineUnreachable) || !strings.Contains(err.Error(), url) {
		t.Errorf("ping error %v: not ErrEngineUnreachable naming %s", err, url)
	}
	t.Logf("refused: %v", err)
	return err
}

// watch runs eng.Watch into events until the returned function (or the
// test's end) stops it.
func watch(t *testing.T, ctx context.Context, eng *deploy.Engine, events chan<- drift.EngineEvent) func() {
	ctx, cancel := context.WithCancel(ctx)
	watched := make(chan error, 1)
	go func() {
		watched <- eng.Watch(ctx, func(ev drift.EngineEvent) {
			select {
			case events <- ev:
			default:
			}
		})
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-watched; err != nil {
				t.Errorf("watch: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func waitEvent(t *testing.T, events <-chan drift.EngineEvent, d time.Duration, what string, match func(drift.EngineEvent) bool) {
	t.Helper()
	timeout := time.After(d)
	var seen []string
	for {
		select {
		case ev := <-events:
			if match(ev) {
				return
			}
			seen = append(seen, ev.Action+" "+ev.Container)
		case <-timeout:
			t.Fatalf("no event within %s for %s; saw %v", d, what, seen)
		}
	}
}

// deployObserveWatch deploys an app over SSH and follows it there.
func deployObserveWatch(t *testing.T, priv *privengine.Engine, srv *Server, image string) {
	d := dialer(t, srv.URL, srv.KeyFile, srv.KnownHostsFile)
	eng := engine(t, srv.URL, d)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := eng.Ping(ctx); err != nil {
		t.Fatalf("ping over SSH: %v", err)
	}
	// What one request costs: a session over the shared connection, the
	// remote user's shell starting (and its rc files: bash reads ~/.bashrc
	// under sshd) and `docker system dial-stdio`.
	const pings = 10
	t0 := time.Now()
	for range pings {
		if err := eng.Ping(ctx); err != nil {
			t.Fatalf("ping over SSH: %v", err)
		}
	}
	t.Logf("a ping over SSH takes %s", (time.Since(t0) / pings).Round(time.Millisecond))

	events := make(chan drift.EngineEvent, 256)
	stopWatch := watch(t, ctx, eng, events)
	waitEvent(t, events, 30*time.Second, "the event stream connected", func(ev drift.EngineEvent) bool { return ev.Action == drift.EventConnected })

	app := uniqueApp()
	desired, err := appdir.Load(fstest.MapFS{"web.yaml": {Data: []byte(fmt.Sprintf(`apiVersion: driftless.dev/v1
kind: Service
metadata: {name: web}
spec:
  image: %s
  replicas: 2
  stopGracePeriodSeconds: 1
`, image))}}, ".", app)
	if err != nil {
		t.Fatal(err)
	}
	before, err := eng.Observe(ctx, app, false)
	if err != nil {
		t.Fatalf("observe over SSH: %v", err)
	}
	plan := drift.Compute(drift.Input{App: app, Desired: desired, Actual: before, Options: drift.Options{Revision: "rev1", Now: time.Now()}})
	if res := eng.Apply(ctx, desired, plan, drift.ApplyOptions{}); res.Err != nil {
		t.Fatalf("apply over SSH: %v", res.Err)
	}

	// The engine itself has them.
	ps := priv.Docker("ps", "--filter", "label="+drift.LabelApp+"="+app, "--format", "{{.ID}} {{.Names}}")
	lines := strings.Split(ps, "\n")
	if len(lines) != 2 || ps == "" {
		t.Fatalf("docker ps on the engine: %q, want the 2 replicas", ps)
	}
	// Observe sees them, running.
	actual := observeRunning(t, ctx, eng, app, lines)
	if again := drift.Compute(drift.Input{App: app, Desired: desired, Actual: actual, Options: drift.Options{Revision: "rev1", Now: time.Now()}}); !again.Empty() {
		t.Fatalf("after apply, a plan over SSH is not empty:\n%s", again)
	}

	// A removal done on the engine arrives through the event stream.
	victim := strings.Fields(lines[0])
	priv.Docker("rm", "-f", victim[0])
	waitEvent(t, events, 30*time.Second, "the destroy event of "+victim[1], func(ev drift.EngineEvent) bool {
		return ev.Action == "destroy" && ev.App == app && strings.HasPrefix(ev.ID, victim[0])
	})

	// Every request was a connection of its own, all over one SSH
	// login: the shared connection, which Close ends.
	if n := strings.Count(srv.Log(), "Accepted publickey for"); n != 1 {
		t.Errorf("%d SSH logins for one engine, want 1 (connection sharing):\n%s", n, srv.Log())
	}
	master := d.MasterPID(ctx)
	if master == 0 {
		t.Fatal("no shared SSH connection")
	}
	stopWatch()
	eng.Close()
	if err := d.CloseContext(ctx); err != nil {
		t.Fatalf("close the dialer: %v", err)
	}
	if Alive(master) {
		t.Errorf("the shared SSH connection (pid %d) runs after Close", master)
	}
}

// observeRunning observes the app over SSH: it must show running the
// containers of the engine's own `docker ps` lines (ID, name).
func observeRunning(t *testing.T, ctx context.Context, eng *deploy.Engine, app string, lines []string) drift.Actual {
	t.Helper()
	actual, err := eng.ObserveCold(ctx, app, false)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, c := range actual.Containers {
		if c.Service == "web" && c.State == drift.StateRunning {
			ids[c.ID[:12]] = true
		}
	}
	for _, l := range lines {
		if !ids[strings.Fields(l)[0]] {
			t.Fatalf("Observe over SSH: %+v lacks %q (engine's docker ps)", actual.Containers, l)
		}
	}
	return actual
}
