package dockerspec

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/driftless-dev/driftless/manifest"
)

// A replica of network_mode service:vpn joins the container that holds
// the owner's first replica's name, with no endpoints of its own; fixed
// addresses go to the endpoint of their network, at create or at connect.
func TestReplicaConfigSharedNamespaceAndAddresses(t *testing.T) {
	app := &manifest.App{Name: "shop", Networks: []manifest.Network{
		{Name: "dns", Spec: manifest.NetworkSpec{Driver: "bridge", Subnet: "172.30.0.0/24", Name: "dns-net"}},
		{Name: "back", Spec: manifest.NetworkSpec{Driver: "bridge", Subnet: "172.31.0.0/24", SubnetV6: "fd00:1::/64", EnableIPv6: true}},
	}, Services: []manifest.Service{
		{Name: "client", Spec: manifest.ServiceSpec{Image: "x", Replicas: 1, NetworkMode: "service:vpn"}},
		{Name: "pihole", Spec: manifest.ServiceSpec{Image: "x", Replicas: 1, Networks: []string{"back", "dns"},
			Addresses: map[string]manifest.Address{"dns": {IPv4: "172.30.0.2"}, "back": {IPv4: "172.31.0.9", IPv6: "fd00:1::9"}}}},
	}}
	rc, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := rc.Create.HostConfig.NetworkMode; got != "container:shop-vpn-1" {
		t.Errorf("network mode %q, want container:shop-vpn-1", got)
	}
	if n := len(rc.Create.NetworkingConfig.EndpointsConfig) + len(rc.ExtraNetworks); n != 0 {
		t.Errorf("a shared namespace has no endpoints of its own, got %d", n)
	}

	rc, err = BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[1], Slot: 1})
	if err != nil {
		t.Fatal(err)
	}
	ep := rc.Create.NetworkingConfig.EndpointsConfig["shop-back"]
	if ep == nil || ep.IPAMConfig == nil || ep.IPAMConfig.IPv4Address != netip.MustParseAddr("172.31.0.9") || ep.IPAMConfig.IPv6Address != netip.MustParseAddr("fd00:1::9") {
		t.Errorf("endpoint of the first network %+v, want IPv4 172.31.0.9 and IPv6 fd00:1::9", ep)
	}
	if len(rc.ExtraNetworks) != 1 || rc.ExtraNetworks[0].Name != "dns-net" || rc.ExtraNetworks[0].IPAM == nil ||
		rc.ExtraNetworks[0].IPAM.IPv4Address != netip.MustParseAddr("172.30.0.2") {
		t.Errorf("extra networks %+v, want dns-net (the name the file gives) with 172.30.0.2", rc.ExtraNetworks)
	}
}

// A replica is created on its highest-priority network, with its aliases
// there, and joins the others in priority order, equal ones by name.
func TestReplicaConfigNetworkPriority(t *testing.T) {
	app := &manifest.App{Name: "shop", Services: []manifest.Service{
		{Name: "web", Spec: manifest.ServiceSpec{Image: "x", Replicas: 1, Networks: []string{"a", "b", "c", "d"},
			NetworkPriority: map[string]int{"c": 10, "a": -1}, Aliases: map[string][]string{"c": {"www"}}}},
	}}
	rc, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: 1})
	if err != nil {
		t.Fatal(err)
	}
	ep := rc.Create.NetworkingConfig.EndpointsConfig["shop-c"]
	if rc.Create.HostConfig.NetworkMode != "shop-c" || ep == nil || len(rc.Create.NetworkingConfig.EndpointsConfig) != 1 || !slices.Equal(ep.Aliases, []string{"web", "www"}) {
		t.Errorf("created on %q with endpoints %+v, want shop-c alone, aliases web www", rc.Create.HostConfig.NetworkMode, rc.Create.NetworkingConfig.EndpointsConfig)
	}
	var then []string
	for _, n := range rc.ExtraNetworks {
		then = append(then, n.Name)
	}
	if !slices.Equal(then, []string{"shop-b", "shop-d", "shop-a"}) {
		t.Errorf("then joins %v, want shop-b shop-d shop-a", then)
	}
}

// The list summary tells which container's namespace a replica shares and
// which volumes it mounts.
func TestContainerFromSummaryNamespaceAndVolumes(t *testing.T) {
	s := container.Summary{ID: "c1", Names: []string{"/shop-client-1"}, Labels: map[string]string{}}
	s.HostConfig.NetworkMode = "container:0123abcd"
	s.Mounts = []container.MountPoint{
		{Type: mount.TypeVolume, Name: "myapp-db", Destination: "/data"},
		{Type: mount.TypeBind, Source: "/etc/x", Destination: "/x"},
		{Type: mount.TypeVolume, Name: "shop-cache", Destination: "/cache"},
	}
	c := ContainerFromSummary(s)
	if c.NetworkContainer != "0123abcd" {
		t.Errorf("network container %q, want 0123abcd", c.NetworkContainer)
	}
	if len(c.VolumeNames) != 2 || c.VolumeNames[0] != "myapp-db" || c.VolumeNames[1] != "shop-cache" {
		t.Errorf("volume names %v, want [myapp-db shop-cache]", c.VolumeNames)
	}
	s.HostConfig.NetworkMode, s.Mounts = "shop-default", nil
	if c := ContainerFromSummary(s); c.NetworkContainer != "" || c.VolumeNames == nil || len(c.VolumeNames) != 0 {
		t.Errorf("a replica on its own network: network container %q, volumes %#v; want none, observed", c.NetworkContainer, c.VolumeNames)
	}
}
