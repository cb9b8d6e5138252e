package gitserver

import (
	"bytes"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// KillableDaemon is a git daemon that can crash mid-transfer: Kill ends
// git-daemon and every git-upload-pack / pack-objects it forked (they
// share its process group), so a fetch in progress breaks as it would if
// the git host died. Server.Stop, by contrast, kills only git-daemon and
// lets transfers under way finish.
type KillableDaemon struct {
	URL string // base URL; append "/<name>.git"

	baseDir string
	port    int
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	stderr  *bytes.Buffer
}

// RunKillableDaemon serves every repository under baseDir over git://
// until Kill or the end of the test.
func RunKillableDaemon(t testing.TB, baseDir string) *KillableDaemon {
	t.Helper()
	d := &KillableDaemon{baseDir: baseDir, port: freePort(t)}
	d.URL = "git://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(d.port))
	t.Cleanup(d.Kill)
	d.Start(t)
	return d
}

// Start serves again on the same address after Kill.
func (d *KillableDaemon) Start(t testing.TB) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd != nil {
		t.Fatal("gitserver: KillableDaemon.Start while it runs")
	}
	cmd := exec.Command(execPath(t, "git-daemon"),
		"--export-all", "--base-path="+d.baseDir, "--reuseaddr", "--informative-errors",
		"--listen=127.0.0.1", "--port="+strconv.Itoa(d.port), d.baseDir)
	cmd.Env = gitEnv()
	d.stderr = &bytes.Buffer{}
	cmd.Stderr = d.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start git daemon: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	d.cmd, d.done = cmd, done
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(d.port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		select {
		case <-done:
			t.Fatalf("git daemon exited: %s", d.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("git daemon not listening on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill SIGKILLs the daemon's whole process group: the daemon and the
// transfers it serves.
func (d *KillableDaemon) Kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.done
	d.cmd = nil
}
