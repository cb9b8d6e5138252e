package drift

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/driftless-dev/driftless/manifest"
)

// anonymousVolumes plans the volumes of replica slots: every declared
// service's slot 1..replicas has one per anonymous volume target, named
// by manifest.AnonymousVolumeName, so the container that replaces the
// slot's mounts it again. A missing one is created before the
// containers; a name held by an object that is not this app's holds the
// service back, as a declared volume's would.
func (p *planner) anonymousVolumes() {
	p.anonymous = map[string]*Volume{}
	foreign := map[string]string{}
	for i := range p.in.Actual.Volumes {
		v := &p.in.Actual.Volumes[i]
		switch {
		case v.App != p.app:
			foreign[v.Name] = foreignWhy("volume", v.App)
		case v.Anonymous():
			p.anonymous[v.Name] = v
		default:
			// A declared volume of this app under the name: it is not
			// the slot's, whose data must not mix with it.
			foreign[v.Name] = "name is held by volume " + p.resourceName(v.Resource, v.Name) + " of this app"
		}
	}
	for i := range p.in.Actual.ForeignVolumes {
		v := &p.in.Actual.ForeignVolumes[i]
		foreign[v.Name] = foreignWhy("volume", v.App)
	}
	p.anonymousWanted = map[string]bool{}
	for i := range p.desired.Services {
		svc := &p.desired.Services[i]
		for slot := 1; slot <= svc.Spec.Replicas; slot++ {
			for _, av := range svc.Spec.AnonymousVolumes {
				p.anonymousVolume(svc, slot, av.MountPath, foreign)
			}
		}
	}
}

func (p *planner) anonymousVolume(svc *manifest.Service, slot int, target string, foreign map[string]string) {
	name := manifest.AnonymousVolumeName(p.app, svc.Name, slot, target)
	p.anonymousWanted[name] = true
	if _, ok := p.anonymous[name]; ok {
		return
	}
	if why, taken := foreign[name]; taken {
		c := Conflict{Kind: KindVolume, Name: name, Service: svc.Name, Reason: why}
		p.conflict(c)
		if p.blockedAnonymous == nil {
			p.blockedAnonymous = map[string]Conflict{}
		}
		if _, ok := p.blockedAnonymous[svc.Name]; !ok {
			p.blockedAnonymous[svc.Name] = c
		}
		return
	}
	p.plan.Changes = append(p.plan.Changes, Change{
		Action: ActionCreate, Kind: KindVolume, Name: name, Service: svc.Name, Slot: slot, Target: target,
		Cause:  CauseGit,
		Reason: "anonymous volume of " + svc.Name + " slot " + strconv.Itoa(slot) + " at " + target,
	})
}

// pruneAnonymousVolumes removes, with prune on, the anonymous volumes of
// slots that are gone: scaled away, or of a service no longer declared.
// Without prune they are kept and listed as pruneable. A volume whose
// slot still runs but no longer mounts its target is kept either way:
// it is data, not drift, and only removing the app removes it.
func (p *planner) pruneAnonymousVolumes() {
	var gone []*Volume
	for name, v := range p.anonymous {
		if !p.anonymousWanted[name] && p.slotGone(v) {
			gone = append(gone, v)
		}
	}
	slices.SortFunc(gone, func(a, b *Volume) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Slot, b.Slot), cmp.Compare(a.Name, b.Name))
	})
	for _, v := range gone {
		c := Change{Action: ActionRemove, Kind: KindVolume, Name: v.Name, Service: v.Service, Slot: v.Slot, Target: v.Target,
			Cause: CauseGit, Reason: "anonymous volume of " + v.Service + " slot " + strconv.Itoa(v.Slot) + " at " + v.Target + ": the slot is no longer declared in " + p.revisionPhrase()}
		if p.in.Options.Prune {
			p.plan.Changes = append(p.plan.Changes, c)
			continue
		}
		c.Reason = "kept: " + c.Reason + "; prune removes it"
		p.plan.Pruneable = append(p.plan.Pruneable, c)
	}
}

// slotGone reports whether the anonymous volume's replica slot is no
// longer declared.
func (p *planner) slotGone(v *Volume) bool {
	svc := p.desired.Service(v.Service)
	return svc == nil || v.Slot < 1 || v.Slot > svc.Spec.Replicas
}
