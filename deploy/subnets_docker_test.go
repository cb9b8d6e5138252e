package deploy_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest/appdir"
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

// Two engines — two agents, or an agent and a `driftless apply`, each
// with its own lock — create networks from one pool at once: Docker
// refuses a subnet the other took between list and create, the allocation
// is made again, and every network gets its own subnet.
func TestConcurrentEnginesGetDistinctSubnets(t *testing.T) {
	t.Parallel()
	pool := drift.AddressPool{Base: netip.MustParsePrefix("10.215.30.0/24"), Size: 28}
	logs := &testenv.LockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	engines := []*deploy.Engine{newEngine(t, deploy.Options{AddressPool: &pool, Logger: log}), newEngine(t, deploy.Options{AddressPool: &pool, Logger: log})}
	var nets strings.Builder
	for _, n := range []string{"a", "b", "c"} {
		fmt.Fprintf(&nets, "---\napiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: %s}\n", n)
	}
	var apps []string
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := range 4 {
		app := testenv.UniqueApp(t)
		apps = append(apps, app)
		desired, err := appdir.Load(fstest.MapFS{"n.yaml": {Data: []byte(nets.String())}}, ".", app)
		if err != nil {
			t.Fatal(err)
		}
		eng := engines[i%2]
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			actual, err := eng.Observe(ctx, app, true)
			if err != nil {
				errs <- err.Error()
				return
			}
			plan := drift.Compute(drift.Input{App: app, Desired: desired, Actual: actual, Options: drift.Options{Revision: "rev1", Now: time.Now()}})
			for _, o := range eng.Apply(ctx, desired, plan, drift.ApplyOptions{}).Outcomes {
				if o.Result != drift.ResultDone {
					errs <- o.Change.Name + ": " + o.Error
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	seen := map[netip.Prefix]string{}
	for _, app := range apps {
		res, err := cli.NetworkList(context.Background(), client.NetworkListOptions{Filters: make(client.Filters).Add("label", drift.LabelApp+"="+app)})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range res.Items {
			s := n.IPAM.Config[0].Subnet
			if other, dup := seen[s]; dup || !pool.Base.Contains(s.Addr()) {
				t.Errorf("network %s: subnet %s (also %q)", n.Name, s, other)
			}
			seen[s] = n.Name
		}
	}
	if len(seen) != 12 {
		t.Errorf("%d distinct subnets, want 12", len(seen))
	}
	// Whether the two collide in a run is up to the scheduler; say how
	// often they did.
	t.Logf("creates retried after Docker refused a subnet taken meanwhile: %d", strings.Count(logs.String(), "subnet taken"))
}

// A network that declares only an IPv6 subnet (Ghost's compose.ipv6.yml)
// gets its IPv4 subnet from the pool beside it, as Docker picks one from
// its own pools for docker compose; a replica has an address of each, and
// the next plan is empty.
func TestIPv6SubnetGetsAnIPv4FromThePool(t *testing.T) {
	pool := drift.AddressPool{Base: netip.MustParsePrefix("10.215.40.0/24"), Size: 28}
	f := newFixture(t, deploy.Options{AddressPool: &pool})
	ctx := context.Background()
	net := "apiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: v6}\nspec: {enableIPv6: true, subnetV6: \"fdc1:f5e4:6668::/64\"}\n"
	desired := f.load(webYAML(1, "  networks: [v6]"), net)
	if res, _ := f.apply(desired, f.plan(desired, drift.Options{})); res.Err != nil {
		t.Fatalf("apply: %v", res.Err)
	}
	n, err := f.cli.NetworkInspect(ctx, f.app+"-v6", client.NetworkInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var subnets []string
	for _, c := range n.Network.IPAM.Config {
		subnets = append(subnets, c.Subnet.String())
	}
	if want := []string{"10.215.40.0/28", "fdc1:f5e4:6668::/64"}; !slices.Equal(subnets, want) || !n.Network.EnableIPv6 || n.Network.Labels[drift.LabelSubnet] != want[0] {
		t.Errorf("network: subnets %v, IPv6 %v, label %q; want %v, true, the pool's", subnets, n.Network.EnableIPv6, n.Network.Labels[drift.LabelSubnet], want)
	}
	web := service(f.observe(), "web")
	if len(web) != 1 {
		t.Fatalf("web: %+v", web)
	}
	c, err := f.cli.ContainerInspect(ctx, web[0].ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ep := c.Container.NetworkSettings.Networks[f.app+"-v6"]
	if ep == nil || !ep.IPAddress.IsValid() || !ep.GlobalIPv6Address.IsValid() {
		t.Errorf("web's endpoint on the network: %+v, want an IPv4 and an IPv6 address", ep)
	}
	if p := f.plan(desired, drift.Options{}); len(p.Changes) != 0 {
		t.Errorf("the next plan is not empty:\n%s", p.String())
	}
}
