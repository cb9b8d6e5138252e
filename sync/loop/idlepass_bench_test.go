package loop

// The idle pass of issue 30 item 2: a poll that finds no new revision and
// no drift should cost what changed, i.e. next to nothing beyond the Git
// fetch. In-process over the fakes, so it needs no Docker:
//
//	go test -run '^$' -bench IdlePass -benchmem -count 6 ./sync/loop/

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
)

// BenchmarkIdlePass is one poll pass of an app of 20 converged replicas,
// on a host with 980 more containers that the observation lists as
// foreign (another app's, publishing host ports), so 1,000 in all.
func BenchmarkIdlePass(b *testing.B) {
	for _, foreign := range []int{0, 980} {
		b.Run(fmt.Sprintf("own=20/foreign=%d", foreign), func(b *testing.B) {
			h := newHarness(b, appConfig("shop"))
			h.sources["shop"].commit("v1", map[string]string{"web.yaml": service("web", "nginx:1.25", 20)})
			if _, err := h.pass("shop", TriggerPoll); err != nil {
				b.Fatal(err)
			}
			h.engine.foreign = foreignContainers(foreign)
			if _, err := h.pass("shop", TriggerPoll); err != nil { // settles the status
				b.Fatal(err)
			}
			applies, entries := h.engine.applyCount(), len(h.history("shop"))
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				if _, err := h.pass("shop", TriggerPoll); err != nil {
					b.Fatal(err)
				}
			}
			// The target is CPU, and the collector's share runs on
			// another core: wall time alone understates it.
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			if h.engine.applyCount() != applies || len(h.history("shop")) != entries {
				b.Fatalf("an idle pass applied something or wrote history")
			}
		})
	}
}

// foreignContainers are n running containers of other apps, each
// publishing a host port, as a busy host's observation lists them.
func foreignContainers(n int) []drift.Container {
	out := make([]drift.Container, n)
	for i := range out {
		app := fmt.Sprintf("app%02d", i/20)
		out[i] = drift.Container{
			ID: fmt.Sprintf("f%05d", i), Name: fmt.Sprintf("%s-web-%d", app, i%20+1), App: app, Service: "web", Slot: i%20 + 1,
			Image: "nginx:1.25", State: drift.StateRunning, Status: "Up 2 hours", Ready: true, HostPorts: []int{20000 + i},
		}
	}
	return out
}

// processCPU is the user and system CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
