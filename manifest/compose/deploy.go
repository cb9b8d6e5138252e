package compose

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/native"
)

// mapEnvironment resolves the environment as compose does: a KEY without a
// value takes it from the interpolation environment; env_file entries are
// read (from the revision) in order, later ones winning; environment wins
// over every env_file. A KEY that stays without a value is not set in the
// container, as in compose.
func (sm *serviceMap) mapEnvironment() {
	s := sm.s
	in := sm.m.in
	explicit := types.MappingWithEquals{}
	for k, v := range s.Environment {
		explicit[k] = v
	}
	explicit.Resolve(in.Lookup)
	env := explicit.ToMapping()
	secret := map[string]bool{}
	for i, ef := range s.EnvFiles {
		sm.readEnvFile(i, ef, env, secret, func(k string) (string, bool) {
			if v, ok := in.Lookup(k); ok {
				return v, true
			}
			if v, ok := explicit[k]; ok && v != nil {
				return *v, true
			}
			return "", false
		})
	}
	for k, v := range explicit {
		if v != nil {
			env[k] = *v
			continue
		}
		if _, fromFile := env[k]; !fromFile {
			field, pos := sm.envEntry(k)
			sm.m.warnings.Add(pos, field, "variable %s has no value and is not set in the interpolation environment: the container does not get it (as in compose)", k)
		}
	}
	for _, k := range sortedKeys(env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			sm.refuse("environment", "invalid variable name %q", k)
		}
	}
	sm.spec.Env = copyMap(env)
	// Variables from an encrypted env file are secret unless environment:
	// sets them in the open.
	for _, k := range sortedKeys(secret) {
		if v, ok := explicit[k]; (!ok || v == nil) && sm.spec.Env[k] != "" {
			sm.spec.SecretEnv = append(sm.spec.SecretEnv, k)
		}
	}
}

// envEntry locates the environment entry of key k, in the mapping or the
// list form.
func (sm *serviceMap) envEntry(k string) (string, manifest.Position) {
	if attr := yamlpos.ChildPath("environment", k); sm.m.ix.declared(sm.path(attr)) {
		return sm.path(attr), sm.at(attr)
	}
	list := sm.path("environment")
	for i, fn := range sm.m.ix.itemNodes(list) {
		if fn.node.Value == k || strings.HasPrefix(fn.node.Value, k+"=") {
			return yamlpos.IndexPath(list, i), fn.pos()
		}
	}
	return list, sm.at("environment")
}

// readEnvFile reads one env_file entry into into. A SOPS-encrypted dotenv
// is decrypted first, and its variables are marked in secret.
func (sm *serviceMap) readEnvFile(i int, ef types.EnvFile, into map[string]string, secret map[string]bool, lookup func(string) (string, bool)) {
	pos := sm.m.ix.item(sm.path("env_file"), i)
	field := yamlpos.IndexPath(sm.path("env_file"), i)
	r := sm.readKVFile(load.KVFile{Kind: "env file", Path: ef.Path, Required: bool(ef.Required), Missing: "commit it, or mark it required: false", Format: ef.Format, Decrypt: true, Pos: pos, Field: field}, lookup)
	for k, v := range r.Vars {
		into[k] = v
		if r.Encrypted {
			secret[k] = true
		}
	}
}

// readKVFile reads an env or label file of the revision, adding its
// refusals and warnings to the app's.
func (sm *serviceMap) readKVFile(f load.KVFile, lookup func(string) (string, bool)) *load.KVFileRead {
	r := load.ReadKVFile(sm.m.fsys, sm.m.root, sm.m.display, sm.m.opts, f, lookup)
	sm.m.errs.Errs = append(sm.m.errs.Errs, r.Errs.Errs...)
	sm.m.warnings.Errs = append(sm.m.warnings.Errs, r.Warnings.Errs...)
	return r
}

// mapDeploy maps deploy: replicas (and scale), update_config, mode.
func (sm *serviceMap) mapDeploy() {
	s := sm.s
	d := s.Deploy
	if s.Scale != nil {
		sm.spec.Replicas = *s.Scale
		sm.record("replicas", "scale")
	}
	// compose's default is stop-first with parallelism 1: stop one old
	// replica, then start its replacement.
	sm.spec.Update = manifest.Update{Strategy: manifest.StrategyRolling, MaxSurge: 0, MaxUnavailable: 1}
	if d == nil {
		sm.checkReplicas()
		return
	}
	if d.Replicas != nil {
		if s.Scale != nil && *s.Scale != *d.Replicas && sm.m.ix.declared(sm.path("scale")) {
			sm.refuse("scale", "scale: %d and deploy.replicas: %d differ: keep one of them", *s.Scale, *d.Replicas)
		}
		sm.spec.Replicas = *d.Replicas
		sm.record("replicas", "deploy.replicas")
	}
	sm.checkReplicas()
	if sm.m.opts.Target == manifest.TargetSwarm {
		sm.mapSwarmDeploy(d)
	} else {
		sm.refuseSwarmOnly(d)
	}
	switch {
	case d.EndpointMode == "":
	case sm.m.opts.Target == manifest.TargetSwarm:
		sm.refuse("deploy.endpoint_mode", "is not supported")
	default:
		sm.warn("deploy.endpoint_mode", "has no effect on one engine (as in compose)")
	}
	if u := d.UpdateConfig; u != nil {
		sm.mapUpdateConfig(u)
	}
}

// refuseSwarmOnly refuses the deploy: keys only a Swarm target carries
// out, on an app that runs on one engine.
func (sm *serviceMap) refuseSwarmOnly(d *types.DeployConfig) {
	const hint = ": set target: swarm for the app to deploy it to a Swarm cluster"
	switch d.Mode {
	case "", "replicated":
	case "global":
		// One task per node is one container on one engine: compose runs
		// one too (or scale: of them).
		if d.Replicas != nil {
			sm.refuse("deploy.replicas", "a global service runs one task per node: remove deploy.replicas")
		} else {
			sm.warn("deploy.mode", "global runs one replica on one engine (one per node, as in compose)"+hint)
		}
	default:
		sm.refuse("deploy.mode", "must be replicated or global, got %q", d.Mode)
	}
	// Compose passes these Swarm-only keys to no container: on one engine
	// they change nothing, and say so.
	if len(d.Labels) > 0 {
		sm.warn("deploy.labels", "has no effect on one engine (as in compose): these are Swarm service labels; put container labels under labels:")
	}
	if d.RollbackConfig != nil {
		sm.warn("deploy.rollback_config", "has no effect on one engine (as in compose): a failed rollout stops and keeps the old replicas serving"+hint)
	}
	if len(d.Placement.Constraints) > 0 || len(d.Placement.Preferences) > 0 || d.Placement.MaxReplicas != 0 {
		sm.warn("deploy.placement", "has no effect on one engine (as in compose)"+hint)
	}
}

// mapSwarmDeploy maps the deploy: keys only Swarm carries out: mode,
// placement, update_config's failure handling and rollback_config.
func (sm *serviceMap) mapSwarmDeploy(d *types.DeployConfig) {
	w := &manifest.SwarmSpec{}
	switch d.Mode {
	case "", "replicated":
	case "global":
		w.Global = true
		if d.Replicas != nil {
			sm.refuse("deploy.replicas", "a global service runs one task per node: remove deploy.replicas")
		}
	default:
		sm.refuse("deploy.mode", "must be replicated or global, got %q", d.Mode)
	}
	if len(d.Labels) > 0 {
		sm.refuse("deploy.labels", "are not supported yet: put labels under labels:")
	}
	w.Constraints = slices.Clone(d.Placement.Constraints)
	for _, p := range d.Placement.Preferences {
		if p.Spread == "" {
			sm.refuse("deploy.placement.preferences", "each preference needs spread: (Swarm's only kind)")
		}
		w.Preferences = append(w.Preferences, p.Spread)
	}
	w.MaxReplicasPerNode = d.Placement.MaxReplicas
	if u := d.UpdateConfig; u != nil {
		w.Update = sm.swarmUpdate("deploy.update_config", u, false)
	}
	if r := d.RollbackConfig; r != nil {
		ru := sm.swarmUpdate("deploy.rollback_config", r, true)
		w.Rollback = &ru
	}
	if !reflect.ValueOf(*w).IsZero() {
		// Left out otherwise, so an app without Swarm-only keys hashes the
		// same on either target.
		sm.spec.Swarm = w
	}
}

func (sm *serviceMap) swarmUpdate(attr string, u *types.UpdateConfig, rollback bool) manifest.SwarmUpdate {
	out := manifest.SwarmUpdate{Delay: time.Duration(u.Delay), FailureAction: u.FailureAction, Monitor: time.Duration(u.Monitor),
		MaxFailureRatio: u.MaxFailureRatio, Order: u.Order}
	if u.Parallelism != nil {
		out.Parallelism = *u.Parallelism
	}
	if !validSwarmFailureAction(u.FailureAction, rollback) {
		sm.refuse(attr+".failure_action", "must be %s, got %q", swarmFailureActionList(rollback), u.FailureAction)
	}
	if u.Order != "" && u.Order != "stop-first" && u.Order != "start-first" {
		sm.refuse(attr+".order", "must be stop-first or start-first, got %q", u.Order)
	}
	if u.MaxFailureRatio < 0 || u.MaxFailureRatio > 1 {
		sm.refuse(attr+".max_failure_ratio", "must be between 0 and 1")
	}
	return out
}

func (sm *serviceMap) checkReplicas() {
	if sm.spec.Replicas < 0 {
		sm.refuse("deploy.replicas", "must be >= 0")
	}
}

// mapUpdateConfig maps update_config: parallelism replicas at a time,
// started before (start-first) or after (stop-first) the old ones stop.
func (sm *serviceMap) mapUpdateConfig(u *types.UpdateConfig) {
	const attr = "deploy.update_config"
	par := 1
	if u.Parallelism != nil {
		// Swarm takes 0 (all at once) from update_config itself.
		if (*u.Parallelism == 0 && sm.m.opts.Target != manifest.TargetSwarm) || *u.Parallelism > 1<<20 {
			sm.refuse(attr+".parallelism", "must be between 1 and %d (0, all at once, is not supported: use x-driftless.update)", 1<<20)
		}
		par = int(min(*u.Parallelism, 1<<20))
	}
	switch u.Order {
	case "", "stop-first":
		sm.spec.Update = manifest.Update{Strategy: manifest.StrategyRolling, MaxSurge: 0, MaxUnavailable: par}
	case "start-first":
		sm.spec.Update = manifest.Update{Strategy: manifest.StrategyRolling, MaxSurge: par, MaxUnavailable: 0}
		sm.startFirst = true
	default:
		sm.refuse(attr+".order", "must be stop-first or start-first, got %q", u.Order)
	}
	sm.spec.Update.Delay = time.Duration(u.Delay)
	if sm.m.opts.Target == manifest.TargetSwarm {
		return // Swarm carries out failure_action, monitor and max_failure_ratio
	}
	switch u.FailureAction {
	case "", "pause", "rollback":
		// driftless stops a failing rollout and keeps the old replicas
		// serving: that is both.
	case "continue":
		// Compose ignores update_config on one engine; driftless does not
		// go on replacing good replicas with failing ones.
		sm.warn(attr+".failure_action", "continue is not honoured: a failing rollout stops and keeps the old replicas serving (pause or rollback)")
	default:
		sm.refuse(attr+".failure_action", "must be pause, rollback or continue, got %q", u.FailureAction)
	}
	if u.Monitor < 0 || time.Duration(u.Monitor) > manifest.MaxSeconds*time.Second {
		sm.refuse(attr+".monitor", "must be between 0s and %ds", manifest.MaxSeconds)
	} else if u.Monitor != 0 {
		// Swarm watches an updated task this long for a failure; here a
		// replica must run this long without restarting to count as ready.
		d := time.Duration(u.Monitor)
		sm.spec.MinReady = &d
		sm.record("minReadySeconds", attr+".monitor")
	}
	if u.MaxFailureRatio != 0 {
		sm.warn(attr+".max_failure_ratio", "is not honoured: any replica that does not become ready stops the rollout")
	}
}

// mapResources maps limits (deploy.resources or the older cpus, mem_limit,
// pids_limit, mem_reservation; both set and different is an error, as in
// compose).
func (sm *serviceMap) mapResources() {
	s := sm.s
	var lim, res *types.Resource
	if s.Deploy != nil {
		lim, res = s.Deploy.Resources.Limits, s.Deploy.Resources.Reservations
	}
	r := &sm.spec.Resources
	r.MemoryBytes = sm.pickInt("mem_limit", int64(s.MemLimit), "deploy.resources.limits.memory", lim, func(x *types.Resource) int64 { return int64(x.MemoryBytes) })
	r.PidsLimit = sm.pickInt("pids_limit", s.PidsLimit, "deploy.resources.limits.pids", lim, func(x *types.Resource) int64 { return x.Pids })
	r.MemoryReservationBytes = sm.pickInt("mem_reservation", int64(s.MemReservation), "deploy.resources.reservations.memory", res, func(x *types.Resource) int64 { return int64(x.MemoryBytes) })
	r.NanoCPUs = sm.pickInt("cpus", sm.nanoCPUs("cpus"), "deploy.resources.limits.cpus", lim, func(*types.Resource) int64 { return sm.nanoCPUs("deploy.resources.limits.cpus") })
	if r.MemoryBytes != 0 && r.MemoryBytes < manifest.MinMemory {
		sm.refuse(sm.declaredOf("deploy.resources.limits.memory", "mem_limit"), "must be at least 6m (Docker's minimum)")
	}
	if r.MemoryBytes < 0 || r.PidsLimit < 0 || r.MemoryReservationBytes < 0 || r.NanoCPUs < 0 {
		sm.refuse("deploy.resources", "limits must not be negative")
	}
	sm.refuseResourceExtras("deploy.resources.limits", lim)
	sm.refuseResourceExtras("deploy.resources.reservations", res)
	sm.mapDeviceRequests(res)
	if res != nil {
		switch {
		case res.NanoCPUs == 0:
		case sm.m.opts.Target == manifest.TargetSwarm:
			sm.refuse("deploy.resources.reservations.cpus", "CPU reservations are not supported yet on Swarm: set a limit")
		default:
			// Compose passes only the memory reservation (and devices) to
			// a container: a CPU reservation is Swarm's scheduling.
			sm.warn("deploy.resources.reservations.cpus", "has no effect on one engine (as in compose): Docker reserves no CPU for a container; set a limit to bound it")
		}
		if res.Pids != 0 {
			sm.refuse("deploy.resources.reservations.pids", "is not supported")
		}
	}
}

func (sm *serviceMap) declaredOf(a, b string) string {
	if sm.m.ix.declared(sm.path(a)) {
		return a
	}
	return b
}

// pickInt takes a limit from the old attribute or deploy.resources.
func (sm *serviceMap) pickInt(old string, oldVal int64, attr string, r *types.Resource, get func(*types.Resource) int64) int64 {
	if r == nil || !sm.m.ix.declared(sm.path(attr)) {
		return oldVal
	}
	v := get(r)
	if oldVal != 0 && v != oldVal {
		sm.refuse(old, "%s and %s differ: keep one of them", old, attr)
	}
	return v
}

// nanoCPUs reads a cpus value exactly from its text (compose-go keeps a
// float32, which cannot hold 0.1).
func (sm *serviceMap) nanoCPUs(attr string) int64 {
	_, _, v, ok := sm.m.ix.find(sm.path(attr))
	if !ok || v == nil {
		return 0
	}
	text, _, err := sm.m.in.Substitute(v.Value)
	if err != nil {
		return 0
	}
	n, err := manifest.ParseCPUs(text)
	if err != nil || strings.HasSuffix(strings.TrimSpace(text), "m") {
		sm.refuse(attr, "invalid cpus %q: write a number of CPUs such as 0.5", text)
		return 0
	}
	return n
}

func (sm *serviceMap) refuseResourceExtras(attr string, r *types.Resource) {
	if r == nil {
		return
	}
	if len(r.Devices) > 0 && attr == "deploy.resources.limits" {
		sm.refuse(attr+".devices", "device requests are reservations: write them under deploy.resources.reservations.devices")
	}
	if len(r.GenericResources) > 0 {
		sm.refuse(attr+".generic_resources", "are a swarm feature and not supported")
	}
}

// mapDeviceRequests maps deploy.resources.reservations.devices and gpus
// as docker compose passes them to the engine: a reservation's
// capabilities as its one list, a gpus entry's with gpu added.
func (sm *serviceMap) mapDeviceRequests(res *types.Resource) {
	if res != nil {
		for i, d := range res.Devices {
			sm.addDeviceRequest(yamlpos.IndexPath("deploy.resources.reservations.devices", i), d, slices.Clone(d.Capabilities))
		}
	}
	for i, d := range sm.s.Gpus {
		attr := yamlpos.IndexPath("gpus", i)
		if !sm.m.ix.declared(sm.path(attr)) {
			attr = "gpus" // gpus: all
		}
		sm.addDeviceRequest(attr, d, append(slices.Clone(d.Capabilities), "gpu"))
	}
}

func (sm *serviceMap) addDeviceRequest(attr string, d types.DeviceRequest, caps []string) {
	r := manifest.DeviceRequest{Driver: d.Driver, Count: int(d.Count), DeviceIDs: slices.Clone(d.IDs), Capabilities: [][]string{caps}, Options: copyMap(d.Options)}
	if p := r.Problem(); p != "" {
		sm.refuse(attr, "%s", p)
		return
	}
	sm.spec.DeviceRequests = append(sm.spec.DeviceRequests, r)
	if sm.devReqFrom == nil {
		sm.devReqFrom = map[string]string{}
	}
	sm.devReqFrom[r.String()] = attr
}

// rawXDriftless is the x-driftless extension of a service: what compose
// cannot say, with the native format's field names and defaults.
type rawXDriftless struct {
	Readiness *native.RawReadiness `json:"readiness"`
	Update    *rawXUpdate          `json:"update"`
	SecretEnv []string             `json:"secretEnv"`
	// ImageUpdate follows the image's tag (see Service.ImageUpdate).
	ImageUpdate *native.RawImageUpdate `json:"imageUpdate"`
	// Job makes the service a job (see manifest.Job).
	Job *native.RawJob `json:"job"`
	// MinReadySeconds is the native field; update_config.monitor cannot
	// say 0 (compose reads 0s as unset).
	MinReadySeconds *int `json:"minReadySeconds"`
}

type rawXUpdate struct {
	MaxSurge       *int              `json:"maxSurge"`
	MaxUnavailable *int              `json:"maxUnavailable"`
	Canary         *int              `json:"canary"`
	CanaryWatch    *yamlpos.Duration `json:"canaryWatch"`
}

// mapExtension reads x-driftless with the native format's checker, from
// each file that writes it (later files, and a service over the one it
// extends, win key by key).
func (sm *serviceMap) mapExtension() {
	merged := map[string]any{}
	bad := false
	for _, src := range sm.m.ix.sources(sm.path("x-driftless")) {
		if yamlpos.IsNull(src.node) {
			continue
		}
		val, ok, failed := sm.walkExtension(src.file, src.node)
		bad = bad || failed
		if ok {
			yamlpos.DeepMerge(merged, val)
		}
	}
	if bad || len(merged) == 0 {
		return
	}
	x := &rawXDriftless{}
	if err := yamlpos.DecodeStrict(sm.m.in.InterpolateValues(merged), x); err != nil {
		sm.refuse("x-driftless", "%v", err)
		return
	}
	sm.applyExtension(x)
}

// walkExtension checks one file's x-driftless against rawXDriftless, with
// positions; fields are reported as services.NAME.x-driftless.FIELD.
func (sm *serviceMap) walkExtension(f *composeFile, n *yaml.Node) (map[string]any, bool, bool) {
	yn := yamlpos.Resolved(n, 0)
	doc := &yamlpos.DocCtx{File: f.display, Start: manifest.Position{File: f.display, Line: yn.Line, Column: yn.Column}, Pos: map[string]manifest.Position{}, Failed: map[string]bool{}}
	tmp := &yamlpos.Collector{}
	w := &yamlpos.Walker{Doc: doc, Errs: tmp}
	val, ok := w.Walk(yn, reflect.TypeOf(rawXDriftless{}), "spec")
	for _, e := range tmp.Errs {
		e.Field = sm.extField(e.Field)
		sm.m.errs.Errs = append(sm.m.errs.Errs, e)
	}
	sm.extDoc = doc
	m, _ := val.(map[string]any)
	return m, ok && m != nil, w.Bad
}

// extField rewrites "spec.readiness.x" as the compose path.
func (sm *serviceMap) extField(f string) string {
	rest := strings.TrimPrefix(f, "spec")
	return sm.path("x-driftless") + rest
}

func (sm *serviceMap) applyExtension(x *rawXDriftless) {
	if x.Readiness != nil {
		vc := &yamlpos.Collector{}
		native.ValidateReadiness(yamlpos.Reporter{Errs: vc, Doc: sm.extDoc}, x.Readiness)
		for _, e := range vc.Errs {
			e.Field = sm.extField(e.Field)
			sm.m.errs.Errs = append(sm.m.errs.Errs, e)
		}
		sm.spec.Readiness = native.NormalizeReadiness(x.Readiness)
		sm.record("readiness", "x-driftless.readiness")
	}
	if x.Update != nil {
		sm.applyXUpdate(x.Update)
	}
	if v := x.MinReadySeconds; v != nil {
		if *v < 0 || *v > manifest.MaxSeconds {
			sm.refuseAt(sm.extDoc.At("spec.minReadySeconds"), sm.path("x-driftless.minReadySeconds"), "must be between 0 and %d", manifest.MaxSeconds)
		}
		d := time.Duration(*v) * time.Second
		sm.spec.MinReady = &d
		sm.record("minReadySeconds", "x-driftless.minReadySeconds")
	}
	if x.ImageUpdate != nil {
		sm.applyImageUpdate(x.ImageUpdate)
	}
	if x.Job != nil {
		sm.applyJob(x.Job)
	}
	seen := map[string]bool{}
	for i, k := range x.SecretEnv {
		field := yamlpos.IndexPath(sm.path("x-driftless.secretEnv"), i)
		pos := sm.extDoc.At(yamlpos.IndexPath("spec.secretEnv", i))
		switch _, ok := sm.spec.Env[k]; {
		case seen[k]:
			sm.refuseAt(pos, field, "%q is listed twice", k)
		case !ok:
			sm.refuseAt(pos, field, "%q is not in the service's environment", k)
		}
		seen[k] = true
		sm.spec.SecretEnv = append(sm.spec.SecretEnv, k)
	}
}

// settleStartFirst: compose ignores update_config on one engine and
// replaces a container stop-first, so files written for Swarm (firezone's,
// say) set order: start-first on a service that cannot have two
// containers at once. There start-first is not honoured, with a warning,
// instead of refusing what compose runs; a surge that x-driftless.update
// asks for, driftless's own word, is still refused where it collides.
func (sm *serviceMap) settleStartFirst() {
	if !sm.startFirst || sm.m.opts.Target == manifest.TargetSwarm || sm.spec.Update.MaxSurge == 0 || sm.spec.Replicas != 1 {
		return
	}
	var why string
	fixedPort := slices.IndexFunc(sm.spec.Ports, func(p manifest.Port) bool { return p.HostPort != 0 })
	switch {
	case len(sm.spec.Addresses) > 0:
		why = "its fixed address is one container's"
	case sm.spec.NetworkService() != "":
		why = "the network namespace it shares is one container's"
	case fixedPort >= 0:
		why = fmt.Sprintf("host port %d is one container's", sm.spec.Ports[fixedPort].HostPort)
	default:
		return
	}
	sm.warn("deploy.update_config.order", "start-first is not honoured: %s, so a new replica replaces the old one stop-first (compose ignores the order on one engine)", why)
	sm.spec.Update.MaxUnavailable, sm.spec.Update.MaxSurge = sm.spec.Update.MaxSurge, 0
}

// applyXUpdate checks and applies x-driftless.update over what
// update_config said.
func (sm *serviceMap) applyXUpdate(u *rawXUpdate) {
	at := func(k string) manifest.Position { return sm.extDoc.At("spec.update." + k) }
	for _, k := range []struct {
		name string
		v    *int
	}{{"maxSurge", u.MaxSurge}, {"maxUnavailable", u.MaxUnavailable}} {
		if k.v != nil && (*k.v < 0 || *k.v > 1<<20) {
			sm.refuseAt(at(k.name), sm.path("x-driftless.update."+k.name), "must be between 0 and %d", 1<<20)
		}
	}
	if u.MaxSurge != nil {
		sm.spec.Update.MaxSurge = *u.MaxSurge
		sm.startFirst = false
	}
	if u.MaxUnavailable != nil {
		sm.spec.Update.MaxUnavailable = *u.MaxUnavailable
	}
	if sm.spec.Update.MaxSurge == 0 && sm.spec.Update.MaxUnavailable == 0 {
		sm.refuseAt(sm.extDoc.At("spec.update"), sm.path("x-driftless.update"), "maxSurge and maxUnavailable must not both be 0: a rolling update could never replace a replica")
	}
	vc := &yamlpos.Collector{}
	native.ValidateCanary(yamlpos.Reporter{Errs: vc, Doc: sm.extDoc}, "spec.update", u.Canary, u.CanaryWatch, sm.spec.Replicas, sm.spec.Update.Strategy != manifest.StrategyRecreate)
	for _, e := range vc.Errs {
		e.Field = sm.extField(e.Field)
		sm.m.errs.Errs = append(sm.m.errs.Errs, e)
	}
	sm.spec.Update.Canary, sm.spec.Update.CanaryWatch = native.NormalizeCanary(u.Canary, u.CanaryWatch)
}

// applyImageUpdate checks x-driftless.imageUpdate like the native field.
func (sm *serviceMap) applyImageUpdate(u *native.RawImageUpdate) {
	field := sm.path("x-driftless.imageUpdate")
	pos := sm.extDoc.At("spec.imageUpdate")
	if _, err := manifest.ParseImageUpdateInterval(u.Interval); err != nil {
		sm.refuseAt(sm.extDoc.At("spec.imageUpdate.interval"), field+".interval", "%v", err)
		return
	}
	switch {
	case sm.pullPolicy == manifest.PullNever:
		sm.refuseAt(pos, field, "cannot be used with pull_policy: never (an update must pull the new digest)")
	case strings.Contains(sm.s.Image, "@"):
		sm.refuseAt(pos, field, "image %q is pinned by digest and can never move: remove imageUpdate or use a tag", sm.s.Image)
	default:
		sm.imageUpdate = &manifest.ImageUpdate{Interval: strings.TrimSpace(u.Interval)}
	}
}

// SwarmFailureActions are Swarm's update/rollback failure actions.
var swarmFailureActions = []string{"pause", "continue", "rollback"}

func validSwarmFailureAction(a string, rollback bool) bool {
	if rollback && a == "rollback" {
		return false // a rollback cannot roll back
	}
	return a == "" || slices.Contains(swarmFailureActions, a)
}

func swarmFailureActionList(rollback bool) string {
	if rollback {
		return "pause or continue"
	}
	return strings.Join(swarmFailureActions, ", ")
}
