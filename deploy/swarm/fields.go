package swarm

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	swarmtypes "github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// SwarmSpecs are the comparable forms of the specs Apply sends for the
// app's declared services (drift.Options.SwarmSpecs): drift compares each
// with the running spec's Fields, so any field driftless sets that was
// changed by hand is drift.
func (e *Engine) SwarmSpecs(app *manifest.App) map[string]drift.SwarmSpec {
	return RenderSpecs(app)
}

// RenderSpecs is DesiredFields of every service of app, by name.
func RenderSpecs(app *manifest.App) map[string]drift.SwarmSpec {
	if app == nil {
		return nil
	}
	out := make(map[string]drift.SwarmSpec, len(app.Services))
	for i := range app.Services {
		out[app.Services[i].Name] = DesiredFields(app, &app.Services[i])
	}
	return out
}

// DesiredFields is Fields of the spec Apply sends for a declared service.
func DesiredFields(app *manifest.App, svc *manifest.Service) drift.SwarmSpec {
	return Fields(ServiceSpec(app, svc, ""), nil)
}

// Fields is a service spec as comparable fields. The desired spec (from
// ServiceSpec) and the running one (from an inspect) go through the same
// function, so only what Swarm changes on its own needs normalising:
//
//   - a zero value is the same as an unset one (Swarm drops or fills in
//     empty structs, false pointers, zero durations);
//   - defaults Swarm fills in are the same as unset: restart condition
//     any, update and rollback failure action pause and order
//     stop-first, endpoint mode vip, port protocol tcp and publish mode
//     ingress, isolation default;
//   - what Swarm adds or rewrites: the digest it pins a tag to, the
//     platforms it reads from the image, the IDs of networks (netNames
//     maps them back to names), configs and secrets, and the force-update
//     counter and runtime;
//   - what is compared elsewhere or identifies the service: its name,
//     mode and replicas (a scale is its own change), and driftless's
//     identity labels (the spec hash is compared first);
//   - lists whose order Swarm does not keep or that mean a set
//     (environment, constraints, capabilities, hosts, aliases, mounts,
//     ports, configs, secrets) are keyed, not positional.
func Fields(spec swarmtypes.ServiceSpec, netNames map[string]string) drift.SwarmSpec {
	s, ok := normalize(spec, netNames)
	if !ok {
		return nil // not read: drift compares only the image
	}
	out := drift.SwarmSpec{}
	if c := s.TaskTemplate.ContainerSpec; c != nil {
		for _, kv := range c.Env {
			k, v, _ := strings.Cut(kv, "=")
			out["env."+k] = v
		}
		c.Env = nil
		if c.Image != "" {
			out["image"] = drift.NormalImage(c.Image)
			c.Image = ""
		}
	}
	flatten(out, "", reflect.ValueOf(s))
	return out
}

// normalize is a copy of spec with what Fields does not compare removed
// and Swarm's defaults cleared.
func normalize(spec swarmtypes.ServiceSpec, netNames map[string]string) (swarmtypes.ServiceSpec, bool) {
	var s swarmtypes.ServiceSpec
	b, err := json.Marshal(spec) // a deep copy: plain data, it does not fail
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		return s, false
	}
	s.Name, s.Mode = "", swarmtypes.ServiceMode{}
	for _, k := range []string{drift.LabelApp, drift.LabelService, drift.LabelSpecHash, drift.LabelRevision} {
		delete(s.Labels, k)
	}
	normalizeTask(&s.TaskTemplate, netNames)
	normalizeUpdate(s.UpdateConfig)
	normalizeUpdate(s.RollbackConfig)
	normalizeEndpoint(s.EndpointSpec)
	return s, true
}

func normalizeTask(t *swarmtypes.TaskSpec, netNames map[string]string) {
	t.ForceUpdate, t.Runtime = 0, ""
	if t.Placement != nil {
		t.Placement.Platforms = nil
		slices.Sort(t.Placement.Constraints)
	}
	if r := t.RestartPolicy; r != nil {
		if r.Condition == swarmtypes.RestartPolicyConditionAny {
			r.Condition = ""
		}
		if r.Delay != nil && *r.Delay == defaultRestartDelay {
			r.Delay = nil
		}
	}
	for i := range t.Networks {
		n := &t.Networks[i]
		n.Target = cmp.Or(netNames[n.Target], n.Target)
		slices.Sort(n.Aliases)
	}
	if c := t.ContainerSpec; c != nil {
		normalizeContainer(c)
	}
}

func normalizeUpdate(u *swarmtypes.UpdateConfig) {
	if u == nil {
		return
	}
	if u.FailureAction == swarmtypes.UpdateFailureActionPause {
		u.FailureAction = ""
	}
	if u.Order == swarmtypes.UpdateOrderStopFirst {
		u.Order = ""
	}
	if u.Monitor == defaultMonitor {
		u.Monitor = 0
	}
}

func normalizeEndpoint(e *swarmtypes.EndpointSpec) {
	if e == nil {
		return
	}
	if e.Mode == swarmtypes.ResolutionModeVIP {
		e.Mode = ""
	}
	for i := range e.Ports {
		p := &e.Ports[i]
		if p.Protocol == "tcp" {
			p.Protocol = ""
		}
		if p.PublishMode == swarmtypes.PortConfigPublishModeIngress {
			p.PublishMode = ""
		}
	}
}

// Defaults Swarm writes into a spec that leaves them out.
const (
	defaultRestartDelay = 5 * time.Second
	defaultMonitor      = 5 * time.Second
	defaultVolumeDriver = "local"
)

func normalizeContainer(c *swarmtypes.ContainerSpec) {
	if c.Isolation == container.IsolationDefault {
		c.Isolation = ""
	}
	for i := range c.Mounts {
		if o := c.Mounts[i].VolumeOptions; o != nil && o.DriverConfig != nil && o.DriverConfig.Name == defaultVolumeDriver {
			o.DriverConfig.Name = ""
		}
	}
	for _, r := range c.Configs {
		r.ConfigID = ""
	}
	for _, r := range c.Secrets {
		r.SecretID = ""
	}
	for _, l := range [][]string{c.CapabilityAdd, c.CapabilityDrop, c.Hosts, c.Groups} {
		slices.Sort(l)
	}
}

var durationType = reflect.TypeFor[time.Duration]()

// flatten adds v's non-zero leaves to out under path. Struct fields are
// named as in the API's JSON, first letter lower-case; map entries by
// key; a list of plain values is one field; a list of structs is one
// field per element, keyed by what identifies it (a mount by its target,
// a config by its file).
func flatten(out drift.SwarmSpec, path string, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			flatten(out, path, v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Anonymous {
				flatten(out, path, v.Field(i))
				continue
			}
			flatten(out, join(path, fieldName(f)), v.Field(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			flatten(out, path+"."+fmt.Sprint(k.Interface()), v.MapIndex(k))
		}
	case reflect.Slice, reflect.Array:
		flattenList(out, path, v)
	default:
		if v.IsZero() {
			return
		}
		if v.Type() == durationType {
			out[path] = time.Duration(v.Int()).String()
			return
		}
		if strings.HasSuffix(path, "memoryBytes") && v.CanInt() && v.Int()%(1<<20) == 0 {
			out[path] = strconv.FormatInt(v.Int()>>20, 10) + "MiB"
			return
		}
		out[path] = fmt.Sprint(v.Interface())
	}
}

func flattenList(out drift.SwarmSpec, path string, v reflect.Value) {
	if v.Len() == 0 {
		return
	}
	elem := v.Type().Elem()
	for elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	if elem.Kind() != reflect.Struct {
		items := make([]string, v.Len())
		for i := range v.Len() {
			items[i] = strconv.Quote(fmt.Sprint(v.Index(i).Interface()))
		}
		out[path] = strings.Join(items, " ")
		return
	}
	for i := range v.Len() {
		e := v.Index(i)
		sub := drift.SwarmSpec{}
		flatten(sub, "", e)
		parts := make([]string, 0, len(sub))
		for _, k := range slices.Sorted(maps.Keys(sub)) {
			parts = append(parts, k+"="+sub[k])
		}
		out[path+"["+elemKey(e.Interface(), i)+"]"] = strings.Join(parts, " ")
	}
}

// elemKey is what identifies a list element, so that adding or removing
// one shows as that element, not as a shift of the others.
func elemKey(e any, i int) string {
	switch x := e.(type) {
	case mount.Mount:
		return x.Target
	case swarmtypes.PortConfig:
		return fmt.Sprintf("%d:%d/%s", x.PublishedPort, x.TargetPort, cmp.Or(string(x.Protocol), "tcp"))
	case *swarmtypes.ConfigReference:
		if x.File != nil {
			return x.File.Name
		}
		return x.ConfigName
	case *swarmtypes.SecretReference:
		if x.File != nil {
			return x.File.Name
		}
		return x.SecretName
	case swarmtypes.NetworkAttachmentConfig:
		return x.Target
	case *container.Ulimit:
		return x.Name
	case swarmtypes.PlacementPreference:
		if x.Spread != nil {
			return "spread " + x.Spread.SpreadDescriptor
		}
	}
	return strconv.Itoa(i)
}

// fieldName is the field's name in the API's JSON, its leading capitals
// lower-case ("DNSConfig" is "dnsConfig", "UID" "uid").
func fieldName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	name = cmp.Or(name, f.Name)
	n := 0
	for n < len(name) && name[n] >= 'A' && name[n] <= 'Z' {
		n++
	}
	if n > 1 && n < len(name) {
		n-- // the capital that starts the next word
	}
	return strings.ToLower(name[:max(n, 1)]) + name[max(n, 1):]
}

// join names a field as a user reads it: the container spec's fields as
// "container.…", the rest of the task template's without a prefix.
func join(path, name string) string {
	switch {
	case path == "" && name == "taskTemplate":
		return ""
	case path == "" && name == "containerSpec":
		return "container"
	case path == "":
		return name
	}
	return path + "." + name
}

// quirk is what Swarm made of the spec driftless sent for one spec hash:
// per field, the value Swarm returned (ok false: absent) and the value
// sent.
type quirk struct {
	hash   string
	fields map[string]quirkField
}

type quirkField struct {
	got, sent     string
	hasGot, isSet bool
}

// learnQuirks compares the spec Swarm returns right after driftless
// created or updated a service with what it sent. Fields normalises every
// default a real Swarm was seen to fill in; one it does not know (another
// Docker version) would otherwise read as drift at every pass and update
// the service in an endless loop. Such a field is remembered for the
// spec hash and taken as sent while Swarm keeps returning the same value
// (withoutQuirks): a later hand edit of it, or a new commit, is compared
// again. Best effort: an error leaves nothing learned.
func (e *Engine) learnQuirks(ctx context.Context, name, hash string, sent drift.SwarmSpec) {
	cur, err := e.api.ServiceInspect(ctx, name, client.ServiceInspectOptions{})
	if err != nil {
		return
	}
	nets, err := e.api.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return
	}
	netNames := map[string]string{}
	for _, n := range nets.Items {
		netNames[n.ID] = n.Name
	}
	got := Fields(cur.Service.Spec, netNames)
	q := quirk{hash: hash, fields: map[string]quirkField{}}
	for _, f := range drift.DiffSwarmSpec(got, sent, nil) {
		g, hasGot := got[f.Path]
		v, isSet := sent[f.Path]
		q.fields[f.Path] = quirkField{got: g, hasGot: hasGot, sent: v, isSet: isSet}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(q.fields) == 0 {
		delete(e.quirks, name)
		return
	}
	e.quirks[name] = q
	e.log.Warn("Swarm returned fields of the service otherwise than driftless sent them; they are taken as Swarm's defaults for this spec, not as drift (please report this Docker version)",
		"service", name, "fields", slices.Sorted(maps.Keys(q.fields)))
}

// withoutQuirks is the running spec with the fields Swarm is known to
// return otherwise for this spec hash (learnQuirks) put back as sent,
// while they still hold the value Swarm returned.
func (e *Engine) withoutQuirks(name, hash string, spec drift.SwarmSpec) drift.SwarmSpec {
	e.mu.Lock()
	q, ok := e.quirks[name]
	e.mu.Unlock()
	if !ok || q.hash != hash {
		return spec
	}
	for path, f := range q.fields {
		if v, has := spec[path]; has != f.hasGot || v != f.got {
			continue // changed since: compared as it is
		}
		if f.isSet {
			spec[path] = f.sent
		} else {
			delete(spec, path)
		}
	}
	return spec
}
