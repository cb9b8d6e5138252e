package drift

import (
	"slices"

	"github.com/driftless-dev/driftless/manifest"
)

// A replica of a service with network mode service:NAME lives in the
// network namespace of NAME's replica: Docker resolves the name to that
// container once, at create, and the namespace dies with it (or with its
// stop). A replica whose namespace owner was replaced, removed or
// restarted since has only a loopback interface left: dead weight, which
// only a new replica (created after the owner's) mends. The differ sees it
// from the observation alone: the owner's container ID the replica
// records (Container.NetworkContainer), the owner's change in this plan,
// and both start times.

// ownerChange records, for a service whose replica's namespace others may
// share, the cause of the plan's create or replace of its first replica.
func (p *planner) noteOwnerChange(svc *manifest.Service, changes []Change) {
	if !p.sharesNamespace(svc.Name) {
		return
	}
	for _, c := range changes {
		if c.Slot == 1 && (c.Action == ActionCreate || c.Action == ActionReplace) {
			if p.ownerChanges == nil {
				p.ownerChanges = map[string]Cause{}
			}
			p.ownerChanges[svc.Name] = c.Cause
			return
		}
	}
}

// sharesNamespace reports whether some service joins service's network
// namespace.
func (p *planner) sharesNamespace(service string) bool {
	return slices.ContainsFunc(p.desired.Services, func(s manifest.Service) bool {
		return s.Spec.NetworkService() == service
	})
}

// staleNamespace says why replica c, which shares the network namespace
// of another service's replica, must be replaced, or "": its owner is
// created or replaced by this plan, or is not the container (or the
// start) c joined.
func (p *planner) staleNamespace(spec *manifest.ServiceSpec, c *Container) (string, Cause) {
	target := spec.NetworkService()
	if target == "" {
		return "", ""
	}
	if cause, ok := p.ownerChanges[target]; ok {
		return "shares the network namespace of service " + target + "'s replica, which is replaced", cause
	}
	owner := p.namespaceOwner(target)
	switch {
	case owner == nil:
		return "", "" // nothing to join: its create is held back, and so is this
	case c.NetworkContainer != "" && c.NetworkContainer != owner.ID:
		return "the network namespace it shares, " + dockerName(owner.Name) + "'s, was replaced outside Git", CauseDrift
	case !owner.StartedAt.IsZero() && !c.StartedAt.IsZero() && owner.StartedAt.After(c.StartedAt):
		return "the network namespace it shares, " + dockerName(owner.Name) + "'s, was restarted after it", CauseDrift
	}
	return "", ""
}

// namespaceOwner is the replica whose network namespace service target's
// dependents join: the container that holds its first replica's name.
func (p *planner) namespaceOwner(target string) *Container {
	name := manifest.ContainerName(p.app, target, 1)
	for i := range p.in.Actual.Containers {
		c := &p.in.Actual.Containers[i]
		if c.App == p.app && dockerName(c.Name) == name {
			return c
		}
	}
	return nil
}

// renamedObject says why replica c must be replaced because a network it
// joins or a volume it mounts is now named otherwise (compose's name:),
// or "". A container cannot move its mounts, and its networks move with
// it.
func (p *planner) renamedObject(sc *serviceCtx, c *Container) string {
	spec := &sc.svc.Spec
	for _, n := range spec.Networks {
		want := p.desired.NetworkDockerName(n)
		if slices.Contains(c.Networks, want) {
			continue
		}
		for _, have := range c.Networks {
			if o, ok := p.ownedNetworks[have]; ok && p.resourceName(o.Resource, o.Name) == n {
				return "network " + n + " is now named " + want
			}
		}
	}
	if c.VolumeNames == nil {
		return ""
	}
	for _, v := range spec.Volumes {
		if want := p.desired.VolumeDockerName(v.Name); !slices.Contains(c.VolumeNames, want) {
			return "volume " + v.Name + " is now named " + want
		}
	}
	return ""
}
