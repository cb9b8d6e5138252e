package testenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/stackdump"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// Agent is a `driftless run` (or `driftless demo`) process under test.
type Agent struct {
	URL  string
	Data string
	cmd  *exec.Cmd
	out  *LockedBuffer
	done chan struct{}
	err  error
}

// LockedBuffer collects a process's output while tests read it.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FreeAddr returns a loopback address with a port nobody listens on now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// StartAgent runs the driftless binary with args plus --listen on a free
// loopback port and --data dataDir, and waits until /healthz answers. The
// process is stopped with SIGTERM when the test ends. Its output is in
// Logs and is printed if the test failed.
func StartAgent(t testing.TB, dataDir string, args ...string) *Agent {
	t.Helper()
	return StartAgentEnv(t, nil, dataDir, args...)
}

// Logs is everything the process printed so far.
func (a *Agent) Logs() string { return a.out.String() }

// Client talks to the agent's API.
func (a *Agent) Client() *web.Client {
	return &web.Client{BaseURL: a.URL, HTTP: &http.Client{Timeout: 10 * time.Second}}
}

// Kill ends the process with SIGKILL, as a crash or OOM kill would.
func (a *Agent) Kill(t testing.TB) {
	t.Helper()
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
}

// stopWait is how long Stop waits for the agent to exit: the agent gives
// a pass under way 30 s to reach its next safe point (a replace waiting
// for a crashing replica is not one) before it cancels it.
const stopWait = 45 * time.Second

// Stop sends SIGTERM and waits for a clean exit (SIGKILL after stopWait).
func (a *Agent) Stop(t testing.TB) {
	t.Helper()
	select {
	case <-a.done:
		return
	default:
	}
	if !a.signalAndWait(syscall.SIGTERM) {
		t.Errorf("driftless did not stop within %s of SIGTERM", stopWait)
	}
}

// signalAndWait sends sig and waits for the process to exit, killing it
// after stopWait; false if it had to.
func (a *Agent) signalAndWait(sig syscall.Signal) bool {
	_ = a.cmd.Process.Signal(sig)
	select {
	case <-a.done:
		return true
	case <-time.After(stopWait):
		_ = a.cmd.Process.Kill()
		<-a.done
		return false
	}
}

// logStuck ends a failed test's agent with SIGQUIT and logs its output,
// then the goroutines that had waited for a minute or more: where an
// apply or a probe hung, which the agent's log cannot say.
func (a *Agent) logStuck(t testing.TB) {
	t.Helper()
	if exited, _ := a.Exited(); exited {
		t.Logf("driftless output:\n%s", a.Logs())
		return
	}
	a.logRequestCounts(t)
	before := len(a.Logs())
	a.signalAndWait(syscall.SIGQUIT)
	out := a.Logs()
	t.Logf("driftless output:\n%s", out[:before])
	if stuck := stackdump.Waiting(out[before:], nil); stuck != "" {
		t.Logf("driftless goroutines waiting for a minute or more (SIGQUIT):\n%s", stuck)
	}
}

// logRequestCounts logs the agent's Docker API requests so far, by engine
// and operation (driftless_docker_requests_total): a test that timed out
// on a slow engine shows what the agent asked of it.
func (a *Agent) logRequestCounts(t testing.TB) {
	t.Helper()
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(a.URL + "/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var lines []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "driftless_docker_requests_total{") {
			lines = append(lines, l)
		}
	}
	t.Logf("driftless Docker API requests:\n%s", strings.Join(lines, "\n"))
}

// Exited reports whether the process has ended, and how.
func (a *Agent) Exited() (bool, error) {
	select {
	case <-a.done:
		return true, a.err
	default:
		return false, nil
	}
}

// WaitApp polls the agent's API until ok accepts the app's status.
func WaitApp[T any](t testing.TB, a *Agent, timeout time.Duration, what string, get func(ctx context.Context, c *web.Client) (T, error), ok func(T) bool) T {
	t.Helper()
	c := a.Client()
	deadline := time.Now().Add(timeout)
	var last T
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v, err := get(ctx, c)
		cancel()
		if err == nil {
			last = v
			if ok(v) {
				return v
			}
		}
		lastErr = err
		time.Sleep(200 * time.Millisecond)
	}
	// The first line is what a truncated CI log keeps: the verdict in
	// brief, and what the engine holds of the app right now (slow
	// progress and none at all look the same in the status alone).
	t.Fatalf("timed out after %s waiting for %s; last: %s (err %v)\nlast in full: %+v", timeout, what, briefStatus(last), lastErr, last)
	return last
}

// briefStatus sums up an app's status in one line; any other value is
// printed whole.
func briefStatus(v any) string {
	st, ok := v.(status.AppStatus)
	if !ok {
		return fmt.Sprintf("%+v", v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "applied %s, %s/%s, %q", RevShort(st.Applied), st.Sync, st.Health, st.Message)
	for _, s := range st.Services {
		fmt.Fprintf(&b, "; %s %d/%d ready", s.Name, s.Ready, s.Desired)
		if s.Message != "" {
			fmt.Fprintf(&b, " (%.160q)", s.Message)
		}
	}
	if len(st.Errors) > 0 || st.Refused != nil {
		fmt.Fprintf(&b, "; errors %+v, refused %+v", st.Errors, st.Refused)
	}
	if st.Name != "" {
		running, all := 0, 0
		out, err := DockerTry("ps", "-a", "--filter", "label="+drift.LabelApp+"="+st.Name, "--format", "{{.State}}")
		for line := range strings.Lines(out) {
			all++
			if strings.TrimSpace(line) == "running" {
				running++
			}
		}
		if err == nil {
			fmt.Fprintf(&b, "; the engine has %d of its containers, %d running", all, running)
		}
	}
	return b.String()
}
