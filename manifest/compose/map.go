package compose

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// composeMapper turns a compose-go project into an App.
type composeMapper struct {
	*composeLoad
	p        *types.Project
	svcNames map[string]string // compose service name -> model name
	netNames map[string]string
	volNames map[string]string
	content  map[string]*manifest.RepoTree
	// secretData are the values of secrets from the environment, by
	// digest (App.SecretData).
	secretData map[string][]byte
	services   []*serviceMap
	reported   map[string]bool // top-level files whose problems are reported
}

func (l *composeLoad) mapProject(p *types.Project) (*manifest.App, []manifest.Job) {
	m := &composeMapper{
		composeLoad: l, p: p,
		content: map[string]*manifest.RepoTree{},
	}
	m.checkProjectName()
	m.refuseTopLevel()
	m.svcNames = m.mapNames("services", slices.Sorted(mapKeys(p.Services)), "service")
	m.netNames = m.mapNames("networks", slices.Sorted(mapKeys(p.Networks)), "network")
	m.volNames = m.mapNames("volumes", slices.Sorted(mapKeys(p.Volumes)), "volume")
	a := &manifest.App{Name: l.app, Format: manifest.FormatCompose, Services: []manifest.Service{}, Networks: []manifest.Network{}, Volumes: []manifest.Volume{}}
	a.Networks = m.mapNetworks()
	a.Volumes = m.mapVolumes()
	m.checkSecretsAndConfigs()
	for _, name := range slices.Sorted(mapKeys(p.Services)) {
		s := p.Services[name]
		sm := newServiceMap(m, name, &s)
		sm.mapService()
		m.services = append(m.services, sm)
	}
	m.checkAcross()
	m.checkJobs()
	usesDefault := false
	for _, sm := range m.services {
		a.Services = append(a.Services, sm.service())
		usesDefault = usesDefault || slices.Contains(sm.spec.Networks, manifest.DefaultNetwork)
	}
	if usesDefault && a.Network(manifest.DefaultNetwork) == nil {
		spec := manifest.NetworkSpec{Driver: manifest.DefaultNetworkDriver}
		a.Networks = append(a.Networks, manifest.Network{Name: manifest.DefaultNetwork, Spec: spec, Hash: manifest.HashNetwork(nil, spec), Implicit: true})
	}
	m.checkNetworkUse(a)
	m.checkDockerNames(a)
	a.Release = m.mapRelease()
	slices.SortFunc(a.Services, func(x, y manifest.Service) int { return strings.Compare(x.Name, y.Name) })
	slices.SortFunc(a.Networks, func(x, y manifest.Network) int { return strings.Compare(x.Name, y.Name) })
	slices.SortFunc(a.Volumes, func(x, y manifest.Volume) int { return strings.Compare(x.Name, y.Name) })
	if len(m.content) > 0 {
		a.Content = m.content
	}
	if len(m.secretData) > 0 {
		a.SecretData = m.secretData
	}
	return a, m.jobs()
}

// jobs are the services x-driftless.job makes jobs, to be taken out of the
// services once they are checked and resolved (see manifest.TakeJobs).
func (m *composeMapper) jobs() []manifest.Job {
	var out []manifest.Job
	for _, sm := range m.services {
		if sm.job != nil {
			out = append(out, *sm.job)
		}
	}
	return out
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

// checkProjectName: the compose project name is not the app name. A
// different one is accepted and ignored, with a warning.
func (m *composeMapper) checkProjectName() {
	f, _, v, ok := m.ix.find("name")
	if !ok || v == nil || v.Kind != yaml.ScalarNode {
		return
	}
	name, _, err := m.in.Substitute(v.Value)
	if err != nil || name == m.app {
		return
	}
	m.warnings.Add(manifest.Position{File: f.display, Line: v.Line, Column: v.Column}, "name",
		"the compose project name %q is ignored: this app is %q (containers are named %s-<service>-<slot>)", name, m.app, m.app)
}

// refuseTopLevel refuses top-level sections that have no counterpart.
func (m *composeMapper) refuseTopLevel() {
	if len(m.p.Jobs) > 0 || len(m.p.DisabledJobs) > 0 {
		m.errs.Add(m.ix.keyAt("jobs"), "jobs", "are not supported: make a service a job with x-driftless.job (see docs/releases.md)")
	}
	if len(m.p.Models) > 0 {
		m.errs.Add(m.ix.keyAt("models"), "models", "AI models are not supported")
	}
	if m.ix.declared("version") {
		m.warnings.Add(m.ix.at("version"), "version", "is obsolete and ignored, as in docker compose")
	}
}

// dnsLabel maps a compose name onto driftless's names: lower case, '_' and
// '.' (and anything else a DNS label cannot hold) become '-', with no '-'
// at either end.
func dnsLabel(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b), "-")
}

// mapNames maps the names of one section, reporting names that cannot be
// mapped and collisions after mapping.
func (m *composeMapper) mapNames(section string, names []string, what string) map[string]string {
	out := map[string]string{}
	taken := map[string]string{}
	for _, n := range names {
		mapped := dnsLabel(n)
		field := yamlpos.ChildPath(section, n)
		if !manifest.ValidObjectName(mapped) {
			m.errs.Add(m.ix.firstKeyAt(field), field, "%s name %q cannot be made a DNS label (lowercase letters, digits and '-', with at least one letter, at most 63 characters): rename it", what, n)
			continue
		}
		if prev, dup := taken[mapped]; dup {
			m.errs.Add(m.ix.firstKeyAt(field), field, "%s names %q and %q both become %q: rename one of them", what, prev, n, mapped)
			continue
		}
		taken[mapped] = n
		out[n] = mapped
	}
	return out
}

// refuseReserved refuses labels that would forge driftless's own.
func (m *composeMapper) refuseReserved(field string, labels map[string]string) {
	for _, k := range sortedKeys(labels) {
		if strings.HasPrefix(k, manifest.ReservedLabelPrefix) {
			m.errs.Add(m.ix.at(yamlpos.ChildPath(field, k)), yamlpos.ChildPath(field, k), "the label prefix %q is reserved for driftless", manifest.ReservedLabelPrefix)
		}
	}
}

func (m *composeMapper) mapNetworks() []manifest.Network {
	out := []manifest.Network{}
	for _, key := range slices.Sorted(mapKeys(m.p.Networks)) {
		name, ok := m.netNames[key]
		base := yamlpos.ChildPath("networks", key)
		if !ok || (key == manifest.DefaultNetwork && !m.ix.declared(base)) {
			continue // the implicit default network, added if used
		}
		n := m.p.Networks[key]
		spec := m.networkSpec(base, n)
		labels := copyMap(n.Labels)
		m.refuseReserved(base+".labels", labels)
		out = append(out, manifest.Network{Name: name, Labels: labels, Spec: spec, Hash: manifest.HashNetwork(labels, spec), Source: m.ix.firstKeyAt(base)})
	}
	return out
}

func (m *composeMapper) networkSpec(base string, n types.NetworkConfig) manifest.NetworkSpec {
	if n.External {
		return manifest.NetworkSpec{Driver: manifest.DefaultNetworkDriver, External: true, ExternalName: n.Name}
	}
	subnet, subnetV6, v4cfg := m.composeSubnet(base, n.Ipam, n.EnableIPv6 != nil && *n.EnableIPv6)
	if n.EnableIPv4 != nil && !*n.EnableIPv4 {
		m.errs.Add(m.ix.at(base+".enable_ipv4"), base+".enable_ipv4", "an IPv6-only network is not supported yet")
	}
	spec := manifest.NetworkSpec{
		Driver:     orDefaultString(n.Driver, manifest.DefaultNetworkDriver),
		Internal:   n.Internal,
		Attachable: n.Attachable,
		EnableIPv6: n.EnableIPv6 != nil && *n.EnableIPv6,
		DriverOpts: copyMap(n.DriverOpts),
		Subnet:     subnet,
		SubnetV6:   subnetV6,
		Gateway:    v4cfg.Gateway,
		IPRange:    v4cfg.IPRange,
		Name:       m.givenName(base, "network", n.Name),
	}
	if !manifest.ValidDriverName(spec.Driver) {
		m.errs.Add(m.ix.at(base+".driver"), base+".driver", "invalid driver name %q", spec.Driver)
	}
	return spec
}

// composeSubnet maps ipam: one config entry with an IPv4 subnet (what
// compose users declare to avoid Docker's default pools, and to give
// fixed addresses from), and, on a network with enable_ipv6, one with an
// IPv6 subnet. The IPv4 entry's gateway and ip_range are mapped; the
// IPv6 entry's, auxiliary addresses and IPAM drivers are not supported yet.
func (m *composeMapper) composeSubnet(base string, ipam types.IPAMConfig, ipv6 bool) (v4, v6 string, v4cfg types.IPAMPool) {
	p := base + ".ipam"
	if ipam.Driver != "" && ipam.Driver != "default" {
		m.errs.Add(m.ix.at(p+".driver"), p+".driver", "IPAM drivers other than default are not supported yet")
	}
	if len(ipam.Options) > 0 {
		m.errs.Add(m.ix.keyAt(p+".options"), p+".options", "is not supported yet")
	}
	for i, c := range ipam.Config {
		if c == nil {
			continue
		}
		cp := yamlpos.IndexPath(p+".config", i)
		if len(c.AuxiliaryAddresses) > 0 {
			m.errs.Add(m.ix.keyAt(cp+".aux_addresses"), cp+".aux_addresses", "is not supported yet: give the addresses to services with ipv4_address")
		}
		if c.Subnet == "" {
			m.errs.Add(m.ix.keyAt(cp), cp+".subnet", "is required")
			continue
		}
		if pr, err := netip.ParsePrefix(c.Subnet); err == nil && pr.Addr().Is6() && !pr.Addr().Is4In6() {
			m.checkSubnetV6(cp, c, ipv6, v6 != "")
			v6 = c.Subnet
			continue
		}
		if v4 != "" {
			m.errs.Add(m.ix.keyAt(cp), cp, "only one IPv4 subnet per network is supported yet")
			continue
		}
		m.checkSubnetV4(cp, c)
		v4, v4cfg = c.Subnet, *c
	}
	// An IPv6 subnet alone: the IPv4 one comes from driftless's address
	// pool, as Docker picks one from its own for docker compose.
	return v4, v6, v4cfg
}

// checkSubnetV4 checks an ipam config entry with an IPv4 subnet, its
// gateway and its range.
func (m *composeMapper) checkSubnetV4(cp string, c *types.IPAMPool) {
	if err := manifest.CheckSubnet(c.Subnet); err != nil {
		m.errs.Add(m.ix.at(cp+".subnet"), cp+".subnet", "%v", err)
	}
	gwErr, rangeErr := manifest.CheckGateway(c.Subnet, c.Gateway, c.IPRange)
	if gwErr != nil {
		m.errs.Add(m.ix.at(cp+".gateway"), cp+".gateway", "%v", gwErr)
	}
	if rangeErr != nil {
		m.errs.Add(m.ix.at(cp+".ip_range"), cp+".ip_range", "%v", rangeErr)
	}
}

// checkSubnetV6 checks an ipam config entry with an IPv6 subnet.
func (m *composeMapper) checkSubnetV6(cp string, c *types.IPAMPool, ipv6, second bool) {
	switch {
	case !ipv6:
		m.errs.Add(m.ix.at(cp+".subnet"), cp+".subnet", "an IPv6 subnet needs enable_ipv6: true on the network")
	case second:
		m.errs.Add(m.ix.keyAt(cp), cp, "only one IPv6 subnet per network is supported yet")
	default:
		if err := manifest.CheckSubnetV6(c.Subnet); err != nil {
			m.errs.Add(m.ix.at(cp+".subnet"), cp+".subnet", "%v", err)
		}
	}
	if (c.Gateway != "" && !firstAddress(c.Subnet, c.Gateway)) || c.IPRange != "" {
		m.errs.Add(m.ix.keyAt(cp), cp, "gateway and ip_range of an IPv6 subnet are not supported yet: Docker picks the gateway (the subnet's first address) and assigns from the whole subnet")
	}
}

// firstAddress says whether gw is the first address of subnet, the
// gateway Docker picks when none is given: declaring it changes nothing.
func firstAddress(subnet, gw string) bool {
	p, err := netip.ParsePrefix(subnet)
	a, err2 := netip.ParseAddr(gw)
	return err == nil && err2 == nil && p.Masked().Addr().Next() == a
}

func (m *composeMapper) mapVolumes() []manifest.Volume {
	out := []manifest.Volume{}
	for _, key := range slices.Sorted(mapKeys(m.p.Volumes)) {
		name, ok := m.volNames[key]
		if !ok {
			continue
		}
		base := yamlpos.ChildPath("volumes", key)
		v := m.p.Volumes[key]
		var spec manifest.VolumeSpec
		switch {
		case bool(v.External):
			spec = manifest.VolumeSpec{Driver: manifest.DefaultVolumeDriver, External: true, ExternalName: v.Name}
		default:
			spec = manifest.VolumeSpec{Driver: orDefaultString(v.Driver, manifest.DefaultVolumeDriver), DriverOpts: copyMap(v.DriverOpts), Name: m.givenName(base, "volume", v.Name)}
			if !manifest.ValidDriverName(spec.Driver) {
				m.errs.Add(m.ix.at(base+".driver"), base+".driver", "invalid driver name %q", spec.Driver)
			}
		}
		labels := copyMap(v.Labels)
		m.refuseReserved(base+".labels", labels)
		out = append(out, manifest.Volume{Name: name, ComposeName: key, Labels: labels, Spec: spec, Hash: manifest.HashVolume(labels, spec), Source: m.ix.firstKeyAt(base),
			Fields: yamlpos.VolumeFields(m.ix.at, base+".driver", base+".driver_opts", spec.DriverOpts)})
	}
	return out
}

// checkSecretsAndConfigs checks the top-level secrets and configs: only
// files of the repository can be mounted.
func (m *composeMapper) checkSecretsAndConfigs() {
	for _, key := range slices.Sorted(mapKeys(m.p.Secrets)) {
		m.checkFileObject("secrets", key, types.FileObjectConfig(m.p.Secrets[key]), true)
	}
	for _, key := range slices.Sorted(mapKeys(m.p.Configs)) {
		m.checkFileObject("configs", key, types.FileObjectConfig(m.p.Configs[key]), false)
	}
}

func (m *composeMapper) checkFileObject(section, key string, o types.FileObjectConfig, secret bool) {
	base := yamlpos.ChildPath(section, key)
	refuse := func(attr, format string, args ...any) {
		m.errs.Add(m.ix.at(base+"."+attr), base+"."+attr, format, args...)
	}
	switch {
	case bool(o.External):
		refuse("external", "external %s are swarm objects and not supported: use file:", section)
	case o.Environment != "" || o.Content != "":
		// A config's content inline or from the project environment
		// (mounted by inlineConfig), or a secret from the environment
		// (addEnvSecret); each reports an unset variable. compose's schema
		// has no content for a secret.
	case o.File == "":
		m.errs.Add(m.ix.keyAt(base), base, "needs file: (a file of the repository)")
	}
	if o.Driver != "" || len(o.DriverOpts) > 0 {
		refuse("driver", "%s drivers are swarm features and not supported", section)
	}
	if o.TemplateDriver != "" {
		refuse("template_driver", "template drivers are swarm features and not supported")
	}
	if len(o.Labels) > 0 {
		refuse("labels", "labels on %s are swarm features and not supported", section)
	}
	if x, ok := o.Extensions["x-driftless"]; ok {
		m, _ := x.(map[string]any)
		_, isBool := m["allowPlaintext"].(bool)
		if !secret || len(m) != 1 || !isBool {
			refuse("x-driftless", "the only setting here is allowPlaintext: true (on a secret: deliver its file as it is, unencrypted)")
		}
	}
}
