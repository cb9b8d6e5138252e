package deploy

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/deploy/readiness"
	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/volume"
	"github.com/moby/moby/client"
)

// view is one picture of everything on the engine (containers of every
// owner, networks, volumes), shared by every app's passes. The event
// goroutine builds it from a full list when the event stream connects and
// then keeps it current by re-listing just the object an event names; a
// pass reads it without any API call.
//
// Every write carries a ticket taken before its API call: a write only
// replaces an entry with an older ticket, and a removal leaves a tombstone,
// so an answer that was overtaken (a slow refetch, a write-through after
// Apply racing an event) never puts back an older state.
type view struct {
	mu         sync.RWMutex
	live       bool                 // built from a full list and following the stream
	containers table[*containerObs] // immutable once written
	networks   table[drift.Network]
	volumes    table[drift.Volume]
	tickets    atomic.Uint64
	// touched are apps an Apply changed since their last observation:
	// their objects are re-listed before the view answers for them, so a
	// pass never reads its own changes before their events arrive.
	touched map[string]bool
}

// containerObs is what a list summary tells about one container.
type containerObs struct {
	c  drift.Container
	ip string
}

type slot[T any] struct {
	ticket uint64
	gone   bool
	val    T
}

type table[T any] map[string]slot[T]

// put records val (or, when !present, a removal) under key unless the
// entry already holds a newer answer. It reports whether it wrote.
func (t table[T]) put(ticket uint64, key string, val T, present bool) bool {
	if old, ok := t[key]; ok && old.ticket > ticket {
		return false
	}
	t[key] = slot[T]{ticket: ticket, gone: !present, val: val}
	return true
}

func newView() *view {
	return &view{containers: table[*containerObs]{}, networks: table[drift.Network]{}, volumes: table[drift.Volume]{}, touched: map[string]bool{}}
}

func (v *view) ticket() uint64 { return v.tickets.Add(1) }

func (v *view) isLive() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.live
}

// setLive(false) makes observations fall back to listing the engine until
// the view is rebuilt: while the stream is down, the view may be wrong.
func (v *view) setLive(live bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.live = live
}

func (v *view) touch(app string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.touched[app] = true
}

func (v *view) takeTouched(app string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	t := v.touched[app]
	delete(v.touched, app)
	return t
}

// snapshot is the view as a listing, in the same form a fresh list gives.
func (v *view) snapshot() listing {
	v.mu.RLock()
	defer v.mu.RUnlock()
	l := listing{containerIPs: make(map[string]string, len(v.containers))}
	for _, s := range v.containers {
		if !s.gone {
			l.containers = append(l.containers, s.val.c)
			l.containerIPs[s.val.c.ID] = s.val.ip
		}
	}
	for _, s := range v.networks {
		if !s.gone {
			l.networks = append(l.networks, s.val)
		}
	}
	for _, s := range v.volumes {
		if !s.gone {
			l.volumes = append(l.volumes, s.val)
		}
	}
	return l
}

// actualFor is one app's observation from the view: its own objects and,
// withForeign, the other containers foreign() would keep (the same test)
// and every other network and volume, each list sorted by name, with the
// containers' IPs. Only these are copied, once, in order: a pass costs its
// app's size, not the host's.
func (v *view) actualFor(app string, withForeign bool) (drift.Actual, map[string]string) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	prefix := app + "-"
	var own, foreign []*containerObs
	for _, s := range v.containers {
		if s.gone {
			continue
		}
		c := &s.val.c
		switch {
		case c.App == app:
			own = append(own, s.val)
		case withForeign && (strings.HasPrefix(c.Name, prefix) || len(c.HostPorts) > 0 || c.ComposeProject != ""):
			foreign = append(foreign, s.val)
		}
	}
	var a drift.Actual
	ips := make(map[string]string, len(own)+len(foreign))
	a.Containers = sortedCopy(own, ips)
	a.ForeignContainers = sortedCopy(foreign, ips)
	for _, s := range v.networks {
		switch {
		case s.gone:
		case s.val.App == app:
			a.Networks = append(a.Networks, s.val)
		case withForeign:
			a.ForeignNetworks = append(a.ForeignNetworks, s.val)
		}
	}
	for _, s := range v.volumes {
		switch {
		case s.gone:
		case s.val.App == app:
			a.Volumes = append(a.Volumes, s.val)
		case withForeign:
			a.ForeignVolumes = append(a.ForeignVolumes, s.val)
		}
	}
	sortActual(&a)
	sortedForeign(&a)
	return a, ips
}

// sortedCopy copies containers in name order; sorting pointers first
// spares moving whole structs.
func sortedCopy(cs []*containerObs, ips map[string]string) []drift.Container {
	slices.SortFunc(cs, func(x, y *containerObs) int { return strings.Compare(x.c.Name, y.c.Name) })
	out := make([]drift.Container, len(cs))
	for i, c := range cs {
		out[i] = c.c
		ips[c.c.ID] = c.ip
	}
	return out
}

// keyed is a listing indexed the way the view is: containers and networks
// by ID, volumes by name.
type keyed struct {
	containers map[string]*containerObs
	networks   map[string]drift.Network
	volumes    map[string]drift.Volume
}

func keyedOf(l listing) keyed {
	k := keyed{containers: map[string]*containerObs{}, networks: map[string]drift.Network{}, volumes: map[string]drift.Volume{}}
	for _, c := range l.containers {
		k.containers[c.ID] = &containerObs{c: c, ip: l.containerIPs[c.ID]}
	}
	for _, n := range l.networks {
		k.networks[n.ID] = n
	}
	for _, vol := range l.volumes {
		k.volumes[vol.Name] = vol
	}
	return k
}

// replace makes a full list the view's content, keeping only entries
// written after the list's ticket (they are newer).
func (v *view) replace(ticket uint64, l listing) {
	k := keyedOf(l)
	v.mu.Lock()
	defer v.mu.Unlock()
	replaceTable(v.containers, ticket, k.containers)
	replaceTable(v.networks, ticket, k.networks)
	replaceTable(v.volumes, ticket, k.volumes)
	v.live = true
}

func replaceTable[T any](t table[T], ticket uint64, fresh map[string]T) {
	for key, s := range t {
		if s.ticket < ticket {
			delete(t, key) // tombstones older than a full list are not needed
		}
	}
	for key, val := range fresh {
		t.put(ticket, key, val, true)
	}
}

// Divergence is one difference between the view and a fresh list that
// no event explains: the view missed something. The loop repairs it at
// once; it is counted so that "exact" stays a measured claim.
type Divergence struct {
	Kind string // container, network, volume
	Key  string // ID (container, network) or name (volume)
	Name string
	What string // missing from view, gone from engine, or the fields that differ
}

func (d Divergence) String() string {
	return fmt.Sprintf("%s %s (%s): %s", d.Kind, d.Name, shortID(d.Key), d.What)
}

// suspect is an object whose view entry differed from a full list. It is
// judged after a grace period, because its event may have been on the way.
type suspect struct {
	kind    string
	key     string
	ticket  uint64 // the full list's
	listed  any    // what the list said; nil when absent
	present bool
}

// compare finds the objects whose view entry differs from a full list
// taken under ticket, leaving out entries written since (they are newer
// than the list).
func (v *view) compare(ticket uint64, l listing) []suspect {
	k := keyedOf(l)
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []suspect
	out = append(out, compareTable("container", v.containers, ticket, k.containers, sameContainer)...)
	out = append(out, compareTable("network", v.networks, ticket, k.networks, sameValue[drift.Network])...)
	out = append(out, compareTable("volume", v.volumes, ticket, k.volumes, sameValue[drift.Volume])...)
	return out
}

func compareTable[T any](kind string, t table[T], ticket uint64, fresh map[string]T, same func(a, b T) bool) []suspect {
	var out []suspect
	for key, val := range fresh {
		s, ok := t[key]
		if ok && s.ticket > ticket {
			continue
		}
		if !ok || s.gone || !same(s.val, val) {
			out = append(out, suspect{kind: kind, key: key, ticket: ticket, listed: val, present: true})
		}
	}
	for key, s := range t {
		if _, ok := fresh[key]; !ok && !s.gone && s.ticket < ticket {
			out = append(out, suspect{kind: kind, key: key, ticket: ticket})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].kind+out[i].key < out[j].kind+out[j].key })
	return out
}

func sameValue[T any](a, b T) bool { return reflect.DeepEqual(a, b) }

// sameContainer compares what a list says of a container, except the
// status's age ("Up 3 minutes"), which changes with no event; the state,
// exit code and health it carries are compared.
func sameContainer(x, y *containerObs) bool {
	if x == nil || y == nil {
		return x == y
	}
	a, b := *x, *y
	a.c.Status, b.c.Status = "", ""
	return reflect.DeepEqual(a, b)
}

// unannounced reports a difference the engine makes without any event:
// connecting a container that is not running (created, exited) to a
// network emits none, so the view cannot know of it until the container
// starts (which does emit events). Such a difference is repaired but not
// counted as a divergence; observations re-list an app's non-running
// containers instead of trusting their networks (see observeFromView).
func unannounced(kind string, viewVal, engineVal any) bool {
	if kind != "container" {
		return false
	}
	x, y := viewVal.(*containerObs), engineVal.(*containerObs)
	if x == nil || y == nil || !idle(x.c.State) || !idle(y.c.State) {
		return false
	}
	a, b := *x, *y
	a.c.Networks, b.c.Networks, a.ip, b.ip = nil, nil, "", ""
	return sameContainer(&a, &b)
}

// idle states are those in which a network connect emits no event.
func idle(s drift.ContainerState) bool {
	return s == drift.StateCreated || s == drift.StateExited || s == drift.StateDead
}

// describe says what differs between the view's entry and the engine's
// answer, in words for the log.
func describe(viewVal any, viewHas bool, engineVal any, engineHas bool) string {
	switch {
	case !viewHas:
		return "missing from the view"
	case !engineHas:
		return "gone from the engine, still in the view"
	}
	va, vb := reflect.ValueOf(viewVal), reflect.ValueOf(engineVal)
	if co, ok := viewVal.(*containerObs); ok {
		eo := engineVal.(*containerObs)
		var fields []string
		if co.ip != eo.ip {
			fields = append(fields, fmt.Sprintf("ip %q→%q", co.ip, eo.ip))
		}
		va, vb = reflect.ValueOf(co.c), reflect.ValueOf(eo.c)
		fields = append(fields, diffFields(va, vb)...)
		return "differs: " + strings.Join(fields, ", ")
	}
	return "differs: " + strings.Join(diffFields(va, vb), ", ")
}

func diffFields(a, b reflect.Value) []string {
	var out []string
	for i := range a.NumField() {
		name := a.Type().Field(i).Name
		if name == "Status" {
			continue
		}
		x, y := a.Field(i).Interface(), b.Field(i).Interface()
		if !reflect.DeepEqual(x, y) {
			out = append(out, fmt.Sprintf("%s %v→%v", name, brief(x), brief(y)))
		}
	}
	return out
}

func brief(x any) string {
	s := fmt.Sprint(x)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// fetchContainer re-lists one container by ID into the view: one list call
// with an id filter, which answers in exactly the form a full list does.
func (e *Engine) fetchContainer(ctx context.Context, id string) (*containerObs, bool, error) {
	return fetchOne(e.view, e.view.containers, id, func() ([]container.Summary, error) {
		res, err := e.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("id", id)})
		if err != nil {
			return nil, fmt.Errorf("list container %s: %w", shortID(id), err)
		}
		return res.Items, nil
	}, func(s container.Summary) (*containerObs, bool) {
		// The id filter matches prefixes.
		return &containerObs{c: dockerspec.ContainerFromSummary(s), ip: dockerspec.SummaryIP(s)}, s.ID == id
	})
}

func (e *Engine) fetchNetwork(ctx context.Context, id string) (drift.Network, bool, error) {
	return fetchOne(e.view, e.view.networks, id, func() ([]network.Summary, error) {
		res, err := e.api.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("id", id)})
		if err != nil {
			return nil, fmt.Errorf("list network %s: %w", shortID(id), err)
		}
		return res.Items, nil
	}, func(s network.Summary) (drift.Network, bool) { return dockerspec.NetworkFromSummary(s), s.ID == id })
}

func (e *Engine) fetchVolume(ctx context.Context, name string) (drift.Volume, bool, error) {
	return fetchOne(e.view, e.view.volumes, name, func() ([]volume.Volume, error) {
		res, err := e.api.VolumeList(ctx, client.VolumeListOptions{Filters: make(client.Filters).Add("name", name)})
		if err != nil {
			return nil, fmt.Errorf("list volume %s: %w", name, err)
		}
		return res.Items, nil
	}, func(s volume.Volume) (drift.Volume, bool) {
		// The name filter matches substrings.
		return dockerspec.VolumeFromSummary(s), s.Name == name
	})
}

// fetchOne re-lists one object into a table of the view: the ticket is
// taken before the list, so an older answer never overwrites a newer one.
// match converts a listed item and says whether it is the object asked
// for (Docker's filters also match prefixes or substrings).
func fetchOne[S, V any](v *view, tbl table[V], key string, list func() ([]S, error), match func(S) (V, bool)) (V, bool, error) {
	t := v.ticket()
	var val V
	items, err := list()
	if err != nil {
		return val, false, err
	}
	found := false
	for _, s := range items {
		if got, ok := match(s); ok {
			val, found = got, true
		}
	}
	v.mu.Lock()
	tbl.put(t, key, val, found)
	v.mu.Unlock()
	return val, found, nil
}

// refreshApp re-lists one app's own objects (label-filtered, one call per
// kind) into the view. Objects of the app the list no longer shows are
// removed.
func (e *Engine) refreshApp(ctx context.Context, app string) error {
	t := e.view.ticket()
	l, err := e.list(ctx, make(client.Filters).Add("label", drift.LabelApp+"="+app))
	if err != nil {
		return err
	}
	k := keyedOf(l)
	v := e.view
	v.mu.Lock()
	defer v.mu.Unlock()
	for id, s := range v.containers {
		if _, ok := k.containers[id]; !ok && !s.gone && s.val.c.App == app {
			v.containers.put(t, id, nil, false)
		}
	}
	for id, s := range v.networks {
		if _, ok := k.networks[id]; !ok && !s.gone && s.val.App == app {
			v.networks.put(t, id, drift.Network{}, false)
		}
	}
	for name, s := range v.volumes {
		if _, ok := k.volumes[name]; !ok && !s.gone && s.val.App == app {
			v.volumes.put(t, name, drift.Volume{}, false)
		}
	}
	for id, c := range k.containers {
		v.containers.put(t, id, c, true)
	}
	for id, n := range k.networks {
		v.networks.put(t, id, n, true)
	}
	for name, vol := range k.volumes {
		v.volumes.put(t, name, vol, true)
	}
	return nil
}

// viewSlot reads one entry: its value, whether it exists, and its ticket.
func (v *view) viewSlot(kind, key string) (any, bool, uint64) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	switch kind {
	case "container":
		s, ok := v.containers[key]
		return s.val, ok && !s.gone, s.ticket
	case "network":
		s, ok := v.networks[key]
		return s.val, ok && !s.gone, s.ticket
	default:
		s, ok := v.volumes[key]
		return s.val, ok && !s.gone, s.ticket
	}
}

// fetch re-lists one object of any kind into the view.
func (e *Engine) fetch(ctx context.Context, kind, key string) (any, bool, error) {
	switch kind {
	case "container":
		return e.fetchContainer(ctx, key)
	case "network":
		return e.fetchNetwork(ctx, key)
	default:
		return e.fetchVolume(ctx, key)
	}
}

func same(kind string, a, b any) bool {
	if kind == "container" {
		return sameContainer(a.(*containerObs), b.(*containerObs))
	}
	return reflect.DeepEqual(a, b)
}

func objName(val any, key string) string {
	switch x := val.(type) {
	case *containerObs:
		if x != nil && x.c.Name != "" {
			return x.c.Name
		}
	case drift.Network:
		if x.Name != "" {
			return x.Name
		}
	}
	return key
}

// judge looks again at suspects after the grace period. A suspect whose
// entry an event rewrote since the list is explained. Otherwise it is
// fetched again: if the engine still says what the list said (the object
// held still, and no event came) and the view disagrees, the view missed
// something: a divergence, repaired by that fetch. An object that changed
// again without its event yet is judged at the next round; retry is
// what is left for that round.
func (e *Engine) judge(ctx context.Context, suspects []suspect) (divs []Divergence, retry []suspect, err error) {
	for _, s := range suspects {
		before, had, ticket := e.view.viewSlot(s.kind, s.key)
		if ticket > s.ticket {
			continue // an event refetched it since the list
		}
		fresh, found, ferr := e.fetch(ctx, s.kind, s.key)
		if ferr != nil {
			return divs, retry, ferr
		}
		stable := found == s.present && (!found || same(s.kind, fresh, s.listed))
		switch {
		case had == found && (!found || same(s.kind, before, fresh)):
			// The view agrees with the engine now.
		case stable && had && found && unannounced(s.kind, before, fresh):
			e.log.Debug("engine view: repaired a change the engine announces with no event", "kind", s.kind, "object", objName(fresh, s.key),
				"what", describe(before, had, fresh, found))
		case stable:
			divs = append(divs, Divergence{Kind: s.kind, Key: s.key, Name: objName(firstNonNil(fresh, before, found), s.key), What: describe(before, had, fresh, found)})
		default:
			s.listed, s.present = fresh, found
			s.ticket = e.view.ticket()
			retry = append(retry, s)
		}
	}
	return divs, retry, nil
}

func firstNonNil(fresh, before any, found bool) any {
	if found {
		return fresh
	}
	return before
}

// observeFromView is Observe's steady-state path: the view's listing, then
// the same grouping, foreign search and readiness as a cold list. Status
// strings in the view are as old as their last event, so readiness does
// not read the uptime from them (start events and the prober's periodic
// inspect catch restarts instead).
func (e *Engine) observeFromView(ctx context.Context, app string, withForeign bool) (drift.Actual, error) {
	// A recent ping, so a pass still finds an engine it can no longer
	// reach (its socket gone, the daemon shutting down) while the event
	// stream's connection, opened before, lives on.
	if err := e.pingRecent(ctx); err != nil {
		return drift.Actual{}, fmt.Errorf("observe app %s: %w", app, err)
	}
	actual, ips := e.view.actualFor(app, withForeign)
	if refresh := e.view.takeTouched(app); refresh || hasIdle(actual.Containers) {
		// After its own Apply, or with containers whose networks the
		// engine changes silently (see unannounced): one label-filtered
		// list per kind rather than trusting the view for this app.
		if err := e.refreshApp(ctx, app); err != nil {
			return drift.Actual{}, engineErr(fmt.Errorf("observe app %s: %w", app, err))
		}
		actual, ips = e.view.actualFor(app, withForeign)
	}
	e.fillReadinessFrom(ctx, actual.Containers, ips, func(c *readiness.Info) bool { return c.App == app }, false)
	e.fillDigests(ctx, actual.Containers)
	return actual, nil
}

// hasIdle reports whether a container is not running.
func hasIdle(cs []drift.Container) bool {
	return slices.ContainsFunc(cs, func(c drift.Container) bool { return idle(c.State) })
}

// sortedForeign orders the foreign lists, which come from map order in the
// view, so two observations of the same engine are equal.
func sortedForeign(a *drift.Actual) {
	slices.SortFunc(a.ForeignContainers, func(x, y drift.Container) int { return strings.Compare(x.Name, y.Name) })
	slices.SortFunc(a.ForeignNetworks, func(x, y drift.Network) int { return strings.Compare(x.Name, y.Name) })
	slices.SortFunc(a.ForeignVolumes, func(x, y drift.Volume) int { return strings.Compare(x.Name, y.Name) })
}
