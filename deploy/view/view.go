// Package view is driftless's one event-fed picture of a Docker engine:
// every container, network and volume as a list call shows them, built
// from one full list when the event stream connects and kept current by
// re-listing just the object each event names, so that an observation
// reads it without any API call. It also checks itself against fresh lists
// and counts what it missed (divergences). It owns the listing form that
// a cold observation shares with it. The deploy engine holds one View and
// feeds it the events it follows.
package view

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/volume"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"
)

// View is one picture of everything on the engine (containers of every
// owner, networks, volumes), shared by every app's passes. The event
// goroutine builds it from a full list when the event stream connects and
// then keeps it current by re-listing just the object an event names; a
// pass reads it without any API call.
//
// Every write carries a ticket taken before its API call: a write only
// replaces an entry with an older ticket, and a removal leaves a tombstone,
// so an answer that was overtaken (a slow refetch, a write-through after
// Apply racing an event) never puts back an older state.
type View struct {
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

	api Lister
	log *slog.Logger
	// Grace is how long a check waits for events on the way before it
	// judges a difference (tests set 0 before Watch runs).
	Grace time.Duration
	// DestroyWait is how long an object the engine no longer lists may
	// wait for its destroy event before the view counts it as missed:
	// the engine hides a network from its lists as soon as its removal
	// starts, and announces the removal only when the driver is done,
	// which on a busy host takes seconds.
	DestroyWait time.Duration
	// checks asks the watch goroutine for a check now.
	checks     chan chan Report
	divergence *prometheus.CounterVec
}

// Lister is the part of the Docker client the view uses: one list call
// per kind, filtered by ID, name or label.
type Lister interface {
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	NetworkList(ctx context.Context, options client.NetworkListOptions) (client.NetworkListResult, error)
	VolumeList(ctx context.Context, options client.VolumeListOptions) (client.VolumeListResult, error)
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

// New makes an empty view, not live until Rebuild fills it.
func New(api Lister, log *slog.Logger) *View {
	v := &View{containers: table[*containerObs]{}, networks: table[drift.Network]{}, volumes: table[drift.Volume]{}, touched: map[string]bool{},
		api: api, log: log, Grace: time.Second, DestroyWait: 30 * time.Second, checks: make(chan chan Report),
		divergence: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "driftless_observation_divergence_total",
			Help: "Differences between the event-fed view of the engine and a fresh list, by object kind (container, network, volume); each was repaired at once."}, []string{"kind"})}
	for _, kind := range []string{"container", "network", "volume"} {
		v.divergence.WithLabelValues(kind) // exported as 0 until a check finds one
	}
	return v
}

// Collector exports driftless_observation_divergence_total.
func (v *View) Collector() prometheus.Collector { return v.divergence }

func (v *View) ticket() uint64 { return v.tickets.Add(1) }

// IsLive reports whether the view is built and following the stream.
func (v *View) IsLive() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.live
}

// SetLive(false) makes observations fall back to Listing the engine until
// the view is rebuilt: while the stream is down, the view may be wrong.
func (v *View) SetLive(live bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.live = live
}

// Touch marks app as changed by its own Apply (see touched).
func (v *View) Touch(app string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.touched[app] = true
}

// TakeTouched reports and clears Touch's mark.
func (v *View) TakeTouched(app string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	t := v.touched[app]
	delete(v.touched, app)
	return t
}

// Snapshot is the view as a Listing, in the same form a fresh list gives.
func (v *View) Snapshot() Listing {
	v.mu.RLock()
	defer v.mu.RUnlock()
	l := Listing{ContainerIPs: make(map[string]string, len(v.containers))}
	for _, s := range v.containers {
		if !s.gone {
			l.Containers = append(l.Containers, s.val.c)
			l.ContainerIPs[s.val.c.ID] = s.val.ip
		}
	}
	for _, s := range v.networks {
		if !s.gone {
			l.Networks = append(l.Networks, s.val)
		}
	}
	for _, s := range v.volumes {
		if !s.gone {
			l.Volumes = append(l.Volumes, s.val)
		}
	}
	return l
}

// ActualFor is one app's observation from the view: its own objects and,
// withForeign, the other containers Foreign would keep (the same test)
// and every other network and volume, each list sorted by name, with the
// containers' IPs. Only these are copied, once, in order: a pass costs its
// app's size, not the host's.
func (v *View) ActualFor(app string, withForeign bool) (drift.Actual, map[string]string) {
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
	SortForeign(&a)
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

func keyedOf(l Listing) keyed {
	k := keyed{containers: map[string]*containerObs{}, networks: map[string]drift.Network{}, volumes: map[string]drift.Volume{}}
	for _, c := range l.Containers {
		k.containers[c.ID] = &containerObs{c: c, ip: l.ContainerIPs[c.ID]}
	}
	for _, n := range l.Networks {
		k.networks[n.ID] = n
	}
	for _, vol := range l.Volumes {
		k.volumes[vol.Name] = vol
	}
	return k
}

// replace makes a full list the view's content, keeping only entries
// written after the list's ticket (they are newer).
func (v *View) replace(ticket uint64, l Listing) {
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
	since   time.Time // when it began to wait for its destroy event
}

// compare finds the objects whose view entry differs from a full list
// taken under ticket, leaving out entries written since (they are newer
// than the list).
func (v *View) compare(ticket uint64, l Listing) []suspect {
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
// containers instead of trusting their networks (see deploy's observeFromView).
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
func (v *View) fetchContainer(ctx context.Context, id string) (*containerObs, bool, error) {
	return fetchOne(v, v.containers, id, func() ([]container.Summary, error) {
		res, err := v.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("id", id)})
		if err != nil {
			return nil, fmt.Errorf("list container %s: %w", shortID(id), err)
		}
		return res.Items, nil
	}, func(s container.Summary) (*containerObs, bool) {
		// The id filter matches prefixes.
		return obsOf(s), s.ID == id
	})
}

// obsOf is what the view keeps of a listed container.
func obsOf(s container.Summary) *containerObs {
	return &containerObs{c: dockerspec.ContainerFromSummary(s), ip: dockerspec.SummaryIP(s)}
}

func (v *View) fetchNetwork(ctx context.Context, id string) (drift.Network, bool, error) {
	return fetchOne(v, v.networks, id, func() ([]network.Summary, error) {
		res, err := v.api.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("id", id)})
		if err != nil {
			return nil, fmt.Errorf("list network %s: %w", shortID(id), err)
		}
		return res.Items, nil
	}, func(s network.Summary) (drift.Network, bool) { return dockerspec.NetworkFromSummary(s), s.ID == id })
}

func (v *View) fetchVolume(ctx context.Context, name string) (drift.Volume, bool, error) {
	return fetchOne(v, v.volumes, name, func() ([]volume.Volume, error) {
		res, err := v.api.VolumeList(ctx, client.VolumeListOptions{Filters: make(client.Filters).Add("name", name)})
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
func fetchOne[S, V any](v *View, tbl table[V], key string, list func() ([]S, error), match func(S) (V, bool)) (V, bool, error) {
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

// refreshContainers re-lists every container into the view (one call).
// Containers the list no longer shows are left to their destroy events,
// and destroyed ones stay gone.
func (v *View) refreshContainers(ctx context.Context) error {
	t := v.ticket()
	res, err := v.api.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, s := range res.Items {
		if old, ok := v.containers[s.ID]; ok && old.gone {
			continue // destroyed: the list can still show it just after the event
		}
		v.containers.put(t, s.ID, obsOf(s), true)
	}
	return nil
}

// RefreshApp re-lists one app's own objects (label-filtered, one call per
// kind) into the view. Objects of the app the list no longer shows are
// removed.
func (v *View) RefreshApp(ctx context.Context, app string) error {
	t := v.ticket()
	l, err := List(ctx, v.api, make(client.Filters).Add("label", drift.LabelApp+"="+app))
	if err != nil {
		return err
	}
	k := keyedOf(l)
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
func (v *View) viewSlot(kind, key string) (any, bool, uint64) {
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
func (v *View) fetch(ctx context.Context, kind, key string) (any, bool, error) {
	switch kind {
	case "container":
		return v.fetchContainer(ctx, key)
	case "network":
		return v.fetchNetwork(ctx, key)
	default:
		return v.fetchVolume(ctx, key)
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
// what is left for that round. An object the engine stopped listing
// without its destroy event yet is repaired at once and waits for that
// event (gone; see DestroyWait) before it counts.
func (v *View) judge(ctx context.Context, suspects []suspect) (divs []Divergence, retry, gone []suspect, err error) {
	for _, s := range suspects {
		before, had, ticket := v.viewSlot(s.kind, s.key)
		if ticket > s.ticket {
			continue // an event refetched it since the list
		}
		fresh, found, ferr := v.fetch(ctx, s.kind, s.key)
		if ferr != nil {
			return divs, retry, gone, ferr
		}
		stable := found == s.present && (!found || same(s.kind, fresh, s.listed))
		switch {
		case had == found && (!found || same(s.kind, before, fresh)):
			// The view agrees with the engine now.
		case stable && had && found && unannounced(s.kind, before, fresh):
			v.log.Debug("engine view: repaired a change the engine announces with no event", "kind", s.kind, "object", objName(fresh, s.key),
				"what", describe(before, had, fresh, found))
		case stable && had && !found:
			s.listed = before // for the name, should it count
			s.ticket, s.since = v.ticket(), time.Now()
			gone = append(gone, s)
		case stable:
			divs = append(divs, Divergence{Kind: s.kind, Key: s.key, Name: objName(firstNonNil(fresh, before, found), s.key), What: describe(before, had, fresh, found)})
		default:
			s.listed, s.present = fresh, found
			s.ticket = v.ticket()
			retry = append(retry, s)
		}
	}
	return divs, retry, gone, nil
}

// awaitDestroy drops the gone suspects whose destroy event has arrived
// (their entry was written since) and counts those that waited longer
// than DestroyWait without it.
func (v *View) awaitDestroy(gone []suspect) (waiting []suspect, divs []Divergence) {
	for _, s := range gone {
		_, _, ticket := v.viewSlot(s.kind, s.key)
		switch {
		case ticket > s.ticket:
			// The destroy event came.
		case time.Since(s.since) >= v.DestroyWait:
			divs = append(divs, Divergence{Kind: s.kind, Key: s.key, Name: objName(s.listed, s.key), What: describe(s.listed, true, nil, false)})
		default:
			waiting = append(waiting, s)
		}
	}
	return waiting, divs
}

func firstNonNil(fresh, before any, found bool) any {
	if found {
		return fresh
	}
	return before
}

// SortForeign orders the foreign lists, which come from map order in the
// view, so two observations of the same engine are equal.
func SortForeign(a *drift.Actual) {
	slices.SortFunc(a.ForeignContainers, func(x, y drift.Container) int { return strings.Compare(x.Name, y.Name) })
	slices.SortFunc(a.ForeignNetworks, func(x, y drift.Network) int { return strings.Compare(x.Name, y.Name) })
	slices.SortFunc(a.ForeignVolumes, func(x, y drift.Volume) int { return strings.Compare(x.Name, y.Name) })
}

// Listing is one observation: the engine's answer to one list call per
// kind, already parsed.
type Listing struct {
	Containers   []drift.Container
	ContainerIPs map[string]string // by container ID
	Networks     []drift.Network
	Volumes      []drift.Volume
}

// List makes the three list calls; nil filters list everything.
func List(ctx context.Context, api Lister, filters client.Filters) (Listing, error) {
	// The three lists at once: the wait is the slowest, not the sum.
	var (
		containers                   client.ContainerListResult
		networks                     client.NetworkListResult
		volumes                      client.VolumeListResult
		containerErr, netErr, volErr error
		wg                           sync.WaitGroup
	)
	wg.Go(func() {
		containers, containerErr = api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filters})
	})
	wg.Go(func() { networks, netErr = api.NetworkList(ctx, client.NetworkListOptions{Filters: filters}) })
	wg.Go(func() { volumes, volErr = api.VolumeList(ctx, client.VolumeListOptions{Filters: filters}) })
	wg.Wait()
	switch {
	case containerErr != nil:
		return Listing{}, fmt.Errorf("list containers: %w", containerErr)
	case netErr != nil:
		return Listing{}, fmt.Errorf("list networks: %w", netErr)
	case volErr != nil:
		return Listing{}, fmt.Errorf("list volumes: %w", volErr)
	}
	l := Listing{ContainerIPs: map[string]string{}}
	for _, s := range containers.Items {
		c := dockerspec.ContainerFromSummary(s)
		l.Containers = append(l.Containers, c)
		l.ContainerIPs[c.ID] = dockerspec.SummaryIP(s)
	}
	for _, s := range networks.Items {
		l.Networks = append(l.Networks, dockerspec.NetworkFromSummary(s))
	}
	for _, v := range volumes.Items {
		l.Volumes = append(l.Volumes, dockerspec.VolumeFromSummary(v))
	}
	return l, nil
}

// IPs are the listed containers' IP addresses, by ID.
func (l Listing) IPs() map[string]string { return l.ContainerIPs }

// ByApp groups the owned objects by app, each list sorted by name.
func (l Listing) ByApp() map[string]drift.Actual {
	out := map[string]drift.Actual{}
	for _, c := range l.Containers {
		if c.App == "" {
			continue
		}
		a := out[c.App]
		a.Containers = append(a.Containers, c)
		out[c.App] = a
	}
	for _, n := range l.Networks {
		if n.App == "" {
			continue
		}
		a := out[n.App]
		a.Networks = append(a.Networks, n)
		out[n.App] = a
	}
	for _, v := range l.Volumes {
		if v.App == "" {
			continue
		}
		a := out[v.App]
		a.Volumes = append(a.Volumes, v)
		out[v.App] = a
	}
	for app, a := range out {
		sortActual(&a)
		out[app] = a
	}
	return out
}

func sortActual(a *drift.Actual) {
	slices.SortFunc(a.Containers, func(x, y drift.Container) int { return strings.Compare(x.Name, y.Name) })
	slices.SortFunc(a.Networks, func(x, y drift.Network) int { return strings.Compare(x.Name, y.Name) })
	slices.SortFunc(a.Volumes, func(x, y drift.Volume) int { return strings.Compare(x.Name, y.Name) })
}

// Foreign adds to actual what is not this app's: containers that hold one
// of its names ("<app>-...") or publish a host port, and every network and
// volume (they are few), which the differ needs both to find name
// collisions and to see whether the external ones the app uses exist.
func (l Listing) Foreign(app string, actual *drift.Actual) {
	prefix := app + "-"
	for _, c := range l.Containers {
		// Compose's containers are listed whatever their names: the
		// app may run as a compose project today.
		if c.App != app && (strings.HasPrefix(c.Name, prefix) || len(c.HostPorts) > 0 || c.ComposeProject != "") {
			actual.ForeignContainers = append(actual.ForeignContainers, c)
		}
	}
	for _, n := range l.Networks {
		if n.App != app {
			actual.ForeignNetworks = append(actual.ForeignNetworks, n)
		}
	}
	for _, v := range l.Volumes {
		if v.App != app {
			actual.ForeignVolumes = append(actual.ForeignVolumes, v)
		}
	}
	SortForeign(actual)
}

// HasIdle reports whether a container is not running.
func HasIdle(cs []drift.Container) bool {
	return slices.ContainsFunc(cs, func(c drift.Container) bool { return idle(c.State) })
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
