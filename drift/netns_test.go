package drift

import (
	"slices"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

// sharesNet makes the service join the network namespace of service
// owner's replica (network_mode: service:owner).
func sharesNet(owner string) func(*manifest.ServiceSpec) {
	return func(s *manifest.ServiceSpec) {
		s.NetworkMode, s.Networks = manifest.NetworkServicePrefix+owner, nil
		s.DependsOn = []string{owner}
		s.Update.MaxSurge, s.Update.MaxUnavailable = 0, 1
	}
}

// vpnPair is a VPN service and a client in its network namespace, running
// converged: the client joined the VPN replica's namespace after it started.
func vpnPair(vpnMods ...func(*manifest.ServiceSpec)) (*manifest.App, Actual) {
	d := desiredApp(service("vpn", 1, vpnMods...), service("client", 1, sharesNet("vpn")))
	act := converged(desiredApp(service("vpn", 1), service("client", 1, sharesNet("vpn"))))
	edit(&act, "shop-vpn-1", func(c *Container) { c.StartedAt = t0.Add(-time.Hour) })
	edit(&act, "shop-client-1", func(c *Container) {
		c.NetworkContainer, c.Networks, c.StartedAt = "id-shop-vpn-1", nil, t0.Add(-time.Hour+time.Second)
	})
	return d, act
}

func TestComputeSharedNetworkNamespace(t *testing.T) {
	d, act := vpnPair()
	changedVPN, _ := vpnPair(env("SERVER_CITIES", "Zurich"))

	replacedOutside := cloneActual(act)
	edit(&replacedOutside, "shop-vpn-1", func(c *Container) { c.ID = "id-new-vpn" })

	restarted := cloneActual(act)
	edit(&restarted, "shop-vpn-1", func(c *Container) { c.StartedAt = t0.Add(-time.Minute) })

	vpnGone := cloneActual(act)
	drop(&vpnGone, "shop-vpn-1")

	runPlanCases(t, []planCase{
		{
			name: "converged: nothing to do",
			in:   input(d, act, Options{}),
			want: "Plan for app shop at revision abc1234:\n\nNo changes: running state matches revision abc1234.\n",
		},
		{
			name: "the owner's spec changes: the client is replaced after it",
			in:   input(changedVPN, act, Options{}),
			want: `
Plan for app shop at revision abc1234:

  -/+ container shop-vpn-1  spec changed in revision abc1234
        env.SERVER_CITIES: (unset) → Zurich
  -/+ container shop-client-1  shares the network namespace of service vpn's replica, which is replaced

Plan: 0 to create, 2 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "the owner was replaced outside Git",
			in:   input(d, replacedOutside, Options{}),
			want: `
Plan for app shop at revision abc1234:

  -/+ container shop-client-1  the network namespace it shares, shop-vpn-1's, was replaced outside Git

Plan: 0 to create, 1 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "the owner restarted after the client joined it",
			in:   input(d, restarted, Options{}),
			want: `
Plan for app shop at revision abc1234:

  -/+ container shop-client-1  the network namespace it shares, shop-vpn-1's, was restarted after it

Plan: 0 to create, 1 to replace, 0 to start, 0 to remove.
`,
		},
		{
			name: "the owner was removed: created, then the client replaced",
			in:   input(d, vpnGone, Options{Applied: map[string]AppliedService{"vpn": {Hash: d.Services[0].Hash, Replicas: 1}}}),
			want: `
Plan for app shop at revision abc1234:

  + container shop-vpn-1  removed outside Git
  -/+ container shop-client-1  shares the network namespace of service vpn's replica, which is replaced

Plan: 1 to create, 1 to replace, 0 to start, 0 to remove.
`,
		},
	})
}

func TestComputeRenamedObjects(t *testing.T) {
	d := desiredApp(service("db", 1, networks("back"), mount("data")))
	act := converged(d)
	edit(&act, "shop-db-1", func(c *Container) { c.VolumeNames = []string{"shop-data"} })

	named := desiredApp(service("db", 1, networks("back"), mount("data")))
	named.Networks[0].Spec.Name = "myapp-network"
	named.Volumes[0].Spec.Name = "myapp-db"

	// After the rename's apply: both names exist, the container moved.
	after := converged(d)
	after.Networks = append(after.Networks, Network{ID: "net-id-new", Name: "myapp-network", App: testApp, Resource: "back", SpecHash: named.Networks[0].Hash, Driver: "bridge"})
	after.Volumes = append(after.Volumes, Volume{Name: "myapp-db", App: testApp, Resource: "data", SpecHash: named.Volumes[0].Hash, Driver: "local"})
	edit(&after, "shop-db-1", func(c *Container) {
		c.Networks, c.VolumeNames = []string{"myapp-network"}, []string{"myapp-db"}
	})

	runPlanCases(t, []planCase{
		{
			name: "name: given to a network and a volume: new objects, the replica moves, the old ones go",
			in:   input(named, act, Options{Prune: true}),
			want: `
Plan for app shop at revision abc1234:

  + network myapp-network  declared in revision abc1234
  + volume myapp-db  declared in revision abc1234
  -/+ container shop-db-1  network back is now named myapp-network
  - network shop-back  network back is no longer declared in revision abc1234

Would be removed with --prune:
  - volume shop-data  kept: volumes are never removed without --allow-volume-removal

Plan: 2 to create, 1 to replace, 0 to start, 1 to remove.
`,
		},
		{
			name: "once moved, the named objects are the app's",
			in:   input(named, after, Options{}),
			want: `
Plan for app shop at revision abc1234:

Would be removed with --prune:
  - network shop-back  network back is no longer declared in revision abc1234
  - volume shop-data  kept: volumes are never removed without --allow-volume-removal

No changes: running state matches revision abc1234.
`,
		},
		{
			name: "a name still held by another network of the app is a conflict",
			in: func() Input {
				swapped := desiredApp(service("db", 1, networks("front"), mount("data")))
				swapped.Networks[0].Spec.Name = "shop-back" // the Docker name network back holds
				return input(swapped, act, Options{})
			}(),
			want: `
Plan for app shop at revision abc1234:

Would be removed with --prune:
  - network shop-back  network back is no longer declared in revision abc1234

Conflicts (driftless will not touch these):
  ! network shop-back  name is held by this app's network back, which the revision names otherwise: prune it before another network takes its name

No changes to make now: 1 conflict.
`,
		},
		{
			name: "a name held by another app's network is a conflict naming the app",
			in: func() Input {
				a := cloneActual(act)
				a.ForeignNetworks = append(a.ForeignNetworks, Network{ID: "other", Name: "myapp-network", App: "blog"})
				a.ForeignVolumes = append(a.ForeignVolumes, Volume{Name: "myapp-db"})
				return input(named, a, Options{})
			}(),
			want: `
Plan for app shop at revision abc1234:

Would be removed with --prune:
  - network shop-back  network back is no longer declared in revision abc1234
  - volume shop-data  kept: volumes are never removed without --allow-volume-removal

Conflicts (driftless will not touch these):
  ! network myapp-network  name is held by a network of app blog
  ! volume myapp-db  name is held by a volume driftless does not own

No changes to make now: 2 conflicts.
`,
		},
	})
}

// cloneActual copies the lists an edit changes.
func cloneActual(a Actual) Actual {
	a.Containers = slices.Clone(a.Containers)
	a.Networks = slices.Clone(a.Networks)
	a.Volumes = slices.Clone(a.Volumes)
	return a
}
