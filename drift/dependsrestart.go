package drift

import (
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

// A service with a dependency in DependsOnRestart (compose's depends_on
// DEP restart: true) has its replicas replaced when DEP is recreated:
// compose restarts the dependent after it recreates or restarts DEP
// itself, never after the runtime restarts DEP. driftless recreates where
// compose restarts (the same spec, a new container), and judges like
// netns.go: from DEP's create or replace in this plan, and, so that an
// apply stopped between DEP and its dependent is finished on the next
// pass, from the observation alone: a replica of DEP created after the
// dependent's replica last started. A restart by the restart policy moves
// DEP's StartedAt, not its Created, so it does not count; and once the
// dependent is replaced (after DEP, dependencies first), it started after
// DEP was created, so a converged app plans nothing.

// noteDependencyChange records this plan's first create or replace of a
// replica of svc, for the services that name it in DependsOnRestart. It
// is noted for every service: looking up whether one is named would cost
// more than the note.
func (p *planner) noteDependencyChange(svc *manifest.Service, changes []Change) {
	for _, c := range changes {
		if c.Action == ActionCreate || c.Action == ActionReplace {
			if p.dependencyChanges == nil {
				p.dependencyChanges = map[string]Change{}
			}
			p.dependencyChanges[svc.Name] = c
			return
		}
	}
}

// recreatedDependency says why replica c must be replaced because a
// dependency in spec's DependsOnRestart is recreated, or "": this plan
// creates or replaces one of its replicas, or one of them was created
// after c last started.
func (p *planner) recreatedDependency(spec *manifest.ServiceSpec, c *Container) (string, Cause) {
	for _, dep := range spec.DependsOnRestart {
		if ch, ok := p.dependencyChanges[dep]; ok {
			verb := "replaced"
			if ch.Action == ActionCreate {
				verb = "created"
			}
			return "its dependency " + dep + " is " + verb + " (depends_on restart: true)", ch.Cause
		}
	}
	if c.StartedAt.IsZero() {
		return "", "" // not inspected: nothing to compare
	}
	for _, dep := range spec.DependsOnRestart {
		// Created comes from a list, in whole seconds, so it can only
		// seem earlier than it was: at worst a dependency recreated in
		// the second the replica started is missed, never one seen
		// recreated again and again.
		if p.lastCreated(dep).After(c.StartedAt) {
			return "its dependency " + dep + " was recreated after it started (depends_on restart: true)", CauseDrift
		}
	}
	return "", ""
}

// lastCreated is when the newest of the app's containers of service was
// created, zero without one.
func (p *planner) lastCreated(service string) time.Time {
	var last time.Time
	for i := range p.in.Actual.Containers {
		if c := &p.in.Actual.Containers[i]; c.App == p.app && c.Service == service && c.Created.After(last) {
			last = c.Created
		}
	}
	return last
}
