package native

import (
	"net/netip"
	"slices"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// The native spellings of compose's fixed addresses (spec.addresses) and
// network_mode: service:NAME (spec.networkMode), with the same checks
// (see the compose front end's network.go).

// validateSubnetV6 checks a network's IPv6 subnet, on a network with
// IPv6. Without spec.subnet beside it, the IPv4 subnet comes from the
// address pool.
func validateSubnetV6(r yamlpos.Reporter, raw *rawNetworkSpec) {
	if raw.SubnetV6 == "" {
		return
	}
	switch err := manifest.CheckSubnetV6(raw.SubnetV6); {
	case err != nil:
		r.Errorf("spec.subnetV6", "%v", err)
	case !raw.EnableIPv6:
		r.Errorf("spec.subnetV6", "needs enableIPv6: true")
	}
}

// validateSharedNamespace refuses what belongs to the namespace's owner
// (Docker refuses it on a container in another's network namespace);
// ports are refused with every networkMode but bridge.
func validateSharedNamespace(r yamlpos.Reporter, raw *rawServiceSpec, owner string) {
	why := "belongs to the network namespace's owner, service " + owner + " (Docker refuses it here)"
	for _, f := range []struct {
		set   bool
		field string
	}{
		{raw.Hostname != "", "spec.hostname"}, {len(raw.DNS) > 0, "spec.dns"},
		{len(raw.ExtraHosts) > 0, "spec.extraHosts"}, {raw.MacAddress != "", "spec.macAddress"}, {len(raw.Addresses) > 0, "spec.addresses"},
	} {
		if f.set {
			r.Errorf(f.field, "%s", why)
		}
	}
}

// checkNetworkUse checks, across the app, the namespaces services share
// and their fixed addresses: the owner exists, both ends have one
// replica and stop the old one first, each address is in its network's
// declared subnet and taken once.
func checkNetworkUse(r yamlpos.Reporter, o *object, services map[string]*object, first map[string]*object, used map[string]string) {
	spec := &o.service.Spec
	oneReplica := func(field, what string) bool {
		switch {
		case spec.Replicas != 1:
			r.Errorf(field, "%s one container's, and the service has %d replicas: set replicas: 1", what, spec.Replicas)
		case spec.Update.Strategy == manifest.StrategyRolling && spec.Update.MaxSurge > 0:
			r.Errorf(field, "%s one container's, and a rolling update with maxSurge would run two: set update: {maxSurge: 0, maxUnavailable: 1}", what)
		default:
			return true
		}
		return false
	}
	if owner := spec.NetworkService(); owner != "" {
		switch t, ok := services[owner]; {
		case owner == o.name:
			r.Errorf("spec.networkMode", "a service cannot share its own network namespace")
		case !ok:
			r.Errorf("spec.networkMode", "service %q is not declared", owner)
		case t.service.Spec.Replicas != 1:
			r.Errorf("spec.networkMode", "service %q has %d replicas, and a network namespace is one container's: give it one replica", owner, t.service.Spec.Replicas)
		default:
			oneReplica("spec.networkMode", "a network namespace is")
		}
	}
	for _, net := range slices.Sorted(mapKeys(spec.NetworkPriority)) {
		if !slices.Contains(spec.Networks, net) {
			r.Errorf(yamlpos.ChildPath("spec.networkPriority", net), "the service does not join network %q: networkPriority must name one of spec.networks", net)
		}
	}
	for _, net := range slices.Sorted(mapKeys(spec.Addresses)) {
		field := yamlpos.ChildPath("spec.addresses", net)
		if !slices.Contains(spec.Networks, net) {
			r.Errorf(field, "the service does not join network %q: addresses must name one of spec.networks", net)
			continue
		}
		if !oneReplica(field, "a fixed address is") {
			continue
		}
		var n *manifest.Network
		if d := first[manifest.KindNetwork+"/"+net]; d != nil {
			n = &d.network
		}
		a := spec.Addresses[net]
		for _, fam := range []struct{ key, value string }{{"ipv4", a.IPv4}, {"ipv6", a.IPv6}} {
			if fam.value != "" {
				checkAddress(r, field+"."+fam.key, net, n, fam.value, fam.key == "ipv4", o.name, used)
			}
		}
	}
}

// checkAddress checks one fixed address.
func checkAddress(r yamlpos.Reporter, field, net string, n *manifest.Network, value string, v4 bool, service string, used map[string]string) {
	ip, err := netip.ParseAddr(value)
	if err != nil || ip.Is4() != v4 || ip.Zone() != "" {
		r.Errorf(field, "%q is not an IP%s address", value, map[bool]string{true: "v4", false: "v6"}[v4])
		return
	}
	subnet := ""
	if n != nil {
		subnet = map[bool]string{true: n.Spec.Subnet, false: n.Spec.SubnetV6}[v4]
	}
	switch {
	case n == nil || n.Spec.External:
		r.Errorf(field, "network %q is not a Network of this app with a declared subnet", net)
		return
	case subnet == "":
		r.Errorf(field, "network %q declares no %s: declare one, so that the address is the app's to give", net, map[bool]string{true: "spec.subnet", false: "spec.subnetV6"}[v4])
		return
	}
	gateway := ""
	if v4 {
		gateway = n.Spec.Gateway
	}
	if why := manifest.AddressProblem(subnet, gateway, net, ip); why != "" {
		r.Errorf(field, "%s", why)
		return
	}
	k := net + " " + ip.String()
	if prev, taken := used[k]; taken {
		r.Errorf(field, "address %s on network %q is already service %q's: each address belongs to one service", ip, net, prev)
		return
	}
	used[k] = service
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
