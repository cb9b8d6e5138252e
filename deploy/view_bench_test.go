package deploy

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"github.com/driftless-dev/driftless/drift"
)

// BenchmarkObserve1000 is one pass's observation (withForeign, as the
// agent's pass) of an app owning 1,000 running containers, from the view
// and by listing. The engine is in memory, so "list" here is only
// driftless's own share of the list path (parsing 1,000 summaries); the
// engine's share is measured against the real engine by
// TestBenchViewPass1000 in e2e.
func BenchmarkObserve1000(b *testing.B) {
	m := newMemEngine()
	for i := range 1000 {
		m.setContainer(fmt.Sprintf("c%04d", i), fmt.Sprintf("shop-web-%d", i+1), "shop", "running", "shop-default")
	}
	e, ctx := watchedMemEngine(b, m)
	// Warm the prober (first-sight inspects), as an agent's first pass does.
	if _, err := e.Observe(ctx, "shop", true); err != nil {
		b.Fatal(err)
	}
	b.Run("view", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := e.Observe(ctx, "shop", true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("list", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := e.ObserveCold(ctx, "shop", true); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkObserve20of1000 is an idle pass's observation on a host of 50
// apps × 20 replicas: the view holds 1,000 containers, the app owns 20.
func BenchmarkObserve20of1000(b *testing.B) {
	m := newMemEngine()
	for i := range 1000 {
		app := fmt.Sprintf("app%02d", i/20)
		m.setContainer(fmt.Sprintf("c%04d", i), fmt.Sprintf("%s-web-%d", app, i%20+1), app, "running", app+"-default")
	}
	e, ctx := watchedMemEngine(b, m)
	if _, err := e.Observe(ctx, "app07", true); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if _, err := e.Observe(ctx, "app07", true); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU adds the process's CPU time per operation: on a shared
// machine wall time per op mostly measures the neighbours.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }
}

func cpuTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// watchedMemEngine is an Engine over m whose view is fed by Watch, as the
// agent runs it; it stops with the benchmark.
func watchedMemEngine(b *testing.B, m *memEngine) (*Engine, context.Context) {
	e := newEngine(m, Options{})
	b.Cleanup(e.prober.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	connected := make(chan struct{})
	var once sync.Once
	go func() {
		_ = e.Watch(ctx, func(ev drift.EngineEvent) {
			if ev.Action == drift.EventConnected {
				once.Do(func() { close(connected) })
			}
		})
	}()
	<-connected
	return e, ctx
}
