package manifest

import (
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"
)

// composeMapper turns a compose-go project into an App.
type composeMapper struct {
	*composeLoad
	p        *types.Project
	svcNames map[string]string // compose service name -> model name
	netNames map[string]string
	volNames map[string]string
	content  map[string]*RepoTree
	services []*serviceMap
	reported map[string]bool // top-level files whose problems are reported
}

func (l *composeLoad) mapProject(p *types.Project) *App {
	m := &composeMapper{
		composeLoad: l, p: p,
		content: map[string]*RepoTree{},
	}
	m.checkProjectName()
	m.refuseTopLevel()
	m.svcNames = m.mapNames("services", slices.Sorted(mapKeys(p.Services)), "service")
	m.netNames = m.mapNames("networks", slices.Sorted(mapKeys(p.Networks)), "network")
	m.volNames = m.mapNames("volumes", slices.Sorted(mapKeys(p.Volumes)), "volume")
	a := &App{Name: l.app, Format: FormatCompose, Services: []Service{}, Networks: []Network{}, Volumes: []Volume{}}
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
	usesDefault := false
	for _, sm := range m.services {
		a.Services = append(a.Services, sm.service())
		usesDefault = usesDefault || slices.Contains(sm.spec.Networks, DefaultNetwork)
	}
	if usesDefault && a.Network(DefaultNetwork) == nil {
		spec := NetworkSpec{Driver: defaultNetworkDriver}
		a.Networks = append(a.Networks, Network{Name: DefaultNetwork, Spec: spec, Hash: HashNetwork(nil, spec), Implicit: true})
	}
	slices.SortFunc(a.Services, func(x, y Service) int { return strings.Compare(x.Name, y.Name) })
	slices.SortFunc(a.Networks, func(x, y Network) int { return strings.Compare(x.Name, y.Name) })
	slices.SortFunc(a.Volumes, func(x, y Volume) int { return strings.Compare(x.Name, y.Name) })
	if len(m.content) > 0 {
		a.Content = m.content
	}
	return a
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
	name, _, err := m.in.substitute(v.Value)
	if err != nil || name == m.app {
		return
	}
	m.warnings.add(Position{File: f.display, Line: v.Line, Column: v.Column}, "name",
		"the compose project name %q is ignored: this app is %q (containers are named %s-<service>-<slot>)", name, m.app, m.app)
}

// refuseTopLevel refuses top-level sections that have no counterpart.
func (m *composeMapper) refuseTopLevel() {
	if len(m.p.Jobs) > 0 || len(m.p.DisabledJobs) > 0 {
		m.errs.add(m.ix.keyAt("jobs"), "jobs", "are not supported yet: run them as services, or outside driftless")
	}
	if len(m.p.Models) > 0 {
		m.errs.add(m.ix.keyAt("models"), "models", "AI models are not supported")
	}
	if m.ix.declared("version") {
		m.warnings.add(m.ix.at("version"), "version", "is obsolete and ignored, as in docker compose")
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
		field := childPath(section, n)
		if !ValidName(mapped) {
			m.errs.add(m.ix.firstKeyAt(field), field, "%s name %q cannot be made a DNS label (lowercase letters, digits and '-', starting with a letter, at most 63 characters): rename it", what, n)
			continue
		}
		if prev, dup := taken[mapped]; dup {
			m.errs.add(m.ix.firstKeyAt(field), field, "%s names %q and %q both become %q: rename one of them", what, prev, n, mapped)
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
		if strings.HasPrefix(k, reservedLabelPrefix) {
			m.errs.add(m.ix.at(childPath(field, k)), childPath(field, k), "the label prefix %q is reserved for driftless", reservedLabelPrefix)
		}
	}
}

func (m *composeMapper) mapNetworks() []Network {
	out := []Network{}
	for _, key := range slices.Sorted(mapKeys(m.p.Networks)) {
		name, ok := m.netNames[key]
		base := childPath("networks", key)
		if !ok || (key == DefaultNetwork && !m.ix.declared(base)) {
			continue // the implicit default network, added if used
		}
		n := m.p.Networks[key]
		spec := m.networkSpec(base, n)
		labels := copyMap(n.Labels)
		m.refuseReserved(base+".labels", labels)
		out = append(out, Network{Name: name, Labels: labels, Spec: spec, Hash: HashNetwork(labels, spec), Source: m.ix.firstKeyAt(base)})
	}
	return out
}

func (m *composeMapper) networkSpec(base string, n types.NetworkConfig) NetworkSpec {
	if n.External {
		return NetworkSpec{Driver: defaultNetworkDriver, External: true, ExternalName: n.Name}
	}
	if m.ix.declared(base + ".name") {
		m.errs.add(m.ix.at(base+".name"), base+".name", "driftless names the app's networks <app>-<name> (here %q); to use an existing network, add external: true", ObjectName(m.app, m.netNames[strings.TrimPrefix(base, "networks.")]))
	}
	subnet := m.composeSubnet(base, n.Ipam)
	if n.EnableIPv4 != nil && !*n.EnableIPv4 {
		m.errs.add(m.ix.at(base+".enable_ipv4"), base+".enable_ipv4", "an IPv6-only network is not supported yet")
	}
	spec := NetworkSpec{
		Driver:     orDefaultString(n.Driver, defaultNetworkDriver),
		Internal:   n.Internal,
		Attachable: n.Attachable,
		EnableIPv6: n.EnableIPv6 != nil && *n.EnableIPv6,
		DriverOpts: copyMap(n.DriverOpts),
		Subnet:     subnet,
	}
	if !ValidDriverName(spec.Driver) {
		m.errs.add(m.ix.at(base+".driver"), base+".driver", "invalid driver name %q", spec.Driver)
	}
	return spec
}

// composeSubnet maps ipam: one config entry with an IPv4 subnet is kept
// (what compose users declare to avoid Docker's default pools); gateways,
// ranges and IPAM drivers are not supported yet.
func (m *composeMapper) composeSubnet(base string, ipam types.IPAMConfig) string {
	p := base + ".ipam"
	if ipam.Driver != "" && ipam.Driver != "default" {
		m.errs.add(m.ix.at(p+".driver"), p+".driver", "IPAM drivers other than default are not supported yet")
	}
	if len(ipam.Options) > 0 {
		m.errs.add(m.ix.keyAt(p+".options"), p+".options", "is not supported yet")
	}
	if len(ipam.Config) > 1 {
		m.errs.add(m.ix.keyAt(p+".config"), p+".config", "only one subnet per network is supported yet")
	}
	if len(ipam.Config) == 0 || ipam.Config[0] == nil {
		return ""
	}
	c, cp := ipam.Config[0], indexPath(p+".config", 0)
	if c.Gateway != "" || c.IPRange != "" || len(c.AuxiliaryAddresses) > 0 {
		m.errs.add(m.ix.keyAt(cp), cp, "only subnet is supported yet: Docker picks the gateway and assigns addresses from the whole subnet")
	}
	if c.Subnet == "" {
		m.errs.add(m.ix.keyAt(cp), cp+".subnet", "is required")
	}
	if err := CheckSubnet(c.Subnet); err != nil {
		m.errs.add(m.ix.at(cp+".subnet"), cp+".subnet", "%v", err)
	}
	return c.Subnet
}

func (m *composeMapper) mapVolumes() []Volume {
	out := []Volume{}
	for _, key := range slices.Sorted(mapKeys(m.p.Volumes)) {
		name, ok := m.volNames[key]
		if !ok {
			continue
		}
		base := childPath("volumes", key)
		v := m.p.Volumes[key]
		var spec VolumeSpec
		switch {
		case bool(v.External):
			spec = VolumeSpec{Driver: defaultVolumeDriver, External: true, ExternalName: v.Name}
		default:
			if m.ix.declared(base + ".name") {
				m.errs.add(m.ix.at(base+".name"), base+".name", "driftless names the app's volumes <app>-<name> (here %q); to use an existing volume, add external: true", ObjectName(m.app, name))
			}
			spec = VolumeSpec{Driver: orDefaultString(v.Driver, defaultVolumeDriver), DriverOpts: copyMap(v.DriverOpts)}
			if !ValidDriverName(spec.Driver) {
				m.errs.add(m.ix.at(base+".driver"), base+".driver", "invalid driver name %q", spec.Driver)
			}
		}
		labels := copyMap(v.Labels)
		m.refuseReserved(base+".labels", labels)
		out = append(out, Volume{Name: name, ComposeName: key, Labels: labels, Spec: spec, Hash: HashVolume(labels, spec), Source: m.ix.firstKeyAt(base),
			Fields: volumeFields(m.ix.at, base+".driver", base+".driver_opts", spec.DriverOpts)})
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
	base := childPath(section, key)
	refuse := func(attr, format string, args ...any) {
		m.errs.add(m.ix.at(base+"."+attr), base+"."+attr, format, args...)
	}
	switch {
	case bool(o.External):
		refuse("external", "external %s are swarm objects and not supported: use file:", section)
	case o.Environment != "" && secret:
		refuse("environment", "secrets from the environment are not supported yet: put the secret in a file of the repository and use file:, or pass it as environment with x-driftless.secretEnv")
	case o.Environment != "":
		refuse("environment", "configs from the environment are not supported yet: put the content in a file of the repository and use file:")
	case o.Content != "":
		refuse("content", "inline content is not supported yet: put it in a file of the repository and use file:")
	case o.File == "":
		m.errs.add(m.ix.keyAt(base), base, "needs file: (a file of the repository)")
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
