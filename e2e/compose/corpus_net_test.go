package compose

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// netRun is what the network stacks and the equivalence case make unique
// to one run on a shared engine: a subnet (its first three octets, outside
// Docker's default pools and driftless's 10.213.0.0/16) and a suffix for
// the Docker names the files give.
type netRun struct {
	prefix string // "10.147.3"
	suffix string // "a1b2c3"
}

func newNetRun() netRun {
	return netRun{
		prefix: fmt.Sprintf("10.%d.%d", 120+rand.IntN(80), rand.IntN(256)),
		suffix: testenv.RandHex(3),
	}
}

// netStacks are the corpus stacks for networks: names, static addresses, network_mode service:.
func netStacks() []corpusStack {
	return []corpusStack{piholeStack(newNetRun()), vpnStack(), namedStack(newNetRun())}
}

// piholeStack: Pi-hole and unbound on a declared subnet with fixed
// addresses; a change moves unbound and Pi-hole's upstream with it, and a
// replica removed by hand comes back at its address.
func piholeStack(n netRun) corpusStack {
	addr := func(host int) string { return n.prefix + "." + strconv.Itoa(host) }
	return corpusStack{
		dir:      "pihole-unbound",
		replicas: map[string]int{"pihole": 1, "unbound": 1},
		setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
			why := "a subnet unique to the run: runs on a shared engine must not overlap"
			r.app.Replace("compose.yaml", "172.31.240.", n.prefix+".", why)
			dns := r.app.Port("dns", 1)
			r.app.Replace("compose.yaml", `"53:53/`, fmt.Sprintf(`"%d:53/`, dns), "port 53 is taken on a shared machine: a free port")
			r.app.Replace("compose.yaml", `"8081:80/tcp"`, fmt.Sprintf(`"127.0.0.1:%d:80/tcp"`, r.app.Port("ui", 1)), "a free port")
		},
		check: func(t *testing.T, r *stackRun) {
			pihole, unbound := r.c("pihole", 1), r.c("unbound", 1)
			wantAddress(t, pihole, r.app.Name+"-dns", addr(2))
			wantAddress(t, unbound, r.app.Name+"-dns", addr(3))
			// Pi-hole reaches its upstream by the address its setting names.
			wantEnv(t, pihole, map[string]string{"FTLCONF_dns_upstreams": addr(3) + "#5335"})
			wantProbe(t, pihole, "tcp://"+addr(3)+":5335")
			httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", r.app.Port("ui", 1)))
		},
		changes: []stackChange{{
			what: "unbound moves to .53, and Pi-hole's upstream with it",
			edits: []fileEdit{
				{File: "compose.yaml", Old: "ipv4_address: " + addr(3), New: "ipv4_address: " + addr(53)},
				{File: "compose.yaml", Old: "FTLCONF_dns_upstreams: " + addr(3), New: "FTLCONF_dns_upstreams: " + addr(53)},
			},
			rolls: []string{"pihole", "unbound"},
			check: func(t *testing.T, r *stackRun) {
				wantAddress(t, r.c("unbound", 1), r.app.Name+"-dns", addr(53))
				wantProbe(t, r.c("pihole", 1), "tcp://"+addr(53)+":5335")
			},
		}},
		heal: "unbound",
		keeps: func(t *testing.T, r *stackRun) func(t *testing.T) {
			return func(t *testing.T) {
				// The new replica has the address the file gives, and
				// Pi-hole, untouched, reaches it there.
				wantAddress(t, r.c("unbound", 1), r.app.Name+"-dns", addr(3))
				wantProbe(t, r.c("pihole", 1), "tcp://"+addr(3)+":5335")
			}
		},
	}
}

// vpnStack: a download client in a VPN container's network namespace,
// its web UI published by the VPN container. Replacing the VPN container
// (a change, or a repair) replaces the client after it, in the new
// namespace.
func vpnStack() corpusStack {
	return corpusStack{
		dir:      "vpn-sidecar",
		replicas: map[string]int{"gluetun": 1, "qbittorrent": 1},
		setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
			cfg.Allow = []string{"capabilities"} // NET_ADMIN, as gluetun's guide says
			ports := "free ports: the apps run at once on a shared machine"
			r.app.Replace("compose.yaml", "8888:8888/tcp", fmt.Sprintf("127.0.0.1:%d:8888/tcp", r.app.Port("proxy", 1)), ports)
			r.app.Replace("compose.yaml", "8090:8090", fmt.Sprintf("127.0.0.1:%d:8090", r.app.Port("ui", 1)), ports)
			r.app.Replace("compose.yaml", "6881:6881", fmt.Sprintf("127.0.0.1:%d:6881", r.app.Port("peers", 1)), ports)
		},
		check: vpnClientInNamespace,
		changes: []stackChange{{
			what:  "qbittorrent: another time zone",
			edits: []fileEdit{{File: "compose.yaml", Old: "- TZ=Europe/Amsterdam\n      - WEBUI_PORT", New: "- TZ=Europe/Berlin\n      - WEBUI_PORT"}},
			rolls: []string{"qbittorrent"},
			check: vpnClientInNamespace,
		}, {
			what:  "gluetun: another server city",
			edits: []fileEdit{{File: "compose.yaml", Old: "SERVER_CITIES=Amsterdam", New: "SERVER_CITIES=Zurich"}},
			rolls: []string{"gluetun", "qbittorrent"},
			check: vpnClientInNamespace,
		}},
		heal: "gluetun",
		keeps: func(t *testing.T, r *stackRun) func(t *testing.T) {
			client := testenv.FieldString(testenv.Inspect(t, "container", r.c("qbittorrent", 1)), "Id")
			return func(t *testing.T) {
				if now := testenv.FieldString(testenv.Inspect(t, "container", r.c("qbittorrent", 1)), "Id"); now == client {
					t.Errorf("%s still runs in the namespace of the removed VPN container", r.c("qbittorrent", 1))
				}
				vpnClientInNamespace(t, r)
			}
		},
	}
}

// vpnClientInNamespace checks that qbittorrent's replica runs in the
// network namespace of gluetun's, whose published "ui" port reaches it.
func vpnClientInNamespace(t *testing.T, r *stackRun) {
	t.Helper()
	owner := testenv.FieldString(testenv.Inspect(t, "container", r.c("gluetun", 1)), "Id")
	wantInspect(t, r.c("qbittorrent", 1), map[string]string{"HostConfig.NetworkMode": "container:" + owner})
	// The client's UI answers on the port the VPN container publishes.
	httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", r.app.Port("ui", 1)))
}

// namedStack: the network and the database volume named by the file.
// Renaming the network moves both services to the new one; renaming the
// volume gives the database a new (empty) volume and keeps the old one,
// which the revert mounts again, data and all.
func namedStack(n netRun) corpusStack {
	netName, netRenamed := "myapp-network-"+n.suffix, "myapp-net-"+n.suffix
	vol, volRenamed := "myapp-db-"+n.suffix, "myapp-db-v2-"+n.suffix
	mounts := func(t *testing.T, r *stackRun, volume string) {
		t.Helper()
		if m := mountOf(t, r.c("db", 1), "/var/lib/postgresql/data"); m["Source"] != volume {
			t.Errorf("the database mounts %v, want volume %s", m["Source"], volume)
		}
	}
	joins := func(t *testing.T, r *stackRun, network string) {
		t.Helper()
		for _, svc := range []string{"app", "db"} {
			nets := testenv.Field(testenv.Inspect(t, "container", r.c(svc, 1)), "NetworkSettings.Networks").(map[string]any)
			if got := slices.Sorted(maps.Keys(nets)); !slices.Equal(got, []string{network}) {
				t.Errorf("%s joins %v, want only %s", r.c(svc, 1), got, network)
			}
		}
	}
	return corpusStack{
		dir:      "named-objects",
		replicas: map[string]int{"app": 1, "db": 1},
		setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
			why := "names unique to the run: runs on a shared engine must not meet"
			r.app.Replace("compose.yaml", "name: myapp-network\n", "name: "+netName+"\n", why)
			r.app.Replace("compose.yaml", "name: myapp-db\n", "name: "+vol+"\n", why)
			r.app.Replace("compose.yaml", `"3000:3000"`, fmt.Sprintf(`"127.0.0.1:%d:3000"`, r.app.Port("app", 1)), "a free port")
		},
		check: func(t *testing.T, r *stackRun) {
			// The objects have the names the file gives, and are the
			// app's by label.
			for kind, name := range map[string]string{"network": netName, "volume": vol} {
				if got := testenv.FieldString(testenv.Inspect(t, kind, name), "Labels.dev.driftless.app"); got != r.app.Name {
					t.Errorf("%s %s has app label %s, want %s", kind, name, got, r.app.Name)
				}
			}
			joins(t, r, netName)
			mounts(t, r, vol)
			putInVolume(t, r.images.Base, vol, "PG_VERSION", "16\n")
			httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", r.app.Port("app", 1)))
		},
		changes: []stackChange{{
			what:  "the network gets another name",
			edits: []fileEdit{{File: "compose.yaml", Old: "name: " + netName + "\n", New: "name: " + netRenamed + "\n"}},
			rolls: []string{"app", "db"},
			check: func(t *testing.T, r *stackRun) {
				joins(t, r, netRenamed)
				wantProbe(t, r.c("app", 1), "tcp://db:5432")
			},
		}, {
			what:  "the database volume gets another name",
			edits: []fileEdit{{File: "compose.yaml", Old: "name: " + vol + "\n", New: "name: " + volRenamed + "\n"}},
			rolls: []string{"db"},
			check: func(t *testing.T, r *stackRun) {
				mounts(t, r, volRenamed)
				// The old volume is kept (never removed without
				// --allow-volume-removal), with its data.
				testenv.Inspect(t, "volume", vol)
			},
		}},
		heal: "db",
		keeps: func(t *testing.T, r *stackRun) func(t *testing.T) {
			// After the revert, the database is back on the first volume.
			mounts(t, r, vol)
			return func(t *testing.T) {
				mounts(t, r, vol)
				wantFile(t, r.c("db", 1), "/var/lib/postgresql/data/PG_VERSION", "16\n")
			}
		},
	}
}

// wantAddress checks a container's address on a network.
func wantAddress(t *testing.T, container, network, want string) {
	t.Helper()
	ep := testenv.Field(testenv.Inspect(t, "container", container), "NetworkSettings.Networks")
	m, _ := ep.(map[string]any)
	if got := testenv.FieldString(m[network], "IPAddress"); got != want {
		t.Errorf("%s has address %s on %s, want %s", container, got, network, want)
	}
	if got := testenv.FieldString(m[network], "IPAMConfig.IPv4Address"); got != want {
		t.Errorf("%s asks for address %s on %s, want %s (the file's ipv4_address)", container, got, network, want)
	}
}

// netEquivCases are the equivalence cases for networks: names, static
// addresses, network_mode service: and default.
func netEquivCases() []equivCase {
	n := newNetRun()
	netName, volName := "equiv-dns-"+n.suffix, "equiv-state-"+n.suffix
	return []equivCase{{
		dir:      "equiv-net",
		services: []string{"resolver", "vpn", "client", "legacy"},
		networks: []string{"/" + netName, "default"},
		ipam:     []string{"/" + netName},
		volumes:  []string{"/" + volName},
		declared: map[string][]string{
			"container resolver": {"Networks." + netName + ".IPAMConfig.IPv4Address", "Networks." + netName + ".IPAMConfig.IPv6Address",
				"Mounts./var/lib/unbound.Volume"},
			"container vpn": {"Networks." + netName + ".IPAMConfig.IPv4Address", "Networks.default.Aliases",
				"HostConfig.PortBindings.8090/tcp", "HostConfig.NetworkMode"},
			"container client":    {"HostConfig.NetworkMode", "Mounts./state.Volume", "Mounts./state.RW"},
			"container legacy":    {"HostConfig.NetworkMode"},
			"network /" + netName: {"Driver", "EnableIPv6", "IPAM.Config"},
			"volume /" + volName:  {"Driver"},
		},
		env: func(t *testing.T) map[string]string {
			// The IPv6 hextet has no leading zero: Docker keeps an
			// address as written, compose passes it as written and
			// driftless in canonical form ("0b8b" becomes "b8b"), so a
			// leading zero would differ in text, not in address.
			return map[string]string{
				"EQUIV_NET_PREFIX":  n.prefix,
				"EQUIV_NET6_PREFIX": "fd00:1" + n.suffix[1:4],
				"EQUIV_NET_NAME":    netName,
				"EQUIV_VOLUME_NAME": volName,
				"EQUIV_UI_PORT":     strconv.Itoa(testenv.FreePorts(t, 1)),
			}
		},
	}}
}
