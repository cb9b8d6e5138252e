package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The demo's agent records itself in DATA/demo.pid ("PID URL"), so that a
// second `demo` can say where the first one is, and `demo --clean` can stop
// it before removing what it would otherwise recreate.

type demoAgent struct {
	pid int
	url string
}

func demoPIDFile(data string) string { return filepath.Join(data, "demo.pid") }

// runningDemo returns the demo agent recorded in data, if that process is
// still alive and is not this one.
func runningDemo(data string) (demoAgent, bool) {
	b, err := os.ReadFile(demoPIDFile(data))
	if err != nil {
		return demoAgent{}, false
	}
	pidText, url, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return demoAgent{}, false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return demoAgent{}, false
	}
	return demoAgent{pid: pid, url: url}, true
}

// recordDemo writes this process as the demo's agent; the returned func
// removes the record.
func recordDemo(data, url string) (func(), error) {
	p := demoPIDFile(data)
	if err := os.WriteFile(p, []byte(fmt.Sprintf("%d %s\n", os.Getpid(), url)), 0o600); err != nil {
		return func() {}, err
	}
	return func() { _ = os.Remove(p) }, nil
}

// stopDemo asks the demo's agent to stop (SIGTERM, as Ctrl-C does) and
// waits for it to exit.
func stopDemo(ctx context.Context, a demoAgent, wait time.Duration) error {
	if err := syscall.Kill(a.pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop the demo's agent (pid %d): %w", a.pid, err)
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(a.pid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("the demo's agent (pid %d) did not stop within %s: stop it with Ctrl-C in its terminal, then run --clean again", a.pid, wait)
}
