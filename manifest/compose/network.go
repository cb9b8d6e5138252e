package compose

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// This file maps what compose says about how services reach each other
// beyond joining networks: the Docker names a file gives its networks and
// volumes (name:), fixed addresses (ipv4_address, ipv6_address), and a
// shared network namespace (network_mode: service:NAME).

// givenName is the Docker name the file gives a network or volume with
// name:, or "" when it gives none (compose-go fills in <project>_<key>
// then, which driftless does not use).
func (m *composeMapper) givenName(base, kind, name string) string {
	if !m.ix.declared(base + ".name") {
		return ""
	}
	if !manifest.ValidDockerName(name) {
		m.errs.Add(m.ix.at(base+".name"), base+".name", "invalid Docker %s name %q: letters, digits, '_', '.' and '-', starting with a letter or digit", kind, name)
		return ""
	}
	return name
}

// checkDockerNames refuses two networks (or two volumes) of the app that
// would have one Docker name: a name the file gives can equal another's
// <app>-<name>, or be given twice.
func (m *composeMapper) checkDockerNames(a *manifest.App) {
	nets := map[string]string{}
	for i := range a.Networks {
		n := &a.Networks[i]
		if n.Spec.External || n.Implicit {
			continue
		}
		key := m.composeKey(m.netNames, n.Name)
		m.claimName(nets, "network", n.DockerName(a.Name), key, yamlpos.ChildPath("networks", key))
	}
	vols := map[string]string{}
	for i := range a.Volumes {
		v := &a.Volumes[i]
		if v.Spec.External {
			continue
		}
		m.claimName(vols, "volume", v.DockerName(a.Name), v.DisplayName(), yamlpos.ChildPath("volumes", v.DisplayName()))
	}
}

// claimName records that key's object has Docker name docker, refusing a
// second one.
func (m *composeMapper) claimName(taken map[string]string, kind, docker, key, base string) {
	field := base
	if m.ix.declared(base + ".name") {
		field = base + ".name"
	}
	if prev, ok := taken[docker]; ok {
		m.errs.Add(m.ix.at(field), field, "%ss %q and %q would both be named %q on the engine: give one of them another name:", kind, prev, key, docker)
		return
	}
	taken[docker] = key
}

// composeKey is the compose key a model name was mapped from.
func (m *composeMapper) composeKey(names map[string]string, model string) string {
	for k, v := range names {
		if v == model {
			return k
		}
	}
	return model
}

// mapAddresses keeps a service's fixed addresses on one network; they are
// checked against the network's subnet once every network is mapped
// (checkNetworkUse).
func (sm *serviceMap) mapAddresses(attr, network string, cfg *types.ServiceNetworkConfig) {
	if cfg.Ipv4Address == "" && cfg.Ipv6Address == "" {
		return
	}
	if sm.spec.Addresses == nil {
		sm.spec.Addresses = map[string]manifest.Address{}
	}
	sm.spec.Addresses[network] = manifest.Address{IPv4: cfg.Ipv4Address, IPv6: cfg.Ipv6Address}
	if sm.addrFrom == nil {
		sm.addrFrom = map[string]string{}
	}
	sm.addrFrom[network] = attr
}

// byContainerName reads container:NAME, where NAME is the container_name
// of a service of this file, as service:SERVICE (with ":ro" or ":rw" kept
// after it): compose resolves the name to that service's container, and
// driftless names containers itself (container_name is an alias), so the
// service is what the file means. Any other reference is returned as is.
func (m *composeMapper) byContainerName(ref string) (string, bool) {
	rest, ok := strings.CutPrefix(ref, types.ContainerPrefix)
	if !ok {
		return ref, false
	}
	name, mode, _ := strings.Cut(rest, ":")
	for _, key := range slices.Sorted(mapKeys(m.p.Services)) {
		if m.p.Services[key].ContainerName != name || name == "" {
			continue
		}
		if mode != "" {
			key += ":" + mode
		}
		return types.ServicePrefix + key, true
	}
	return ref, false
}

// networkNamed finds the declared network a network_mode of a bare name
// means. Docker reads such a mode as the name of a network on the engine,
// so it is matched against the name compose gives each network there: an
// external network's (its key, or name:), or a name: declared; not the key
// of one of the app's own, which compose prefixes with the project.
func (m *composeMapper) networkNamed(name string) (string, bool) {
	for _, key := range slices.Sorted(mapKeys(m.p.Networks)) {
		if m.p.Networks[key].Name == name {
			return key, true
		}
	}
	return "", false
}

// mapNetworkService maps network_mode: service:NAME: the replica joins the
// network namespace of NAME's one replica, and starts after it (the
// dependency compose adds, condition started).
func (sm *serviceMap) mapNetworkService(mode string) {
	target := strings.TrimPrefix(mode, types.ServicePrefix)
	name, active := sm.m.svcNames[target]
	_, exists := sm.m.p.Services[target]
	switch {
	case target == sm.cname:
		sm.refuse("network_mode", "a service cannot share its own network namespace")
		return
	case !exists:
		sm.refuseMissingService("network_mode", target, "network_mode: service:NAME names a service of this file")
		return
	case !active:
		return // its name was refused
	}
	sm.spec.NetworkMode = manifest.NetworkServicePrefix + name
	sm.record("networkMode", "network_mode")
	sm.netTarget = target
}

// addNetworkDependency adds the dependency on the namespace's owner, as
// compose does, unless the file lists it.
func (sm *serviceMap) addNetworkDependency() {
	if target := sm.spec.NetworkService(); target != "" {
		sm.addImplicitDependency(target, "network_mode")
	}
}

// addImplicitDependency adds a dependency compose adds (condition
// started), located at attr, unless depends_on lists it.
func (sm *serviceMap) addImplicitDependency(target, attr string) {
	if slices.Contains(sm.spec.DependsOn, target) {
		return
	}
	sm.spec.DependsOn = append(sm.spec.DependsOn, target)
	if sm.spec.DependsOnCondition == nil {
		sm.spec.DependsOnCondition = map[string]string{}
	}
	sm.spec.DependsOnCondition[target] = manifest.DependsStarted
	sm.depFrom[target] = sm.path(attr)
}

// refuseInSharedNamespace refuses what Docker refuses on a container that
// joins another's network namespace: the namespace, its ports and its
// name resolution are the owner's.
func (sm *serviceMap) refuseInSharedNamespace() {
	target := sm.netTarget
	if target == "" {
		return
	}
	owner := fmt.Sprintf("service %q", target)
	checks := []struct {
		set       bool
		attr, why string
	}{
		{len(sm.s.Ports) > 0, "ports", "publish them from " + owner + ", whose network namespace this service shares (Docker refuses ports here)"},
		{len(sm.s.Expose) > 0, "expose", "ports of a shared network namespace are exposed by its owner, " + owner + " (Docker refuses expose here)"},
		{sm.s.Hostname != "", "hostname", "the host name belongs to the network namespace's owner, " + owner + " (Docker refuses it here)"},
		{len(sm.s.DNS) > 0, "dns", "name resolution belongs to the network namespace's owner, " + owner + " (Docker refuses dns here)"},
		{len(sm.s.ExtraHosts) > 0, "extra_hosts", "/etc/hosts belongs to the network namespace's owner, " + owner + " (Docker refuses extra_hosts here)"},
		{sm.s.MacAddress != "", "mac_address", "the MAC address belongs to the network namespace's owner, " + owner},
	}
	for _, c := range checks {
		if c.set {
			sm.refuse(c.attr, "%s", c.why)
		}
	}
	if r := sm.spec.Readiness; r != nil && (r.HTTPGet != nil || r.TCPSocket != nil) {
		sm.refuse("x-driftless.readiness", "httpGet and tcpSocket probes need the container's own network address, which network_mode: service:%s does not give: use exec readiness or a healthcheck", target)
	}
}

// checkNetworkUse runs the checks of fixed addresses and shared network
// namespaces that need every service and network mapped.
func (m *composeMapper) checkNetworkUse(a *manifest.App) {
	byName := map[string]*serviceMap{}
	for _, sm := range m.services {
		if sm.ok {
			byName[sm.name] = sm
		}
	}
	used := map[string]string{} // "<network> <address>" -> the service that has it
	for _, sm := range m.services {
		if !sm.ok {
			continue
		}
		for _, net := range slices.Sorted(mapKeys(sm.spec.Addresses)) {
			sm.checkAddress(a, net, used)
		}
		sm.checkSharedNamespace(byName)
	}
}

// checkAddress checks a service's fixed addresses on one network: inside
// the subnet the file declares for it, not Docker's (network, gateway,
// broadcast), unique in the app, on a service with one replica whose
// rolling update stops the old replica first.
func (sm *serviceMap) checkAddress(a *manifest.App, net string, used map[string]string) {
	attr := sm.addrFrom[net]
	addr := sm.spec.Addresses[net]
	switch spec := sm.spec; {
	case sm.m.opts.Target == manifest.TargetSwarm:
		sm.refuse(attr, "Swarm gives each task its address: fixed addresses are for apps on one engine")
		return
	case spec.Replicas != 1:
		sm.refuse(attr, "a fixed address belongs to one container, and the service has %d replicas: set replicas to 1, or reach the service by name", spec.Replicas)
		return
	case spec.Update.Strategy == manifest.StrategyRolling && spec.Update.MaxSurge > 0:
		sm.refuse(attr, "the address would be taken twice when a rolling update starts the new replica before stopping the old one: use deploy.update_config.order: stop-first (compose's default)")
		return
	}
	n := a.Network(net)
	key := sm.m.composeKey(sm.m.netNames, net)
	for _, fam := range []struct {
		key, value, subnet string
		v4                 bool
	}{{"ipv4_address", addr.IPv4, n.Spec.Subnet, true}, {"ipv6_address", addr.IPv6, n.Spec.SubnetV6, false}} {
		if fam.value == "" {
			continue
		}
		field := attr + "." + fam.key
		ip, err := netip.ParseAddr(fam.value)
		if err != nil || ip.Is4() != fam.v4 || ip.Zone() != "" {
			sm.refuse(field, "%q is not an IPv%s address", fam.value, map[bool]string{true: "4", false: "6"}[fam.v4])
			continue
		}
		if why := addressOutside(n, key, ip); why != "" {
			sm.refuse(field, "%s", why)
			continue
		}
		k := net + " " + ip.String()
		if prev, taken := used[k]; taken {
			sm.refuse(field, "address %s on network %q is already service %q's: each address belongs to one service", ip, key, prev)
			continue
		}
		used[k] = sm.cname
	}
}

// addressOutside says why ip cannot be a fixed address on the network, or
// "".
func addressOutside(n *manifest.Network, key string, ip netip.Addr) string {
	subnet := n.Spec.Subnet
	if ip.Is6() {
		subnet = n.Spec.SubnetV6
	}
	switch {
	case n.Spec.External:
		return fmt.Sprintf("network %q is external: its subnet is not this file's to give addresses from", key)
	case subnet == "" && ip.Is4():
		return fmt.Sprintf("network %q declares no subnet: declare one (networks: {%s: {ipam: {config: [{subnet: ...}]}}}), so that the address is the file's to give", key, key)
	case subnet == "":
		return fmt.Sprintf("network %q declares no IPv6 subnet: declare one in its ipam.config, with enable_ipv6: true", key)
	}
	gateway := n.Spec.Gateway
	if ip.Is6() {
		gateway = ""
	}
	return manifest.AddressProblem(subnet, gateway, key, ip)
}

// checkSharedNamespace checks network_mode: service:NAME across services:
// both ends run one replica (the namespace is one container's), and the
// dependent stops its old replica before starting the new one (two
// replicas in one namespace would fight over its ports).
func (sm *serviceMap) checkSharedNamespace(byName map[string]*serviceMap) {
	target := sm.spec.NetworkService()
	if target == "" {
		return
	}
	owner := byName[target]
	switch {
	case sm.spec.Replicas != 1:
		sm.refuse("network_mode", "service:%s shares one container's network namespace, and this service has %d replicas: set replicas to 1", sm.netTarget, sm.spec.Replicas)
	case owner != nil && owner.spec.Replicas != 1:
		sm.refuse("network_mode", "service %q has %d replicas, and a network namespace is one container's: give it one replica", sm.netTarget, owner.spec.Replicas)
	case sm.spec.Update.Strategy == manifest.StrategyRolling && sm.spec.Update.MaxSurge > 0:
		sm.refuse("network_mode", "a rolling update that starts the new replica before stopping the old one would put both in one network namespace, fighting over its ports: use deploy.update_config.order: stop-first (compose's default)")
	}
}

// refuseMissingService refuses a reference to a service the project does
// not have: off by its profiles, or not declared (then with hint).
func (sm *serviceMap) refuseMissingService(attr, target, hint string) {
	if _, off := sm.m.p.DisabledServices[target]; off {
		sm.refuse(attr, "service %q is not part of the app: its profiles are not active", target)
	} else {
		sm.refuse(attr, "service %q is not declared: %s", target, hint)
	}
}
