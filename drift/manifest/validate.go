package manifest

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/distribution/reference"
)

// maxSeconds bounds every duration field: a day is more than any probe or
// grace period needs, and keeps durations far from overflowing.
const maxSeconds = 86400

// minMemory is the smallest memory limit the Docker Engine accepts.
const minMemory = 6 << 20

var driverName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._/:-]*$`)

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
	r := reporter{c, doc}
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
	r := reporter{c, o.doc}
	raw := o.serviceRaw
	if raw == nil {
		r.required("spec")
		return
	}
	spec := normalizeService(raw)

	if raw.Image == "" {
		r.required("spec.image")
	} else if _, err := reference.ParseNormalizedNamed(raw.Image); err != nil {
		r.errorf("spec.image", "invalid image reference %q: %v", raw.Image, err)
	}
	r.intRange("spec.replicas", raw.Replicas, 0, int(^uint(0)>>1))

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

	seen = map[string]int{}
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
		np := normalizePort(p)
		key := fmt.Sprintf("%d/%s", np.ContainerPort, np.Protocol)
		if j, dup := seen[key]; dup && p.ContainerPort != nil {
			r.errorf(pp+".containerPort", "port %s is already listed at spec.ports[%d]", key, j)
		} else {
			seen[key] = i
		}
	}

	seen = map[string]int{}
	for i, n := range raw.Networks {
		p := indexPath("spec.networks", i)
		if j, dup := seen[n]; dup {
			r.errorf(p, "network %q is already listed at spec.networks[%d]", n, j)
		}
		seen[n] = i
	}

	seen = map[string]int{}
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
			}
			seen[clean] = i
		}
	}

	if res := raw.Resources; res != nil {
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
	}

	if rd := raw.Readiness; rd != nil {
		validateReadiness(r, rd)
	}

	if raw.Restart != "" && raw.Restart != RestartAlways && raw.Restart != RestartOnFailure && raw.Restart != RestartNever {
		r.errorf("spec.restart", "must be always, on-failure or never, got %q", raw.Restart)
	}

	if u := raw.Update; u != nil {
		switch u.Strategy {
		case "", StrategyRolling:
			r.intRange("spec.update.maxSurge", u.MaxSurge, 0, 1<<20)
			r.intRange("spec.update.maxUnavailable", u.MaxUnavailable, 0, 1<<20)
			if spec.Update.MaxSurge == 0 && spec.Update.MaxUnavailable == 0 {
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

	seen = map[string]int{}
	for i, d := range raw.DependsOn {
		p := indexPath("spec.dependsOn", i)
		switch j, dup := seen[d]; {
		case d == o.name:
			r.errorf(p, "a service cannot depend on itself")
		case dup:
			r.errorf(p, "%q is already listed at spec.dependsOn[%d]", d, j)
		}
		seen[d] = i
	}
	r.intRange("spec.stopGracePeriodSeconds", raw.StopGracePeriodSeconds, 0, maxSeconds)

	if ValidName(o.name) {
		// The highest slot gives the longest name (slots are 1-based).
		name := ContainerName(app, o.name, max(spec.Replicas, 1))
		if len(name) > maxDNSLabel || !dockerName.MatchString(name) {
			r.errorf("metadata.name", "container name %q would be longer than %d characters (Docker's DNS limit): shorten the app or service name", name, maxDNSLabel)
		}
	}

	o.service = Service{
		Name:   o.name,
		Labels: o.labels,
		Spec:   spec,
		Hash:   HashService(o.labels, spec),
		Source: o.source(),
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
	r := reporter{c, o.doc}
	spec := normalizeNetwork(o.networkRaw)
	if !driverName.MatchString(spec.Driver) {
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
	r := reporter{c, o.doc}
	spec := normalizeVolume(o.volumeRaw)
	if !driverName.MatchString(spec.Driver) {
		r.errorf("spec.driver", "invalid driver name %q", spec.Driver)
	}
	o.volume = Volume{
		Name:   o.name,
		Labels: o.labels,
		Spec:   spec,
		Hash:   HashVolume(o.labels, spec),
		Source: o.source(),
	}
}

// assemble runs the checks that span documents and builds the App.
func assemble(c *collector, app string, objs []*object) *App {
	first := map[string]*object{}
	declared := func(kind, name string) bool { return first[kind+"/"+name] != nil }
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

	type hostPortUse struct {
		service string
		pos     Position
	}
	hostPorts := map[string]hostPortUse{}
	services := map[string]*object{}
	for _, o := range objs {
		if o.kind != KindService || o.broken || o.dup || o.serviceRaw == nil {
			continue
		}
		services[o.name] = o
		r := reporter{c, o.doc}
		raw, spec := o.serviceRaw, o.service.Spec
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
		for i, p := range raw.Ports {
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
	reportCycles(c, services)

	if len(c.errs) > 0 {
		return nil
	}
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
	if usesDefault && !declared(KindNetwork, DefaultNetwork) {
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
	const (
		unvisited = iota
		onStack
		done
	)
	state := map[string]int{}
	reported := map[string]bool{}
	var stack []string
	var visit func(name string)
	visit = func(name string) {
		state[name] = onStack
		stack = append(stack, name)
		for _, d := range services[name].service.Spec.DependsOn {
			if services[d] == nil || d == name {
				continue
			}
			switch state[d] {
			case unvisited:
				visit(d)
			case onStack:
				cycle := slices.Clone(stack[slices.Index(stack, d):])
				start := slices.Index(cycle, slices.Min(cycle))
				cycle = append(cycle[start:], cycle[:start]...)
				key := strings.Join(cycle, " -> ")
				if reported[key] {
					continue
				}
				reported[key] = true
				o := services[cycle[0]]
				next := cycle[1%len(cycle)]
				field := indexPath("spec.dependsOn", slices.Index(o.serviceRaw.DependsOn, next))
				reporter{c, o.doc}.errorf(field, "dependency cycle: %s -> %s", key, cycle[0])
			}
		}
		stack = stack[:len(stack)-1]
		state[name] = done
	}
	for _, name := range sortedKeys(services) {
		if state[name] == unvisited {
			visit(name)
		}
	}
}
