package compose_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// Bad input of names (name:), fixed addresses and shared network
// namespaces: each a refusal at its file:line:column.
func TestComposeNetworkErrors(t *testing.T) {
	const subnet = "networks:\n  dns:\n    ipam: {config: [{subnet: 172.30.0.0/24}]}\n"
	tests := []struct {
		name  string
		files map[string]string
		opts  load.Options
		want  []string
	}{
		{"address outside, twice, no subnet, replicas",
			map[string]string{"compose.yaml": "services:\n" +
				"  a:\n    image: x\n    networks: {dns: {ipv4_address: 172.30.1.5}}\n" +
				"  b:\n    image: x\n    networks: {dns: {ipv4_address: 172.30.0.9}}\n" +
				"  c:\n    image: x\n    networks: {dns: {ipv4_address: 172.30.0.9}}\n" +
				"  d:\n    image: x\n    networks: {plain: {ipv4_address: 10.1.0.5}}\n" +
				"  e:\n    image: x\n    deploy: {replicas: 2}\n    networks: {dns: {ipv4_address: 172.30.0.20}}\n" +
				"  f:\n    image: x\n    networks: {dns: {ipv4_address: 172.30.0.1}}\n" +
				"  g:\n    image: x\n    networks: {dns: {ipv4_address: not-an-ip}}\n" +
				"  h:\n    image: x\n    x-driftless: {update: {maxSurge: 1, maxUnavailable: 0}}\n    networks: {dns: {ipv4_address: 172.30.0.30}}\n" +
				subnet + "  plain: {}\n"},
			load.Options{},
			[]string{
				"compose.yaml:4:36: services.a.networks.dns.ipv4_address: 172.30.1.5 is outside network \"dns\"'s subnet 172.30.0.0/24",
				"compose.yaml:10:36: services.c.networks.dns.ipv4_address: address 172.30.0.9 on network \"dns\" is already service \"b\"'s: each address belongs to one service",
				"compose.yaml:13:38: services.d.networks.plain.ipv4_address: network \"plain\" declares no subnet: declare one (networks: {plain: {ipam: {config: [{subnet: ...}]}}}), so that the address is the file's to give",
				"compose.yaml:17:16: services.e.networks.dns: a fixed address belongs to one container, and the service has 2 replicas: set replicas to 1, or reach the service by name",
				"compose.yaml:20:36: services.f.networks.dns.ipv4_address: 172.30.0.1 is the gateway Docker gives subnet 172.30.0.0/24 (its first address): pick another",
				"compose.yaml:23:36: services.g.networks.dns.ipv4_address: \"not-an-ip\" is not an IPv4 address",
				"compose.yaml:27:16: services.h.networks.dns: the address would be taken twice when a rolling update starts the new replica before stopping the old one: use deploy.update_config.order: stop-first (compose's default)",
			}},
		{"ipv6 address without an IPv6 subnet",
			map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    networks: {dns: {ipv6_address: 'fd00::5'}}\n" + subnet},
			load.Options{},
			[]string{
				"compose.yaml:4:36: services.a.networks.dns.ipv6_address: network \"dns\" declares no IPv6 subnet: declare one in its ipam.config, with enable_ipv6: true",
			}},
		{"address on swarm",
			map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    networks: {dns: {ipv4_address: 172.30.0.5}}\n" + subnet},
			load.Options{Target: manifest.TargetSwarm},
			[]string{
				"compose.yaml:4:16: services.a.networks.dns: Swarm gives each task its address: fixed addresses are for apps on one engine",
			}},
		{"service: target missing, replicas, cycle, ports",
			map[string]string{"compose.yaml": "services:\n" +
				"  a:\n    image: x\n    network_mode: service:nope\n" +
				"  b:\n    image: x\n    network_mode: service:vpn\n    deploy: {replicas: 2}\n" +
				"  c:\n    image: x\n    network_mode: service:d\n" +
				"  d:\n    image: x\n    network_mode: service:c\n" +
				"  e:\n    image: x\n    network_mode: service:vpn\n    ports: ['8080:80']\n    expose: ['81']\n    hostname: e\n    dns: [1.1.1.1]\n" +
				"  f:\n    image: x\n    network_mode: service:big\n" +
				"  g:\n    image: x\n    network_mode: container:other\n" +
				"  vpn:\n    image: x\n" +
				"  big:\n    image: x\n    scale: 3\n"},
			load.Options{},
			[]string{
				"compose.yaml:4:19: services.a.network_mode: service \"nope\" is not declared: network_mode: service:NAME names a service of this file",
				"compose.yaml:7:19: services.b.network_mode: service:vpn shares one container's network namespace, and this service has 2 replicas: set replicas to 1",
				"compose.yaml:11:19: services.c.network_mode: dependency cycle: c -> d -> c",
				"compose.yaml:18:5: services.e.ports: publish them from service \"vpn\", whose network namespace this service shares (Docker refuses ports here)",
				"compose.yaml:19:5: services.e.expose: ports of a shared network namespace are exposed by its owner, service \"vpn\" (Docker refuses expose here)",
				"compose.yaml:20:15: services.e.hostname: the host name belongs to the network namespace's owner, service \"vpn\" (Docker refuses it here)",
				"compose.yaml:21:5: services.e.dns: name resolution belongs to the network namespace's owner, service \"vpn\" (Docker refuses dns here)",
				"compose.yaml:24:19: services.f.network_mode: service \"big\" has 3 replicas, and a network namespace is one container's: give it one replica",
				"compose.yaml:27:19: services.g.network_mode: \"container:other\" (sharing the network namespace of a container driftless does not manage) is not supported: share a service's with service:NAME, or put the services on a shared network and reach them by name",
			}},
		{"network priority on swarm",
			map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    networks: {dns: {priority: 10}}\n" + subnet},
			load.Options{Target: manifest.TargetSwarm},
			[]string{
				"compose.yaml:4:32: services.a.networks.dns.priority: Swarm attaches a task's networks itself: network priorities are for apps on one engine (target: swarm)",
			}},
		{"names: invalid, taken twice",
			map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    networks: [n1, n2]\n    volumes: ['v1:/a', 'v2:/b']\n" +
				"networks:\n  n1: {name: shared-net}\n  n2: {name: shared-net}\n  n3: {name: 'bad name'}\n" +
				"volumes:\n  v1: {name: shop-v2}\n  v2: {}\n"},
			load.Options{},
			[]string{
				"compose.yaml:8:14: networks.n2.name: networks \"n1\" and \"n2\" would both be named \"shared-net\" on the engine: give one of them another name:",
				"compose.yaml:9:14: networks.n3.name: invalid Docker network name \"bad name\": letters, digits, '_', '.' and '-', starting with a letter or digit",
				"compose.yaml:12:3: volumes.v2: volumes \"v1\" and \"v2\" would both be named \"shop-v2\" on the engine: give one of them another name:",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := loadtest.ComposeErrors(t, tt.files, tt.opts)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// The IPv4 subnet's gateway and ip_range are the network's; an address
// may not take the declared gateway, and both must lie in the subnet.
func TestComposeNetworkGateway(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": "services:\n" +
		"  dns:\n    image: x\n    networks: {lan: {ipv4_address: 172.30.0.1}}\n" +
		"networks:\n  lan:\n    ipam: {config: [{subnet: 172.30.0.0/24, gateway: 172.30.0.254, ip_range: 172.30.0.128/25}]}\n"}, load.Options{})
	n := a.Network("lan")
	if n == nil || n.Spec.Gateway != "172.30.0.254" || n.Spec.IPRange != "172.30.0.128/25" {
		t.Fatalf("network lan = %+v, want gateway 172.30.0.254 and ip range 172.30.0.128/25", n)
	}
	got := loadtest.ComposeErrors(t, map[string]string{"compose.yaml": "services:\n" +
		"  dns:\n    image: x\n    networks: {lan: {ipv4_address: 172.30.0.254}}\n" +
		"networks:\n  lan:\n    ipam: {config: [{subnet: 172.30.0.0/24, gateway: 172.30.0.254, ip_range: 172.31.0.0/25}]}\n"}, load.Options{})
	want := []string{
		"compose.yaml:4:36: services.dns.networks.lan.ipv4_address: 172.30.0.254 is network \"lan\"'s gateway: pick another",
		"compose.yaml:7:78: networks.lan.ipam.config[0].ip_range: ip_range 172.31.0.0/25 is not inside subnet 172.30.0.0/24",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// An IPv6 entry's gateway that is the subnet's first address (SonarQube's
// example files write it) is the one Docker picks anyway: accepted. Any
// other IPv6 gateway, and an IPv6 ip_range, stay refused.
func TestComposeNetworkGatewayV6(t *testing.T) {
	const svc = "services:\n  sonarqube:\n    image: sonarqube:community\n    networks: [dual]\n"
	a := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": svc +
		"networks:\n  dual:\n    driver: bridge\n    enable_ipv6: true\n    ipam:\n      config:\n" +
		"        - subnet: \"192.168.2.0/24\"\n          gateway: \"192.168.2.1\"\n" +
		"        - subnet: \"2001:db8:2::/64\"\n          gateway: \"2001:db8:2::1\"\n"}, load.Options{})
	if n := a.Network("dual"); n == nil || n.Spec.SubnetV6 != "2001:db8:2::/64" || n.Spec.Gateway != "192.168.2.1" {
		t.Fatalf("network dual = %+v, want IPv6 subnet 2001:db8:2::/64 and gateway 192.168.2.1", n)
	}
	got := loadtest.ComposeErrors(t, map[string]string{"compose.yaml": svc +
		"networks:\n  dual:\n    enable_ipv6: true\n    ipam:\n      config:\n" +
		"        - subnet: 192.168.2.0/24\n" +
		"        - {subnet: '2001:db8:2::/64', gateway: '2001:db8:2::fe'}\n"}, load.Options{})
	want := []string{
		"compose.yaml:11:11: networks.dual.ipam.config[1]: gateway and ip_range of an IPv6 subnet are not supported yet: Docker picks the gateway (the subnet's first address) and assigns from the whole subnet",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Ghost's compose.ipv6.yml declares only an IPv6 subnet: Docker picks the
// IPv4 one from its pools, driftless from its address pool (the model's
// subnet stays empty, as for a network that declares none).
func TestComposeNetworkV6Only(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": "services:\n  ghost:\n    image: ghost:6\n    networks: [ghost_network]\n" +
		"networks:\n  ghost_network:\n    enable_ipv6: true\n    ipam:\n      config:\n        - subnet: fdc1:f5e4:6668::/64\n"}, load.Options{})
	n := a.Network("ghost-network")
	if n == nil || n.Spec.Subnet != "" || n.Spec.SubnetV6 != "fdc1:f5e4:6668::/64" || !n.Spec.EnableIPv6 {
		t.Fatalf("network ghost-network = %+v, want an IPv6 subnet and no IPv4 one declared", n)
	}
}

// A service's network priorities order the networks its replicas join:
// the highest first, equal ones by name, as compose orders them.
func TestComposeNetworkPriority(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": "services:\n" +
		"  web:\n    image: x\n    networks:\n      back: {}\n      front: {priority: 100}\n      mid: {priority: -1}\n      aux:\n" +
		"  plain:\n    image: x\n    networks: [front, back]\n" +
		"networks: {front: {}, back: {}, mid: {}, aux: {}}\n"}, load.Options{})
	web, plain := a.Service("web"), a.Service("plain")
	if web == nil || plain == nil {
		t.Fatalf("services %+v", a.Services)
	}
	if got := strings.Join(web.Spec.NetworksInOrder(), " "); got != "front aux back mid" {
		t.Errorf("web joins %s, want front aux back mid", got)
	}
	if len(web.Spec.NetworkPriority) != 2 || web.Spec.NetworkPriority["front"] != 100 || web.Spec.NetworkPriority["mid"] != -1 {
		t.Errorf("web's network priorities %v", web.Spec.NetworkPriority)
	}
	if got := strings.Join(plain.Spec.NetworksInOrder(), " "); got != "back front" || plain.Spec.NetworkPriority != nil {
		t.Errorf("plain joins %s with priorities %v, want back front by name and none", got, plain.Spec.NetworkPriority)
	}
}

// Files of app stores write network modes compose and Docker take:
// container:NAME of a service's container_name (the arr suites behind a
// VPN), "default" (Docker's name for bridge), and a declared network's
// name (1Panel's external 1panel-network). Any other container or network
// stays refused.
func TestComposeNetworkModeForms(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": "services:\n" +
		"  gluetun:\n    image: qmcgaw/gluetun\n    container_name: arr-gluetun\n" +
		"  qbittorrent:\n    image: qbt\n    network_mode: container:arr-gluetun\n    volumes_from: ['container:arr-gluetun:ro']\n" +
		"  twingate:\n    image: tg\n    network_mode: default\n" +
		"  cloudflared:\n    image: cf\n    network_mode: 1panel-network\n" +
		"networks:\n  1panel-network:\n    external: true\n"}, load.Options{})
	qbt, tg, cf := a.Service("qbittorrent"), a.Service("twingate"), a.Service("cloudflared")
	if qbt == nil || tg == nil || cf == nil {
		t.Fatalf("services %+v", a.Services)
	}
	if got := qbt.Spec.NetworkService(); got != "gluetun" {
		t.Errorf("qbittorrent shares the network namespace of %q, want gluetun", got)
	}
	if len(qbt.Spec.VolumesFrom) != 1 || qbt.Spec.VolumesFrom[0] != (manifest.VolumesFrom{Service: "gluetun", ReadOnly: true}) {
		t.Errorf("qbittorrent mounts the volumes of %+v, want gluetun's read-only", qbt.Spec.VolumesFrom)
	}
	if !strings.Contains(strings.Join(qbt.Spec.DependsOn, " "), "gluetun") {
		t.Errorf("qbittorrent does not start after gluetun: depends on %v", qbt.Spec.DependsOn)
	}
	if tg.Spec.NetworkMode != manifest.NetworkDefault {
		t.Errorf("twingate's network mode %q, want default (bridge, as Docker records it)", tg.Spec.NetworkMode)
	}
	// The same network as bridge: a replica made when driftless wrote
	// bridge for it is not replaced.
	asBridge := tg.Spec
	asBridge.NetworkMode = manifest.NetworkBridge
	if manifest.HashService(nil, tg.Labels, asBridge) != tg.Hash {
		t.Error("network mode default hashes unlike bridge: upgrading would replace the replica")
	}
	if cf.Spec.NetworkMode != "" || strings.Join(cf.Spec.Networks, " ") != "1panel-network" {
		t.Errorf("cloudflared: network mode %q, networks %v; want to join 1panel-network only", cf.Spec.NetworkMode, cf.Spec.Networks)
	}

	got := loadtest.ComposeErrors(t, map[string]string{"compose.yaml": "services:\n" +
		"  a:\n    image: x\n    network_mode: container:elsewhere\n" +
		"  b:\n    image: x\n    network_mode: lan\n" +
		"  c:\n    image: x\n    network_mode: front\n    networks: [front]\n" +
		"  d:\n    image: x\n    network_mode: back\n" +
		"networks:\n  front: {external: true}\n  back: {}\n"}, load.Options{})
	want := []string{
		"compose.yaml:4:19: services.a.network_mode: \"container:elsewhere\" (sharing the network namespace of a container driftless does not manage) is not supported: share a service's with service:NAME, or put the services on a shared network and reach them by name",
		"compose.yaml:7:19: services.b.network_mode: \"lan\" is not supported: use bridge, none, host, service:NAME, the Docker name of a declared network (an external one's), or networks:",
		"compose.yaml:11:5: services.c.networks: cannot be combined with network_mode (as in compose)",
		// compose names the app's own network <project>_back on the engine.
		"compose.yaml:14:19: services.d.network_mode: \"back\" is not supported: use bridge, none, host, service:NAME, the Docker name of a declared network (an external one's), or networks:",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A file written for Swarm may set order: start-first on a service that
// cannot have two containers at once. Compose ignores the order on one
// engine; driftless replaces such a service stop-first, with a warning.
// A surge x-driftless.update asks for is still refused (see the tests
// above).
func TestComposeStartFirstOnOneContainer(t *testing.T) {
	const startFirst = "    deploy: {update_config: {order: start-first}}\n"
	a := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": "services:\n" +
		"  wg:\n    image: x\n    ports: ['51820:51820/udp']\n" + startFirst +
		"  dns:\n    image: x\n    networks: {lan: {ipv4_address: 172.30.0.9}}\n" + startFirst +
		"  app:\n    image: x\n    network_mode: service:wg\n" + startFirst +
		"  web:\n    image: x\n    ports: ['80']\n" + startFirst +
		"networks:\n  lan:\n    ipam: {config: [{subnet: 172.30.0.0/24}]}\n"}, load.Options{})
	stopFirst := manifest.Update{Strategy: manifest.StrategyRolling, MaxSurge: 0, MaxUnavailable: 1}
	for _, name := range []string{"wg", "dns", "app"} {
		if got := a.Service(name).Spec.Update; got != stopFirst {
			t.Errorf("%s updates %+v, want stop-first", name, got)
		}
	}
	if got := a.Service("web").Spec.Update; got.MaxSurge != 1 || got.MaxUnavailable != 0 {
		t.Errorf("web (a port Docker picks) updates %+v, want start-first kept", got)
	}
	warnings := a.Warnings.Error()
	for _, want := range []string{
		"compose.yaml:5:37: services.wg.deploy.update_config.order: start-first is not honoured: host port 51820 is one container's, so a new replica replaces the old one stop-first (compose ignores the order on one engine)",
		"compose.yaml:9:37: services.dns.deploy.update_config.order: start-first is not honoured: its fixed address is one container's",
		"compose.yaml:13:37: services.app.deploy.update_config.order: start-first is not honoured: the network namespace it shares is one container's",
	} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}
}
