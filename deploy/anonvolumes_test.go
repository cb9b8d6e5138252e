package deploy

import (
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// The one-shot CLI lists every volume only when a slot's anonymous volume
// is missing: its name may be taken by another's.
func TestMissingAnonymousVolume(t *testing.T) {
	desired := &manifest.App{Name: "shop", Services: []manifest.Service{{Name: "db", Spec: manifest.ServiceSpec{
		Replicas: 2, AnonymousVolumes: []manifest.AnonymousVolume{{MountPath: "/data"}},
	}}}}
	slot := func(n int) drift.Volume {
		return drift.Volume{Name: manifest.AnonymousVolumeName("shop", "db", n, "/data"), App: "shop", Service: "db", Slot: n, Target: "/data"}
	}
	if missingAnonymousVolume("shop", desired, []drift.Volume{slot(1), slot(2)}) {
		t.Error("both slots' volumes exist: nothing to look up")
	}
	if !missingAnonymousVolume("shop", desired, []drift.Volume{slot(1)}) {
		t.Error("slot 2's volume is missing: its name must be checked")
	}
	if missingAnonymousVolume("shop", &manifest.App{Name: "shop", Services: []manifest.Service{{Name: "web", Spec: manifest.ServiceSpec{Replicas: 3}}}}, nil) {
		t.Error("no anonymous volume: nothing to look up")
	}
}
