package testenv

import (
	"net/http"
	"os/exec"
	"testing"
	"time"
)

// StartAgentEnv is StartAgent with the process's environment set to env
// (nil: this process's), e.g. DOCKER_HOST pointing at a private engine.
func StartAgentEnv(t testing.TB, env []string, dataDir string, args ...string) *Agent {
	t.Helper()
	addr := FreeAddr(t)
	a := &Agent{URL: "http://" + addr, Data: dataDir, out: &LockedBuffer{}, done: make(chan struct{})}
	full := append([]string{}, args...)
	full = append(full, "--listen", addr, "--data", dataDir)
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
		a.Stop(t)
		if t.Failed() {
			t.Logf("driftless output:\n%s", a.Logs())
		}
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
