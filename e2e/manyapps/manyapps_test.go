// Package manyapps holds the end-to-end tests of many apps on one engine:
// subnet allocation from driftless's address pool (50 app networks, more
// than Docker's default pools hold) and the idle-agent benchmark. It is a
// package of its own so `go test ./...` runs it beside the main e2e
// package.
package manyapps

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// fleet is n apps deployed from one repository by one driftless.yaml.
type fleet struct {
	apps   []string
	config string
	repo   *gitserver.Repo
	url    string // the repository's URL on its git server
	image  string
}

// newFleet commits n apps of one service each (replicas replicas of the
// test image, no probe) and writes a driftless.yaml for them, polling at
// interval ("": the default); extra is added at the top of the file and
// perApp (if not nil) gives keys added to an app's entry (", key: value").
// Every app is removed when the test ends.
func newFleet(t *testing.T, n, replicas int, interval, extra string, perApp func(app string) string) *fleet {
	t.Helper()
	image := testenv.WorkloadImage(t, "v1")
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	prefix := "m" + hex.EncodeToString(b)
	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	f := &fleet{repo: gitserver.Init(t, base, "fleet"), image: image}
	f.url = f.repo.URL(server)
	var cfg strings.Builder
	cfg.WriteString(extra + "\napps:\n")
	for i := range n {
		app := fmt.Sprintf("%s-%02d", prefix, i)
		f.apps = append(f.apps, app)
		f.repo.WriteFile("apps/"+app+"/web.yaml", testenv.PlainService("web", image, replicas))
		keys := ""
		if interval != "" {
			keys = ", interval: " + interval
		}
		if perApp != nil {
			keys += perApp(app)
		}
		fmt.Fprintf(&cfg, "  - {name: %s, repo: %s, branch: main, path: apps/%s%s, allowInsecureTransport: true}\n", app, f.url, app, keys)
	}
	f.repo.Commit(fmt.Sprintf("%d apps", n))
	f.config = filepath.Join(t.TempDir(), "driftless.yaml")
	if err := os.WriteFile(f.config, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeApps(t, f.apps) })
	return f
}

// removeApps removes every object labelled with one of the apps (and
// nothing else), a few apps at a time.
func removeApps(t *testing.T, apps []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	eng, err := deploy.New(ctx, deploy.Options{})
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	defer eng.Close()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6)
	for _, app := range apps {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			// A loaded engine may still count a removed container's
			// endpoint for a moment ("has active endpoints"): try again.
			var err error
			for attempt := range 3 {
				if err = eng.RemoveApp(ctx, app, nil); err == nil {
					return
				}
				time.Sleep(time.Duration(attempt+1) * 5 * time.Second)
			}
			t.Logf("cleanup %s: %v", app, err)
		})
	}
	wg.Wait()
}

func allApps(ctx context.Context, c *web.Client) ([]status.AppStatus, error) { return c.Apps(ctx) }

// converged accepts when every listed app is synced with its replicas ready.
func converged(apps []string, replicas int) func([]status.AppStatus) bool {
	return func(as []status.AppStatus) bool {
		ok := 0
		for _, a := range as {
			ready := 0
			for _, s := range a.Services {
				ready += s.Ready
			}
			if a.Sync == drift.SyncSynced && ready == replicas {
				ok++
			}
		}
		return ok == len(apps)
	}
}

func dockerClient(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// appNetwork is an app's default network as the engine has it.
type appNetwork struct {
	ID     string
	Subnet netip.Prefix
	Label  string // dev.driftless.subnet
}

// appNetworks returns each app's default network, failing unless every app
// has exactly one.
func appNetworks(t *testing.T, cli *client.Client, apps []string) map[string]appNetwork {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := map[string]appNetwork{}
	for _, app := range apps {
		res, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("label", drift.LabelApp+"="+app)})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Items) != 1 {
			t.Fatalf("app %s has %d networks, want 1", app, len(res.Items))
		}
		n := res.Items[0]
		if n.Name != manifest.ObjectName(app, manifest.DefaultNetwork) || len(n.IPAM.Config) != 1 {
			t.Fatalf("app %s: network %s with IPAM %+v", app, n.Name, n.IPAM.Config)
		}
		out[app] = appNetwork{ID: n.ID, Subnet: n.IPAM.Config[0].Subnet, Label: n.Labels[drift.LabelSubnet]}
	}
	return out
}

// containerIDs is the ID of every container of the apps.
func containerIDs(t *testing.T, cli *client.Client, apps []string) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", drift.LabelApp)})
	if err != nil {
		t.Fatal(err)
	}
	mine := map[string]bool{}
	for _, a := range apps {
		mine[a] = true
	}
	ids := map[string]bool{}
	for _, c := range res.Items {
		if mine[c.Labels[drift.LabelApp]] {
			ids[c.ID] = true
		}
	}
	return ids
}

// TestFiftyAppsGetDistinctSubnets: one agent, 50 apps from one
// driftless.yaml — more app networks than Docker's default pools hold —
// all converge; every app network has its own /24 of the default pool,
// recorded in its label; after a restart of the agent nothing is
// recreated and every subnet is unchanged.
func TestFiftyAppsGetDistinctSubnets(t *testing.T) {
	const n = 50
	start := time.Now()
	f := newFleet(t, n, 1, "10m", "", nil)
	cli := dockerClient(t)
	data := t.TempDir()
	agent := testenv.StartAgent(t, data, "run", "--config", f.config, "--workers", "4")
	testenv.WaitApp(t, agent, 4*time.Minute, "50 apps converged", allApps, converged(f.apps, 1))
	t.Logf("50 apps converged %s after the start", time.Since(start).Round(time.Second))

	pool := drift.DefaultAddressPool()
	nets := appNetworks(t, cli, f.apps)
	owner := map[netip.Prefix]string{}
	for app, nw := range nets {
		switch {
		case nw.Subnet.Bits() != pool.Size || !pool.Base.Contains(nw.Subnet.Addr()):
			t.Errorf("app %s: subnet %s is not a /%d of the pool %s", app, nw.Subnet, pool.Size, pool.Base)
		case owner[nw.Subnet] != "":
			t.Errorf("apps %s and %s share subnet %s", owner[nw.Subnet], app, nw.Subnet)
		case nw.Label != nw.Subnet.String():
			t.Errorf("app %s: subnet %s, label %s=%q", app, nw.Subnet, drift.LabelSubnet, nw.Label)
		}
		owner[nw.Subnet] = app
	}
	ids := containerIDs(t, cli, f.apps)
	if len(ids) != n {
		t.Fatalf("%d containers, want %d", len(ids), n)
	}

	agent.Stop(t)
	restarted := time.Now()
	agent = testenv.StartAgent(t, data, "run", "--config", f.config, "--workers", "4")
	// Every app has had its first pass after the restart once each reports
	// a sync time after it.
	testenv.WaitApp(t, agent, 3*time.Minute, "every app passed again after the restart", allApps, func(as []status.AppStatus) bool {
		done := 0
		for _, a := range as {
			if a.LastPass.After(restarted) && a.Sync == drift.SyncSynced {
				done++
			}
		}
		return done == n
	})
	if after := appNetworks(t, cli, f.apps); fmt.Sprint(after) != fmt.Sprint(nets) {
		t.Errorf("networks changed across the restart:\nbefore %v\nafter  %v", nets, after)
	}
	if after := containerIDs(t, cli, f.apps); fmt.Sprint(after) != fmt.Sprint(ids) {
		t.Errorf("containers were recreated across the restart")
	}
	t.Logf("total %s", time.Since(start).Round(time.Second))
}

// TestAddressPoolExhausted: a pool of two /29s (addressPool in
// driftless.yaml) serves two apps; the third is refused with a message
// naming the setting, and the first two keep running.
func TestAddressPoolExhausted(t *testing.T) {
	// A range of its own, so the 50-app test's pool is not touched.
	const tiny = "10.214.255.240/28"
	f := newFleet(t, 3, 1, "10m", "addressPool: {base: "+tiny+", size: 29}", nil)
	cli := dockerClient(t)
	agent := testenv.StartAgent(t, t.TempDir(), "run", "--config", f.config)
	as := testenv.WaitApp(t, agent, 2*time.Minute, "two apps converged and one refused", allApps, func(as []status.AppStatus) bool {
		synced, refused := 0, 0
		for _, a := range as {
			if a.Sync == drift.SyncSynced {
				synced++
			}
			if strings.Contains(a.Message, "address pool "+tiny+" is exhausted") {
				refused++
			}
		}
		return synced == 2 && refused == 1
	})
	for _, a := range as {
		if a.Sync != drift.SyncSynced {
			t.Logf("refused app %s: %s", a.Name, a.Message)
			if !strings.Contains(a.Message, "addressPool in driftless.yaml (or --address-pool)") {
				t.Errorf("the refusal does not name the setting: %s", a.Message)
			}
			// Its replicas wait for the network instead of being created
			// on a network that does not exist.
			res, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", drift.LabelApp+"="+a.Name)})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Items) != 0 {
				t.Errorf("app %s without a network has %d containers, want none", a.Name, len(res.Items))
			}
		}
	}
	got := map[netip.Prefix]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, app := range f.apps {
		res, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("label", drift.LabelApp+"="+app)})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range res.Items {
			got[n.IPAM.Config[0].Subnet] = true
		}
	}
	want := map[netip.Prefix]bool{netip.MustParsePrefix("10.214.255.240/29"): true, netip.MustParsePrefix("10.214.255.248/29"): true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("subnets %v, want the pool's two: %v", got, want)
	}
}
