package status

import (
	"cmp"
	"slices"

	"github.com/driftless-dev/driftless/drift"
)

// VolumeStatus is one Docker volume the app owns: a declared volume, or
// the anonymous volume of a replica slot (Target set), which holds that
// slot's data across replacements of its container.
type VolumeStatus struct {
	Name   string `json:"name"` // the Docker name
	Driver string `json:"driver,omitempty"`
	// Resource is a declared volume's name in the manifest.
	Resource string `json:"resource,omitempty"`
	// Service, Slot and Target say whose anonymous volume it is: the
	// replica slot that mounts it, and where.
	Service string `json:"service,omitempty"`
	Slot    int    `json:"slot,omitempty"`
	Target  string `json:"target,omitempty"`
}

// Volumes lists the app's own volumes as observed: declared ones by
// name, then anonymous ones by service, slot and target. Volumes a
// revision no longer uses are listed too, until they are pruned: they
// still hold data.
func Volumes(app string, actual *drift.Actual) []VolumeStatus {
	if actual == nil {
		return nil
	}
	var out []VolumeStatus
	for _, v := range actual.Volumes {
		if v.App != app {
			continue
		}
		out = append(out, VolumeStatus{Name: v.Name, Driver: v.Driver, Resource: v.Resource, Service: v.Service, Slot: v.Slot, Target: v.Target})
	}
	slices.SortFunc(out, func(a, b VolumeStatus) int {
		return cmp.Or(cmp.Compare(anonymousRank(a), anonymousRank(b)), cmp.Compare(a.Service, b.Service),
			cmp.Compare(a.Slot, b.Slot), cmp.Compare(a.Target, b.Target), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func anonymousRank(v VolumeStatus) int {
	if v.Target != "" {
		return 1
	}
	return 0
}
