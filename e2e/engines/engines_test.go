// Package engines tests, end to end, one agent driving apps on several
// Docker engines (engines: in driftless.yaml): private engines reached
// over their unix socket, over TCP with TLS and over SSH (a real sshd on
// loopback), beside the machine's engine as local. It is a package of its own so `go test ./...` runs it
// beside the other e2e packages.
package engines

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/sshengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 2)) }

// TestAppsOnSeveralEngines: apps one on engine a (unix socket), two on
// engine b (TCP with TLS, certificates made here) and three on the local
// engine, from one repository, each run on its engine and nowhere else; a
// container removed by hand on b is healed on b; with b stopped, two shows
// the engine unreachable while one still heals on a; b started again,
// two converges.
func TestAppsOnSeveralEngines(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	certs := makeCerts(t)
	tcp := testenv.FreeAddr(t)
	a := privengine.Start(t)
	b := privengine.StartWithArgs(t, "--host", "tcp://"+tcp, "--tlsverify",
		"--tlscacert", certs.ca, "--tlscert", certs.serverCert, "--tlskey", certs.serverKey)
	a.LoadImages(image)
	b.LoadImages(image)

	p := prefix()
	one, two, three := p+"-one", p+"-two", p+"-three"
	t.Cleanup(func() { testenv.RemoveApp(t, three) })
	repo, url := platformRepo(t)
	for _, app := range []string{one, two, three} {
		repo.WriteFile("apps/"+app+"/web.yaml", testenv.WebManifest(image, 1, app))
	}
	sha := repo.Commit("three apps")
	cfg := fmt.Sprintf(`engines:
  - name: a
    host: %s
  - name: b
    host: tcp://%s
    tls: {caFile: %s, certFile: %s, keyFile: %s}
apps:
`, a.Host, tcp, certs.ca, certs.clientCert, certs.clientKey) + appEntry(one, url, "a") + appEntry(two, url, "b") + appEntry(three, url, "local")
	path := writeConfig(t, cfg)
	agent := testenv.StartAgent(t, testenv.DataDir(t), "run", "--config", path)

	converged := testenv.ConvergedServices(sha, map[string]int{"web": 1})
	for app, engine := range map[string]string{one: "a", two: "b", three: ""} {
		st := testenv.WaitAppStatus(t, agent, app, remoteWait, "converged", converged)
		if st.Engine != engine {
			t.Errorf("%s: status engine %q, want %q", app, st.Engine, engine)
		}
	}
	// Each app runs on its engine and nowhere else.
	local := engineCLI{}
	for _, c := range []struct {
		eng    engineCLI
		name   string
		counts [3]int // containers of one, two, three
	}{{engineCLI{a}, "a", [3]int{1, 0, 0}}, {engineCLI{b}, "b", [3]int{0, 1, 0}}, {local, "local", [3]int{0, 0, 1}}} {
		for i, app := range []string{one, two, three} {
			if n := len(c.eng.containers(t, app)); n != c.counts[i] {
				t.Errorf("engine %s holds %d containers of %s, want %d", c.name, n, app, c.counts[i])
			}
		}
	}

	// Each engine's own series, labelled with its name.
	metrics := get(t, agent.URL+"/metrics")
	for _, e := range []string{"local", "a", "b"} {
		if !strings.Contains(metrics, `driftless_docker_requests_total{engine="`+e+`"`) {
			t.Errorf("/metrics has no Docker requests of engine %s", e)
		}
		if !strings.Contains(metrics, `driftless_engine_connected{engine="`+e+`"} 1`) {
			t.Errorf("/metrics does not show engine %s connected", e)
		}
	}

	// A container removed by hand on b is healed on b.
	before := testenv.ContainerIDs(testenv.AppStatus(t, agent, two))
	b.Docker("rm", "-f", two+"-web-1")
	healed := testenv.WaitAppStatus(t, agent, two, 60*time.Second, "healed on b", func(st status.AppStatus) bool {
		ids := testenv.ContainerIDs(st)
		return converged(st) && len(ids) == 1 && ids[0] != before[0]
	})
	if ids := (engineCLI{b}).containers(t, two); len(ids) != 1 || !strings.HasPrefix(testenv.ContainerIDs(healed)[0], ids[0]) {
		t.Errorf("after the heal b runs %v of %s, want the status's %v", ids, two, testenv.ContainerIDs(healed))
	}

	// b stopped: only two is unreachable; one still heals on a.
	b.Stop()
	down := testenv.WaitAppStatus(t, agent, two, 60*time.Second, "engine unreachable", func(st status.AppStatus) bool {
		return st.Sync == status.SyncUnknown && testenv.HasCondition(st, "engine")
	})
	t.Logf("with b stopped, %s: %q", two, down.Message)
	waitMetric(t, agent.URL, `driftless_engine_connected{engine="b"} 0`)
	if page := get(t, agent.URL+"/"); !strings.Contains(page, `<strong>b</strong></a> 1 app <span class="badge bad"`) || !strings.Contains(page, `<strong>a</strong></a> 1 app ·`) {
		t.Errorf("the dashboard's engines line does not show b unreachable and a answering:\n%s", page)
	}
	if page := get(t, agent.URL+"/?engine=b"); !strings.Contains(page, `href="/apps/`+two+`"`) || strings.Contains(page, `href="/apps/`+one+`"`) {
		t.Errorf("engine b's page does not list exactly its app %s:\n%s", two, page)
	}
	for q, want := range map[string]int{"": 200, "?engine=local": 200, "?engine=a": 200, "?engine=b": 503, "?engine=c": 404} {
		if code := statusCode(t, agent.URL+"/readyz"+q); code != want {
			t.Errorf("/readyz%s with b down: HTTP %d, want %d", q, code, want)
		}
	}
	beforeOne := testenv.ContainerIDs(testenv.AppStatus(t, agent, one))
	a.Docker("rm", "-f", one+"-web-1")
	testenv.WaitAppStatus(t, agent, one, 60*time.Second, "healed on a while b is down", func(st status.AppStatus) bool {
		ids := testenv.ContainerIDs(st)
		return converged(st) && len(ids) == 1 && ids[0] != beforeOne[0]
	})
	if st := testenv.AppStatus(t, agent, three); !converged(st) {
		t.Errorf("%s with b down: %s/%s %q, want it untouched", three, st.Sync, st.Health, st.Message)
	}

	// b back: two converges again.
	b.Start()
	testenv.WaitAppStatus(t, agent, two, 90*time.Second, "converged once b is back", converged)
}

// platformRepo serves a new repository, platform, over git daemon on
// loopback; url is its address for the agent.
func platformRepo(t *testing.T) (repo *gitserver.Repo, url string) {
	t.Helper()
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo = gitserver.Init(t, base, "platform")
	return repo, repo.URL(server.URL)
}

// farEngine starts a private engine holding images, reached over ssh
// through a real sshd on loopback; farEntry is its engines: entry, far.
// sshPingTimeout is the agents' --ping-timeout in the tests with an ssh
// engine: on a loaded two-core CI machine, with several private engines
// starting beside other packages' tests, a ping over ssh (a session and
// the remote docker CLI) took longer than the default 5 s, and the engine
// counted as down.
const sshPingTimeout = "30s"

// remoteWait bounds a wait for an app on the ssh engine to converge.
// Every change opens an ssh session of its own, seconds each on a loaded
// two-core CI machine (a one-replica replacement there took over a
// minute, where it takes 3 s alone); the bound only decides how long a
// real failure takes to report.
const remoteWait = 3 * time.Minute

func farEngine(t *testing.T, images ...string) (*privengine.Engine, *sshengine.Server) {
	t.Helper()
	eng := privengine.Start(t)
	eng.LoadImages(images...)
	return eng, sshengine.Start(t, eng.Host)
}

// farEntry is the engines: entry of the engine ssh reaches, called far.
func farEntry(ssh *sshengine.Server) string {
	return fmt.Sprintf("  - {name: far, host: %s, sshKeyFile: %s, knownHostsFile: %s}\n", ssh.URL, ssh.KeyFile, ssh.KnownHostsFile)
}

// appEntry is the apps: entry of the app at apps/NAME of the repository
// at url, placed on engine, polled every 10 minutes.
func appEntry(name, url, engine string) string {
	return fmt.Sprintf("  - {name: %s, repo: %s, branch: main, path: apps/%s, interval: 10m, allowInsecureTransport: true, engine: %s}\n", name, url, name, engine)
}

// writeConfig writes cfg as a driftless.yaml of its own and returns its
// path.
func writeConfig(t *testing.T, cfg string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "driftless.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// statusCode is the HTTP status of a GET of url.
func statusCode(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitMetric waits until /metrics holds line.
func waitMetric(t *testing.T, agentURL, line string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(get(t, agentURL+"/metrics"), line) {
		if time.Now().After(deadline) {
			t.Fatalf("/metrics did not show %s within 60s", line)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d %v", url, resp.StatusCode, err)
	}
	return string(body)
}

// prefix makes this run's app names unique on the shared engine.
func prefix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "e" + hex.EncodeToString(b)
}

// engineCLI runs docker against a private engine, or the shared one.
type engineCLI struct{ eng *privengine.Engine }

// containers are the IDs of the app's containers on the engine.
func (c engineCLI) containers(t *testing.T, app string) []string {
	t.Helper()
	args := []string{"ps", "-aq", "--filter", "label=" + drift.LabelApp + "=" + app}
	if c.eng != nil {
		return strings.Fields(c.eng.Docker(args...))
	}
	return strings.Fields(testenv.Docker(t, args...))
}

// certFiles are a CA and the engine's and agent's certificates it signed.
type certFiles struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

// makeCerts writes a CA, a server certificate for 127.0.0.1 and a client
// certificate, as dockerd --tlsverify and the agent take them.
func makeCerts(t *testing.T) certFiles {
	t.Helper()
	ca := testenv.NewCA(t, t.TempDir(), "driftless e2e CA", "ca.pem")
	c := certFiles{ca: ca.File}
	c.serverCert, c.serverKey = ca.Leaf(t, "server", x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")}, "server-cert.pem", "server-key.pem")
	c.clientCert, c.clientKey = ca.Leaf(t, "client", x509.ExtKeyUsageClientAuth, nil, "client-cert.pem", "client-key.pem")
	return c
}
