package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// SecretsDir is the secrets directory of the agent with data directory
// dataDir: on the machine's /dev/shm (a tmpfs the Docker daemon sees), one
// per data directory so a restarted agent finds its files, removed after
// the test. Without a tmpfs /dev/shm it is a directory of the test, where
// the agent mounts its own tmpfs (and unmounted after the test).
func SecretsDir(t testing.TB, dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	name := "driftless-e2e-secrets-" + hex.EncodeToString(sum[:6])
	var st syscall.Statfs_t
	dir := filepath.Join("/dev/shm", name)
	if syscall.Statfs("/dev/shm", &st) != nil || st.Type != 0x01021994 {
		dir = filepath.Join(filepath.Dir(dataDir), name)
		t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// StartAgentEnv is StartAgent with the process's environment set to env
// (nil: this process's), e.g. DOCKER_HOST pointing at a private engine.
func StartAgentEnv(t testing.TB, env []string, dataDir string, args ...string) *Agent {
	t.Helper()
	addr := FreeAddr(t)
	a := &Agent{URL: "http://" + addr, Data: dataDir, out: &LockedBuffer{}, done: make(chan struct{})}
	full := append([]string{}, args...)
	full = append(full, "--listen", addr, "--data", dataDir)
	if len(args) > 0 && args[0] == "run" {
		full = append(full, "--secrets-dir", SecretsDir(t, dataDir))
	}
	a.cmd = exec.Command(DriftlessBinary(t), full...)
	a.cmd.Env = env
	a.cmd.Stdout = a.out
	a.cmd.Stderr = a.out
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("start driftless: %v", err)
	}
	go func() {
		a.err = a.cmd.Wait()
		close(a.done)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			a.logStuck(t)
			return
		}
		a.Stop(t)
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(a.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a
			}
		}
		select {
		case <-a.done:
			t.Fatalf("driftless exited before serving: %v\n%s", a.err, a.Logs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("driftless did not serve /healthz within 30s:\n%s", a.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// PID is the agent process's ID.
func (a *Agent) PID() int { return a.cmd.Process.Pid }
