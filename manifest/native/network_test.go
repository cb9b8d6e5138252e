package native_test

import (
	"slices"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
)

const nativeNetDocs = `apiVersion: driftless.dev/v1
kind: Network
metadata: {name: dns}
spec: {subnet: 172.30.0.0/24, subnetV6: "fd00:30::/64", enableIPv6: true, name: dns-net}
---
apiVersion: driftless.dev/v1
kind: Volume
metadata: {name: data}
spec: {name: myapp-data}
---
apiVersion: driftless.dev/v1
kind: Service
metadata: {name: vpn}
spec:
  image: shop/vpn:1
  networks: [dns]
  addresses: {dns: {ipv4: 172.30.0.2, ipv6: "fd00:30::2"}}
  update: {maxSurge: 0, maxUnavailable: 1}
  volumes: [{name: data, mountPath: /data}]
---
apiVersion: driftless.dev/v1
kind: Service
metadata: {name: client}
spec:
  image: shop/client:1
  networkMode: service:vpn
  update: {maxSurge: 0, maxUnavailable: 1}
`

// The native spellings: spec.name on a network and a volume, addresses,
// networkMode service:NAME (which adds the dependency compose adds).
func TestLoadNetworkItems(t *testing.T) {
	a, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": nativeNetDocs})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.NetworkDockerName("dns"); got != "dns-net" {
		t.Errorf("network dns is named %q, want dns-net", got)
	}
	if got := a.VolumeDockerName("data"); got != "myapp-data" {
		t.Errorf("volume data is named %q, want myapp-data", got)
	}
	if got := a.Service("vpn").Spec.Addresses["dns"]; got != (manifest.Address{IPv4: "172.30.0.2", IPv6: "fd00:30::2"}) {
		t.Errorf("vpn's addresses %+v", got)
	}
	if got := a.Service("vpn").Spec.NetworkPriority; got != nil {
		t.Errorf("vpn's network priorities %v, want none", got)
	}
	c := a.Service("client").Spec
	if c.NetworkService() != "vpn" || !slices.Equal(c.DependsOn, []string{"vpn"}) || c.DependsCondition("vpn") != manifest.DependsStarted || len(c.Networks) != 0 {
		t.Errorf("client: mode %q, dependsOn %v (%s), networks %v; want service:vpn, [vpn] (started), none", c.NetworkMode, c.DependsOn, c.DependsCondition("vpn"), c.Networks)
	}
}

func TestLoadNetworkItemErrors(t *testing.T) {
	svc := func(name, body string) string {
		return "---\napiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: " + name + "}\nspec:\n  image: x\n" + body
	}
	net := "apiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: dns}\nspec: {subnet: 172.30.0.0/24}\n"
	doc := net +
		svc("a", "  networks: [dns]\n  addresses: {dns: {ipv4: 172.30.1.5}}\n  update: {maxSurge: 0, maxUnavailable: 1}\n") +
		svc("b", "  networks: [dns]\n  addresses: {dns: {ipv4: 172.30.0.9}}\n  update: {maxSurge: 0, maxUnavailable: 1}\n") +
		svc("c", "  networks: [dns]\n  addresses: {dns: {ipv4: 172.30.0.9}}\n  update: {maxSurge: 0, maxUnavailable: 1}\n") +
		svc("d", "  networks: [dns]\n  replicas: 2\n  addresses: {dns: {ipv4: 172.30.0.20}}\n") +
		svc("e", "  networkMode: service:nope\n") +
		svc("f", "  networkMode: service:d\n  hostname: f\n") +
		svc("g", "  networks: [dns]\n  networkPriority: {dns: 5, lan: 2}\n")
	_, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": doc})
	want := []string{
		"a.yaml:12:27: spec.addresses.dns.ipv4: 172.30.1.5 is outside network \"dns\"'s subnet 172.30.0.0/24",
		"a.yaml:30:27: spec.addresses.dns.ipv4: address 172.30.0.9 on network \"dns\" is already service \"b\"'s: each address belongs to one service",
		"a.yaml:40:15: spec.addresses.dns: a fixed address is one container's, and the service has 2 replicas: set replicas: 1",
		"a.yaml:47:16: spec.networkMode: service \"nope\" is not declared",
		"a.yaml:54:16: spec.networkMode: service \"d\" has 2 replicas, and a network namespace is one container's: give it one replica",
		"a.yaml:55:13: spec.hostname: belongs to the network namespace's owner, service d (Docker refuses it here)",
		"a.yaml:63:34: spec.networkPriority.lan: the service does not join network \"lan\": networkPriority must name one of spec.networks",
	}
	if got := loadtest.ErrorLines(t, err); !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", joinLines(got), joinLines(want))
	}
}

func joinLines(l []string) string {
	out := ""
	for _, s := range l {
		out += "  " + s + "\n"
	}
	return out
}
