// Package sshengine puts a Docker engine behind a real SSH server for one
// test: Debian's /usr/sbin/sshd, run as a child process on a free loopback
// port with a configuration, host key, authorized key and known_hosts of
// its own, all in a temporary directory. A test reaches the engine at
// Server.URL (ssh://USER@127.0.0.1:PORT/<engine socket>) with
// Server.KeyFile and Server.KnownHostsFile, as a driftless agent would
// reach a remote host.
//
// The server logs in the user the test runs as (root for a private
// engine), by key only. Everything is stopped by PID when the test ends:
// sshd, and any per-connection sshd it left behind.
package sshengine

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/machinelock"
)

// SSHD is the SSH server the tests run.
const SSHD = "/usr/sbin/sshd"

// Server is a running sshd.
type Server struct {
	// URL is the engine's address over SSH.
	URL string
	// Port is the port sshd listens on at 127.0.0.1.
	Port int
	// KeyFile is a private key the server accepts; KnownHostsFile holds
	// the server's host key for [127.0.0.1]:Port.
	KeyFile, KnownHostsFile string
	// Dir holds the configuration, keys and pid file.
	Dir string

	t   testing.TB
	cmd *exec.Cmd
	log *lockedBuffer
}

// Start starts sshd in front of the engine whose socket is dockerHost
// (unix://PATH): the path becomes the URL's, so the remote side runs
// `docker -H unix://PATH system dial-stdio`. It skips the test when sshd
// or the ssh tools are missing (and fails it on CI, which installs them).
func Start(t testing.TB, dockerHost string) *Server {
	t.Helper()
	for _, bin := range []string{SSHD, "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(bin); err != nil {
			unavailable(t, fmt.Sprintf("the SSH engine tests need %s (packages openssh-server, openssh-client)", bin))
		}
	}
	socket, ok := strings.CutPrefix(dockerHost, "unix://")
	if !ok {
		t.Fatalf("sshengine: %q is not a unix:// engine address", dockerHost)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	// Over ssh every new connection and every remote probe start
	// processes on both sides: beside the compose corpus they were too
	// slow for the tests' waits.
	machinelock.Sensitive(t)
	privsepDir(t)
	dir := t.TempDir()
	s := &Server{Dir: dir, t: t, log: &lockedBuffer{}}
	hostKey := filepath.Join(dir, "host_key")
	s.KeyFile = filepath.Join(dir, "id_client")
	NewKey(t, hostKey)
	NewKey(t, s.KeyFile)
	copyFile(t, s.KeyFile+".pub", filepath.Join(dir, "authorized_keys"))
	s.Port = freePort(t)
	s.KnownHostsFile = filepath.Join(dir, "known_hosts")
	s.WriteKnownHosts(t, s.KnownHostsFile, hostKey+".pub")
	s.URL = fmt.Sprintf("ssh://%s@127.0.0.1:%d%s", me.Username, s.Port, socket)

	config := strings.Join([]string{
		"Port " + strconv.Itoa(s.Port),
		"ListenAddress 127.0.0.1",
		"HostKey " + hostKey,
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password",
		"AllowUsers " + me.Username,
		"UsePAM no",
		// The files are in a temporary directory under the world-writable
		// /tmp, which StrictModes refuses.
		"StrictModes no",
		"LogLevel VERBOSE",
		"",
	}, "\n")
	configFile := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(SSHD, "-D", "-e", "-f", configFile)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("sshengine: start sshd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	t.Cleanup(func() { s.stop(exited) })
	s.waitListening(exited)
	return s
}

// unavailable skips the test locally and fails it on CI, where sshd is
// part of the test environment (.ci/run installs openssh-server).
func unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// privsepDir makes sshd's privilege separation directory, which Debian's
// service start makes (sshd refuses to run without it).
func privsepDir(t testing.TB) {
	t.Helper()
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		unavailable(t, fmt.Sprintf("sshd needs /run/sshd: %v", err))
	}
}

// NewKey makes an ed25519 key pair without a passphrase at path and
// path.pub.
func NewKey(t testing.TB, path string) {
	t.Helper()
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "sshengine-test", "-f", path).CombinedOutput()
	if err != nil {
		t.Fatalf("sshengine: ssh-keygen: %v\n%s", err, out)
	}
}

// WriteKnownHosts writes a known_hosts file that vouches for the public
// key in pubFile as the key of this server.
func (s *Server) WriteKnownHosts(t testing.TB, file, pubFile string) {
	t.Helper()
	pub, err := os.ReadFile(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(pub))
	line := fmt.Sprintf("[127.0.0.1]:%d %s %s\n", s.Port, f[0], f[1])
	if err := os.WriteFile(file, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// freePort is a loopback port nothing listens on.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitListening waits until sshd sends its banner.
func (s *Server) waitListening(exited chan error) {
	s.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			s.t.Fatalf("sshengine: sshd exited: %v\n%s", err, s.log.String())
		default:
		}
		if banner(s.Port) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("sshengine: sshd does not answer on 127.0.0.1:%d\n%s", s.Port, s.log.String())
}

func banner(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "SSH-2.0-")
}

// PID is sshd's process ID.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Log is what sshd logged so far.
func (s *Server) Log() string { return s.log.String() }

// stop ends sshd by its PID, then the per-connection sshd processes it
// forked, by theirs.
func (s *Server) stop(exited chan error) {
	if s.t.Failed() {
		s.t.Logf("sshd log:\n%s", s.log.String())
	}
	children := Children(s.PID())
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-exited
	}
	for _, pid := range children {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, pid := range children {
		for Alive(pid) && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		if Alive(pid) {
			s.t.Errorf("sshengine: sshd child %d still runs", pid)
		}
	}
}

// Children are the process IDs whose parent is pid, and theirs.
func Children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: fields after the last ')'.
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 {
			if pp, err := strconv.Atoi(f[1]); err == nil {
				parent[p] = pp
			}
		}
	}
	var out []int
	var walk func(int)
	walk = func(pp int) {
		for p, q := range parent {
			if q == pp {
				out = append(out, p)
				walk(p)
			}
		}
	}
	walk(pid)
	return out
}

// Alive says whether a process runs (a zombie does not).
func Alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i+2 < len(s) && s[i+2] != 'Z'
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
