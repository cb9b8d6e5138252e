package testenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ClockTicks is USER_HZ, 100 on every Linux platform Go supports here.
const ClockTicks = 100

// AgentPID finds the `driftless run` process by its unique --data
// directory.
func AgentPID(t testing.TB, dataDir string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 1 && args[1] == "run" && slices.Contains(args, dataDir) {
			return pid
		}
	}
	t.Fatalf("no driftless run process with --data %s", dataDir)
	return 0
}

// ProcStat returns a process's utime+stime in clock ticks and its VmRSS
// in kB.
func ProcStat(t testing.TB, pid int) (ticks int64, rssKB int64) {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the whole line.
	rest := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	ut, _ := strconv.ParseInt(rest[11], 10, 64)
	st, _ := strconv.ParseInt(rest[12], 10, 64)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			rssKB, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return ut + st, rssKB
}

// IdleSample is a process's CPU and memory over a window.
type IdleSample struct {
	Elapsed       time.Duration
	Ticks         int64   // CPU clock ticks used in the window
	CPUPercent    float64 // of one core
	RSSKB, MaxRSS int64   // VmRSS at the end, and the highest seen (kB)
}

// SampleIdle watches pid for window, reading its RSS every second.
func SampleIdle(t testing.TB, pid int, window time.Duration) IdleSample {
	t.Helper()
	ticks0, rss0 := ProcStat(t, pid)
	t0 := time.Now()
	maxRSS := rss0
	for time.Since(t0) < window {
		time.Sleep(time.Second)
		if _, rss := ProcStat(t, pid); rss > maxRSS {
			maxRSS = rss
		}
	}
	ticks1, rss1 := ProcStat(t, pid)
	elapsed := time.Since(t0)
	return IdleSample{Elapsed: elapsed, Ticks: ticks1 - ticks0, RSSKB: rss1, MaxRSS: max(maxRSS, rss1),
		CPUPercent: float64(ticks1-ticks0) / ClockTicks / elapsed.Seconds() * 100}
}
