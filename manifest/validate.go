package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/distribution/reference"
)

// maxSeconds bounds every duration field: a day is more than any probe or
// grace period needs, and keeps durations far from overflowing.
const maxSeconds = 86400

// minMemory is the smallest memory limit the Docker Engine accepts.
const minMemory = 6 << 20

// object is one parsed document on its way into the App.
type object struct {
	doc    *docCtx
	kind   string
	name   string
	labels map[string]string
	// broken: the document has errors. Its name still counts as declared
	// (so references to it raise no follow-up errors), nothing else does.
	broken bool
	dup    bool

	serviceRaw *rawServiceSpec
	networkRaw *rawNetworkSpec
	volumeRaw  *rawVolumeSpec

	service Service
	network Network
	volume  Volume
}

// source is where the object is named: its metadata.name, or the start of
// the document.
func (o *object) source() Position {
	if p, ok := o.doc.pos["metadata.name"]; ok {
		return p
	}
	return o.doc.start
}

// reporter adds errors located by field path within one document.
type reporter struct {
	c   *collector
	doc *docCtx
}

func (r reporter) errorf(field, format string, args ...any) {
	r.c.add(r.doc.at(field), field, format, args...)
}

// required reports a missing field, unless it is present but malformed
// (already reported by the walker).
func (r reporter) required(field string) {
	if !r.doc.failed[field] {
		r.errorf(field, "is required")
	}
}

func (r reporter) port(field string, p int) {
	if p < 1 || p > 65535 {
		r.errorf(field, "must be between 1 and 65535, got %d", p)
	}
}

func (r reporter) intRange(field string, v *int, lo, hi int) {
	switch {
	case v == nil:
	case *v < lo:
		r.errorf(field, "must be >= %d", lo)
	case *v > hi:
		r.errorf(field, "must be <= %d", hi)
	}
}

func validateHeader(c *collector, doc *docCtx, apiVersion, kind string, meta *rawMeta, o *object) {
	r := reporter{c: c, doc: doc}
	switch apiVersion {
	case APIVersion:
	case "":
		if !doc.failed["apiVersion"] {
			r.errorf("apiVersion", "is required: %s", APIVersion)
		}
	default:
		r.errorf("apiVersion", "must be %q, got %q", APIVersion, apiVersion)
	}
	switch kind {
	case KindService, KindNetwork, KindVolume:
	case "":
		r.required("kind")
	default:
		hint := ""
		if s := suggest(kind, []string{KindService, KindNetwork, KindVolume}); s != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", s)
		}
		r.errorf("kind", "unknown kind %q: must be Service, Network or Volume%s", kind, hint)
	}
	if meta == nil {
		meta = &rawMeta{}
	}
	o.name = meta.Name
	switch {
	case meta.Name == "":
		r.required("metadata.name")
	case !ValidName(meta.Name):
		r.errorf("metadata.name", "invalid name %q: %s", meta.Name, nameRule)
	}
	for _, k := range sortedKeys(meta.Labels) {
		switch {
		case k == "":
			r.errorf(childPath("metadata.labels", k), "label keys must not be empty")
		case strings.HasPrefix(k, reservedLabelPrefix):
			r.errorf(childPath("metadata.labels", k), "the label prefix %q is reserved for driftless", reservedLabelPrefix)
		}
	}
	o.labels = copyMap(meta.Labels)
}

func validateService(c *collector, app string, o *object) {
	r := reporter{c: c, doc: o.doc}
	raw := o.serviceRaw
	if raw == nil {
		r.required("spec")
		return
	}
	spec := normalizeService(raw)

	switch {
	case raw.Image == "" && raw.Build == nil:
		r.required("spec.image")
	case raw.Image == "":
	case raw.Build != nil:
		// The built image's name; its digest cannot be known in advance.
		if _, err := BuiltImageName(app, "x", raw.Image); err != nil {
			r.errorf("spec.image", "%v", err)
		}
	default:
		if _, err := reference.ParseNormalizedNamed(raw.Image); err != nil {
			r.errorf("spec.image", "invalid image reference %q: %v", raw.Image, err)
		}
	}
	validateBuild(r, raw.Build)
	r.intRange("spec.replicas", raw.Replicas, 0, int(^uint(0)>>1))
	validateEnv(r, raw)
	validateSecretRefs(r, raw)
	validatePorts(r, raw)
	validateNetworkList(r, raw)
	mounts := validateVolumeMounts(r, raw)
	if res := raw.Resources; res != nil {
		validateResources(r, res)
	}
	if rd := raw.Readiness; rd != nil {
		validateReadiness(r, rd)
		validateReadinessWith(r, raw)
	}
	if raw.Restart != "" && raw.Restart != RestartAlways && raw.Restart != RestartOnFailure && raw.Restart != RestartNever {
		r.errorf("spec.restart", "must be always, on-failure or never, got %q", raw.Restart)
	}
	if u := raw.Update; u != nil {
		validateUpdate(r, u, spec.Update)
	}
	validateDependsOn(r, raw, o.name)
	r.intRange("spec.stopGracePeriodSeconds", raw.StopGracePeriodSeconds, 0, maxSeconds)
	validateProcess(r, raw)
	validateNetworking(r, raw)
	validateMounts(r, raw, mounts)
	validateSecurity(r, raw)
	validateLimits(r, raw)

	if ValidName(o.name) {
		// The highest slot gives the longest name (slots are 1-based).
		name := ContainerName(app, o.name, max(spec.Replicas, 1))
		if len(name) > maxDNSLabel || !ValidDockerName(name) {
			r.errorf("metadata.name", "container name %q would be longer than %d characters (Docker's DNS limit): shorten the app or service name", name, maxDNSLabel)
		}
	}

	o.service = Service{
		Name:   o.name,
		Labels: o.labels,
		Spec:   spec,
		Hash:   HashService(nil, o.labels, spec),
		Source: o.source(),
		Fields: serviceFields(o.doc, raw, spec),
	}
	validateImageHandling(r, raw, &o.service)
}

func validateEnv(r reporter, raw *rawServiceSpec) {
	for _, k := range sortedKeys(raw.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			r.errorf(childPath("spec.env", k), "invalid variable name %q: must not be empty or contain '='", k)
		}
	}
	seen := map[string]int{}
	for i, k := range raw.SecretEnv {
		p := indexPath("spec.secretEnv", i)
		if j, dup := seen[k]; dup {
			r.errorf(p, "%q is already listed at spec.secretEnv[%d]", k, j)
			continue
		}
		seen[k] = i
		if _, ok := raw.Env[k]; !ok {
			r.errorf(p, "%q is not set in spec.env: add its value there", k)
		}
	}
}

func validatePorts(r reporter, raw *rawServiceSpec) {
	seen := map[string]int{}
	for i, p := range raw.Ports {
		pp := indexPath("spec.ports", i)
		if p.ContainerPort == nil {
			r.required(pp + ".containerPort")
		} else {
			r.port(pp+".containerPort", *p.ContainerPort)
		}
		if p.HostPort != nil {
			r.port(pp+".hostPort", *p.HostPort)
		}
		if p.Protocol != "" && p.Protocol != "tcp" && p.Protocol != "udp" {
			r.errorf(pp+".protocol", "must be tcp or udp, got %q", p.Protocol)
		}
		validateHostIP(r, pp, p)
		np := normalizePort(p)
		key := fmt.Sprintf("%d/%s", np.ContainerPort, np.Protocol)
		if j, dup := seen[key]; dup && p.ContainerPort != nil {
			r.errorf(pp+".containerPort", "port %s is already listed at spec.ports[%d]", key, j)
		} else {
			seen[key] = i
		}
	}
}

func validateHostIP(r reporter, pp string, p rawPort) {
	if p.HostIP == "" {
		return
	}
	if _, err := netip.ParseAddr(p.HostIP); err != nil {
		r.errorf(pp+".hostIP", "invalid IP address %q", p.HostIP)
	} else if p.HostPort == nil {
		r.errorf(pp+".hostIP", "only applies with hostPort")
	}
}

func validateNetworkList(r reporter, raw *rawServiceSpec) {
	seen := map[string]int{}
	for i, n := range raw.Networks {
		p := indexPath("spec.networks", i)
		if j, dup := seen[n]; dup {
			r.errorf(p, "network %q is already listed at spec.networks[%d]", n, j)
		}
		seen[n] = i
	}
}

// validateVolumeMounts checks the volume mounts and returns the mount
// paths they use (clean path -> field), for the other kinds of mounts.
func validateVolumeMounts(r reporter, raw *rawServiceSpec) map[string]string {
	mounts := map[string]string{}
	seen := map[string]int{}
	for i, v := range raw.Volumes {
		vp := indexPath("spec.volumes", i)
		if v.Name == "" {
			r.required(vp + ".name")
		}
		switch {
		case v.MountPath == "":
			r.required(vp + ".mountPath")
		case !path.IsAbs(v.MountPath):
			r.errorf(vp+".mountPath", "must be an absolute path, got %q", v.MountPath)
		default:
			clean := path.Clean(v.MountPath)
			if j, dup := seen[clean]; dup {
				r.errorf(vp+".mountPath", "%q is already mounted by spec.volumes[%d]", v.MountPath, j)
			} else {
				mounts[clean] = vp
			}
			seen[clean] = i
		}
	}
	return mounts
}

func validateResources(r reporter, res *rawResources) {
	if res.Memory != nil {
		if b, err := ParseMemory(string(*res.Memory)); err != nil {
			r.errorf("spec.resources.memory", "%v", err)
		} else if b > 0 && b < minMemory {
			r.errorf("spec.resources.memory", "must be at least 6Mi (Docker's minimum), or 0 for no limit")
		}
	}
	if res.CPUs != nil {
		if _, err := ParseCPUs(string(*res.CPUs)); err != nil {
			r.errorf("spec.resources.cpus", "%v", err)
		}
	}
	validateResourceExtras(r, res)
}

// validateReadinessWith checks readiness against the rest of the spec.
func validateReadinessWith(r reporter, raw *rawServiceSpec) {
	rd := raw.Readiness
	if rd.Exec != nil && raw.Healthcheck != nil {
		r.errorf("spec.healthcheck", "readiness.exec is also a Docker healthcheck: use one of them")
	}
	if (rd.HTTPGet != nil || rd.TCPSocket != nil) && (raw.NetworkMode == NetworkHost || raw.NetworkMode == NetworkNone) {
		r.errorf("spec.readiness", "httpGet and tcpSocket probes need the container's own network address, which networkMode %s does not give: use exec readiness or a healthcheck", raw.NetworkMode)
	}
}

func validateUpdate(r reporter, u *rawUpdate, normalized Update) {
	switch u.Strategy {
	case "", StrategyRolling:
		r.intRange("spec.update.maxSurge", u.MaxSurge, 0, 1<<20)
		r.intRange("spec.update.maxUnavailable", u.MaxUnavailable, 0, 1<<20)
		if normalized.MaxSurge == 0 && normalized.MaxUnavailable == 0 {
			field := "spec.update.maxSurge"
			if u.MaxSurge == nil {
				field = "spec.update.maxUnavailable"
			}
			r.errorf(field, "maxSurge and maxUnavailable must not both be 0: a rolling update could never replace a replica")
		}
	case StrategyRecreate:
		if u.MaxSurge != nil {
			r.errorf("spec.update.maxSurge", "only applies to strategy rolling")
		}
		if u.MaxUnavailable != nil {
			r.errorf("spec.update.maxUnavailable", "only applies to strategy rolling")
		}
	default:
		r.errorf("spec.update.strategy", "must be rolling or recreate, got %q", u.Strategy)
	}
}

func validateDependsOn(r reporter, raw *rawServiceSpec, self string) {
	seen := map[string]int{}
	for i, d := range raw.DependsOn {
		p := indexPath("spec.dependsOn", i)
		switch j, dup := seen[d]; {
		case d == self:
			r.errorf(p, "a service cannot depend on itself")
		case dup:
			r.errorf(p, "%q is already listed at spec.dependsOn[%d]", d, j)
		}
		seen[d] = i
	}
}

func validateReadiness(r reporter, rd *rawReadiness) {
	const rp = "spec.readiness"
	var kinds []string
	if rd.HTTPGet != nil {
		kinds = append(kinds, "httpGet")
		if rd.HTTPGet.Port == nil {
			r.required(rp + ".httpGet.port")
		} else {
			r.port(rp+".httpGet.port", *rd.HTTPGet.Port)
		}
		if p := rd.HTTPGet.Path; p != "" && !strings.HasPrefix(p, "/") {
			r.errorf(rp+".httpGet.path", "must start with /, got %q", p)
		}
	}
	if rd.TCPSocket != nil {
		kinds = append(kinds, "tcpSocket")
		if rd.TCPSocket.Port == nil {
			r.required(rp + ".tcpSocket.port")
		} else {
			r.port(rp+".tcpSocket.port", *rd.TCPSocket.Port)
		}
	}
	if rd.Exec != nil {
		kinds = append(kinds, "exec")
		if len(rd.Exec.Command) == 0 {
			r.required(rp + ".exec.command")
		}
	}
	switch len(kinds) {
	case 0:
		r.errorf(rp, "needs exactly one of httpGet, tcpSocket or exec")
	case 1:
	default:
		r.errorf(rp, "has %s: use exactly one", strings.Join(kinds, " and "))
	}
	r.intRange(rp+".initialDelaySeconds", rd.InitialDelaySeconds, 0, maxSeconds)
	r.intRange(rp+".periodSeconds", rd.PeriodSeconds, 1, maxSeconds)
	r.intRange(rp+".timeoutSeconds", rd.TimeoutSeconds, 1, maxSeconds)
	r.intRange(rp+".successThreshold", rd.SuccessThreshold, 1, 1000)
	r.intRange(rp+".failureThreshold", rd.FailureThreshold, 1, 1000)
}

func validateNetwork(c *collector, o *object) {
	r := reporter{c: c, doc: o.doc}
	spec := normalizeNetwork(o.networkRaw)
	if raw := o.networkRaw; raw != nil {
		var managed []string
		for _, f := range []struct {
			name string
			set  bool
		}{{"driver", raw.Driver != ""}, {"internal", raw.Internal}, {"attachable", raw.Attachable}, {"enableIPv6", raw.EnableIPv6}, {"driverOpts", len(raw.DriverOpts) > 0}, {"subnet", raw.Subnet != ""}} {
			if f.set {
				managed = append(managed, f.name)
			}
		}
		validateExternal(r, o, "network", raw.External, raw.Name, managed)
		validateDriverOpts(r, raw.DriverOpts)
		if err := CheckSubnet(raw.Subnet); err != nil {
			r.errorf("spec.subnet", "%v", err)
		}
	}
	if spec.External && spec.ExternalName == "" {
		spec.ExternalName = o.name
	}
	if !spec.External && !ValidDriverName(spec.Driver) {
		r.errorf("spec.driver", "invalid driver name %q", spec.Driver)
	}
	o.network = Network{
		Name:   o.name,
		Labels: o.labels,
		Spec:   spec,
		Hash:   HashNetwork(o.labels, spec),
		Source: o.source(),
	}
}

func validateVolume(c *collector, o *object) {
	r := reporter{c: c, doc: o.doc}
	spec := normalizeVolume(o.volumeRaw)
	if raw := o.volumeRaw; raw != nil {
		var managed []string
		if raw.Driver != "" {
			managed = append(managed, "driver")
		}
		if len(raw.DriverOpts) > 0 {
			managed = append(managed, "driverOpts")
		}
		validateExternal(r, o, "volume", raw.External, raw.Name, managed)
		validateDriverOpts(r, raw.DriverOpts)
	}
	if spec.External && spec.ExternalName == "" {
		spec.ExternalName = o.name
	}
	if !spec.External && !ValidDriverName(spec.Driver) {
		r.errorf("spec.driver", "invalid driver name %q", spec.Driver)
	}
	o.volume = Volume{
		Name:   o.name,
		Labels: o.labels,
		Spec:   spec,
		Hash:   HashVolume(o.labels, spec),
		Source: o.source(),
		Fields: volumeFields(o.doc.at, "spec.driver", "spec.driverOpts", spec.DriverOpts),
	}
}

// volumeFields locates a volume's driver and options for the policy's
// messages (see Volume.Fields); at is where a written path is, or its
// nearest written ancestor.
func volumeFields(at func(string) Position, driver, opts string, driverOpts map[string]string) map[string]FieldRef {
	fields := map[string]FieldRef{
		"driver":     {Pos: at(driver), Field: driver},
		"driverOpts": {Pos: at(opts), Field: opts},
	}
	for k := range driverOpts {
		written := childPath(opts, k)
		fields[childPath("driverOpts", k)] = FieldRef{Pos: at(written), Field: written}
	}
	return fields
}

// validateExternal checks the fields of an external network or volume:
// driftless never creates it, so only its Docker name means something.
func validateExternal(r reporter, o *object, kind string, external bool, name string, managed []string) {
	if !external {
		if name != "" {
			r.errorf("spec.name", "only applies with external: true (driftless names its own %ss <app>-<name>)", kind)
		}
		return
	}
	if name != "" && !ValidDockerName(name) {
		r.errorf("spec.name", "invalid Docker %s name %q", kind, name)
	}
	for _, f := range managed {
		r.errorf("spec."+f, "does not apply to an external %s: driftless never creates or changes it", kind)
	}
	if len(o.labels) > 0 {
		r.errorf("metadata.labels", "are not applied to an external %s: driftless never creates or changes it", kind)
	}
}

func validateDriverOpts(r reporter, opts map[string]string) {
	for _, k := range sortedKeys(opts) {
		if k == "" {
			r.errorf("spec.driverOpts", "option names must not be empty")
		}
	}
}

// assemble runs the checks that span documents and builds the App.
func assemble(c *collector, app string, objs []*object) *App {
	first := firstDeclarations(c, objs)
	declared := func(kind, name string) bool { return first[kind+"/"+name] != nil }
	hostPorts := map[string]hostPortUse{}
	services := map[string]*object{}
	for _, o := range objs {
		if o.kind != KindService || o.broken || o.dup || o.serviceRaw == nil {
			continue
		}
		services[o.name] = o
		r := reporter{c: c, doc: o.doc}
		checkServiceReferences(r, o, declared)
		checkHostPorts(r, o, hostPorts)
	}
	reportCycles(c, services)

	if len(c.errs) > 0 {
		return nil
	}
	return assembleApp(app, objs, declared(KindNetwork, DefaultNetwork))
}

// firstDeclarations indexes objects by kind and name, marking and reporting
// later duplicates.
func firstDeclarations(c *collector, objs []*object) map[string]*object {
	first := map[string]*object{}
	for _, o := range objs {
		if o.name == "" || (o.kind != KindService && o.kind != KindNetwork && o.kind != KindVolume) {
			continue
		}
		key := o.kind + "/" + o.name
		if f := first[key]; f != nil {
			o.dup = true
			c.add(o.source(), "metadata.name", "duplicate %s name %q: first declared at %s", o.kind, o.name, f.source())
			continue
		}
		first[key] = o
	}
	return first
}

// checkServiceReferences reports networks, volumes and dependencies a
// service names but the app does not declare.
func checkServiceReferences(r reporter, o *object, declared func(kind, name string) bool) {
	raw := o.serviceRaw
	for i, n := range raw.Networks {
		if n != DefaultNetwork && !declared(KindNetwork, n) {
			r.errorf(indexPath("spec.networks", i), "network %q is not declared: add a Network named %q to the app or remove it here", n, n)
		}
	}
	for i, v := range raw.Volumes {
		if !declared(KindVolume, v.Name) {
			r.errorf(indexPath("spec.volumes", i)+".name", "volume %q is not declared: add a Volume named %q to the app", v.Name, v.Name)
		}
	}
	for i, d := range raw.DependsOn {
		if d != o.name && !declared(KindService, d) {
			r.errorf(indexPath("spec.dependsOn", i), "service %q is not declared", d)
		}
	}
}

type hostPortUse struct {
	service string
	pos     Position
}

// checkHostPorts reports host ports that would collide: across a service's
// replicas, during a surge, or with another service (hostPorts, filled as
// services are checked).
func checkHostPorts(r reporter, o *object, hostPorts map[string]hostPortUse) {
	spec := o.service.Spec
	for i, p := range o.serviceRaw.Ports {
		np := normalizePort(p)
		if np.HostPort == 0 {
			continue
		}
		field := indexPath("spec.ports", i) + ".hostPort"
		switch {
		case spec.Replicas > 1:
			r.errorf(field, "hostPort %d would collide across the %d replicas: remove hostPort or set replicas: 1", np.HostPort, spec.Replicas)
		case spec.Update.Strategy == StrategyRolling && spec.Update.MaxSurge > 0:
			r.errorf(field, "hostPort %d would collide when a rolling update starts the new replica before stopping the old one: set update: {maxSurge: 0, maxUnavailable: 1} or update: {strategy: recreate}", np.HostPort)
		}
		key := fmt.Sprintf("%d/%s", np.HostPort, np.Protocol)
		if prev, used := hostPorts[key]; used {
			r.errorf(field, "hostPort %s is already used by service %q at %s", key, prev.service, prev.pos)
			continue
		}
		hostPorts[key] = hostPortUse{o.name, o.doc.at(field)}
	}
}

// assembleApp builds the App from valid objects, adding the implicit default
// network when a service uses it and the app does not declare it.
func assembleApp(app string, objs []*object, defaultDeclared bool) *App {
	result := &App{Name: app, Format: FormatNative, Services: []Service{}, Networks: []Network{}, Volumes: []Volume{}}
	usesDefault := false
	for _, o := range objs {
		switch o.kind {
		case KindService:
			result.Services = append(result.Services, o.service)
			usesDefault = usesDefault || slices.Contains(o.service.Spec.Networks, DefaultNetwork)
		case KindNetwork:
			result.Networks = append(result.Networks, o.network)
		case KindVolume:
			result.Volumes = append(result.Volumes, o.volume)
		}
	}
	if usesDefault && !defaultDeclared {
		spec := normalizeNetwork(nil)
		result.Networks = append(result.Networks, Network{
			Name:     DefaultNetwork,
			Spec:     spec,
			Hash:     HashNetwork(nil, spec),
			Implicit: true,
		})
	}
	slices.SortFunc(result.Services, func(a, b Service) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(result.Networks, func(a, b Network) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(result.Volumes, func(a, b Volume) int { return strings.Compare(a.Name, b.Name) })
	return result
}

// reportCycles reports each dependsOn cycle once, at the dependsOn entry of
// its alphabetically first service.
func reportCycles(c *collector, services map[string]*object) {
	deps := make(map[string][]string, len(services))
	for name, o := range services {
		deps[name] = o.service.Spec.DependsOn
	}
	for _, cycle := range dependencyCycles(deps) {
		o := services[cycle[0]]
		next := cycle[1%len(cycle)]
		field := indexPath("spec.dependsOn", slices.Index(o.serviceRaw.DependsOn, next))
		reporter{c: c, doc: o.doc}.errorf(field, "dependency cycle: %s -> %s", strings.Join(cycle, " -> "), cycle[0])
	}
}

// dependencyCycles finds each cycle of the graph once, starting at its
// alphabetically first node, in a stable order. Edges to unknown nodes and
// to the node itself are ignored (reported elsewhere). Both front ends
// use it.
func dependencyCycles(deps map[string][]string) [][]string {
	const (
		unvisited = iota
		onStack
		done
	)
	state := map[string]int{}
	reported := map[string]bool{}
	var cycles [][]string
	var stack []string
	var visit func(name string)
	visit = func(name string) {
		state[name] = onStack
		stack = append(stack, name)
		for _, d := range deps[name] {
			if _, known := deps[d]; !known || d == name {
				continue
			}
			switch state[d] {
			case unvisited:
				visit(d)
			case onStack:
				cycle := slices.Clone(stack[slices.Index(stack, d):])
				start := slices.Index(cycle, slices.Min(cycle))
				cycle = append(cycle[start:], cycle[:start]...)
				if key := strings.Join(cycle, " -> "); !reported[key] {
					reported[key] = true
					cycles = append(cycles, cycle)
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[name] = done
	}
	for _, name := range sortedKeys(deps) {
		if state[name] == unvisited {
			visit(name)
		}
	}
	return cycles
}

// ---- fields shared with compose files ----

func validateResourceExtras(r reporter, res *rawResources) {
	r.intRange("spec.resources.pids", res.Pids, 0, 1<<22)
	if res.MemoryReservation == nil {
		return
	}
	b, err := ParseMemory(string(*res.MemoryReservation))
	if err != nil {
		r.errorf("spec.resources.memoryReservation", "%v", err)
		return
	}
	if res.Memory != nil {
		if limit, err := ParseMemory(string(*res.Memory)); err == nil && limit > 0 && b > limit {
			r.errorf("spec.resources.memoryReservation", "must not exceed resources.memory (%s)", FormatMemory(limit))
		}
	}
}

func (r reporter) duration(field string, v *duration, min time.Duration) {
	if v == nil {
		return
	}
	d, err := ParseDuration(string(*v))
	switch {
	case err != nil:
		r.errorf(field, "%v", err)
	case d != 0 && d < min:
		r.errorf(field, "must be 0 or at least %s", min)
	}
}

// validateProcess checks what the process runs as and how it is started,
// stopped and checked.
func validateProcess(r reporter, raw *rawServiceSpec) {
	if raw.User != "" && !ValidUser(raw.User) {
		r.errorf("spec.user", "invalid user %q: write name, uid, name:group or uid:gid", raw.User)
	}
	if raw.WorkingDir != "" && !path.IsAbs(raw.WorkingDir) {
		r.errorf("spec.workingDir", "must be an absolute path, got %q", raw.WorkingDir)
	}
	if raw.Hostname != "" && (!ValidHostname(raw.Hostname) || len(raw.Hostname) > maxDNSLabel) {
		r.errorf("spec.hostname", "invalid host name %q: letters, digits, '-' and '.', at most 63 characters", raw.Hostname)
	}
	if raw.Domainname != "" && !ValidHostname(raw.Domainname) {
		r.errorf("spec.domainname", "invalid domain name %q", raw.Domainname)
	}
	if raw.StopSignal != nil {
		if _, err := ParseSignal(string(*raw.StopSignal)); err != nil {
			r.errorf("spec.stopSignal", "%v", err)
		}
	}
	validateLifecycle(r, raw)
}

// validateLifecycle checks restarts, startup conditions, update pacing,
// the healthcheck and logging.
func validateLifecycle(r reporter, raw *rawServiceSpec) {
	if raw.RestartMaxRetries != nil {
		r.intRange("spec.restartMaxRetries", raw.RestartMaxRetries, 0, 1<<20)
		if raw.Restart != RestartOnFailure {
			r.errorf("spec.restartMaxRetries", "only applies with restart: on-failure")
		}
	}
	for _, dep := range sortedKeys(raw.DependsOnCondition) {
		field := childPath("spec.dependsOnCondition", dep)
		switch cond := raw.DependsOnCondition[dep]; {
		case cond != DependsStarted && cond != DependsHealthy && cond != DependsCompleted:
			r.errorf(field, "must be started, healthy or completed, got %q", cond)
		case !slices.Contains(raw.DependsOn, dep):
			r.errorf(field, "%q is not in spec.dependsOn: add it there", dep)
		}
	}
	if u := raw.Update; u != nil && u.Delay != nil {
		r.duration("spec.update.delay", u.Delay, 0)
		if u.Strategy == StrategyRecreate {
			r.errorf("spec.update.delay", "only applies to strategy rolling")
		}
	}
	if h := raw.Healthcheck; h != nil {
		validateHealthcheck(r, h)
	}
	if l := raw.Logging; l != nil {
		validateLogging(r, l)
	}
}

func validateLogging(r reporter, l *rawLogging) {
	if l.Driver != "" && !ValidDriverName(l.Driver) {
		r.errorf("spec.logging.driver", "invalid driver name %q", l.Driver)
	}
	for _, k := range sortedKeys(l.Options) {
		if k == "" {
			r.errorf("spec.logging.options", "option names must not be empty")
		}
	}
}

func validateHealthcheck(r reporter, h *rawHealthcheck) {
	const hp = "spec.healthcheck"
	if h.Disable {
		if len(h.Test) > 0 || h.Interval != nil || h.Timeout != nil || h.StartPeriod != nil || h.StartInterval != nil || h.Retries != nil {
			r.errorf(hp+".disable", "turns the image's healthcheck off: remove the other healthcheck fields")
		}
		return
	}
	switch {
	case len(h.Test) == 0:
		r.errorf(hp+".test", "is required (or set disable: true)")
	case h.Test[0] == "CMD":
		if len(h.Test) < 2 {
			r.errorf(hp+".test", "CMD needs a command: [CMD, program, args...]")
		}
	case h.Test[0] == "CMD-SHELL":
		if len(h.Test) != 2 {
			r.errorf(hp+".test", "CMD-SHELL takes exactly one command line: [CMD-SHELL, \"line\"]")
		}
	case h.Test[0] == "NONE":
		r.errorf(hp+".test", "write disable: true to turn the image's healthcheck off")
	default:
		r.errorf(hp+".test[0]", "must be CMD or CMD-SHELL, got %q", h.Test[0])
	}
	// Docker's minimum for the intervals is one millisecond.
	r.duration(hp+".interval", h.Interval, time.Millisecond)
	r.duration(hp+".timeout", h.Timeout, time.Millisecond)
	r.duration(hp+".startPeriod", h.StartPeriod, time.Millisecond)
	r.duration(hp+".startInterval", h.StartInterval, time.Millisecond)
	r.intRange(hp+".retries", h.Retries, 0, 1000)
}

// validateNetworking checks network mode, aliases and name resolution.
func validateNetworking(r reporter, raw *rawServiceSpec) {
	switch raw.NetworkMode {
	case "", NetworkBridge, NetworkNone, NetworkHost:
	default:
		r.errorf("spec.networkMode", "must be bridge, none or host, got %q", raw.NetworkMode)
	}
	if raw.NetworkMode != "" {
		if len(raw.Networks) > 0 {
			r.errorf("spec.networks", "must be empty with networkMode %s: the container joins no app network", raw.NetworkMode)
		}
		if len(raw.Aliases) > 0 {
			r.errorf("spec.aliases", "network aliases need app networks; networkMode %s has none", raw.NetworkMode)
		}
		if len(raw.Ports) > 0 && raw.NetworkMode != NetworkBridge {
			r.errorf("spec.ports", "cannot publish ports with networkMode %s", raw.NetworkMode)
		}
		if raw.Hostname != "" && raw.NetworkMode == NetworkHost {
			r.errorf("spec.hostname", "the host's network namespace has the host's name: remove hostname or networkMode host")
		}
	}
	validateAliases(r, raw)
	validateResolution(r, raw)
}

func validateAliases(r reporter, raw *rawServiceSpec) {
	joined := raw.Networks
	if len(joined) == 0 {
		joined = []string{DefaultNetwork}
	}
	for _, n := range sortedKeys(raw.Aliases) {
		field := childPath("spec.aliases", n)
		if raw.NetworkMode == "" && !slices.Contains(joined, n) {
			r.errorf(field, "the service does not join network %q: aliases must name one of spec.networks", n)
		}
		for i, a := range raw.Aliases[n] {
			if !ValidHostname(a) {
				r.errorf(indexPath(field, i), "invalid alias %q: must be a host name", a)
			}
		}
	}
}

// validateResolution checks name resolution and the MAC address.
func validateResolution(r reporter, raw *rawServiceSpec) {
	for i, e := range raw.ExtraHosts {
		if err := CheckExtraHost(e); err != nil {
			r.errorf(indexPath("spec.extraHosts", i), "%v", err)
		}
	}
	for i, d := range raw.DNS {
		if _, err := netip.ParseAddr(d); err != nil {
			r.errorf(indexPath("spec.dns", i), "invalid DNS server %q: must be an IP address", d)
		}
	}
	for i, d := range raw.DNSSearch {
		if !ValidHostname(d) {
			r.errorf(indexPath("spec.dnsSearch", i), "invalid search domain %q", d)
		}
	}
	for i, d := range raw.DNSOptions {
		if strings.TrimSpace(d) == "" || strings.ContainsAny(d, " \t\n") {
			r.errorf(indexPath("spec.dnsOptions", i), "invalid resolver option %q: one word such as ndots:2", d)
		}
	}
	if raw.MacAddress != "" {
		if err := CheckMAC(raw.MacAddress); err != nil {
			r.errorf("spec.macAddress", "%v", err)
		}
		if raw.NetworkMode == NetworkHost || raw.NetworkMode == NetworkNone {
			r.errorf("spec.macAddress", "does not apply with networkMode %s", raw.NetworkMode)
		}
	}
}

// mountPath checks a mount target and that nothing else mounts there.
func (r reporter) mountPath(field, p string, mounts map[string]string) {
	switch {
	case p == "":
		r.required(field)
	case !path.IsAbs(p):
		r.errorf(field, "must be an absolute path, got %q", p)
	default:
		clean := path.Clean(p)
		if prev, dup := mounts[clean]; dup {
			r.errorf(field, "%q is already mounted by %s", p, prev)
			return
		}
		mounts[clean] = parentPath(field)
	}
}

// validateMounts checks binds and tmpfs mounts.
func validateMounts(r reporter, raw *rawServiceSpec, mounts map[string]string) {
	for i, b := range raw.Binds {
		validateBind(r, indexPath("spec.binds", i), b, mounts)
	}
	for i, t := range raw.Tmpfs {
		tp := indexPath("spec.tmpfs", i)
		r.mountPath(tp+".mountPath", t.MountPath, mounts)
		if t.Size != nil {
			if _, err := ParseMemory(string(*t.Size)); err != nil {
				r.errorf(tp+".size", "%v", err)
			}
		}
		if t.Mode != nil {
			if _, err := parseMode(string(*t.Mode)); err != nil {
				r.errorf(tp+".mode", "%v", err)
			}
		}
	}
}

func validateBind(r reporter, bp string, b rawBind, mounts map[string]string) {
	switch {
	case b.HostPath != "" && b.RepoPath != "":
		r.errorf(bp, "has hostPath and repoPath: use exactly one")
	case b.HostPath == "" && b.RepoPath == "":
		r.errorf(bp, "needs hostPath (an absolute path on the host) or repoPath (a path in the repository)")
	case b.HostPath != "":
		if !path.IsAbs(b.HostPath) {
			r.errorf(bp+".hostPath", "must be an absolute path, got %q: a relative path is repoPath", b.HostPath)
		}
	default:
		if _, err := CleanRepoPath(b.RepoPath); err != nil {
			r.errorf(bp+".repoPath", "%v", err)
		}
		if b.ReadOnly != nil && !*b.ReadOnly {
			r.errorf(bp+".readOnly", "repository files are always mounted read-only: they are shared by every replica and revision with the same content")
		}
		if b.CreateHostPath {
			r.errorf(bp+".createHostPath", "only applies to hostPath")
		}
		if b.SELinux == "Z" {
			r.errorf(bp+".selinux", "Z would relabel repository files shared with other containers for this one only: use z")
		}
	}
	r.mountPath(bp+".mountPath", b.MountPath, mounts)
	if b.Propagation != "" && !slices.Contains(propagations, b.Propagation) {
		r.errorf(bp+".propagation", "must be one of %s, got %q", strings.Join(propagations, ", "), b.Propagation)
	}
	if b.SELinux != "" && b.SELinux != "z" && b.SELinux != "Z" {
		r.errorf(bp+".selinux", "must be z (shared label) or Z (private label), got %q", b.SELinux)
	}
}

// validateSecurity checks privileges, capabilities, devices and namespaces.
func validateSecurity(r reporter, raw *rawServiceSpec) {
	validateCapabilities(r, raw)
	for i, o := range raw.SecurityOpt {
		if !strings.ContainsAny(o, "=:") && o != "no-new-privileges" {
			r.errorf(indexPath("spec.securityOpt", i), "invalid security option %q: write key=value (seccomp=..., apparmor=..., label=...) or no-new-privileges", o)
		}
	}
	for i, d := range raw.Devices {
		dp := indexPath("spec.devices", i)
		switch {
		case d.HostPath == "":
			r.required(dp + ".hostPath")
		case !path.IsAbs(d.HostPath):
			r.errorf(dp+".hostPath", "must be an absolute path, got %q", d.HostPath)
		}
		if d.ContainerPath != "" && !path.IsAbs(d.ContainerPath) {
			r.errorf(dp+".containerPath", "must be an absolute path, got %q", d.ContainerPath)
		}
		if p := d.Permissions; p != "" && (strings.Trim(p, "rwm") != "" || len(p) > 3) {
			r.errorf(dp+".permissions", "must be made of r, w and m, got %q", p)
		}
	}
	for i, g := range raw.GroupAdd {
		if !ValidUser(string(g)) || strings.Contains(string(g), ":") {
			r.errorf(indexPath("spec.groupAdd", i), "invalid group %q: a group name or gid", g)
		}
	}
	if raw.PID != "" && raw.PID != "host" {
		r.errorf("spec.pid", "must be host (or absent for the container's own), got %q", raw.PID)
	}
	switch raw.IPC {
	case "", "host", "private", "shareable":
	default:
		r.errorf("spec.ipc", "must be host, private or shareable, got %q", raw.IPC)
	}
}

// validateCapabilities checks capAdd and capDrop: known names, no
// duplicates (after normalizing case and CAP_).
func validateCapabilities(r reporter, raw *rawServiceSpec) {
	for _, list := range []struct {
		field string
		caps  []string
	}{{"spec.capAdd", raw.CapAdd}, {"spec.capDrop", raw.CapDrop}} {
		seen := map[string]int{}
		for i, c := range list.caps {
			p, n := indexPath(list.field, i), NormalizeCapability(c)
			if !ValidCapability(n) {
				r.errorf(p, "unknown capability %q: use a Linux capability such as NET_ADMIN (CAP_ prefix optional) or ALL", c)
				continue
			}
			if j, dup := seen[n]; dup {
				r.errorf(p, "%s is already listed at %s[%d]", n, list.field, j)
			}
			seen[n] = i
		}
	}
}

// validateLimits checks kernel parameters and resource limits.
func validateLimits(r reporter, raw *rawServiceSpec) {
	for _, k := range sortedKeys(raw.Sysctls) {
		if err := CheckSysctl(k, raw.NetworkMode); err != nil {
			r.errorf(childPath("spec.sysctls", k), "%v", err)
		}
	}
	seen := map[string]int{}
	for i, u := range raw.Ulimits {
		up := indexPath("spec.ulimits", i)
		switch j, dup := seen[u.Name]; {
		case u.Name == "":
			r.required(up + ".name")
		case !slices.Contains(ulimitNames, u.Name):
			r.errorf(up+".name", "unknown limit %q: one of %s", u.Name, strings.Join(ulimitNames, ", "))
		case dup:
			r.errorf(up+".name", "%s is already limited at spec.ulimits[%d]", u.Name, j)
		}
		seen[u.Name] = i
		if u.Soft == nil {
			r.required(up + ".soft")
		}
		r.intRange(up+".soft", u.Soft, -1, 1<<62)
		r.intRange(up+".hard", u.Hard, -1, 1<<62)
		if u.Soft != nil && u.Hard != nil && ulimitAbove(*u.Soft, *u.Hard) {
			r.errorf(up+".soft", "soft limit %d is above the hard limit %d", *u.Soft, *u.Hard)
		}
	}
	if raw.ShmSize != nil {
		if _, err := ParseMemory(string(*raw.ShmSize)); err != nil {
			r.errorf("spec.shmSize", "%v", err)
		}
	}
}

// ulimitNames are the resource limits Docker knows (setrlimit without
// RLIMIT_, lower case).
var ulimitNames = []string{
	"as", "core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile", "nproc", "rss",
	"rtprio", "rttime", "sigpending", "stack",
}

// ulimitAbove reports soft > hard, where -1 is unlimited.
func ulimitAbove(soft, hard int) bool {
	switch {
	case hard == -1:
		return false
	case soft == -1:
		return true
	}
	return soft > hard
}

// serviceFields locates the spec's fields by model path for messages about
// the normalized spec (the host-power policy): every top-level field
// written in the document, and the items of the lists the policy checks,
// at their index in the normalized (sorted) spec.
func serviceFields(doc *docCtx, raw *rawServiceSpec, spec ServiceSpec) map[string]FieldRef {
	fields := map[string]FieldRef{}
	add := func(model, written string) {
		if pos, ok := doc.pos[written]; ok {
			fields[model] = FieldRef{Pos: pos, Field: written}
		}
	}
	for written := range doc.pos {
		if key, ok := strings.CutPrefix(written, "spec."); ok && plainKey.MatchString(key) {
			add(key, written)
		}
	}
	add("shmSizeBytes", "spec.shmSize")
	for i, b := range raw.Binds {
		if j := slices.IndexFunc(spec.Binds, func(m BindMount) bool { return m.MountPath == b.MountPath }); j >= 0 {
			add(indexPath("binds", j), indexPath("spec.binds", i))
		}
	}
	for i, d := range raw.Devices {
		target := orDefaultString(d.ContainerPath, d.HostPath)
		if j := slices.IndexFunc(spec.Devices, func(m Device) bool { return m.ContainerPath == target && m.HostPath == d.HostPath }); j >= 0 {
			add(indexPath("devices", j), indexPath("spec.devices", i))
		}
	}
	for i, c := range raw.CapAdd {
		if j := slices.Index(spec.CapAdd, NormalizeCapability(c)); j >= 0 {
			if _, done := fields[indexPath("capAdd", j)]; !done {
				add(indexPath("capAdd", j), indexPath("spec.capAdd", i))
			}
		}
	}
	for i := range raw.SecurityOpt {
		add(indexPath("securityOpt", i), indexPath("spec.securityOpt", i))
	}
	for i := range raw.Secrets {
		add(indexPath("secrets", i), indexPath("spec.secrets", i))
		add(indexPath("secrets", i)+".file", indexPath("spec.secrets", i)+".file")
	}
	for i := range raw.EnvFrom {
		add(indexPath("envFrom", i), indexPath("spec.envFrom", i))
	}
	return fields
}

// ResolveRepoBinds reads the repository content of every bind mount with a
// RepoPath from the revision (fsys, the app directory at root), records its
// ContentHash in the spec (so changed content rolls the service; the
// service's Hash is recomputed) and keeps the content in app.Content.
// Both front ends' apps go through it after parsing. Problems come back as
// an ErrorList located where the mount is declared.
func ResolveRepoBinds(fsys fs.FS, root string, app *App) error {
	var errs ErrorList
	for i := range app.Services {
		svc := &app.Services[i]
		changed := false
		for j := range svc.Spec.Binds {
			b := &svc.Spec.Binds[j]
			if b.RepoPath == "" {
				continue
			}
			tree, err := readBindTree(fsys, root, b.RepoPath)
			if err != nil {
				ref := svc.Field(indexPath("binds", j))
				errs = append(errs, &Error{Pos: ref.Pos, Field: ref.Field, Msg: err.Error()})
				continue
			}
			b.ContentHash = tree.Hash()
			if app.Content == nil {
				app.Content = map[string]*RepoTree{}
			}
			app.Content[b.ContentHash] = tree
			changed = true
		}
		if changed {
			svc.Hash = HashService(app.SecretKey, svc.Labels, svc.Spec)
		}
	}
	if len(errs) > 0 {
		return (&collector{errs: errs}).sorted()
	}
	return nil
}

func readBindTree(fsys fs.FS, root, repoPath string) (*RepoTree, error) {
	clean, err := CleanRepoPath(repoPath)
	if err != nil {
		return nil, err
	}
	tree, err := ReadRepoTree(fsys, path.Join(root, clean))
	var limit *LimitError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("repoPath %s does not exist in this revision", clean)
	case errors.As(err, &limit):
		return nil, fmt.Errorf("repoPath %s: %s; mount config files, not data (use a volume)", clean, limit.asError().Msg)
	case err != nil:
		return nil, fmt.Errorf("reading repoPath %s: %v", clean, err)
	}
	return tree, nil
}
