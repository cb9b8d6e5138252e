// Package machinelock keeps the end-to-end tests that load the machine
// most apart from those whose timing suffers most from it, across the
// test binaries `go test ./...` runs two at a time.
//
// On a two-core machine the compose corpus (dozens of containers with
// exec healthchecks) and a test that reaches a private engine over ssh
// (every new connection an ssh process and a remote docker CLI, every
// remote probe an exec) do not fit together: the ssh tests' engines took
// tens of seconds per request beside the corpus and their waits expired.
// The lock is a flock on a file in the temporary directory: the heavy
// test takes it exclusively, the sensitive ones shared (they may run
// together), each until the test ends.
package machinelock

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func lock(t testing.TB, how int, why string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "driftless-e2e-machine.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("machinelock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		start := time.Now()
		if err := syscall.Flock(int(f.Fd()), how); err != nil {
			f.Close()
			t.Fatalf("machinelock: %v", err)
		}
		t.Logf("waited %s for the machine (%s)", time.Since(start).Round(time.Second), why)
	}
	t.Cleanup(func() { f.Close() })
}

// Heavy holds the machine alone (from the sensitive tests) until t ends.
func Heavy(t testing.TB) { lock(t, syscall.LOCK_EX, "a heavy test runs alone") }

// Sensitive waits until no heavy test runs and keeps them out until t
// ends; sensitive tests run beside each other.
func Sensitive(t testing.TB) { lock(t, syscall.LOCK_SH, "no heavy test beside this one") }
