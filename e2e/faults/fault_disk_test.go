package faults

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestFaultFullDisk gives the agent a data directory on a small file
// system and fills it. Drift must still heal (a removed replica comes
// back, every time), the status must show the history condition saying
// history could not be written for as long as that is so, and once space
// is freed the condition must clear and history be written again.
func TestFaultFullDisk(t *testing.T) {
	t.Parallel()
	row := recordFault(t, "data directory full")
	v1 := testenv.WorkloadImage(t, "v1")
	data := smallFS(t, 8<<20)
	first := svcState{Image: v1, Replicas: 2, Env: map[string]string{"MESSAGE": "one"}}
	r := newFaultRig(t, first, rigOptions{data: data, noStart: true})
	r.foreign = plantForeign(t, r.dk, r.app, v1)
	r.start()
	r.waitHead(60*time.Second, "the first deploy")
	r.checkRunning("before the disk fills")

	filler := fillFS(t, data)
	row.add(1)
	// Healing writes history (a repair each); with no space some write
	// fails, and the status must say so.
	var cond status.Condition
	heals := 0
	for heals < 12 {
		victim := r.app + []string{"-web-1", "-web-2"}[heals%2]
		r.healOne(r.dk, victim, "with the data directory full")
		heals++
		if c, ok := r.historyCondition(); ok {
			cond = c
			break
		}
	}
	if cond.Kind == "" {
		t.Fatalf("%d repairs with the data directory full, and the status never showed the history condition", heals)
	}
	t.Logf("after %d repairs with the disk full: %s", heals, cond.Message)
	if !strings.Contains(cond.Message, "could not be written") || !strings.Contains(cond.Message, "no space left") {
		t.Errorf("the history condition %q does not say that history could not be written for lack of space", cond.Message)
	}
	// It lasts while the disk is full, through passes that write nothing
	// (the poll runs every second) ...
	if !pollUntil(4*time.Second, 200*time.Millisecond, func() bool { _, ok := r.historyCondition(); return !ok }) {
		t.Logf("the history condition stayed while the disk was full")
	} else {
		t.Errorf("the history condition cleared while the data directory was still full")
	}
	// ... and healing goes on.
	more := r.healOne(r.dk, r.app+"-web-1", "with the data directory still full")
	heals++

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// A repair writes history again.
	r.healOne(r.dk, r.app+"-web-2", "after space was freed")
	heals++
	if !pollUntil(10*time.Second, 200*time.Millisecond, func() bool { _, ok := r.historyCondition(); return !ok }) {
		c, _ := r.historyCondition()
		t.Fatalf("the history condition did not clear after space was freed: %s", c.Message)
	}
	r.waitRepair(r.app + "-web-2 was removed outside Git; recreated")
	r.checkRunning("after space was freed")
	r.checkHistory("after space was freed", nil)
	row.note("%d repairs made on a full disk (condition shown after %d), the last in %s; condition cleared once space was freed",
		heals-1, heals-2, more.Round(100*time.Millisecond))
}

// unavailable skips the test locally and fails it on CI, where what it
// needs is part of the test environment.
func unavailable(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// historyCondition is the app's "history" condition, if active.
func (r *faultRig) historyCondition() (status.Condition, bool) {
	r.t.Helper()
	st, err := r.status()
	if err != nil {
		r.t.Fatalf("status: %v", err)
	}
	for _, c := range st.Errors {
		if c.Kind == "history" {
			return c, true
		}
	}
	return status.Condition{}, false
}

// smallFS mounts a tmpfs of size bytes for the test and returns its path;
// it is unmounted when the test ends (after the agent using it stopped).
func smallFS(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "mounting a small file system needs root")
	}
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+strconv.Itoa(size)+",mode=0700"); err != nil {
		unavailable(t, "cannot mount a tmpfs: "+err.Error())
	}
	t.Cleanup(func() {
		for range 50 {
			if err := syscall.Unmount(dir, 0); err == nil || errors.Is(err, syscall.EINVAL) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillFS writes a file that takes all the space left on dir's file system
// and returns its path.
func fillFS(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			t.Fatal(err)
		}
	}
	// The last partial blocks, one byte at a time in bigger steps.
	for _, n := range []int{4096, 512, 1} {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				break
			}
		}
	}
	return path
}
