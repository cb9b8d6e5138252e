package compose

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/distribution/reference"
	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// serviceMap maps one compose service onto a Service.
type serviceMap struct {
	m     *composeMapper
	cname string // the name in the compose file
	name  string // the model name (a DNS label)
	base  string // "services.<cname>"
	s     *types.ServiceConfig
	spec  manifest.ServiceSpec
	ok    bool // the name could be mapped
	// where model entries come from, to locate messages about them
	fields   map[string]manifest.FieldRef
	portPos  map[manifest.Port]origin
	bindFrom map[string]string // mountPath -> compose field
	capFrom  map[string]string // capability -> compose field
	devFrom  map[string]string // containerPath -> compose field
	// devReqFrom: device request (its String) -> compose field
	devReqFrom map[string]string
	depFrom    map[string]string // dependency (model name) -> compose field
	addrFrom   map[string]string // network (model name) of a fixed address -> compose field
	// netTarget is the compose name of the service whose network
	// namespace this one shares (network_mode: service:NAME), or "".
	netTarget string
	// startFirst: the surge comes from update_config's order:
	// start-first, not from x-driftless.update (see settleStartFirst).
	startFirst bool
	labels     map[string]string
	extDoc     *yamlpos.DocCtx // positions inside x-driftless
	// pullPolicy and imageUpdate are the Service's (outside the spec).
	pullPolicy  string
	imageUpdate *manifest.ImageUpdate
	// job: x-driftless.job makes the service a job.
	job *manifest.Job
}

func newServiceMap(m *composeMapper, cname string, s *types.ServiceConfig) *serviceMap {
	name, ok := m.svcNames[cname]
	return &serviceMap{
		m: m, cname: cname, name: name, ok: ok, s: s,
		base:     yamlpos.ChildPath("services", cname),
		fields:   map[string]manifest.FieldRef{},
		portPos:  map[manifest.Port]origin{},
		bindFrom: map[string]string{},
		capFrom:  map[string]string{},
		devFrom:  map[string]string{},
		depFrom:  map[string]string{},
	}
}

// path is the compose field path of attr (dotted, relative to the service).
func (sm *serviceMap) path(attr string) string {
	if attr == "" {
		return sm.base
	}
	return sm.base + "." + attr
}

func (sm *serviceMap) at(attr string) manifest.Position { return sm.m.ix.at(sm.path(attr)) }

func (sm *serviceMap) refuse(attr, format string, args ...any) {
	sm.m.errs.Add(sm.at(attr), sm.path(attr), format, args...)
}

func (sm *serviceMap) refuseAt(pos manifest.Position, field, format string, args ...any) {
	sm.m.errs.Add(pos, field, format, args...)
}

func (sm *serviceMap) warn(attr, format string, args ...any) {
	sm.m.warnings.Add(sm.at(attr), sm.path(attr), format, args...)
}

// record remembers where a model field was written, for policy messages.
func (sm *serviceMap) record(model, attr string) {
	sm.fields[model] = manifest.FieldRef{Pos: sm.at(attr), Field: sm.path(attr)}
}

func (sm *serviceMap) mapService() {
	s := sm.s
	sm.refuseUnmapped()
	sm.spec = manifest.ServiceSpec{
		Image:      s.Image,
		Replicas:   manifest.DefaultReplicas,
		Restart:    manifest.RestartNever, // compose's default restart is "no"
		User:       s.User,
		WorkingDir: s.WorkingDir,
		Hostname:   s.Hostname,
		Domainname: s.DomainName,
		StopSignal: s.StopSignal,
		TTY:        s.Tty,
		StdinOpen:  s.StdinOpen,
		MacAddress: s.MacAddress,
		Privileged: s.Privileged,

		ReadOnlyRootfs:         s.ReadOnly,
		Init:                   s.Init != nil && *s.Init,
		GroupAdd:               slices.Clone(s.GroupAdd),
		DNS:                    slices.Clone(s.DNS),
		DNSSearch:              slices.Clone(s.DNSSearch),
		DNSOptions:             slices.Clone(s.DNSOpts),
		SecurityOpt:            slices.Clone(s.SecurityOpt),
		Sysctls:                copyMap(s.Sysctls),
		ShmSizeBytes:           int64(s.ShmSize),
		StopGracePeriodSeconds: manifest.DefaultStopGrace,
	}
	sm.labels = copyMap(s.Labels)
	sm.m.refuseReserved(sm.path("labels"), sm.labels)
	sm.mapLabelFiles(s.LabelFiles)
	sm.mapImage()
	sm.mapCommand()
	sm.mapEnvironment()
	sm.mapPorts()
	sm.mapNetworking()
	sm.mapVolumes()
	sm.mapFileMounts("secrets", s.Secrets, "/run/secrets/")
	sm.mapFileMounts("configs", configRefs(s.Configs), "/")
	sm.mapTmpfs()
	sm.mapHealthcheck()
	sm.mapHooks()
	sm.mapDependsOn()
	sm.addNetworkDependency()
	sm.mapVolumesFrom()
	sm.mapRestart()
	sm.mapDeploy()
	sm.mapResources()
	sm.mapTuning()
	sm.mapSecurity()
	sm.mapMisc()
	sm.mapExtension()
	sm.refuseInSharedNamespace()
	sm.checkContainerName()
	sm.settleStartFirst()
	sm.spec = manifest.CanonicalService(sm.spec)
	sm.locateFields()
}

func configRefs(c []types.ServiceConfigObjConfig) []types.ServiceSecretConfig {
	out := make([]types.ServiceSecretConfig, len(c))
	for i, x := range c {
		out[i] = types.ServiceSecretConfig(x)
	}
	return out
}

// service is the mapped service.
func (sm *serviceMap) service() manifest.Service {
	return manifest.Service{
		Name:        sm.name,
		Labels:      sm.labels,
		Spec:        sm.spec,
		Hash:        manifest.HashService(nil, sm.labels, sm.spec),
		Source:      sm.m.ix.firstKeyAt(sm.base),
		Fields:      sm.fields,
		ComposeName: sm.cname,
		PullPolicy:  sm.pullPolicy,
		ImageUpdate: sm.imageUpdate,
	}
}

func (sm *serviceMap) mapImage() {
	s := sm.s
	local := s.Build != nil && !remoteBuildContext(s.Build.Context)
	switch {
	case local:
		sm.mapBuild()
	case s.Build != nil:
		sm.remoteBuild()
	}
	switch {
	case s.Image == "" && s.Build == nil:
		sm.m.errs.Add(sm.m.ix.keyAt(sm.base), sm.base, "needs image: or build:")
	case local:
	case s.Image != "":
		if _, err := reference.ParseNormalizedNamed(s.Image); err != nil {
			sm.refuse("image", "invalid image reference %q: %v", s.Image, err)
		}
	}
	policy, refusal := composePullPolicy(s.PullPolicy, s.Build != nil)
	if refusal != "" {
		sm.refuse("pull_policy", "%s", refusal)
	}
	sm.pullPolicy = policy
}

func (sm *serviceMap) mapCommand() {
	s := sm.s
	// An empty command (command: [] or an empty variable) is no command:
	// Docker fills an empty Cmd from the image, as for an unset one, so
	// it is mapped as unset. An empty entrypoint is different: Docker
	// clears the image's, and compose sends it so.
	if s.Entrypoint != nil && len(s.Entrypoint) == 0 {
		sm.spec.ClearEntrypoint = true
		sm.record("clearEntrypoint", "entrypoint")
	}
	if len(s.Command) > 0 {
		sm.spec.Args = slices.Clone([]string(s.Command))
	}
	sm.spec.Command = slices.Clone([]string(s.Entrypoint))
}

// mapPorts maps ports (short and long syntax; ranges expand to one port
// each, as compose does) and expose.
func (sm *serviceMap) mapPorts() {
	origins := sm.portOrigins()
	for i, p := range sm.s.Ports {
		field := yamlpos.IndexPath(sm.path("ports"), i)
		pos := sm.m.ix.item(sm.path("ports"), i)
		if i < len(origins) {
			field, pos = origins[i].field, origins[i].pos
		}
		port, ok := sm.port(p, field, pos)
		if !ok {
			continue
		}
		sm.spec.Ports = append(sm.spec.Ports, port)
		if _, seen := sm.portPos[port]; !seen {
			sm.portPos[port] = origin{field, pos}
		}
	}
	for i, e := range sm.s.Expose {
		field := yamlpos.IndexPath(sm.path("expose"), i)
		pos := sm.m.ix.item(sm.path("expose"), i)
		for _, port := range sm.expose(e, field, pos) {
			if !slices.ContainsFunc(sm.spec.Ports, func(q manifest.Port) bool {
				return q.ContainerPort == port.ContainerPort && q.Protocol == port.Protocol
			}) {
				sm.spec.Ports = append(sm.spec.Ports, port)
			}
		}
	}
}

type origin struct {
	field string
	pos   manifest.Position
}

// portOrigins returns, for each port compose-go produced, the entry of the
// files it came from: a short-syntax range is one entry and several ports.
func (sm *serviceMap) portOrigins() []origin {
	var out []origin
	list := sm.path("ports")
	for i, fn := range sm.m.ix.itemNodes(list) {
		o := origin{field: yamlpos.IndexPath(list, i), pos: fn.pos()}
		n := 1
		if fn.node.Kind == yaml.ScalarNode {
			text, _, err := sm.m.in.Substitute(fn.node.Value)
			if err == nil {
				if parsed, err := types.ParsePortConfig(text); err == nil {
					n = len(parsed)
				}
			}
		}
		for range n {
			out = append(out, o)
		}
	}
	if len(out) != len(sm.s.Ports) {
		return nil // compose dropped a duplicate: positions by index
	}
	return out
}

func (sm *serviceMap) port(p types.ServicePortConfig, field string, pos manifest.Position) (manifest.Port, bool) {
	// "UDP" is udp: files of app stores write it so, and a protocol's
	// name does not depend on its case.
	p.Protocol = strings.ToLower(p.Protocol)
	port := manifest.Port{ContainerPort: int(p.Target), Protocol: orDefaultString(p.Protocol, manifest.DefaultProtocol), HostIP: p.HostIP}
	if p.Protocol != "" && p.Protocol != "tcp" && p.Protocol != "udp" {
		sm.refuseAt(pos, field, "protocol %q is not supported: use tcp or udp", p.Protocol)
		return port, false
	}
	if port.ContainerPort < 1 || port.ContainerPort > 65535 {
		sm.refuseAt(pos, field, "container port must be between 1 and 65535, got %d", p.Target)
		return port, false
	}
	if p.Published != "" {
		hp, err := strconv.Atoi(p.Published)
		if err != nil {
			sm.refuseAt(pos, field, "host port %q: a range for one container port lets Docker pick a free port, which driftless cannot check; publish one port", p.Published)
			return port, false
		}
		if hp < 1 || hp > 65535 {
			sm.refuseAt(pos, field, "host port must be between 1 and 65535, got %d", hp)
			return port, false
		}
		port.HostPort = hp
	}
	// "ports: [80]" publishes on a host port Docker picks, as in compose.
	port.AnyHostPort = port.HostPort == 0
	return port, true
}

// expose parses an expose entry: "80", "80/udp", "8000-8002".
func (sm *serviceMap) expose(e, field string, pos manifest.Position) []manifest.Port {
	spec, proto, _ := strings.Cut(e, "/")
	proto = strings.ToLower(proto)
	if proto == "" {
		proto = manifest.DefaultProtocol
	}
	if proto != "tcp" && proto != "udp" {
		sm.refuseAt(pos, field, "protocol %q is not supported: use tcp or udp", proto)
		return nil
	}
	lo, hi, isRange := strings.Cut(spec, "-")
	first, err1 := strconv.Atoi(lo)
	last := first
	var err2 error
	if isRange {
		last, err2 = strconv.Atoi(hi)
	}
	if err1 != nil || err2 != nil || first < 1 || last > 65535 || last < first {
		sm.refuseAt(pos, field, "invalid port %q: use PORT, PORT/udp or FIRST-LAST", e)
		return nil
	}
	var out []manifest.Port
	for p := first; p <= last; p++ {
		out = append(out, manifest.Port{ContainerPort: p, Protocol: proto})
	}
	return out
}

// mapNetworking maps network_mode, networks and their aliases.
func (sm *serviceMap) mapNetworking() {
	s := sm.s
	mode, _ := sm.m.byContainerName(s.NetworkMode)
	switch {
	case mode == "":
	case mode == manifest.NetworkBridge || mode == manifest.NetworkDefault || mode == manifest.NetworkNone || mode == manifest.NetworkHost:
		sm.spec.NetworkMode = mode
		sm.record("networkMode", "network_mode")
	case strings.HasPrefix(mode, types.ServicePrefix):
		sm.mapNetworkService(mode)
	case strings.HasPrefix(mode, types.ContainerPrefix):
		sm.refuse("network_mode", "%q (sharing the network namespace of a container driftless does not manage) is not supported: share a service's with service:NAME, or put the services on a shared network and reach them by name", mode)
	default:
		key, ok := sm.m.networkNamed(mode)
		if !ok {
			sm.refuse("network_mode", "%q is not supported: use bridge, none, host, service:NAME, the Docker name of a declared network (an external one's), or networks:", mode)
			return
		}
		if len(s.Networks) > 0 && sm.m.ix.declared(sm.path("networks")) {
			sm.refuse("networks", "cannot be combined with network_mode (as in compose)")
			return
		}
		// Docker takes a network's name as a mode: the container joins
		// that network only, which is what networks: [KEY] says.
		sm.mapNetwork(key, nil)
		return
	}
	if sm.spec.NetworkMode != "" {
		if len(s.Networks) > 0 && sm.m.ix.declared(sm.path("networks")) {
			sm.refuse("networks", "cannot be combined with network_mode (as in compose)")
		}
		return
	}
	for _, key := range slices.Sorted(mapKeys(s.Networks)) {
		sm.mapNetwork(key, s.Networks[key])
	}
}

func (sm *serviceMap) mapNetwork(key string, cfg *types.ServiceNetworkConfig) {
	attr := yamlpos.ChildPath("networks", key)
	name, ok := sm.m.netNames[key]
	if _, declared := sm.m.p.Networks[key]; !declared {
		sm.refuse(attr, "network %q is not declared: add it under the top-level networks:", key)
		return
	}
	if !ok {
		return // its name was refused
	}
	sm.spec.Networks = append(sm.spec.Networks, name)
	var aliases []string
	if cfg != nil {
		sm.refuseNetworkAttrs(attr, cfg)
		sm.mapAddresses(attr, name, cfg)
		if cfg.Priority != 0 {
			if sm.spec.NetworkPriority == nil {
				sm.spec.NetworkPriority = map[string]int{}
			}
			sm.spec.NetworkPriority[name] = cfg.Priority
			sm.record("networkPriority", attr+".priority")
		}
		aliases = append(aliases, cfg.Aliases...)
	}
	// The compose name keeps working as a host name after mapping, and so
	// does container_name.
	if sm.cname != sm.name {
		aliases = append(aliases, sm.cname)
	}
	if sm.s.ContainerName != "" && sm.s.ContainerName != sm.name {
		aliases = append(aliases, sm.s.ContainerName)
	}
	if len(aliases) > 0 {
		if sm.spec.Aliases == nil {
			sm.spec.Aliases = map[string][]string{}
		}
		sm.spec.Aliases[name] = aliases
	}
}

func (sm *serviceMap) refuseNetworkAttrs(attr string, cfg *types.ServiceNetworkConfig) {
	checks := []struct {
		set bool
		key string
		why string
	}{
		{len(cfg.LinkLocalIPs) > 0, "link_local_ips", "link-local addresses are not supported: reach the service by its name, or give it ipv4_address"},
		{cfg.MacAddress != "", "mac_address", "per-network MAC addresses are not supported: use the service's mac_address"},
		{cfg.GatewayPriority != 0, "gw_priority", "gateway priorities are not supported"},
		{cfg.InterfaceName != "", "interface_name", "interface names are not supported"},
		{len(cfg.DriverOpts) > 0, "driver_opts", "per-endpoint driver options are not supported"},
		{!cfg.ServiceNameAliasEnabled(), "use_service_name_alias", "the service name is always an alias in driftless"},
	}
	for _, c := range checks {
		if c.set {
			sm.refuse(attr+"."+c.key, "%s", c.why)
		}
	}
}

// checkContainerName: container_name is an alias; the container itself is
// always <app>-<service>-<slot>, which driftless's ownership and conflict
// detection rest on.
func (sm *serviceMap) checkContainerName() {
	if sm.s.ContainerName == "" {
		return
	}
	if sm.spec.Replicas > 1 {
		sm.refuse("container_name", "cannot be combined with %d replicas: a name is unique (as in compose)", sm.spec.Replicas)
	}
	if sm.spec.NetworkMode != "" {
		// compose names the container; driftless's name for it is
		// <app>-<service>-<slot>, and without the app's networks there is
		// no alias to give.
		sm.warn("container_name", "has no effect with network_mode %s: the container is named %s, and a name for other containers to reach it needs the app's networks", sm.s.NetworkMode, manifest.ContainerName(sm.m.app, sm.name, 1))
	}
	if !manifest.ValidDockerName(sm.s.ContainerName) {
		sm.refuse("container_name", "invalid name %q", sm.s.ContainerName)
	}
}

// mapHooks maps post_start and pre_stop; an unset environment entry is left out.
func (sm *serviceMap) mapHooks() {
	conv := func(attr, model string, hooks []types.ServiceHook) []manifest.Hook {
		var out []manifest.Hook
		for i, h := range hooks {
			if h.Privileged {
				sm.record(yamlpos.IndexPath(model, i)+".privileged", yamlpos.IndexPath(attr, i)+".privileged")
			}
			hook := manifest.Hook{Command: slices.Clone([]string(h.Command)), User: h.User, Privileged: h.Privileged, WorkingDir: h.WorkingDir}
			if env := h.Environment.ToMapping(); len(env) > 0 { // without the unset entries
				hook.Env = env
			}
			out = append(out, hook)
		}
		if len(out) > 0 {
			sm.record(model, attr)
		}
		return out
	}
	sm.spec.PostStart = conv("post_start", "postStart", sm.s.PostStart)
	sm.spec.PreStop = conv("pre_stop", "preStop", sm.s.PreStop)
}

func (sm *serviceMap) mapHealthcheck() {
	h := sm.s.HealthCheck
	if h == nil {
		return
	}
	if h.Disable {
		sm.spec.Healthcheck = &manifest.Healthcheck{Test: []string{"NONE"}}
		return
	}
	hc := &manifest.Healthcheck{Test: slices.Clone([]string(h.Test))}
	if len(hc.Test) > 0 {
		switch hc.Test[0] {
		case "CMD", "CMD-SHELL":
		case "NONE":
			sm.spec.Healthcheck = &manifest.Healthcheck{Test: []string{"NONE"}}
			return
		default:
			sm.refuse("healthcheck.test", "must start with CMD, CMD-SHELL or NONE (as in compose), or be a string")
		}
	}
	dur := func(d *types.Duration) time.Duration {
		if d == nil {
			return 0
		}
		return time.Duration(*d)
	}
	hc.Interval, hc.Timeout = dur(h.Interval), dur(h.Timeout)
	hc.StartPeriod, hc.StartInterval = dur(h.StartPeriod), dur(h.StartInterval)
	if h.Retries != nil {
		if *h.Retries > math.MaxInt32 {
			sm.refuse("healthcheck.retries", "is too large")
		}
		hc.Retries = int(min(*h.Retries, math.MaxInt32))
	}
	sm.spec.Healthcheck = hc
}

// mapDependsOn maps the dependencies the file declares. Those compose adds
// for links, volumes_from or network_mode: service: are refused with them.
func (sm *serviceMap) mapDependsOn() {
	for _, dep := range slices.Sorted(mapKeys(sm.s.DependsOn)) {
		d := sm.s.DependsOn[dep]
		attr, declared := sm.dependsOnEntry(dep)
		if !declared {
			continue
		}
		field := sm.path(attr)
		target, active := sm.m.svcNames[dep]
		_, exists := sm.m.p.Services[dep]
		switch {
		case dep == sm.cname:
			sm.refuse(attr, "a service cannot depend on itself")
			continue
		case !exists && !d.Required:
			continue // optional, and not part of the app (its profile is off)
		case !exists:
			if _, off := sm.m.p.DisabledServices[dep]; off {
				sm.refuse(attr, "service %q is not part of the app: its profiles are not active (activate one, or set required: false)", dep)
			} else {
				sm.refuse(attr, "service %q is not declared", dep)
			}
			continue
		case !active:
			continue // its name was refused
		}
		if d.Restart {
			// Compose restarts the dependent; driftless replaces it (see
			// drift's dependsrestart.go).
			sm.spec.DependsOnRestart = append(sm.spec.DependsOnRestart, target)
		}
		cond := manifest.DependsStarted
		switch d.Condition {
		case "", types.ServiceConditionStarted:
		case types.ServiceConditionHealthy:
			cond = manifest.DependsHealthy
		case types.ServiceConditionCompletedSuccessfully:
			cond = manifest.DependsCompleted
		default:
			sm.refuse(attr+".condition", "unknown condition %q", d.Condition)
		}
		sm.spec.DependsOn = append(sm.spec.DependsOn, target)
		if sm.spec.DependsOnCondition == nil {
			sm.spec.DependsOnCondition = map[string]string{}
		}
		sm.spec.DependsOnCondition[target] = cond
		sm.depFrom[target] = field
	}
}

// dependsOnEntry finds where a file lists dep under depends_on (in the
// list or the mapping form).
func (sm *serviceMap) dependsOnEntry(dep string) (string, bool) {
	if attr := yamlpos.ChildPath("depends_on", dep); sm.m.ix.declared(sm.path(attr)) {
		return attr, true
	}
	for i, fn := range sm.m.ix.itemNodes(sm.path("depends_on")) {
		if v, _, err := sm.m.in.Substitute(fn.node.Value); err == nil && v == dep {
			return yamlpos.IndexPath("depends_on", i), true
		}
	}
	return "", false
}

// mapRestart maps restart (and deploy.restart_policy, which compose takes
// when restart is not set). driftless's "always" is Docker's
// unless-stopped: a container stopped by hand is healed by driftless, not by
// Docker.
func (sm *serviceMap) mapRestart() {
	if r := sm.s.Restart; r != "" {
		policy, n, ok := composeRestart(r)
		if !ok {
			sm.refuse("restart", "must be no, always, on-failure[:N] or unless-stopped, got %q", r)
		}
		sm.spec.Restart, sm.spec.RestartMaxRetries = policy, n
		sm.spec.RestartNeverDeclared = policy == manifest.RestartNever
	}
	if sm.s.Deploy == nil || sm.s.Deploy.RestartPolicy == nil {
		return
	}
	rp := sm.s.Deploy.RestartPolicy
	const attr = "deploy.restart_policy"
	policy := manifest.RestartAlways
	// Compose takes restart:'s words here too (no, always,
	// unless-stopped), and files of app stores write them.
	switch rp.Condition {
	case "", "any", types.RestartPolicyAlways, types.RestartPolicyUnlessStopped:
	case "on-failure":
		policy = manifest.RestartOnFailure
	case "none", types.RestartPolicyNo:
		policy = manifest.RestartNever
	default:
		sm.refuse(attr+".condition", "must be none, on-failure or any (or no, always or unless-stopped, as restart: says), got %q", rp.Condition)
	}
	retries := 0
	if rp.MaxAttempts != nil {
		retries = int(min(*rp.MaxAttempts, math.MaxInt32))
		if policy != manifest.RestartOnFailure {
			sm.refuse(attr+".max_attempts", "only applies to condition: on-failure (Docker bounds only on-failure restarts)")
		}
	}
	// Swarm's restart timing: compose passes neither to an engine,
	// whose own backoff decides.
	if rp.Delay != nil {
		sm.warn(attr+".delay", "has no effect on one engine (as in compose): Docker restarts with its own backoff")
	}
	if rp.Window != nil {
		sm.warn(attr+".window", "has no effect on one engine (as in compose)")
	}
	if sm.s.Restart != "" && (policy != sm.spec.Restart || retries != sm.spec.RestartMaxRetries) {
		sm.refuse(attr, "disagrees with restart: %s; keep one of them", sm.s.Restart)
		return
	}
	sm.spec.Restart, sm.spec.RestartMaxRetries = policy, retries
	sm.spec.RestartNeverDeclared = policy == manifest.RestartNever
}

func composeRestart(r string) (policy string, retries int, ok bool) {
	switch {
	case r == types.RestartPolicyNo:
		return manifest.RestartNever, 0, true
	case r == types.RestartPolicyAlways, r == types.RestartPolicyUnlessStopped:
		return manifest.RestartAlways, 0, true
	case r == types.RestartPolicyOnFailure:
		return manifest.RestartOnFailure, 0, true
	case strings.HasPrefix(r, types.RestartPolicyOnFailure+":"):
		n, err := strconv.Atoi(strings.TrimPrefix(r, types.RestartPolicyOnFailure+":"))
		if err != nil || n < 0 {
			return manifest.RestartOnFailure, 0, false
		}
		return manifest.RestartOnFailure, n, true
	}
	return manifest.RestartNever, 0, false
}

// mapSecurity maps privileges, capabilities and devices.
func (sm *serviceMap) mapSecurity() {
	s := sm.s
	if s.Privileged {
		sm.record("privileged", "privileged")
	}
	for i, c := range s.CapAdd {
		n := normalizeCap(c)
		sm.spec.CapAdd = append(sm.spec.CapAdd, n)
		if _, seen := sm.capFrom[n]; !seen {
			sm.capFrom[n] = yamlpos.IndexPath("cap_add", i)
		}
	}
	for _, c := range s.CapDrop {
		sm.spec.CapDrop = append(sm.spec.CapDrop, normalizeCap(c))
	}
	for i := range s.SecurityOpt {
		sm.record(yamlpos.IndexPath("securityOpt", i), yamlpos.IndexPath("security_opt", i))
	}
	for i, d := range s.Devices {
		attr := yamlpos.IndexPath("devices", i)
		if !strings.HasPrefix(d.Source, "/") || d.Target == "" {
			sm.refuse(attr, "%q: only host device paths (/dev/...) are supported, not CDI device names", d.Source)
			continue
		}
		sm.spec.Devices = append(sm.spec.Devices, manifest.Device{HostPath: d.Source, ContainerPath: d.Target, Permissions: d.Permissions})
		sm.devFrom[d.Target] = attr
	}
	switch s.Pid {
	case "":
	case "host":
		sm.spec.PID = "host"
		sm.record("pid", "pid")
	default:
		sm.refuse("pid", "%q is not supported: use host, or leave it unset", s.Pid)
	}
	switch s.Ipc {
	case "":
	case "private", "shareable", "host":
		sm.spec.IPC = s.Ipc
		sm.record("ipc", "ipc")
	default:
		sm.refuse("ipc", "%q is not supported: use private, shareable or host", s.Ipc)
	}
}

// normalizeCap writes a capability as Docker lists it: upper case, without
// CAP_.
func normalizeCap(c string) string {
	return strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(c)), "CAP_")
}

// mapMisc maps the simple host settings.
func (sm *serviceMap) mapMisc() {
	s := sm.s
	sm.spec.ExtraHosts = s.ExtraHosts.AsList(":")
	for _, name := range slices.Sorted(mapKeys(s.Ulimits)) {
		u := s.Ulimits[name]
		if u == nil {
			continue
		}
		ul := manifest.Ulimit{Name: name, Soft: int64(u.Soft), Hard: int64(u.Hard)}
		if u.Single != 0 {
			ul.Soft, ul.Hard = int64(u.Single), int64(u.Single)
		}
		if ul.Soft > ul.Hard {
			sm.refuse(yamlpos.ChildPath("ulimits", name), "soft limit %d is above the hard limit %d", ul.Soft, ul.Hard)
		}
		sm.spec.Ulimits = append(sm.spec.Ulimits, ul)
	}
	if l := s.Logging; l != nil && (l.Driver != "" || len(l.Options) > 0) {
		sm.spec.Logging = &manifest.Logging{Driver: l.Driver, Options: copyMap(l.Options)}
	}
	if s.StopGracePeriod != nil {
		d := time.Duration(*s.StopGracePeriod)
		secs := int((d + time.Second - 1) / time.Second)
		if d < 0 || secs > manifest.MaxSeconds {
			sm.refuse("stop_grace_period", "must be between 0s and 24h")
		}
		sm.spec.StopGracePeriodSeconds = secs
	}
}

// locateFields records where the model fields policy looks at were
// written, once lists are in their canonical order.
func (sm *serviceMap) locateFields() {
	for i, c := range sm.spec.CapAdd {
		sm.record(yamlpos.IndexPath("capAdd", i), sm.capFrom[c])
	}
	for i, d := range sm.spec.Devices {
		sm.record(yamlpos.IndexPath("devices", i), sm.devFrom[d.ContainerPath])
	}
	for i, r := range sm.spec.DeviceRequests {
		sm.record(yamlpos.IndexPath("deviceRequests", i), sm.devReqFrom[r.String()])
	}
	for i, b := range sm.spec.Binds {
		sm.record(yamlpos.IndexPath("binds", i), sm.bindFrom[b.MountPath])
	}
}

func (sm *serviceMap) String() string { return fmt.Sprintf("service %s", sm.cname) }

// composePullPolicy maps compose's pull_policy onto the model; built says
// the service has build:. refusal is non-empty when the value cannot be
// honoured.
func composePullPolicy(s string, built bool) (policy, refusal string) {
	switch {
	case s == "build" && built:
		// driftless builds a service with build: from the revision and
		// never pulls its image: name, which is what build asks for.
		return manifest.PullMissing, ""
	case s == "" || s == "missing" || s == "if_not_present":
		return manifest.PullMissing, ""
	case s == "always":
		return manifest.PullAlways, ""
	case s == "never":
		return manifest.PullNever, ""
	case s == "build":
		return "", "\"build\" needs a build: section: driftless builds the image from the revision"
	case s == "daily" || s == "weekly" || strings.HasPrefix(s, "every_"):
		return "", fmt.Sprintf("%q is not supported: use x-driftless: {imageUpdate: {interval: 24h}} to follow a tag", s)
	}
	return "", fmt.Sprintf("%q is not a pull policy: use missing, always or never", s)
}
