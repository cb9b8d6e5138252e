package native

import (
	"errors"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/distribution/reference"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// object is one parsed document on its way into the App.
type object struct {
	doc    *yamlpos.DocCtx
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
	jobRaw     *rawJobSpec
	appRaw     *rawAppSpec

	service manifest.Service
	network manifest.Network
	volume  manifest.Volume
	job     manifest.Job
	release *manifest.ReleaseSettings
}

// source is where the object is named: its metadata.name, or the start of
// the document.
func (o *object) source() manifest.Position {
	if p, ok := o.doc.Pos["metadata.name"]; ok {
		return p
	}
	return o.doc.Start
}

func validateHeader(c *yamlpos.Collector, doc *yamlpos.DocCtx, apiVersion, kind string, meta *rawMeta, o *object) {
	r := yamlpos.Reporter{Errs: c, Doc: doc}
	switch apiVersion {
	case manifest.APIVersion:
	case "":
		if !doc.Failed["apiVersion"] {
			r.Errorf("apiVersion", "is required: %s", manifest.APIVersion)
		}
	default:
		r.Errorf("apiVersion", "must be %q, got %q", manifest.APIVersion, apiVersion)
	}
	switch kind {
	case manifest.KindService, manifest.KindNetwork, manifest.KindVolume, manifest.KindJob, manifest.KindApp:
	case "":
		r.Required("kind")
	default:
		hint := ""
		if s := yamlpos.Suggest(kind, knownKinds); s != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", s)
		}
		r.Errorf("kind", "unknown kind %q: must be Service, Network, Volume, Job or App%s", kind, hint)
	}
	if meta == nil {
		meta = &rawMeta{}
	}
	o.name = meta.Name
	switch {
	case meta.Name == "":
		r.Required("metadata.name")
	case !manifest.ValidObjectName(meta.Name):
		r.Errorf("metadata.name", "invalid name %q: %s", meta.Name, manifest.ObjectNameRule)
	}
	validateLabelKeys(r, "metadata.labels", meta.Labels)
	o.labels = copyMap(meta.Labels)
}

// validateLabelKeys refuses empty label keys and keys that would forge
// driftless's own labels.
func validateLabelKeys(r yamlpos.Reporter, field string, labels map[string]string) {
	for _, k := range sortedKeys(labels) {
		switch {
		case k == "":
			r.Errorf(yamlpos.ChildPath(field, k), "label keys must not be empty")
		case strings.HasPrefix(k, manifest.ReservedLabelPrefix):
			r.Errorf(yamlpos.ChildPath(field, k), "the label prefix %q is reserved for driftless", manifest.ReservedLabelPrefix)
		}
	}
}

func validateService(c *yamlpos.Collector, app string, o *object) {
	r := yamlpos.Reporter{Errs: c, Doc: o.doc}
	raw := o.serviceRaw
	if raw == nil {
		r.Required("spec")
		return
	}
	spec := normalizeService(raw)

	switch {
	case raw.Image == "" && raw.Build == nil:
		r.Required("spec.image")
	case raw.Image == "":
	case raw.Build != nil:
		// The built image's name; its digest cannot be known in advance.
		if _, err := manifest.BuiltImageName(app, "x", raw.Image); err != nil {
			r.Errorf("spec.image", "%v", err)
		}
	default:
		if _, err := reference.ParseNormalizedNamed(raw.Image); err != nil {
			r.Errorf("spec.image", "invalid image reference %q: %v", raw.Image, err)
		}
	}
	validateBuild(r, raw.Build)
	r.IntRange("spec.replicas", raw.Replicas, 0, int(^uint(0)>>1))
	validateEnv(r, raw)
	validateSecretRefs(r, raw)
	validatePorts(r, raw)
	validateNetworkList(r, raw)
	mounts := validateVolumeMounts(r, raw)
	if res := raw.Resources; res != nil {
		validateResources(r, res)
	}
	if rd := raw.Readiness; rd != nil {
		ValidateReadiness(r, rd)
		validateReadinessWith(r, raw)
	}
	if raw.Restart != "" && raw.Restart != manifest.RestartAlways && raw.Restart != manifest.RestartOnFailure && raw.Restart != manifest.RestartNever {
		r.Errorf("spec.restart", "must be always, on-failure or never, got %q", raw.Restart)
	}
	if u := raw.Update; u != nil {
		validateUpdate(r, u, spec.Update)
		ValidateCanary(r, "spec.update", u.Canary, u.CanaryWatch, spec.Replicas, spec.Update.Strategy != manifest.StrategyRecreate)
	}
	validateDependsOn(r, raw, o.name)
	r.IntRange("spec.stopGracePeriodSeconds", raw.StopGracePeriodSeconds, 0, manifest.MaxSeconds)
	r.IntRange("spec.minReadySeconds", raw.MinReadySeconds, 0, manifest.MaxSeconds)
	validateProcess(r, raw)
	validateNetworking(r, raw)
	validateMounts(r, raw, mounts)
	validatePlatformLinks(r, raw)
	validateSecurity(r, raw)
	validateDeviceRequests(r, raw)
	validateHooks(r, raw)
	for i, v := range raw.VolumesFrom {
		if !manifest.ValidObjectName(v.Service) {
			r.Errorf(yamlpos.IndexPath("spec.volumesFrom", i)+".service", "must name a service of the app, got %q", v.Service)
		}
	}
	validateLimits(r, raw)

	o.service = manifest.Service{
		Name:   o.name,
		Labels: o.labels,
		Spec:   spec,
		Hash:   manifest.HashService(nil, o.labels, spec),
		Source: o.source(),
		Fields: serviceFields(o.doc, raw, spec),
	}
	validateImageHandling(r, raw, &o.service)
}

func validateEnv(r yamlpos.Reporter, raw *rawServiceSpec) {
	for _, k := range sortedKeys(raw.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			r.Errorf(yamlpos.ChildPath("spec.env", k), "invalid variable name %q: must not be empty or contain '='", k)
		}
	}
	seen := map[string]int{}
	for i, k := range raw.SecretEnv {
		p := yamlpos.IndexPath("spec.secretEnv", i)
		if j, dup := seen[k]; dup {
			r.Errorf(p, "%q is already listed at spec.secretEnv[%d]", k, j)
			continue
		}
		seen[k] = i
		if _, ok := raw.Env[k]; !ok {
			r.Errorf(p, "%q is not set in spec.env: add its value there", k)
		}
	}
}

func validatePorts(r yamlpos.Reporter, raw *rawServiceSpec) {
	seen := map[string]int{}
	for i, p := range raw.Ports {
		pp := yamlpos.IndexPath("spec.ports", i)
		if p.ContainerPort == nil {
			r.Required(pp + ".containerPort")
		} else {
			r.Port(pp+".containerPort", *p.ContainerPort)
		}
		if p.HostPort != nil && *p.HostPort != 0 {
			r.Port(pp+".hostPort", *p.HostPort)
		}
		if p.Protocol != "" && p.Protocol != "tcp" && p.Protocol != "udp" {
			r.Errorf(pp+".protocol", "must be tcp or udp, got %q", p.Protocol)
		}
		validateHostIP(r, pp, p)
		np := normalizePort(p)
		key := fmt.Sprintf("%d/%s", np.ContainerPort, np.Protocol)
		if j, dup := seen[key]; dup && p.ContainerPort != nil {
			r.Errorf(pp+".containerPort", "port %s is already listed at spec.ports[%d]", key, j)
		} else {
			seen[key] = i
		}
	}
}

func validateHostIP(r yamlpos.Reporter, pp string, p rawPort) {
	if p.HostIP == "" {
		return
	}
	if _, err := netip.ParseAddr(p.HostIP); err != nil {
		r.Errorf(pp+".hostIP", "invalid IP address %q", p.HostIP)
	} else if p.HostPort == nil {
		r.Errorf(pp+".hostIP", "only applies with hostPort")
	}
}

func validateNetworkList(r yamlpos.Reporter, raw *rawServiceSpec) {
	seen := map[string]int{}
	for i, n := range raw.Networks {
		p := yamlpos.IndexPath("spec.networks", i)
		if j, dup := seen[n]; dup {
			r.Errorf(p, "network %q is already listed at spec.networks[%d]", n, j)
		}
		seen[n] = i
	}
}

// validateVolumeMounts checks the volume mounts and returns the mount
// paths they use (clean path -> field), for the other kinds of mounts.
func validateVolumeMounts(r yamlpos.Reporter, raw *rawServiceSpec) map[string]string {
	mounts := map[string]string{}
	seen := map[string]int{}
	for i, v := range raw.Volumes {
		vp := yamlpos.IndexPath("spec.volumes", i)
		if v.Name == "" {
			r.Required(vp + ".name")
		}
		switch {
		case v.MountPath == "":
			r.Required(vp + ".mountPath")
		case !path.IsAbs(v.MountPath):
			r.Errorf(vp+".mountPath", "must be an absolute path, got %q", v.MountPath)
		default:
			clean := path.Clean(v.MountPath)
			if j, dup := seen[clean]; dup {
				r.Errorf(vp+".mountPath", "%q is already mounted by spec.volumes[%d]", v.MountPath, j)
			} else {
				mounts[clean] = vp
			}
			seen[clean] = i
		}
	}
	return mounts
}

func validateResources(r yamlpos.Reporter, res *rawResources) {
	if res.Memory != nil {
		if b, err := manifest.ParseMemory(string(*res.Memory)); err != nil {
			r.Errorf("spec.resources.memory", "%v", err)
		} else if b > 0 && b < manifest.MinMemory {
			r.Errorf("spec.resources.memory", "must be at least 6Mi (Docker's minimum), or 0 for no limit")
		}
	}
	if res.CPUs != nil {
		if _, err := manifest.ParseCPUs(string(*res.CPUs)); err != nil {
			r.Errorf("spec.resources.cpus", "%v", err)
		}
	}
	validateResourceExtras(r, res)
	validateTuning(r, res)
}

// validateReadinessWith checks readiness against the rest of the spec.
func validateReadinessWith(r yamlpos.Reporter, raw *rawServiceSpec) {
	rd := raw.Readiness
	if rd.Exec != nil && raw.Healthcheck != nil {
		r.Errorf("spec.healthcheck", "readiness.exec is also a Docker healthcheck: use one of them")
	}
	if (rd.HTTPGet != nil || rd.TCPSocket != nil) && (raw.NetworkMode == manifest.NetworkHost || raw.NetworkMode == manifest.NetworkNone || strings.HasPrefix(raw.NetworkMode, manifest.NetworkServicePrefix)) {
		r.Errorf("spec.readiness", "httpGet and tcpSocket probes need the container's own network address, which networkMode %s does not give: use exec readiness or a healthcheck", raw.NetworkMode)
	}
}

func validateUpdate(r yamlpos.Reporter, u *rawUpdate, normalized manifest.Update) {
	switch u.Strategy {
	case "", manifest.StrategyRolling:
		r.IntRange("spec.update.maxSurge", u.MaxSurge, 0, 1<<20)
		r.IntRange("spec.update.maxUnavailable", u.MaxUnavailable, 0, 1<<20)
		if normalized.MaxSurge == 0 && normalized.MaxUnavailable == 0 {
			field := "spec.update.maxSurge"
			if u.MaxSurge == nil {
				field = "spec.update.maxUnavailable"
			}
			r.Errorf(field, "maxSurge and maxUnavailable must not both be 0: a rolling update could never replace a replica")
		}
	case manifest.StrategyRecreate:
		if u.MaxSurge != nil {
			r.Errorf("spec.update.maxSurge", "only applies to strategy rolling")
		}
		if u.MaxUnavailable != nil {
			r.Errorf("spec.update.maxUnavailable", "only applies to strategy rolling")
		}
	default:
		r.Errorf("spec.update.strategy", "must be rolling or recreate, got %q", u.Strategy)
	}
}

func validateDependsOn(r yamlpos.Reporter, raw *rawServiceSpec, self string) {
	seen := map[string]int{}
	for i, d := range raw.DependsOn {
		p := yamlpos.IndexPath("spec.dependsOn", i)
		switch j, dup := seen[d]; {
		case d == self:
			r.Errorf(p, "a service cannot depend on itself")
		case dup:
			r.Errorf(p, "%q is already listed at spec.dependsOn[%d]", d, j)
		}
		seen[d] = i
	}
	seen = map[string]int{}
	for i, d := range raw.DependsOnRestart {
		p := yamlpos.IndexPath("spec.dependsOnRestart", i)
		switch j, dup := seen[d]; {
		case dup:
			r.Errorf(p, "%q is already listed at spec.dependsOnRestart[%d]", d, j)
		case !slices.Contains(raw.DependsOn, d):
			r.Errorf(p, "%q is not in spec.dependsOn: add it there", d)
		}
		seen[d] = i
	}
}

func ValidateReadiness(r yamlpos.Reporter, rd *RawReadiness) {
	const rp = "spec.readiness"
	var kinds []string
	if rd.HTTPGet != nil {
		kinds = append(kinds, "httpGet")
		if rd.HTTPGet.Port == nil {
			r.Required(rp + ".httpGet.port")
		} else {
			r.Port(rp+".httpGet.port", *rd.HTTPGet.Port)
		}
		if p := rd.HTTPGet.Path; p != "" && !strings.HasPrefix(p, "/") {
			r.Errorf(rp+".httpGet.path", "must start with /, got %q", p)
		}
	}
	if rd.TCPSocket != nil {
		kinds = append(kinds, "tcpSocket")
		if rd.TCPSocket.Port == nil {
			r.Required(rp + ".tcpSocket.port")
		} else {
			r.Port(rp+".tcpSocket.port", *rd.TCPSocket.Port)
		}
	}
	if rd.Exec != nil {
		kinds = append(kinds, "exec")
		if len(rd.Exec.Command) == 0 {
			r.Required(rp + ".exec.command")
		}
	}
	switch len(kinds) {
	case 0:
		r.Errorf(rp, "needs exactly one of httpGet, tcpSocket or exec")
	case 1:
	default:
		r.Errorf(rp, "has %s: use exactly one", strings.Join(kinds, " and "))
	}
	r.IntRange(rp+".initialDelaySeconds", rd.InitialDelaySeconds, 0, manifest.MaxSeconds)
	r.IntRange(rp+".periodSeconds", rd.PeriodSeconds, 1, manifest.MaxSeconds)
	r.IntRange(rp+".timeoutSeconds", rd.TimeoutSeconds, 1, manifest.MaxSeconds)
	r.IntRange(rp+".successThreshold", rd.SuccessThreshold, 1, 1000)
	r.IntRange(rp+".failureThreshold", rd.FailureThreshold, 1, 1000)
}

func validateNetwork(c *yamlpos.Collector, o *object) {
	r := yamlpos.Reporter{Errs: c, Doc: o.doc}
	spec := normalizeNetwork(o.networkRaw)
	if raw := o.networkRaw; raw != nil {
		var managed []string
		for _, f := range []struct {
			name string
			set  bool
		}{{"driver", raw.Driver != ""}, {"internal", raw.Internal}, {"attachable", raw.Attachable}, {"enableIPv6", raw.EnableIPv6}, {"driverOpts", len(raw.DriverOpts) > 0}, {"subnet", raw.Subnet != ""}, {"subnetV6", raw.SubnetV6 != ""}, {"gateway", raw.Gateway != ""}, {"ipRange", raw.IPRange != ""}} {
			if f.set {
				managed = append(managed, f.name)
			}
		}
		validateExternal(r, o, "network", raw.External, raw.Name, managed)
		validateDriverOpts(r, raw.DriverOpts)
		if err := manifest.CheckSubnet(raw.Subnet); err != nil {
			r.Errorf("spec.subnet", "%v", err)
		}
		validateSubnetV6(r, raw)
		if (raw.Gateway != "" || raw.IPRange != "") && raw.Subnet == "" {
			r.Errorf("spec.gateway", "gateway and ipRange need spec.subnet")
		}
		gwErr, rangeErr := manifest.CheckGateway(raw.Subnet, raw.Gateway, raw.IPRange)
		if gwErr != nil {
			r.Errorf("spec.gateway", "%v", gwErr)
		}
		if rangeErr != nil {
			r.Errorf("spec.ipRange", "%v", rangeErr)
		}
	}
	if spec.External && spec.ExternalName == "" {
		spec.ExternalName = o.name
	}
	if !spec.External && !manifest.ValidDriverName(spec.Driver) {
		r.Errorf("spec.driver", "invalid driver name %q", spec.Driver)
	}
	o.network = manifest.Network{
		Name:   o.name,
		Labels: o.labels,
		Spec:   spec,
		Hash:   manifest.HashNetwork(o.labels, spec),
		Source: o.source(),
	}
}

func validateVolume(c *yamlpos.Collector, o *object) {
	r := yamlpos.Reporter{Errs: c, Doc: o.doc}
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
	if !spec.External && !manifest.ValidDriverName(spec.Driver) {
		r.Errorf("spec.driver", "invalid driver name %q", spec.Driver)
	}
	o.volume = manifest.Volume{
		Name:   o.name,
		Labels: o.labels,
		Spec:   spec,
		Hash:   manifest.HashVolume(o.labels, spec),
		Source: o.source(),
		Fields: yamlpos.VolumeFields(o.doc.At, "spec.driver", "spec.driverOpts", spec.DriverOpts),
	}
}

// validateExternal checks the fields of an external network or volume:
// driftless never creates it, so only its Docker name means something.
func validateExternal(r yamlpos.Reporter, o *object, kind string, external bool, name string, managed []string) {
	if !external {
		// The Docker name driftless gives its own object (default
		// <app>-<name>).
		if name != "" && !manifest.ValidDockerName(name) {
			r.Errorf("spec.name", "invalid Docker %s name %q: letters, digits, '_', '.' and '-', starting with a letter or digit", kind, name)
		}
		return
	}
	if name != "" && !manifest.ValidDockerName(name) {
		r.Errorf("spec.name", "invalid Docker %s name %q", kind, name)
	}
	for _, f := range managed {
		r.Errorf("spec."+f, "does not apply to an external %s: driftless never creates or changes it", kind)
	}
	if len(o.labels) > 0 {
		r.Errorf("metadata.labels", "are not applied to an external %s: driftless never creates or changes it", kind)
	}
}

func validateDriverOpts(r yamlpos.Reporter, opts map[string]string) {
	for _, k := range sortedKeys(opts) {
		if k == "" {
			r.Errorf("spec.driverOpts", "option names must not be empty")
		}
	}
}

// assemble runs the checks that span documents and builds the App.
func assemble(c *yamlpos.Collector, app string, objs []*object) *manifest.App {
	first := firstDeclarations(c, objs)
	declared := func(kind, name string) bool { return first[kind+"/"+name] != nil }
	hostPorts := map[string]hostPortUse{}
	services := map[string]*object{}
	for _, o := range objs {
		if o.kind != manifest.KindService || o.broken || o.dup || o.serviceRaw == nil {
			continue
		}
		services[o.name] = o
		r := yamlpos.Reporter{Errs: c, Doc: o.doc}
		checkServiceReferences(r, o, declared)
		checkHostPorts(r, o, hostPorts)
	}
	addresses := map[string]string{}
	for _, name := range slices.Sorted(mapKeys(services)) {
		o := services[name]
		checkNetworkUse(yamlpos.Reporter{Errs: c, Doc: o.doc}, o, services, first, addresses)
	}
	reportCycles(c, services)
	for _, o := range objs {
		if o.kind == manifest.KindJob && !o.broken && !o.dup && o.jobRaw != nil {
			o.serviceRaw = &o.jobRaw.rawServiceSpec
			checkServiceReferences(yamlpos.Reporter{Errs: c, Doc: o.doc}, o, declared)
			o.serviceRaw = nil
		}
	}

	if len(c.Errs) > 0 {
		return nil
	}
	return assembleApp(app, objs, declared(manifest.KindNetwork, manifest.DefaultNetwork))
}

// firstDeclarations indexes objects by kind and name, marking and reporting
// later duplicates.
func firstDeclarations(c *yamlpos.Collector, objs []*object) map[string]*object {
	first := map[string]*object{}
	for _, o := range objs {
		if o.name == "" || !knownKind(o.kind) {
			continue
		}
		// A job's container is named apart from replicas, but its name is
		// a service's in messages and in the checks both share.
		key := o.kind + "/" + o.name
		switch o.kind {
		case manifest.KindJob:
			key = manifest.KindService + "/" + o.name
		case manifest.KindApp:
			key = manifest.KindApp // one per app, whatever its name
		}
		if f := first[key]; f != nil && o.kind == manifest.KindApp {
			o.dup = true
			c.Add(o.source(), "kind", "only one App document per app: the first is at %s", f.source())
			continue
		}
		if f := first[key]; f != nil {
			o.dup = true
			c.Add(o.source(), "metadata.name", "duplicate %s name %q: first declared at %s", o.kind, o.name, f.source())
			continue
		}
		first[key] = o
	}
	return first
}

// checkServiceReferences reports networks, volumes and dependencies a
// service names but the app does not declare.
func checkServiceReferences(r yamlpos.Reporter, o *object, declared func(kind, name string) bool) {
	raw := o.serviceRaw
	for i, n := range raw.Networks {
		if n != manifest.DefaultNetwork && !declared(manifest.KindNetwork, n) {
			r.Errorf(yamlpos.IndexPath("spec.networks", i), "network %q is not declared: add a Network named %q to the app or remove it here", n, n)
		}
	}
	for i, v := range raw.Volumes {
		if !declared(manifest.KindVolume, v.Name) {
			r.Errorf(yamlpos.IndexPath("spec.volumes", i)+".name", "volume %q is not declared: add a Volume named %q to the app", v.Name, v.Name)
		}
	}
	for i, d := range raw.DependsOn {
		if d != o.name && !declared(manifest.KindService, d) {
			r.Errorf(yamlpos.IndexPath("spec.dependsOn", i), "service %q is not declared", d)
		}
	}
	for i, v := range raw.VolumesFrom {
		field := yamlpos.IndexPath("spec.volumesFrom", i) + ".service"
		switch {
		case v.Service == o.name:
			r.Errorf(field, "a service cannot mount its own volumes")
		case v.Service != "" && !declared(manifest.KindService, v.Service):
			r.Errorf(field, "service %q is not declared: volumesFrom names a service of the app", v.Service)
		}
	}
}

type hostPortUse struct {
	service string
	pos     manifest.Position
}

// checkHostPorts reports host ports that would collide: across a service's
// replicas, during a surge, or with another service (hostPorts, filled as
// services are checked).
func checkHostPorts(r yamlpos.Reporter, o *object, hostPorts map[string]hostPortUse) {
	spec := o.service.Spec
	for i, p := range o.serviceRaw.Ports {
		np := normalizePort(p)
		if np.HostPort < 1 || np.HostPort > 65535 {
			continue // unpublished, Docker's pick, or refused as out of range
		}
		field := yamlpos.IndexPath("spec.ports", i) + ".hostPort"
		switch {
		case spec.Replicas > 1:
			r.Errorf(field, "hostPort %d would collide across the %d replicas: remove hostPort or set replicas: 1", np.HostPort, spec.Replicas)
		case spec.Update.Strategy == manifest.StrategyRolling && spec.Update.MaxSurge > 0:
			r.Errorf(field, "hostPort %d would collide when a rolling update starts the new replica before stopping the old one: set update: {maxSurge: 0, maxUnavailable: 1} or update: {strategy: recreate}", np.HostPort)
		}
		key := fmt.Sprintf("%d/%s", np.HostPort, np.Protocol)
		if prev, used := hostPorts[key]; used {
			r.Errorf(field, "hostPort %s is already used by service %q at %s", key, prev.service, prev.pos)
			continue
		}
		hostPorts[key] = hostPortUse{o.name, o.doc.At(field)}
	}
}

// assembleApp builds the App from valid objects, adding the implicit default
// network when a service uses it and the app does not declare it.
func assembleApp(app string, objs []*object, defaultDeclared bool) *manifest.App {
	result := &manifest.App{Name: app, Format: manifest.FormatNative, Services: []manifest.Service{}, Networks: []manifest.Network{}, Volumes: []manifest.Volume{}}
	usesDefault := false
	for _, o := range objs {
		switch o.kind {
		case manifest.KindService:
			result.Services = append(result.Services, o.service)
			usesDefault = usesDefault || slices.Contains(o.service.Spec.Networks, manifest.DefaultNetwork)
		case manifest.KindNetwork:
			result.Networks = append(result.Networks, o.network)
		case manifest.KindVolume:
			result.Volumes = append(result.Volumes, o.volume)
		case manifest.KindJob:
			result.Jobs = append(result.Jobs, o.job)
			usesDefault = usesDefault || slices.Contains(o.job.Service.Spec.Networks, manifest.DefaultNetwork)
		case manifest.KindApp:
			result.Release = o.release
		}
	}
	if usesDefault && !defaultDeclared {
		spec := normalizeNetwork(nil)
		result.Networks = append(result.Networks, manifest.Network{
			Name:     manifest.DefaultNetwork,
			Spec:     spec,
			Hash:     manifest.HashNetwork(nil, spec),
			Implicit: true,
		})
	}
	slices.SortFunc(result.Services, func(a, b manifest.Service) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(result.Networks, func(a, b manifest.Network) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(result.Volumes, func(a, b manifest.Volume) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(result.Jobs, func(a, b manifest.Job) int { return strings.Compare(a.Name, b.Name) })
	return result
}

// reportCycles reports each dependsOn cycle once, at the dependsOn entry of
// its alphabetically first service.
func reportCycles(c *yamlpos.Collector, services map[string]*object) {
	deps := make(map[string][]string, len(services))
	for name, o := range services {
		deps[name] = o.service.Spec.DependsOn
	}
	for _, cycle := range manifest.DependencyCycles(deps) {
		o := services[cycle[0]]
		next := cycle[1%len(cycle)]
		field := yamlpos.IndexPath("spec.dependsOn", slices.Index(o.serviceRaw.DependsOn, next))
		if !slices.Contains(o.serviceRaw.DependsOn, next) {
			field = "spec.networkMode" // the dependency networkMode: service:NAME adds
		}
		yamlpos.Reporter{Errs: c, Doc: o.doc}.Errorf(field, "dependency cycle: %s -> %s", strings.Join(cycle, " -> "), cycle[0])
	}
}

// ---- fields shared with compose files ----

func validateResourceExtras(r yamlpos.Reporter, res *rawResources) {
	r.IntRange("spec.resources.pids", res.Pids, 0, 1<<22)
	if res.MemoryReservation == nil {
		return
	}
	b, err := manifest.ParseMemory(string(*res.MemoryReservation))
	if err != nil {
		r.Errorf("spec.resources.memoryReservation", "%v", err)
		return
	}
	if res.Memory != nil {
		if limit, err := manifest.ParseMemory(string(*res.Memory)); err == nil && limit > 0 && b > limit {
			r.Errorf("spec.resources.memoryReservation", "must not exceed resources.memory (%s)", manifest.FormatMemory(limit))
		}
	}
}

// validateProcess checks what the process runs as and how it is started,
// stopped and checked.
func validateProcess(r yamlpos.Reporter, raw *rawServiceSpec) {
	if raw.ClearEntrypoint && len(raw.Command) > 0 {
		r.Errorf("spec.clearEntrypoint", "clears the image's entrypoint, and command gives one: keep one of them")
	}
	if raw.User != "" && !manifest.ValidUser(raw.User) {
		r.Errorf("spec.user", "invalid user %q: write name, uid, name:group or uid:gid", raw.User)
	}
	if raw.WorkingDir != "" && !path.IsAbs(raw.WorkingDir) {
		r.Errorf("spec.workingDir", "must be an absolute path, got %q", raw.WorkingDir)
	}
	if raw.Hostname != "" && (!manifest.ValidHostname(raw.Hostname) || len(raw.Hostname) > manifest.MaxDNSLabel) {
		r.Errorf("spec.hostname", "invalid host name %q: letters, digits, '-' and '.', at most 63 characters", raw.Hostname)
	}
	if raw.Domainname != "" && !manifest.ValidHostname(raw.Domainname) {
		r.Errorf("spec.domainname", "invalid domain name %q", raw.Domainname)
	}
	if raw.StopSignal != nil {
		if _, err := manifest.ParseSignal(string(*raw.StopSignal)); err != nil {
			r.Errorf("spec.stopSignal", "%v", err)
		}
	}
	validateLifecycle(r, raw)
}

// validateLifecycle checks restarts, startup conditions, update pacing,
// the healthcheck and logging.
func validateLifecycle(r yamlpos.Reporter, raw *rawServiceSpec) {
	if raw.RestartMaxRetries != nil {
		r.IntRange("spec.restartMaxRetries", raw.RestartMaxRetries, 0, 1<<20)
		if raw.Restart != manifest.RestartOnFailure {
			r.Errorf("spec.restartMaxRetries", "only applies with restart: on-failure")
		}
	}
	for _, dep := range sortedKeys(raw.DependsOnCondition) {
		field := yamlpos.ChildPath("spec.dependsOnCondition", dep)
		switch cond := raw.DependsOnCondition[dep]; {
		case cond != manifest.DependsStarted && cond != manifest.DependsHealthy && cond != manifest.DependsCompleted:
			r.Errorf(field, "must be started, healthy or completed, got %q", cond)
		case !slices.Contains(raw.DependsOn, dep):
			r.Errorf(field, "%q is not in spec.dependsOn: add it there", dep)
		}
	}
	if u := raw.Update; u != nil && u.Delay != nil {
		r.Duration("spec.update.delay", u.Delay, 0)
		if u.Strategy == manifest.StrategyRecreate {
			r.Errorf("spec.update.delay", "only applies to strategy rolling")
		}
	}
	if h := raw.Healthcheck; h != nil {
		validateHealthcheck(r, h)
	}
	if l := raw.Logging; l != nil {
		validateLogging(r, l)
	}
}

func validateLogging(r yamlpos.Reporter, l *rawLogging) {
	if l.Driver != "" && !manifest.ValidDriverName(l.Driver) {
		r.Errorf("spec.logging.driver", "invalid driver name %q", l.Driver)
	}
	for _, k := range sortedKeys(l.Options) {
		if k == "" {
			r.Errorf("spec.logging.options", "option names must not be empty")
		}
	}
}

func validateHealthcheck(r yamlpos.Reporter, h *rawHealthcheck) {
	const hp = "spec.healthcheck"
	if h.Disable {
		if len(h.Test) > 0 || h.Interval != nil || h.Timeout != nil || h.StartPeriod != nil || h.StartInterval != nil || h.Retries != nil {
			r.Errorf(hp+".disable", "turns the image's healthcheck off: remove the other healthcheck fields")
		}
		return
	}
	switch {
	case len(h.Test) == 0:
		r.Errorf(hp+".test", "is required (or set disable: true)")
	case h.Test[0] == "CMD":
		if len(h.Test) < 2 {
			r.Errorf(hp+".test", "CMD needs a command: [CMD, program, args...]")
		}
	case h.Test[0] == "CMD-SHELL":
		if len(h.Test) != 2 {
			r.Errorf(hp+".test", "CMD-SHELL takes exactly one command line: [CMD-SHELL, \"line\"]")
		}
	case h.Test[0] == "NONE":
		r.Errorf(hp+".test", "write disable: true to turn the image's healthcheck off")
	default:
		r.Errorf(hp+".test[0]", "must be CMD or CMD-SHELL, got %q", h.Test[0])
	}
	// Docker's minimum for the intervals is one millisecond.
	r.Duration(hp+".interval", h.Interval, time.Millisecond)
	r.Duration(hp+".timeout", h.Timeout, time.Millisecond)
	r.Duration(hp+".startPeriod", h.StartPeriod, time.Millisecond)
	r.Duration(hp+".startInterval", h.StartInterval, time.Millisecond)
	r.IntRange(hp+".retries", h.Retries, 0, 1000)
}

// validateNetworking checks network mode, aliases and name resolution.
func validateNetworking(r yamlpos.Reporter, raw *rawServiceSpec) {
	switch owner, shared := strings.CutPrefix(raw.NetworkMode, manifest.NetworkServicePrefix); {
	case raw.NetworkMode == "", raw.NetworkMode == manifest.NetworkBridge, raw.NetworkMode == manifest.NetworkDefault, raw.NetworkMode == manifest.NetworkNone, raw.NetworkMode == manifest.NetworkHost:
	case shared && manifest.ValidName(owner):
		validateSharedNamespace(r, raw, owner)
	default:
		r.Errorf("spec.networkMode", "must be bridge, default, none, host or service:NAME, got %q", raw.NetworkMode)
	}
	if raw.NetworkMode != "" {
		if len(raw.Networks) > 0 {
			r.Errorf("spec.networks", "must be empty with networkMode %s: the container joins no app network", raw.NetworkMode)
		}
		if len(raw.Aliases) > 0 {
			r.Errorf("spec.aliases", "network aliases need app networks; networkMode %s has none", raw.NetworkMode)
		}
		if len(raw.Ports) > 0 && raw.NetworkMode != manifest.NetworkBridge && raw.NetworkMode != manifest.NetworkDefault {
			r.Errorf("spec.ports", "cannot publish ports with networkMode %s", raw.NetworkMode)
		}
		if raw.Hostname != "" && raw.NetworkMode == manifest.NetworkHost {
			r.Errorf("spec.hostname", "the host's network namespace has the host's name: remove hostname or networkMode host")
		}
	}
	validateAliases(r, raw)
	validateResolution(r, raw)
}

func validateAliases(r yamlpos.Reporter, raw *rawServiceSpec) {
	joined := raw.Networks
	if len(joined) == 0 {
		joined = []string{manifest.DefaultNetwork}
	}
	for _, n := range sortedKeys(raw.Aliases) {
		field := yamlpos.ChildPath("spec.aliases", n)
		if raw.NetworkMode == "" && !slices.Contains(joined, n) {
			r.Errorf(field, "the service does not join network %q: aliases must name one of spec.networks", n)
		}
		for i, a := range raw.Aliases[n] {
			if !manifest.ValidHostname(a) {
				r.Errorf(yamlpos.IndexPath(field, i), "invalid alias %q: must be a host name", a)
			}
		}
	}
}

// validateResolution checks name resolution and the MAC address.
func validateResolution(r yamlpos.Reporter, raw *rawServiceSpec) {
	for i, e := range raw.ExtraHosts {
		if err := manifest.CheckExtraHost(e); err != nil {
			r.Errorf(yamlpos.IndexPath("spec.extraHosts", i), "%v", err)
		}
	}
	for i, d := range raw.DNS {
		if _, err := netip.ParseAddr(d); err != nil {
			r.Errorf(yamlpos.IndexPath("spec.dns", i), "invalid DNS server %q: must be an IP address", d)
		}
	}
	for i, d := range raw.DNSSearch {
		if !manifest.ValidHostname(d) {
			r.Errorf(yamlpos.IndexPath("spec.dnsSearch", i), "invalid search domain %q", d)
		}
	}
	for i, d := range raw.DNSOptions {
		if strings.TrimSpace(d) == "" || strings.ContainsAny(d, " \t\n") {
			r.Errorf(yamlpos.IndexPath("spec.dnsOptions", i), "invalid resolver option %q: one word such as ndots:2", d)
		}
	}
	if raw.MacAddress != "" {
		if err := manifest.CheckMAC(raw.MacAddress); err != nil {
			r.Errorf("spec.macAddress", "%v", err)
		}
		if raw.NetworkMode == manifest.NetworkHost || raw.NetworkMode == manifest.NetworkNone {
			r.Errorf("spec.macAddress", "does not apply with networkMode %s", raw.NetworkMode)
		}
	}
}

// validateMounts checks binds and tmpfs mounts.
func validateMounts(r yamlpos.Reporter, raw *rawServiceSpec, mounts map[string]string) {
	for i, b := range raw.Binds {
		validateBind(r, yamlpos.IndexPath("spec.binds", i), b, mounts)
	}
	for i, t := range raw.Tmpfs {
		tp := yamlpos.IndexPath("spec.tmpfs", i)
		r.MountPath(tp+".mountPath", t.MountPath, mounts)
		if t.Size != nil {
			if _, err := manifest.ParseMemory(string(*t.Size)); err != nil {
				r.Errorf(tp+".size", "%v", err)
			}
		}
		if t.Mode != nil {
			if _, err := parseMode(string(*t.Mode)); err != nil {
				r.Errorf(tp+".mode", "%v", err)
			}
		}
		for j, o := range t.Options {
			if _, err := manifest.CheckTmpfsOption(o); err != nil {
				r.Errorf(yamlpos.IndexPath(tp+".options", j), "%v", err)
			}
		}
	}
	for i, v := range raw.AnonymousVolumes {
		r.MountPath(yamlpos.IndexPath("spec.anonymousVolumes", i)+".mountPath", v.MountPath, mounts)
	}
}

func validateBind(r yamlpos.Reporter, bp string, b rawBind, mounts map[string]string) {
	var sources []string
	for _, s := range []struct{ name, value string }{{"hostPath", b.HostPath}, {"repoPath", b.RepoPath}, {"statePath", b.StatePath}} {
		if s.value != "" {
			sources = append(sources, s.name)
		}
	}
	switch {
	case len(sources) > 1:
		r.Errorf(bp, "has %s: use exactly one", strings.Join(sources, " and "))
	case len(sources) == 0:
		r.Errorf(bp, "needs hostPath (an absolute path on the host), repoPath (a path in the repository) or statePath (a directory of the app's state)")
	case b.StatePath != "":
		validateStateBind(r, bp, b)
	case b.HostPath != "":
		if !path.IsAbs(b.HostPath) {
			r.Errorf(bp+".hostPath", "must be an absolute path, got %q: a relative path is repoPath", b.HostPath)
		}
	default:
		if _, err := manifest.CleanRepoPath(b.RepoPath); err != nil {
			r.Errorf(bp+".repoPath", "%v", err)
		}
		if b.ReadOnly != nil && !*b.ReadOnly {
			r.Errorf(bp+".readOnly", "repository files are always mounted read-only: they are shared by every replica and revision with the same content")
		}
		if b.CreateHostPath {
			r.Errorf(bp+".createHostPath", "only applies to hostPath")
		}
		if b.SELinux == "Z" {
			r.Errorf(bp+".selinux", "Z would relabel repository files shared with other containers for this one only: use z")
		}
	}
	r.MountPath(bp+".mountPath", b.MountPath, mounts)
	if b.Propagation != "" && !slices.Contains(propagations, b.Propagation) {
		r.Errorf(bp+".propagation", "must be one of %s, got %q", strings.Join(propagations, ", "), b.Propagation)
	}
	if b.SELinux != "" && b.SELinux != "z" && b.SELinux != "Z" {
		r.Errorf(bp+".selinux", "must be z (shared label) or Z (private label), got %q", b.SELinux)
	}
}

// validateStateBind checks a bind of a state directory: a relative path
// inside the app's state directory, which driftless creates.
func validateStateBind(r yamlpos.Reporter, bp string, b rawBind) {
	if _, err := manifest.CleanStatePath(b.StatePath); err != nil {
		if errors.Is(err, manifest.ErrLeavesRepo) {
			r.Errorf(bp+".statePath", "%q leaves the app's state directory: write a path inside it", b.StatePath)
		} else {
			r.Errorf(bp+".statePath", "%v", err)
		}
	}
	if b.CreateHostPath {
		r.Errorf(bp+".createHostPath", "only applies to hostPath: driftless creates a state directory on first use")
	}
}

// validateSecurity checks privileges, capabilities, devices and namespaces.
func validateSecurity(r yamlpos.Reporter, raw *rawServiceSpec) {
	validateCapabilities(r, raw)
	for i, o := range raw.SecurityOpt {
		if !strings.ContainsAny(o, "=:") && o != "no-new-privileges" {
			r.Errorf(yamlpos.IndexPath("spec.securityOpt", i), "invalid security option %q: write key=value (seccomp=..., apparmor=..., label=...) or no-new-privileges", o)
		}
	}
	for i, d := range raw.Devices {
		dp := yamlpos.IndexPath("spec.devices", i)
		switch {
		case d.HostPath == "":
			r.Required(dp + ".hostPath")
		case !path.IsAbs(d.HostPath):
			r.Errorf(dp+".hostPath", "must be an absolute path, got %q", d.HostPath)
		}
		if d.ContainerPath != "" && !path.IsAbs(d.ContainerPath) {
			r.Errorf(dp+".containerPath", "must be an absolute path, got %q", d.ContainerPath)
		}
		if p := d.Permissions; p != "" && (strings.Trim(p, "rwm") != "" || len(p) > 3) {
			r.Errorf(dp+".permissions", "must be made of r, w and m, got %q", p)
		}
	}
	for i, g := range raw.GroupAdd {
		if !manifest.ValidUser(string(g)) || strings.Contains(string(g), ":") {
			r.Errorf(yamlpos.IndexPath("spec.groupAdd", i), "invalid group %q: a group name or gid", g)
		}
	}
	if raw.PID != "" && raw.PID != "host" {
		r.Errorf("spec.pid", "must be host (or absent for the container's own), got %q", raw.PID)
	}
	switch raw.IPC {
	case "", "host", "private", "shareable":
	default:
		r.Errorf("spec.ipc", "must be host, private or shareable, got %q", raw.IPC)
	}
	validateNamespaceModes(r, raw)
}

// validateNamespaceModes checks uts, usernsMode, cgroupns, runtime and
// deviceCgroupRules.
func validateNamespaceModes(r yamlpos.Reporter, raw *rawServiceSpec) {
	for _, m := range []struct {
		field, value string
		modes        manifest.NamespaceModes
	}{{"spec.uts", raw.UTS, manifest.UTSModes}, {"spec.usernsMode", raw.UsernsMode, manifest.UsernsModes}, {"spec.cgroupns", raw.CgroupNS, manifest.CgroupModes}} {
		if err := m.modes.Check(m.value); err != nil {
			r.Errorf(m.field, "%v", err)
		}
	}
	if raw.UTS == "host" && raw.Hostname != "" {
		r.Errorf("spec.uts", "cannot be combined with hostname (Docker refuses both): the host's hostname is used")
	}
	if raw.Runtime != "" && !manifest.ValidRuntimeName(raw.Runtime) {
		r.Errorf("spec.runtime", "invalid runtime name %q: the name the engine's configuration gives a runtime, such as runc", raw.Runtime)
	}
	for i, rule := range raw.DeviceCgroupRules {
		if err := manifest.CheckDeviceCgroupRule(rule); err != nil {
			r.Errorf(yamlpos.IndexPath("spec.deviceCgroupRules", i), "%v", err)
		}
	}
}

// validateCapabilities checks capAdd and capDrop: known names, no
// duplicates (after normalizing case and CAP_).
func validateCapabilities(r yamlpos.Reporter, raw *rawServiceSpec) {
	for _, list := range []struct {
		field string
		caps  []string
	}{{"spec.capAdd", raw.CapAdd}, {"spec.capDrop", raw.CapDrop}} {
		seen := map[string]int{}
		for i, c := range list.caps {
			p, n := yamlpos.IndexPath(list.field, i), manifest.NormalizeCapability(c)
			if !manifest.ValidCapability(n) {
				r.Errorf(p, "unknown capability %q: use a Linux capability such as NET_ADMIN (CAP_ prefix optional) or ALL", c)
				continue
			}
			if j, dup := seen[n]; dup {
				r.Errorf(p, "%s is already listed at %s[%d]", n, list.field, j)
			}
			seen[n] = i
		}
	}
}

// validateLimits checks kernel parameters and resource limits.
func validateLimits(r yamlpos.Reporter, raw *rawServiceSpec) {
	for _, k := range sortedKeys(raw.Sysctls) {
		if err := manifest.CheckSysctl(k, raw.NetworkMode); err != nil {
			r.Errorf(yamlpos.ChildPath("spec.sysctls", k), "%v", err)
		}
	}
	seen := map[string]int{}
	for i, u := range raw.Ulimits {
		up := yamlpos.IndexPath("spec.ulimits", i)
		switch j, dup := seen[u.Name]; {
		case u.Name == "":
			r.Required(up + ".name")
		case !slices.Contains(ulimitNames, u.Name):
			r.Errorf(up+".name", "unknown limit %q: one of %s", u.Name, strings.Join(ulimitNames, ", "))
		case dup:
			r.Errorf(up+".name", "%s is already limited at spec.ulimits[%d]", u.Name, j)
		}
		seen[u.Name] = i
		if u.Soft == nil {
			r.Required(up + ".soft")
		}
		r.IntRange(up+".soft", u.Soft, -1, 1<<62)
		r.IntRange(up+".hard", u.Hard, -1, 1<<62)
		if u.Soft != nil && u.Hard != nil && ulimitAbove(*u.Soft, *u.Hard) {
			r.Errorf(up+".soft", "soft limit %d is above the hard limit %d", *u.Soft, *u.Hard)
		}
	}
	if raw.ShmSize != nil {
		if _, err := manifest.ParseMemory(string(*raw.ShmSize)); err != nil {
			r.Errorf("spec.shmSize", "%v", err)
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
func serviceFields(doc *yamlpos.DocCtx, raw *rawServiceSpec, spec manifest.ServiceSpec) map[string]manifest.FieldRef {
	fields := map[string]manifest.FieldRef{}
	add := func(model, written string) {
		if pos, ok := doc.Pos[written]; ok {
			fields[model] = manifest.FieldRef{Pos: pos, Field: written}
		}
	}
	for written := range doc.Pos {
		if key, ok := strings.CutPrefix(written, "spec."); ok && yamlpos.PlainKey.MatchString(key) {
			add(key, written)
		}
	}
	add("shmSizeBytes", "spec.shmSize")
	for i, b := range raw.Binds {
		if j := slices.IndexFunc(spec.Binds, func(m manifest.BindMount) bool { return m.MountPath == b.MountPath }); j >= 0 {
			add(yamlpos.IndexPath("binds", j), yamlpos.IndexPath("spec.binds", i))
		}
	}
	for i, d := range raw.Devices {
		target := orDefaultString(d.ContainerPath, d.HostPath)
		if j := slices.IndexFunc(spec.Devices, func(m manifest.Device) bool { return m.ContainerPath == target && m.HostPath == d.HostPath }); j >= 0 {
			add(yamlpos.IndexPath("devices", j), yamlpos.IndexPath("spec.devices", i))
		}
	}
	deviceRequestFields(raw, spec, add)
	for i, c := range raw.CapAdd {
		if j := slices.Index(spec.CapAdd, manifest.NormalizeCapability(c)); j >= 0 {
			if _, done := fields[yamlpos.IndexPath("capAdd", j)]; !done {
				add(yamlpos.IndexPath("capAdd", j), yamlpos.IndexPath("spec.capAdd", i))
			}
		}
	}
	for i := range raw.SecurityOpt {
		add(yamlpos.IndexPath("securityOpt", i), yamlpos.IndexPath("spec.securityOpt", i))
	}
	for i := range raw.DeviceCgroupRules {
		add(yamlpos.IndexPath("deviceCgroupRules", i), yamlpos.IndexPath("spec.deviceCgroupRules", i))
	}
	for i := range raw.Secrets {
		add(yamlpos.IndexPath("secrets", i), yamlpos.IndexPath("spec.secrets", i))
		add(yamlpos.IndexPath("secrets", i)+".file", yamlpos.IndexPath("spec.secrets", i)+".file")
	}
	for i := range raw.EnvFrom {
		add(yamlpos.IndexPath("envFrom", i), yamlpos.IndexPath("spec.envFrom", i))
	}
	return fields
}

// Bind propagation modes Docker accepts.
var propagations = []string{"private", "rprivate", "shared", "rshared", "slave", "rslave"}

func validateHooks(r yamlpos.Reporter, raw *rawServiceSpec) {
	for _, hooks := range []struct {
		field string
		list  []manifest.Hook
	}{{"spec.postStart", raw.PostStart}, {"spec.preStop", raw.PreStop}} {
		for i, h := range hooks.list {
			if len(h.Command) == 0 {
				r.Errorf(yamlpos.IndexPath(hooks.field, i)+".command", "a hook needs a command: the program and its arguments, as a list")
			}
		}
	}
}
