package drift

import (
	"testing"

	"github.com/driftless-dev/driftless/manifest"
)

// Scheduler settings changed on a running container are put back in
// place; one added where the spec leaves Docker's default cannot be
// lifted by docker update, so the replica is replaced.
func TestComputeRepairsTuningDrift(t *testing.T) {
	web := service("web", 1, func(s *manifest.ServiceSpec) {
		s.Resources.MemoryBytes = 64 << 20
		s.Resources.CPUShares = 512
		s.Resources.MemorySwapBytes = 128 << 20
	})
	inspected := func(mod func(*RuntimeConfig)) Actual {
		act := converged(desiredApp(web))
		cfg := &RuntimeConfig{MemoryBytes: 64 << 20, RestartPolicy: "unless-stopped", CPUShares: 512, MemorySwapBytes: 128 << 20,
			Aliases: map[string][]string{"shop-default": {"web", "0123456789ab"}}}
		if mod != nil {
			mod(cfg)
		}
		act.Containers[0].Config = cfg
		return act
	}
	if plan := Compute(input(desiredApp(web), inspected(nil), Options{})); !plan.Empty() {
		t.Fatalf("as created: %s", plan)
	}
	checkPlan(t, input(desiredApp(web), inspected(func(c *RuntimeConfig) { c.CPUShares, c.MemorySwapBytes = 2048, 1<<30 }), Options{}), `
Plan for app shop at revision abc1234:

  ~ container shop-web-1 (update in place)  changed outside Git: resources.cpuShares, resources.memorySwap
        resources.cpuShares: 2048 → 512
        resources.memorySwap: 1Gi → 128Mi

Plan: 0 to create, 0 to replace, 0 to start, 0 to remove, 1 to update in place.
`)
	checkFacts(t, "cpuset added by hand", Compute(input(desiredApp(web), inspected(func(c *RuntimeConfig) { c.CPUSet = "0" }), Options{})).Changes, `
-/+ container shop-web-1 svc=web/1 id=id-shop-web-1 cause=drift
`)
}
