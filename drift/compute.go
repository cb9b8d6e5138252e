package drift

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/driftless-dev/driftless/manifest"
)

// Exit codes of a container stopped by a signal (docker stop / docker kill):
// such a container did not exit on its own.
const (
	exitSIGKILL = 137
	exitSIGTERM = 143
)

// Compute returns the plan that makes the app's owned Docker objects match
// the desired state. It is pure and deterministic: the same input in any
// order gives the same plan.
func Compute(in Input) Plan {
	p := newPlanner(in)
	if in.Options.Target == manifest.TargetSwarm {
		p.computeSwarm()
		p.sortConflicts()
		return p.plan
	}
	p.networks()
	p.volumes()
	p.anonymousVolumes()
	p.containers()
	p.pruneNetworks()
	p.pruneVolumes()
	p.pruneAnonymousVolumes()
	p.sortConflicts()
	return p.plan
}

func (p *planner) sortConflicts() {
	slices.SortFunc(p.plan.Conflicts, func(a, b Conflict) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.Service, b.Service))
	})
}

// ShortRevision is the abbreviated commit shown to people.
func ShortRevision(rev string) string {
	if len(rev) > 7 {
		return rev[:7]
	}
	return rev
}

type planner struct {
	in      Input
	app     string
	short   string
	desired *manifest.App
	plan    Plan

	// foreignNames maps a Docker name held by an object that is not ours to
	// why it is in the way.
	foreignContainers map[string]string
	// portHolders maps a host port to the container that publishes it while
	// it is not ours to remove.
	portHolders map[int]string
	// foreignIndexed: the two maps above are built. They are built on
	// first use because only a create or a published host port asks, and
	// an idle pass over a busy host would otherwise index a thousand
	// containers to look nothing up.
	foreignIndexed bool
	// blocked maps a declared network or volume (manifest name) that cannot
	// be created, to the conflict reason; services using it are held back.
	blockedNetworks map[string]Conflict
	blockedVolumes  map[string]Conflict
	// blockedAnonymous maps a service to the conflict on the name of one
	// of its anonymous volumes.
	blockedAnonymous map[string]Conflict
	// anonymous are the app's anonymous volumes by Docker name, and
	// anonymousWanted the ones the desired state mounts.
	anonymous       map[string]*Volume
	anonymousWanted map[string]bool
	// replacedNetworks are Docker names of networks this plan recreates.
	replacedNetworks []string
	conflictSeen     map[Conflict]bool
	// heldServices are services a conflict keeps a replica of from being
	// created, started or replaced.
	heldServices map[string]bool
	// project is the docker compose project that belongs to the app;
	// compose holds its containers by compose service name.
	project string
	compose map[string][]*Container
	// ownerChanges holds, by service, the cause of this plan's create or
	// replace of the first replica of a service whose network namespace
	// others share (see staleNamespace).
	ownerChanges map[string]Cause
	// dependencyChanges holds, by service, this plan's first create or
	// replace of one of its replicas, for the services that name it in
	// DependsOnRestart (see recreatedDependency).
	dependencyChanges map[string]Change
	// owned networks and volumes by Docker name.
	ownedNetworks map[string]*Network
	ownedVolumes  map[string]*Volume
}

func newPlanner(in Input) *planner {
	desired := in.Desired
	if desired == nil {
		desired = &manifest.App{Name: in.App}
	}
	p := &planner{
		in:      in,
		app:     in.App,
		short:   ShortRevision(in.Options.Revision),
		desired: desired,
		plan:    Plan{App: in.App, Revision: in.Options.Revision},
	}
	p.project = in.Options.composeProject(in.App)
	for i := range in.Actual.ForeignContainers {
		if c := &in.Actual.ForeignContainers[i]; p.composeContainer(c) {
			if p.compose == nil {
				p.compose = map[string][]*Container{}
			}
			p.compose[c.ComposeService] = append(p.compose[c.ComposeService], c)
		}
	}
	for _, cs := range p.compose {
		slices.SortFunc(cs, func(a, b *Container) int {
			return cmp.Or(cmp.Compare(a.ComposeNumber, b.ComposeNumber), cmp.Compare(a.ID, b.ID))
		})
	}
	return p
}

// composeContainer reports whether c is a container of the app's docker
// compose project.
func (p *planner) composeContainer(c *Container) bool {
	return c.App == "" && c.ComposeProject == p.project && c.ComposeService != ""
}

// indexForeign builds, once, the names and host ports held by containers
// that are not ours to remove.
func (p *planner) indexForeign() {
	if p.foreignIndexed {
		return
	}
	p.foreignIndexed = true
	in := &p.in
	p.foreignContainers = make(map[string]string, len(in.Actual.ForeignContainers))
	p.portHolders = make(map[int]string)
	for i := range in.Actual.ForeignContainers {
		c := &in.Actual.ForeignContainers[i]
		if in.Options.Adopt && p.composeContainer(c) {
			continue // its name and ports pass to the replicas that replace it
		}
		p.addForeignContainer(c)
	}
	for i := range in.Actual.Containers {
		if c := &in.Actual.Containers[i]; c.App != in.App {
			p.addForeignContainer(c)
		}
	}
}

// foreignHolder is why a container that is not ours holds name, if one does.
func (p *planner) foreignHolder(name string) (string, bool) {
	p.indexForeign()
	why, ok := p.foreignContainers[name]
	return why, ok
}

// portHolder is the container that is not ours and publishes port, if any.
func (p *planner) portHolder(port int) (string, bool) {
	p.indexForeign()
	holder, ok := p.portHolders[port]
	return holder, ok
}

func (p *planner) addForeignContainer(c *Container) {
	name := dockerName(c.Name)
	why := "name is held by a container driftless does not own"
	switch {
	case c.App != "":
		why = "name is held by a container of app " + c.App
	case c.ComposeProject != "":
		why = "name is held by a container of docker compose project " + c.ComposeProject
	}
	if prev, ok := p.foreignContainers[name]; !ok || why < prev {
		p.foreignContainers[name] = why
	}
	for _, port := range c.HostPorts {
		p.addPortHolder(port, name)
	}
}

// addPortHolder keeps the smallest holder name so the conflict text does
// not depend on input order.
func (p *planner) addPortHolder(port int, name string) {
	if prev, ok := p.portHolders[port]; !ok || name < prev {
		p.portHolders[port] = name
	}
}

func (p *planner) conflict(c Conflict) {
	if c.Service != "" {
		if p.heldServices == nil {
			p.heldServices = make(map[string]bool)
		}
		p.heldServices[c.Service] = true
	}
	if p.conflictSeen == nil {
		p.conflictSeen = make(map[Conflict]bool)
	}
	if p.conflictSeen[c] {
		return
	}
	p.conflictSeen[c] = true
	p.plan.Conflicts = append(p.plan.Conflicts, c)
}

// dockerName drops the leading slash the Docker API puts on container names.
func dockerName(name string) string { return strings.TrimPrefix(name, "/") }

func (p *planner) revisionPhrase() string {
	if p.short == "" {
		return "the desired state"
	}
	return "revision " + p.short
}

// ---- networks and volumes ----

// resourceName is the manifest name of an owned network or volume: its
// label, or its Docker name without the app prefix when the label is absent.
func (p *planner) resourceName(resource, name string) string {
	if resource != "" {
		return resource
	}
	return strings.TrimPrefix(name, p.app+"-")
}

func (p *planner) networks() {
	owned := map[string]*Network{}
	foreign := map[string]string{}
	for _, n := range p.keptNetworks() {
		if n.App != p.app {
			foreign[n.Name] = foreignWhy("network", n.App)
			continue
		}
		owned[n.Name] = n
	}
	for i := range p.in.Actual.ForeignNetworks {
		n := &p.in.Actual.ForeignNetworks[i]
		foreign[n.Name] = foreignWhy("network", n.App)
	}
	nets := slices.Clone(p.desired.Networks)
	slices.SortFunc(nets, func(a, b manifest.Network) int { return cmp.Compare(a.Name, b.Name) })
	for i := range nets {
		d := &nets[i]
		name := d.DockerName(p.app)
		if d.Spec.External {
			p.externalNetwork(d)
			continue
		}
		have, ok := owned[name]
		switch {
		case ok && p.resourceName(have.Resource, have.Name) != d.Name:
			p.blockNetwork(d.Name, name, "name is held by this app's network "+p.resourceName(have.Resource, have.Name)+", which the revision names otherwise: prune it before another network takes its name")
		case !ok:
			if why, taken := foreign[name]; taken {
				p.blockNetwork(d.Name, name, why)
				continue
			}
			reason := "declared in " + p.revisionPhrase()
			if d.Implicit {
				reason = "default network of services that name no network"
			}
			p.plan.Changes = append(p.plan.Changes, Change{
				Action: ActionCreate, Kind: KindNetwork, Name: name, Resource: d.Name,
				Cause: CauseGit, Reason: reason,
			})
		case have.SpecHash != d.Hash:
			var fields []FieldChange
			if have.Driver != "" && have.Driver != d.Spec.Driver {
				fields = append(fields, FieldChange{Path: "driver", Before: have.Driver, After: d.Spec.Driver})
			}
			if len(fields) == 0 {
				fields = append(fields, hashField(have.SpecHash, d.Hash))
			}
			p.plan.Changes = append(p.plan.Changes, Change{
				Action: ActionReplace, Kind: KindNetwork, Name: have.Name, ID: have.ID, Resource: d.Name,
				Cause: CauseGit, Reason: "spec changed in " + p.revisionPhrase(), Fields: fields,
			})
			p.replacedNetworks = append(p.replacedNetworks, have.Name)
		}
	}
	p.ownedNetworks = owned
}

// keptNetworks are the observed networks of the app but for duplicates: of
// two or more of its networks with one Docker name (Docker on API 1.41 does
// not refuse the second create, which an agent killed after Docker made the
// first one repeats), the oldest is kept and a removal is planned for each
// other that first moves its containers to the kept one (Change.MergeInto).
// The name stays ambiguous, and every container start fails, until then.
// Swarm's networks are left to Swarm.
func (p *planner) keptNetworks() []*Network {
	byName := map[string][]*Network{}
	var out []*Network
	for i := range p.in.Actual.Networks {
		n := &p.in.Actual.Networks[i]
		if n.App != p.app || p.in.Options.Target == manifest.TargetSwarm {
			out = append(out, n)
			continue
		}
		byName[n.Name] = append(byName[n.Name], n)
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		ns := byName[name]
		slices.SortFunc(ns, CompareNetworkAge)
		kept := ns[0]
		out = append(out, kept)
		for _, dup := range ns[1:] {
			p.plan.Changes = append(p.plan.Changes, Change{
				Action: ActionRemove, Kind: KindNetwork, Name: dup.Name, ID: dup.ID,
				Resource: p.resourceName(dup.Resource, dup.Name), Cause: CauseDrift, MergeInto: kept.ID,
				Reason: "a second network named " + name + " (" + shortNetworkID(dup.ID) + "): every container start fails while the name is ambiguous; its containers move to the oldest, " + shortNetworkID(kept.ID),
			})
		}
	}
	return out
}

// CompareNetworkAge orders networks by creation, then ID: of two with one
// name, the first is the one kept, whatever order Docker lists them in.
func CompareNetworkAge(a, b *Network) int {
	return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
}

func shortNetworkID(id string) string { return id[:min(12, len(id))] }

// externalNetwork checks that a network the app uses but does not own
// exists: driftless never creates, replaces or removes it. A missing one is
// a conflict that holds back the services joining it.
func (p *planner) externalNetwork(d *manifest.Network) {
	name := d.DockerName(p.app)
	var owners []string
	found := false
	for _, list := range [][]Network{p.in.Actual.Networks, p.in.Actual.ForeignNetworks} {
		for _, n := range list {
			if n.Name == name {
				found = true
				owners = append(owners, n.App)
			}
		}
	}
	if !found {
		p.blockNetwork(d.Name, name, "external network "+name+" does not exist; driftless never creates external networks: create it with `docker network create "+name+"`")
		return
	}
	if owner := p.otherOwner(owners, p.in.Options.Shared.Networks, name); owner != "" {
		p.blockOwned(&p.blockedNetworks, KindNetwork, d.Name, name, owner, d.Source)
	}
}

// otherOwner is the app, other than this one, that owns the external
// object name (by its app label) when Shared does not list it; "" when
// the app may use it. Several objects may share a network's name: the
// first other owner by name is reported.
func (p *planner) otherOwner(owners, shared []string, name string) string {
	if slices.Contains(shared, name) {
		return ""
	}
	other := ""
	for _, o := range owners {
		if o != "" && o != p.app && (other == "" || o < other) {
			other = o
		}
	}
	return other
}

// blockOwned records an external network or volume of another app as a
// conflict that holds back the services using it and, through Owner,
// refuses a new revision. The reason names where it is declared and the
// setting that would allow it.
func (p *planner) blockOwned(blocked *map[string]Conflict, kind Kind, resource, name, owner string, at manifest.Position) {
	use, flag := "join", "--shared-network"
	if kind == KindVolume {
		use, flag = "mount", "--shared-volume"
	}
	why := fmt.Sprintf("external %s %s belongs to app %s (label %s); an app may not %s another app's %ss: if app %s shares it on purpose, list it for this app with `shared: {%ss: [%s]}` in driftless.yaml (or `%s %s`)",
		kind, name, owner, LabelApp, use, kind, owner, kind, name, flag, name)
	if at.File != "" {
		at.File = path.Join(p.in.Options.SourceDir, at.File)
		why = at.String() + ": " + why
	}
	p.block(blocked, resource, Conflict{Kind: kind, Name: name, Reason: why, Owner: owner})
}

func (p *planner) blockNetwork(resource, name, why string) {
	p.block(&p.blockedNetworks, resource, Conflict{Kind: KindNetwork, Name: name, Reason: why})
}

// block records that a declared network or volume cannot be had, as a
// conflict that holds back the services using it.
func (p *planner) block(blocked *map[string]Conflict, resource string, c Conflict) {
	if *blocked == nil {
		*blocked = map[string]Conflict{}
	}
	(*blocked)[resource] = c
	p.conflict(c)
}

func foreignWhy(kind, app string) string {
	if app != "" {
		return "name is held by a " + kind + " of app " + app
	}
	return "name is held by a " + kind + " driftless does not own"
}

func hashField(before, after string) FieldChange {
	if before == "" {
		before = "(none)"
	}
	return FieldChange{Path: "spec-hash", Before: before, After: after}
}

func (p *planner) volumes() {
	owned := map[string]*Volume{}
	foreign := map[string]string{}
	for i := range p.in.Actual.Volumes {
		v := &p.in.Actual.Volumes[i]
		if v.App != p.app {
			foreign[v.Name] = foreignWhy("volume", v.App)
			continue
		}
		if v.Anonymous() {
			continue // see anonymousVolumes
		}
		owned[v.Name] = v
	}
	for i := range p.in.Actual.ForeignVolumes {
		v := &p.in.Actual.ForeignVolumes[i]
		foreign[v.Name] = foreignWhy("volume", v.App)
	}
	vols := slices.Clone(p.desired.Volumes)
	slices.SortFunc(vols, func(a, b manifest.Volume) int { return cmp.Compare(a.Name, b.Name) })
	for i := range vols {
		d := &vols[i]
		name := d.DockerName(p.app)
		if d.Spec.External {
			p.externalVolume(d)
			continue
		}
		have, ok := owned[name]
		switch {
		case ok && p.resourceName(have.Resource, have.Name) != d.Name:
			p.blockVolume(d.Name, name, "name is held by this app's volume "+p.resourceName(have.Resource, have.Name)+", which the revision names otherwise; driftless never hands one volume's data to another: remove it by hand, or choose another name")
		case !ok:
			if why, taken := foreign[name]; taken {
				p.blockVolume(d.Name, name, why)
				continue
			}
			if cv := p.composeVolume(d); cv != "" {
				// A new empty volume would shadow the data compose keeps.
				p.blockVolume(d.Name, cv, "docker compose project "+p.project+" keeps this volume's data; set adopt: compose for this app to use it")
				continue
			}
			p.plan.Changes = append(p.plan.Changes, Change{
				Action: ActionCreate, Kind: KindVolume, Name: name, Resource: d.Name,
				Cause: CauseGit, Reason: "declared in " + p.revisionPhrase(),
			})
		case have.SpecHash != d.Hash:
			// Replacing a volume destroys its data; only a person may decide that.
			p.conflict(Conflict{Kind: KindVolume, Name: have.Name,
				Reason: "volume spec changed; driftless never replaces volumes: remove " + have.Name + " by hand to recreate it"})
		}
	}
	p.ownedVolumes = owned
}

// externalVolume checks that a volume the app uses but does not own
// exists; see externalNetwork.
func (p *planner) externalVolume(d *manifest.Volume) {
	name := d.DockerName(p.app)
	var owners []string
	found := false
	for _, list := range [][]Volume{p.in.Actual.Volumes, p.in.Actual.ForeignVolumes} {
		for _, v := range list {
			if v.Name == name {
				found = true
				owners = append(owners, v.App)
			}
		}
	}
	if !found {
		p.blockVolume(d.Name, name, "external volume "+name+" does not exist; driftless never creates external volumes: create it with `docker volume create "+name+"`")
		return
	}
	if owner := p.otherOwner(owners, p.in.Options.Shared.Volumes, name); owner != "" {
		p.blockOwned(&p.blockedVolumes, KindVolume, d.Name, name, owner, d.Source)
	}
}

func (p *planner) blockVolume(resource, name, why string) {
	p.block(&p.blockedVolumes, resource, Conflict{Kind: KindVolume, Name: name, Reason: why})
}

// declaresOwned reports whether a declaration still covers the owned
// object of resource key and Docker name name: one that is now external
// under another Docker name, or named otherwise (name:), does not.
func declaresOwned(key, name, declared, dockerName string) bool {
	return declared == key && dockerName == name
}

// composeVolume is the name of the app's compose project's volume for the
// declared volume, or "".
func (p *planner) composeVolume(d *manifest.Volume) string {
	key := cmp.Or(d.ComposeName, d.Name)
	for _, fv := range p.in.Actual.ForeignVolumes {
		if fv.App == "" && fv.Labels[LabelComposeProject] == p.project && fv.Labels[LabelComposeVolume] == key {
			return fv.Name
		}
	}
	return ""
}

func (p *planner) pruneNetworks() {
	var gone []*Network
	for _, n := range p.ownedNetworks {
		key := p.resourceName(n.Resource, n.Name)
		if !slices.ContainsFunc(p.desired.Networks, func(d manifest.Network) bool {
			return declaresOwned(key, n.Name, d.Name, d.DockerName(p.app))
		}) {
			gone = append(gone, n)
		}
	}
	// Duplicates by name were merged into the oldest (keptNetworks); of
	// two of the app's networks with one resource label and different
	// names, the one the revision no longer names goes.
	slices.SortFunc(gone, func(a, b *Network) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	for _, n := range gone {
		c := Change{Action: ActionRemove, Kind: KindNetwork, Name: n.Name, ID: n.ID,
			Resource: p.resourceName(n.Resource, n.Name), Cause: CauseGit,
			Reason: "network " + p.resourceName(n.Resource, n.Name) + " is no longer declared in " + p.revisionPhrase()}
		if p.in.Options.Prune {
			p.plan.Changes = append(p.plan.Changes, c)
		} else {
			p.plan.Pruneable = append(p.plan.Pruneable, c)
		}
	}
}

func (p *planner) pruneVolumes() {
	var gone []*Volume
	for _, v := range p.ownedVolumes {
		key := p.resourceName(v.Resource, v.Name)
		if !slices.ContainsFunc(p.desired.Volumes, func(d manifest.Volume) bool {
			return declaresOwned(key, v.Name, d.Name, d.DockerName(p.app))
		}) {
			gone = append(gone, v)
		}
	}
	slices.SortFunc(gone, func(a, b *Volume) int { return cmp.Compare(a.Name, b.Name) })
	for _, v := range gone {
		res := p.resourceName(v.Resource, v.Name)
		c := Change{Action: ActionRemove, Kind: KindVolume, Name: v.Name, Resource: res, Cause: CauseGit,
			Reason: "volume " + res + " is no longer declared in " + p.revisionPhrase()}
		switch {
		case p.in.Options.Prune && p.in.Options.AllowVolumeRemoval:
			p.plan.Changes = append(p.plan.Changes, c)
		case !p.in.Options.AllowVolumeRemoval:
			c.Reason = "kept: volumes are never removed without --allow-volume-removal"
			p.plan.Pruneable = append(p.plan.Pruneable, c)
		default:
			p.plan.Pruneable = append(p.plan.Pruneable, c)
		}
	}
}

// ---- containers ----

// cref is a compact, sortable reference to one owned container, so the
// hot path sorts small values instead of whole Containers.
type cref struct {
	svc     int32 // index into services; -1 when not declared
	slot    int32
	idx     int32 // index into Actual.Containers
	hashOK  bool
	running bool
}

// compareCandidates orders the candidates for one slot: the desired spec
// first, then a running one, then the newest, then the lowest ID, so the
// choice never depends on input order.
func (p *planner) compareCandidates(a, b cref) int {
	if a.hashOK != b.hashOK {
		if a.hashOK {
			return -1
		}
		return 1
	}
	if a.running != b.running {
		if a.running {
			return -1
		}
		return 1
	}
	ca, cb := &p.in.Actual.Containers[a.idx], &p.in.Actual.Containers[b.idx]
	if c := cb.Created.Compare(ca.Created); c != 0 {
		return c
	}
	return cmp.Compare(ca.ID, cb.ID)
}

func (p *planner) containers() {
	services := p.desired.Services
	svcIndex := make(map[string]int32, len(services))
	for i := range services {
		svcIndex[services[i].Name] = int32(i)
	}
	all := p.in.Actual.Containers
	refs := make([]cref, 0, len(all))
	var undeclared []int32
	for i := range all {
		c := &all[i]
		if c.App != p.app {
			continue
		}
		si, ok := svcIndex[c.Service]
		if !ok {
			undeclared = append(undeclared, int32(i))
			continue
		}
		refs = append(refs, cref{
			svc: si, slot: int32(c.Slot), idx: int32(i),
			hashOK:  c.SpecHash == services[si].Hash,
			running: c.State == StateRunning,
		})
	}
	slices.SortFunc(refs, func(a, b cref) int {
		if a.svc != b.svc {
			return cmp.Compare(a.svc, b.svc)
		}
		if a.slot != b.slot {
			return cmp.Compare(a.slot, b.slot)
		}
		return p.compareCandidates(a, b)
	})

	// Undeclared containers that stay keep their host ports; a declared
	// service that needs one of them is held back, not failed at apply.
	if !p.in.Options.Prune {
		for _, i := range undeclared {
			for _, port := range all[i].HostPorts {
				p.indexForeign() // the foreign holders first, then these
				p.addPortHolder(port, dockerName(all[i].Name))
			}
		}
	}

	// Each service's refs, then its changes, dependencies first: a
	// replica sharing another's network namespace is replaced when its
	// owner is (noteOwnerChange), and one whose dependency has restart:
	// true when that dependency is (noteDependencyChange).
	bounds := make([][2]int, len(services))
	start := 0
	for si := range services {
		end := start
		for end < len(refs) && int(refs[end].svc) == si {
			end++
		}
		bounds[si] = [2]int{start, end}
		start = end
	}
	perService := make([][]Change, len(services))
	for _, si := range dependencyOrder(services) {
		perService[si] = p.service(&services[si], refs[bounds[si][0]:bounds[si][1]])
		p.noteOwnerChange(&services[si], perService[si])
		p.noteDependencyChange(&services[si], perService[si])
	}
	p.addInDependencyOrder(services, perService)
	p.pruneContainers(undeclared)
}

// addInDependencyOrder adds each service's changes, dependencies first. A
// service waits while a service it depends on cannot come up: it is held
// back by a conflict, backs off, or waits itself, and none of its replicas
// is ready. Starting it anyway would only make it wait for a dependency
// that is not there.
func (p *planner) addInDependencyOrder(services []manifest.Service, perService [][]Change) {
	stuck := map[string]string{}
	for _, si := range dependencyOrder(services) {
		svc := &services[si]
		waits := ""
		for _, dep := range svc.Spec.DependsOn {
			if why, ok := stuck[dep]; ok {
				waits = "waits for service " + dep + ", which " + why
				break
			}
		}
		deferredBefore := len(p.plan.Deferred)
		for _, c := range perService[si] {
			if waits != "" && c.Action != ActionRemove {
				c.Reason = waits
				p.plan.Deferred = append(p.plan.Deferred, c)
				continue
			}
			p.add(c)
		}
		if why := p.stuckBecause(svc.Name, waits, len(p.plan.Deferred) > deferredBefore); why != "" {
			stuck[svc.Name] = why
		}
	}
}

// stuckBecause says why a service cannot come up for its dependents, or "".
func (p *planner) stuckBecause(service, waits string, deferred bool) string {
	switch {
	case p.anyReady(service):
		return ""
	case waits != "":
		return "waits for a dependency"
	case p.heldServices[service]:
		return "is held back by a conflict"
	case deferred:
		return "keeps failing"
	}
	return ""
}

// anyReady reports whether some replica of the service runs and is ready.
func (p *planner) anyReady(service string) bool {
	for i := range p.in.Actual.Containers {
		c := &p.in.Actual.Containers[i]
		if c.App == p.app && c.Service == service && c.State == StateRunning && c.Ready {
			return true
		}
	}
	return false
}

// add puts a container change in Changes, or in Deferred while its
// crash-loop backoff lasts. Removals never wait: taking a failing
// container away cannot make it fail again.
func (p *planner) add(c Change) {
	if until, ok := p.in.Options.Backoff[c.Name]; ok && c.Action != ActionRemove && until.After(p.in.Options.Now) {
		c.NotBefore = until
		p.plan.Deferred = append(p.plan.Deferred, c)
		return
	}
	p.plan.Changes = append(p.plan.Changes, c)
}

// serviceCtx is what the per-slot decisions of one service share.
type serviceCtx struct {
	svc     *manifest.Service
	applied AppliedService
	known   bool // applied holds a record for this service
	maxSlot int  // highest slot any container of the service holds
	anyHash bool // some container of the service carries the desired hash
	// networks are the Docker names of the networks the spec joins, sorted.
	networks []string
	// aliases are the DNS aliases each replica must have, per Docker
	// network name: the service name and the spec's extra aliases.
	aliases map[string][]string
	// blockedBy is what keeps every replica from being created, started or
	// replaced right now, when hasBlockers.
	blockedBy   Conflict
	hasBlockers bool
	// adopt holds, by slot, the docker compose container a new replica
	// replaces when the app adopts its compose project.
	adopt map[int]*Container
}

func (p *planner) service(svc *manifest.Service, refs []cref) []Change {
	all := p.in.Actual.Containers
	replicas := svc.Spec.Replicas
	sc := p.newServiceCtx(svc, refs)
	adoptRemoves := p.composeContainers(&sc, refs)

	var removes, replaces, starts, creates []Change
	next := 1 // next slot in 1..replicas not yet seen
	for i := 0; i < len(refs); {
		slot := int(refs[i].slot)
		j := i + 1
		for j < len(refs) && int(refs[j].slot) == slot {
			j++
		}
		group := refs[i:j]
		i = j
		switch {
		case slot < 1:
			for _, r := range group {
				removes = append(removes, p.removeChange(&all[r.idx], "replica has no valid slot label"))
			}
			continue
		case slot > replicas:
			reason := "scale down: replicas " + strconv.Itoa(max(sc.maxSlot, replicas)) + " → " + strconv.Itoa(replicas)
			for _, r := range group {
				removes = append(removes, p.removeChange(&all[r.idx], reason))
			}
			continue
		}
		for ; next < slot; next++ {
			if c, ok := p.createChange(&sc, next); ok {
				creates = append(creates, c)
			}
		}
		next = slot + 1
		best := &all[group[0].idx]
		for _, r := range group[1:] {
			removes = append(removes, p.removeChange(&all[r.idx], "extra container for slot "+strconv.Itoa(slot)+" (keeping "+dockerName(best.Name)+")"))
		}
		if c, ok := p.keep(&sc, best, group[0].hashOK); ok {
			if c.Action == ActionReplace {
				replaces = append(replaces, c)
			} else {
				starts = append(starts, c)
			}
		}
	}
	for ; next <= replicas; next++ {
		if c, ok := p.createChange(&sc, next); ok {
			creates = append(creates, c)
		}
	}
	removes = append(removes, adoptRemoves...)
	// Scale-down removes go highest slot first; refs are ascending.
	slices.SortStableFunc(removes, func(a, b Change) int { return cmp.Compare(b.Slot, a.Slot) })
	n := len(removes) + len(replaces) + len(starts) + len(creates)
	if n == 0 {
		return nil
	}
	out := make([]Change, 0, n)
	out = append(out, removes...)
	out = append(out, replaces...)
	out = append(out, starts...)
	return append(out, creates...)
}

// newServiceCtx gathers what the per-slot decisions of a service share.
func (p *planner) newServiceCtx(svc *manifest.Service, refs []cref) serviceCtx {
	sc := serviceCtx{svc: svc}
	if p.in.Options.Applied != nil {
		sc.applied, sc.known = p.in.Options.Applied[svc.Name]
	}
	for _, r := range refs {
		sc.anyHash = sc.anyHash || r.hashOK
	}
	if n := len(refs); n > 0 {
		sc.maxSlot = int(refs[n-1].slot)
	}
	sc.networks = make([]string, len(svc.Spec.Networks))
	sc.aliases = make(map[string][]string, len(svc.Spec.Networks))
	for i, n := range svc.Spec.Networks {
		docker := p.desired.NetworkDockerName(n)
		sc.networks[i] = docker
		sc.aliases[docker] = append([]string{svc.Name}, svc.Spec.Aliases[n]...)
	}
	slices.Sort(sc.networks)
	p.findBlockers(&sc)
	return sc
}

// composeContainers sorts out the service's docker compose containers.
// Without adoption they are conflicts that hold the whole service back:
// running compose's and driftless's replicas side by side would double
// the service. With adoption each compose container with a free slot is
// replaced by the replica of that slot; the rest are removed (returned).
func (p *planner) composeContainers(sc *serviceCtx, refs []cref) []Change {
	key := sc.svc.ComposeName
	if key == "" {
		key = sc.svc.Name
	}
	cs := p.compose[key]
	if len(cs) == 0 {
		return nil
	}
	if !p.in.Options.Adopt {
		for _, c := range cs {
			conf := Conflict{Kind: KindContainer, Name: dockerName(c.Name), Service: sc.svc.Name,
				Reason: "managed by docker compose (project " + p.project + ", service " + key + "); set adopt: compose for this app to move it to driftless without downtime"}
			p.conflict(conf)
			if !sc.hasBlockers {
				sc.blockedBy, sc.hasBlockers = conf, true
			}
		}
		return nil
	}
	taken := map[int]bool{}
	for _, r := range refs {
		taken[int(r.slot)] = true
	}
	sc.adopt = map[int]*Container{}
	var removes []Change
	for _, c := range cs {
		n := c.ComposeNumber
		if n >= 1 && n <= sc.svc.Spec.Replicas && !taken[n] && sc.adopt[n] == nil {
			sc.adopt[n] = c
			continue
		}
		removes = append(removes, Change{Action: ActionRemove, Kind: KindContainer, Name: dockerName(c.Name), Service: sc.svc.Name,
			Slot: n, ID: c.ID, Cause: CauseGit, Adopt: p.project,
			Reason: "docker compose project " + p.project + " runs more replicas than declared; adopting"})
	}
	return removes
}

// findBlockers finds what keeps every replica of the service from being
// created: a host port published by a container that is not ours to
// remove, or a declared network or volume whose name is taken.
func (p *planner) findBlockers(sc *serviceCtx) {
	spec := &sc.svc.Spec
	for _, port := range spec.Ports {
		if port.HostPort == 0 {
			continue
		}
		if holder, ok := p.portHolder(port.HostPort); ok {
			sc.blockedBy = Conflict{Kind: KindContainer, Name: holder,
				Reason:  "publishes host port " + strconv.Itoa(port.HostPort) + " that service " + sc.svc.Name + " needs",
				Service: sc.svc.Name}
			sc.hasBlockers = true
			return
		}
	}
	// A network or volume conflict is already recorded; Assess finds it
	// through the service's spec.
	for _, n := range spec.Networks {
		if c, ok := p.blockedNetworks[n]; ok {
			sc.blockedBy, sc.hasBlockers = c, true
			return
		}
	}
	for _, v := range spec.Volumes {
		if c, ok := p.blockedVolumes[v.Name]; ok {
			sc.blockedBy, sc.hasBlockers = c, true
			return
		}
	}
	if c, ok := p.blockedAnonymous[sc.svc.Name]; ok {
		sc.blockedBy, sc.hasBlockers = c, true
	}
}

// held reports whether the service's blockers hold a change back, recording
// the conflict once.
func (p *planner) held(sc *serviceCtx) bool {
	if sc.hasBlockers {
		p.conflict(sc.blockedBy)
		if p.heldServices == nil {
			p.heldServices = make(map[string]bool)
		}
		p.heldServices[sc.svc.Name] = true
	}
	return sc.hasBlockers
}

func (p *planner) removeChange(c *Container, reason string) Change {
	return Change{Action: ActionRemove, Kind: KindContainer, Name: dockerName(c.Name), Service: c.Service,
		Slot: c.Slot, ID: c.ID, Cause: CauseGit, Reason: reason}
}

// converged reports whether the slot was known to run the desired spec, so
// that its absence now is drift rather than something Git asked for.
func (p *planner) converged(sc *serviceCtx, slot int) bool {
	if p.in.Options.Applied != nil {
		return sc.known && sc.applied.Hash == sc.svc.Hash && slot <= sc.applied.Replicas
	}
	// Without a record, a gap below a sibling that runs the desired spec
	// can only have been made outside Git.
	return sc.anyHash && slot < sc.maxSlot
}

func (p *planner) createChange(sc *serviceCtx, slot int) (Change, bool) {
	name := manifest.ContainerName(p.app, sc.svc.Name, slot)
	if c, ok := sc.adopt[slot]; ok {
		if p.held(sc) {
			return Change{}, false
		}
		return Change{Action: ActionReplace, Kind: KindContainer, Name: name, Service: sc.svc.Name, Slot: slot, ID: c.ID,
			Cause: CauseGit, Adopt: p.project, Reason: "adopt " + dockerName(c.Name) + " from docker compose project " + p.project}, true
	}
	if why, taken := p.foreignHolder(name); taken {
		p.conflict(Conflict{Kind: KindContainer, Name: name, Reason: why, Service: sc.svc.Name})
		return Change{}, false
	}
	if p.held(sc) {
		return Change{}, false
	}
	c := Change{Action: ActionCreate, Kind: KindContainer, Name: name, Service: sc.svc.Name, Slot: slot, Cause: CauseGit}
	prev := sc.maxSlot
	if sc.known {
		prev = sc.applied.Replicas
	}
	switch {
	case p.converged(sc, slot):
		c.Cause, c.Reason = CauseDrift, "removed outside Git"
	case prev == 0:
		c.Reason = "new service in " + p.revisionPhrase()
	case slot > prev:
		c.Reason = "scale up: replicas " + strconv.Itoa(prev) + " → " + strconv.Itoa(sc.svc.Spec.Replicas)
	default:
		c.Reason = "replica missing"
	}
	return c, true
}

// keep decides what happens to the container chosen for a desired slot.
func (p *planner) keep(sc *serviceCtx, c *Container, hashOK bool) (Change, bool) {
	spec := &sc.svc.Spec
	ch := Change{Kind: KindContainer, Name: dockerName(c.Name), Service: c.Service, Slot: c.Slot, ID: c.ID}
	switch {
	case !hashOK:
		ch.Action, ch.Cause = ActionReplace, CauseGit
		ch.Reason = "spec changed in " + p.revisionPhrase()
		if c.Spec != nil {
			// The recorded spec holds redacted secrets: compare like with like.
			ch.Fields = DiffServiceSpec(*c.Spec, spec.Redacted(p.desired.SecretKey))
		}
		if len(ch.Fields) == 0 {
			// Only what the spec does not show (labels, hashing) differs.
			ch.Fields = []FieldChange{hashField(c.SpecHash, sc.svc.Hash)}
		}
	case c.State == StateDead:
		ch.Action, ch.Cause, ch.Reason = ActionReplace, CauseDrift, "dead outside Git: "+statusOf(c)
	default:
		if why := p.renamedObject(sc, c); why != "" {
			ch.Action, ch.Cause, ch.Reason = ActionReplace, CauseGit, why
			break
		}
		if why, cause := p.staleNamespace(spec, c); why != "" {
			ch.Action, ch.Cause, ch.Reason = ActionReplace, cause, why
			break
		}
		if why, cause := p.recreatedDependency(spec, c); why != "" {
			ch.Action, ch.Cause, ch.Reason = ActionReplace, cause, why
			break
		}
		if fields := observedDrift(c, spec); len(fields) > 0 {
			ch.Action, ch.Cause, ch.Fields = ActionReplace, CauseDrift, fields
			ch.Reason = "changed outside Git: " + joinPaths(fields)
			break
		}
		if fields := p.updatableDrift(sc, c); len(fields) > 0 && c.State == StateRunning {
			ch.Action, ch.Cause, ch.Fields = ActionUpdate, CauseDrift, fields
			if limitAdded(fields) {
				ch.Action = ActionReplace
			}
			ch.Reason = "changed outside Git: " + joinPaths(fields)
			break
		}
		if replaced := p.onReplacedNetwork(c); replaced != "" {
			ch.Action, ch.Cause = ActionReplace, CauseGit
			ch.Reason = "network " + p.resourceName("", replaced) + " is replaced"
			break
		}
		if !p.wantsStart(c, spec.Restart) {
			return Change{}, false
		}
		ch.Action = ActionStart
		switch {
		case c.State == StateCreated:
			ch.Cause, ch.Reason = CauseGit, "created but never started"
		case p.stoppedOutsideGit(sc, c):
			ch.Cause, ch.Reason = CauseDrift, "stopped outside Git: "+statusOf(c)
		default:
			ch.Cause, ch.Reason = CauseGit, "not running: "+statusOf(c)
		}
	}
	if p.held(sc) {
		return Change{}, false
	}
	return ch, true
}

func (p *planner) stoppedOutsideGit(sc *serviceCtx, c *Container) bool {
	if p.in.Options.Applied != nil {
		return p.converged(sc, c.Slot)
	}
	// The container carries the desired spec and has run: it was converged.
	return true
}

// wantsStart applies the restart policy to a stopped container whose spec
// is current. Running and restarting containers are Docker's business.
func (p *planner) wantsStart(c *Container, policy string) bool {
	switch c.State {
	case StateCreated:
		return true
	case StateExited:
	default:
		return false
	}
	killed := c.ExitCode == exitSIGKILL || c.ExitCode == exitSIGTERM
	switch policy {
	case manifest.RestartNever:
		return killed
	case manifest.RestartOnFailure:
		return c.ExitCode != 0
	default:
		return true
	}
}

func statusOf(c *Container) string {
	if c.Status != "" {
		return c.Status
	}
	return "state " + string(c.State)
}

// observedDrift compares what Docker shows with the spec the container was
// created from (same hash as desired): a difference made outside Git that
// only a new container can undo.
func observedDrift(c *Container, spec *manifest.ServiceSpec) []FieldChange {
	var fields []FieldChange
	if c.Image != "" && c.Image != spec.Image {
		fields = append(fields, FieldChange{Path: "image", Before: c.Image, After: spec.Image})
	}
	return fields
}

// updatableDrift compares what Docker shows with the spec for the
// settings that can be put back on the running container: its name, its
// networks and aliases, its limits and restart policy.
func (p *planner) updatableDrift(sc *serviceCtx, c *Container) []FieldChange {
	var fields []FieldChange
	spec := &sc.svc.Spec
	name := dockerName(c.Name)
	stable := manifest.ContainerName(p.app, sc.svc.Name, c.Slot)
	if name != stable && !strings.HasPrefix(name, stable+"-old-") {
		fields = append(fields, FieldChange{Path: "name", Before: name, After: stable})
	}
	for _, n := range sc.networks {
		if !slices.Contains(c.Networks, n) {
			have := slices.Sorted(slices.Values(c.Networks))
			fields = append(fields, FieldChange{Path: "networks", Before: listOrNone(have), After: listOrNone(sc.networks)})
			break
		}
	}
	if c.Config == nil {
		return fields
	}
	return append(fields, configDrift(c.Config, spec, sc.aliases)...)
}

// configDrift compares an inspected runtime config with the spec.
func configDrift(cfg *RuntimeConfig, spec *manifest.ServiceSpec, aliases map[string][]string) []FieldChange {
	var fields []FieldChange
	add := func(path, before, after string) {
		if before != after {
			fields = append(fields, FieldChange{Path: path, Before: before, After: after})
		}
	}
	add("resources.memory", formatMemory(cfg.MemoryBytes), formatMemory(spec.Resources.MemoryBytes))
	add("resources.cpus", formatCPUs(cfg.NanoCPUs), formatCPUs(spec.Resources.NanoCPUs))
	add("resources.memoryReservation", formatMemory(cfg.MemoryReservationBytes), formatMemory(spec.Resources.MemoryReservationBytes))
	add("resources.pids", pidsLimit(cfg.PidsLimit), pidsLimit(spec.Resources.PidsLimit))
	fields = append(fields, tuningDrift(cfg, &spec.Resources)...)
	policy, retries := spec.DockerRestartPolicy()
	add("restart", restartWords(cfg.RestartPolicy, cfg.RestartMaxRetries), restartWords(policy, retries))
	for _, n := range slices.Sorted(maps.Keys(aliases)) {
		have, connected := cfg.Aliases[n]
		if !connected {
			continue // a missing network is reported as such
		}
		for _, want := range aliases[n] {
			if !slices.Contains(have, want) {
				add("aliases."+n, listOrNone(slices.Sorted(slices.Values(have))), listOrNone(aliases[n]))
				break
			}
		}
	}
	return fields
}

// limitAdded reports a limit set outside Git where the spec has none:
// Docker cannot lift a memory or CPU limit in place (0 means "unchanged"
// to docker update), so only a new container undoes it.
func limitAdded(fields []FieldChange) bool {
	for _, f := range fields {
		switch f.Path {
		case "resources.memory", "resources.cpus", "resources.memoryReservation":
			if f.After == "unlimited" {
				return true
			}
		case "resources.cpuShares", "resources.cpuset", "resources.cpuPeriod", "resources.cpuQuota":
			if f.After == dockerDefault {
				return true
			}
		}
	}
	return false
}

func pidsLimit(n int64) string {
	if n <= 0 {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}

func restartWords(policy string, retries int) string {
	if policy == "" {
		policy = "no"
	}
	if policy == "on-failure" && retries > 0 {
		return policy + ":" + strconv.Itoa(retries)
	}
	return policy
}

func joinPaths(fields []FieldChange) string {
	paths := make([]string, len(fields))
	for i, f := range fields {
		paths[i] = f.Path
	}
	return strings.Join(paths, ", ")
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	return strings.Join(l, ", ")
}

// onReplacedNetwork returns the Docker name of a network this plan
// recreates that the container is attached to, or "".
func (p *planner) onReplacedNetwork(c *Container) string {
	for _, n := range p.replacedNetworks {
		if slices.Contains(c.Networks, n) {
			return n
		}
	}
	return ""
}

func (p *planner) pruneContainers(undeclared []int32) {
	all := p.in.Actual.Containers
	slices.SortFunc(undeclared, func(a, b int32) int {
		ca, cb := &all[a], &all[b]
		return cmp.Or(cmp.Compare(ca.Service, cb.Service), cmp.Compare(ca.Slot, cb.Slot),
			cmp.Compare(ca.Name, cb.Name), cmp.Compare(ca.ID, cb.ID))
	})
	for _, i := range undeclared {
		c := &all[i]
		reason := "service " + c.Service + " is no longer declared in " + p.revisionPhrase()
		if c.Service == "" {
			reason = "container has no service label"
		}
		ch := p.removeChange(c, reason)
		if p.in.Options.Prune {
			p.plan.Changes = append(p.plan.Changes, ch)
		} else {
			p.plan.Pruneable = append(p.plan.Pruneable, ch)
		}
	}
}

// dependencyOrder returns service indexes so that every service comes after
// the services it depends on; ties (and cycles, which the parser rejects)
// fall back to name order.
func dependencyOrder(services []manifest.Service) []int {
	byName := make(map[string]int, len(services))
	for i := range services {
		byName[services[i].Name] = i
	}
	indegree := make([]int, len(services))
	dependents := make([][]int, len(services))
	for i := range services {
		for _, dep := range services[i].Spec.DependsOn {
			if j, ok := byName[dep]; ok && j != i {
				indegree[i]++
				dependents[j] = append(dependents[j], i)
			}
		}
	}
	byNameOrder := func(a, b int) int { return cmp.Compare(services[a].Name, services[b].Name) }
	all := make([]int, len(services))
	for i := range all {
		all[i] = i
	}
	slices.SortFunc(all, byNameOrder)
	// ready stays sorted by name; new entries are inserted in place.
	var ready []int
	for _, i := range all {
		if indegree[i] == 0 {
			ready = append(ready, i)
		}
	}
	order := make([]int, 0, len(services))
	done := make([]bool, len(services))
	for len(order) < len(services) {
		if len(ready) == 0 {
			// A cycle: break it at the first remaining service by name.
			for _, i := range all {
				if !done[i] {
					ready = append(ready, i)
					break
				}
			}
		}
		i := ready[0]
		ready = ready[1:]
		if done[i] {
			continue
		}
		done[i] = true
		order = append(order, i)
		for _, d := range dependents[i] {
			indegree[d]--
			if indegree[d] == 0 && !done[d] {
				at, _ := slices.BinarySearchFunc(ready, d, byNameOrder)
				ready = slices.Insert(ready, at, d)
			}
		}
	}
	return order
}

// AdoptComposeVolumes returns the app with every volume the app does not
// own yet, but its docker compose project does, turned into an external
// volume of compose's name: replicas that adopt compose's containers keep
// compose's data instead of starting on an empty volume. It returns app
// itself when there is nothing to adopt.
func AdoptComposeVolumes(app *manifest.App, actual Actual, project string) *manifest.App {
	if app == nil {
		return nil
	}
	owned := map[string]bool{}
	for _, v := range actual.Volumes {
		owned[v.Resource] = true
	}
	var out *manifest.App
	for i, v := range app.Volumes {
		if v.Spec.External || owned[v.Name] {
			continue
		}
		key := v.ComposeName
		if key == "" {
			key = v.Name
		}
		for _, fv := range actual.ForeignVolumes {
			if fv.App != "" || fv.Labels[LabelComposeProject] != project || fv.Labels[LabelComposeVolume] != key {
				continue
			}
			if out == nil {
				c := *app
				c.Volumes = slices.Clone(app.Volumes)
				out = &c
			}
			out.Volumes[i].Spec.External, out.Volumes[i].Spec.ExternalName = true, fv.Name
			break
		}
	}
	if out == nil {
		return app
	}
	return out
}
