package engines

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestAppOverSSH: an engine reached over ssh:// (a real sshd on loopback
// whose docker CLI talks to a private engine) runs an app, which is healed
// there after a removal by hand; an app on it that asks for an HTTP
// readiness probe is refused, saying the probe is not supported on a
// remote engine yet.
func TestAppOverSSH(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	eng := privengine.Start(t)
	eng.LoadImages(image)
	ssh := startSSHD(t, eng.Host)

	p := prefix()
	four, five := p+"-four", p+"-five"
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "platform")
	repo.WriteFile("apps/"+four+"/web.yaml", fmt.Sprintf("apiVersion: driftless.dev/v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  image: %s\n  replicas: 1\n  env: {MESSAGE: four}\n  stopGracePeriodSeconds: 1\n", image))
	repo.WriteFile("apps/"+five+"/web.yaml", testenv.WebManifest(image, 1, "five"))
	sha := repo.Commit("two apps on the ssh engine")
	url := repo.URL(server.URL)
	cfg := fmt.Sprintf(`engines:
  - {name: far, host: %[1]s, sshKeyFile: %[2]s, knownHostsFile: %[3]s}
apps:
  - {name: %[4]s, repo: %[6]s, branch: main, path: apps/%[4]s, interval: 10m, allowInsecureTransport: true, engine: far}
  - {name: %[5]s, repo: %[6]s, branch: main, path: apps/%[5]s, interval: 10m, allowInsecureTransport: true, engine: far}
`, ssh.url, ssh.key, ssh.knownHosts, four, five, url)
	path := filepath.Join(t.TempDir(), "driftless.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := testenv.StartAgent(t, testenv.DataDir(t), "run", "--config", path)

	converged := testenv.ConvergedServices(sha, map[string]int{"web": 1})
	st := testenv.WaitAppStatus(t, agent, four, 90*time.Second, "converged over ssh", converged)
	if n := len((engineCLI{eng}).containers(t, four)); n != 1 || st.Engine != "far" {
		t.Fatalf("the ssh engine holds %d containers of %s (engine %q), want 1 on far", n, four, st.Engine)
	}
	refused := testenv.WaitAppStatus(t, agent, five, 60*time.Second, "refused", func(st status.AppStatus) bool { return st.Refused != nil })
	if msg := strings.Join(refused.Refused.Errors, "\n"); !strings.Contains(msg, "readiness probe (run from the agent's host, which cannot reach the engine's container addresses) is not supported on a remote engine yet (engine far is not on the agent's host)") {
		t.Errorf("%s refused with %q, want the readiness probe named as not supported on a remote engine", five, msg)
	}
	if n := len((engineCLI{eng}).containers(t, five)); n != 0 {
		t.Errorf("the ssh engine holds %d containers of the refused %s", n, five)
	}

	before := testenv.ContainerIDs(st)
	eng.Docker("rm", "-f", four+"-web-1")
	testenv.WaitAppStatus(t, agent, four, 60*time.Second, "healed over ssh", func(st status.AppStatus) bool {
		ids := testenv.ContainerIDs(st)
		return converged(st) && len(ids) == 1 && ids[0] != before[0]
	})
}

// sshd is a real sshd on loopback whose sessions' docker CLI talks to one
// engine, and what the agent needs to log in.
type sshd struct {
	url, key, knownHosts string
}

// startSSHD runs Debian's sshd with a configuration, host key and
// authorized key of its own on a free loopback port, with DOCKER_HOST set
// to dockerHost in its sessions; it is stopped when the test ends.
func startSSHD(t *testing.T, dockerHost string) sshd {
	t.Helper()
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		t.Skip("needs Debian's openssh-server (/usr/sbin/sshd)")
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keygen := func(name string) {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", filepath.Join(dir, name)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
	}
	keygen("host")
	keygen("agent")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	addr := testenv.FreeAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("authorized_keys", read("agent.pub")+"\n")
	known := write("known_hosts", fmt.Sprintf("[%s]:%s %s\n", host, port, read("host.pub")))
	conf := write("sshd_config", fmt.Sprintf(`Port %s
ListenAddress %s
HostKey %s
PidFile %s
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
SetEnv DOCKER_HOST=%s
`, port, host, filepath.Join(dir, "host"), filepath.Join(dir, "sshd.pid"), filepath.Join(dir, "authorized_keys"), dockerHost))
	// sshd wants its privilege separation directory.
	if _, err := os.Stat("/run/sshd"); os.IsNotExist(err) {
		if err := os.Mkdir("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove("/run/sshd") })
	}
	var log testenv.LockedBuffer
	cmd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", conf)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("sshd log:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd does not listen on %s: %v\n%s", addr, err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return sshd{url: fmt.Sprintf("ssh://%s@%s", me.Username, addr), key: filepath.Join(dir, "agent"), knownHosts: known}
}
