package drift

import (
	"fmt"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

// benchSituation is a large app that is mostly converged: services of 50
// replicas each, one service with a new image, one scaled up, every 97th
// replica stopped and every 89th gone.
func benchSituation(containers int) Input {
	const replicas = 50
	nServices := containers / replicas
	services := make([]manifest.Service, nServices)
	for i := range services {
		var mods []func(*manifest.ServiceSpec)
		if i > 0 {
			mods = append(mods, dependsOn(fmt.Sprintf("svc%05d", i-1)))
		}
		services[i] = service(fmt.Sprintf("svc%05d", i), replicas, mods...)
	}
	act := converged(desiredApp(services...))
	for i := range act.Containers {
		act.Containers[i].Created = t0.Add(-time.Duration(i) * time.Second)
		if i%97 == 0 {
			c := &act.Containers[i]
			c.State, c.ExitCode, c.Status, c.Ready = StateExited, 137, "Exited (137) 1 minute ago", false
		}
	}
	kept := act.Containers[:0]
	for i, c := range act.Containers {
		if i%89 != 5 {
			kept = append(kept, c)
		}
	}
	act.Containers = kept
	services[0] = service(services[0].Name, replicas, image("shop/svc:v2"))
	services[1] = service(services[1].Name, replicas+5, dependsOn(services[0].Name))
	return input(desiredApp(services...), act, Options{})
}

func BenchmarkCompute(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			in := benchSituation(n)
			b.ReportAllocs()
			var changes int
			for b.Loop() {
				changes = len(Compute(in).Changes)
			}
			b.ReportMetric(float64(changes), "changes")
		})
	}
}
