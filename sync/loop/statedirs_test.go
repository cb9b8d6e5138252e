package loop

import (
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/status"
)

// Status lists the enforced revision's state directories with where they
// are on the host.
func TestNextStatusListsStateDirs(t *testing.T) {
	db := manifest.Service{Name: "db", Spec: manifest.ServiceSpec{Binds: []manifest.BindMount{{StatePath: "volumes/db/data", MountPath: "/var/lib/postgresql/data"}}}}
	acc := acceptedRev(1, db)
	o := passOutcome{accepted: acc, fetched: &acc.rev, gap: &drift.Plan{App: "shop"}, health: &drift.AppHealth{Health: drift.HealthHealthy}}
	in := statusIn(status.AppStatus{Name: "shop"}, newMemory(), o, clock0)
	in.stateDir = "/var/lib/driftless/state"
	s := nextStatus(in).status
	if len(s.StateDirs) != 1 || s.StateDirs[0].Path != "volumes/db/data" || s.StateDirs[0].HostPath != "/var/lib/driftless/state/shop/volumes/db/data" ||
		len(s.StateDirs[0].Mounts) != 1 || s.StateDirs[0].Mounts[0].Service != "db" {
		t.Errorf("state dirs %+v", s.StateDirs)
	}
}
