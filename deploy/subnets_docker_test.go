package deploy_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
)

// A new app network takes the pool's first subnet that no network on the
// engine uses, records it in its label, and a declared subnet is kept; a
// declared subnet that overlaps another network is refused with both
// named. Every Docker request is counted by operation.
func TestNetworkSubnetsFromThePool(t *testing.T) {
	// A pool of its own (16 /28s), so parallel tests do not meet in it.
	pool := drift.AddressPool{Base: netip.MustParsePrefix("10.215.7.0/24"), Size: 28}
	f := newFixture(t, deploy.Options{AddressPool: &pool})
	ctx := context.Background()
	foreign := f.app + "-foreign"
	if _, err := f.cli.NetworkCreate(ctx, foreign, client.NetworkCreateOptions{Driver: "bridge",
		IPAM: &network.IPAM{Config: []network.IPAMConfig{{Subnet: netip.MustParsePrefix("10.215.7.0/28")}}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = f.cli.NetworkRemove(context.Background(), foreign, client.NetworkRemoveOptions{}) })

	svc := webYAML(1, "  networks: [default, back, fixed]")
	nets := "apiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: back}\n---\napiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: fixed}\nspec: {subnet: 10.215.9.0/24}\n"
	desired := f.load(svc, nets)
	res, _ := f.apply(desired, f.plan(desired, drift.Options{}))
	if res.Err != nil {
		t.Fatalf("apply: %v", res.Err)
	}
	got := map[string]string{}
	for _, name := range []string{"default", "back", "fixed"} {
		n, err := f.cli.NetworkInspect(ctx, f.app+"-"+name, client.NetworkInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got[name] = n.Network.IPAM.Config[0].Subnet.String() + " label=" + n.Network.Labels[drift.LabelSubnet]
	}
	// back and default are created at once: which gets which is the
	// lock's order; that they get the two first free ones is not.
	pair := []string{got["back"], got["default"]}
	slices.Sort(pair)
	if want := "10.215.7.16/28 label=10.215.7.16/28 10.215.7.32/28 label=10.215.7.32/28"; strings.Join(pair, " ") != want {
		t.Errorf("back, default: %q, want %q", pair, want)
	}
	if want := "10.215.9.0/24 label="; got["fixed"] != want {
		t.Errorf("fixed: %q, want %q", got["fixed"], want)
	}
	if n := f.plan(desired, drift.Options{}); len(n.Changes) != 0 {
		t.Errorf("allocated subnets show as drift:\n%s", n.String())
	}

	clash := f.load(svc, nets+"---\napiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: other}\nspec: {subnet: 10.215.7.0/28}\n")
	res, _ = f.apply(clash, f.plan(clash, drift.Options{}))
	var msg string
	for _, o := range res.Outcomes {
		if o.Change.Kind == drift.KindNetwork && o.Result == drift.ResultFailed {
			msg = o.Error
		}
	}
	if !strings.Contains(msg, "declared subnet 10.215.7.0/28 overlaps 10.215.7.0/28 (network "+foreign+")") {
		t.Errorf("overlapping declared subnet: failure %q", msg)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(f.eng.Collector())
	if err := f.eng.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "driftless_docker_requests_total"); err != nil || n < 5 {
		t.Errorf("driftless_docker_requests_total has %d series (%v), want one per operation used", n, err)
	}
}
