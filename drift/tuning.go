package drift

import (
	"strconv"

	"github.com/driftless-dev/driftless/manifest"
)

// dockerDefault shows a scheduler setting the spec leaves to Docker.
const dockerDefault = "(Docker's default)"

// tuningDrift compares the scheduler settings docker update can put back
// (CPU shares, CPU set, CFS period and quota, and a declared swap limit)
// with the spec. Docker update takes 0 or "" as "unchanged", so a setting
// added outside Git where the spec has none needs a new container (see
// limitAdded). An undeclared swap limit is Docker's to derive from the
// memory limit and is not compared.
func tuningDrift(cfg *RuntimeConfig, r *manifest.Resources) []FieldChange {
	var fields []FieldChange
	add := func(path, before, after string) {
		if before != after {
			fields = append(fields, FieldChange{Path: path, Before: before, After: after})
		}
	}
	num := func(n int64) string {
		if n == 0 {
			return dockerDefault
		}
		return strconv.FormatInt(n, 10)
	}
	add("resources.cpuShares", num(cfg.CPUShares), num(r.CPUShares))
	set := func(s string) string {
		if s == "" {
			return dockerDefault
		}
		return s
	}
	add("resources.cpuset", set(cfg.CPUSet), set(r.CPUSet))
	add("resources.cpuPeriod", num(cfg.CPUPeriod), num(r.CPUPeriod))
	add("resources.cpuQuota", num(cfg.CPUQuota), num(r.CPUQuota))
	if r.MemorySwapBytes != 0 {
		add("resources.memorySwap", swapLimit(cfg.MemorySwapBytes), swapLimit(r.MemorySwapBytes))
	}
	return fields
}
