package compose

import (
	"fmt"
	"strings"

	"github.com/driftless-dev/driftless/manifest"
)

// checkAcross runs the checks that span services, as the native parser
// does: host ports, container name length, dependency cycles.
func (m *composeMapper) checkAcross() {
	type use struct {
		service string
		pos     manifest.Position
	}
	hostPorts := map[string]use{}
	for _, sm := range m.services {
		if !sm.ok {
			continue
		}
		spec := sm.spec
		for _, p := range spec.Ports {
			if p.HostPort == 0 {
				continue
			}
			o := sm.portPos[p]
			pos, field := o.pos, o.field
			switch {
			case m.opts.Target == manifest.TargetSwarm:
				// Swarm publishes the port once, on its ingress, and
				// balances it over the tasks.
			case spec.Replicas > 1:
				sm.refuseAt(pos, field, "host port %d would collide across the %d replicas: publish it from a service with one replica, or remove it", p.HostPort, spec.Replicas)
			case spec.Update.Strategy == manifest.StrategyRolling && spec.Update.MaxSurge > 0:
				sm.refuseAt(pos, field, "host port %d would collide when a rolling update starts the new replica before stopping the old one: use deploy.update_config.order: stop-first (compose's default) or x-driftless.update: {maxSurge: 0, maxUnavailable: 1}", p.HostPort)
			}
			key := fmt.Sprintf("%d/%s", p.HostPort, p.Protocol) // as natively: unique per protocol
			if prev, used := hostPorts[key]; used {
				sm.refuseAt(pos, field, "host port %d/%s is already published by service %q at %s", p.HostPort, p.Protocol, prev.service, prev.pos)
				continue
			}
			hostPorts[key] = use{sm.cname, pos}
		}
	}
	m.reportCycles()
}

// reportCycles reports each depends_on cycle once, at the depends_on entry
// of its alphabetically first service.
func (m *composeMapper) reportCycles() {
	byName := map[string]*serviceMap{}
	for _, sm := range m.services {
		if sm.ok {
			byName[sm.name] = sm
		}
	}
	deps := make(map[string][]string, len(byName))
	for name, sm := range byName {
		deps[name] = sm.spec.DependsOn
	}
	for _, cycle := range manifest.DependencyCycles(deps) {
		first := byName[cycle[0]]
		field := first.depFrom[cycle[1%len(cycle)]]
		first.refuseAt(m.ix.at(field), field, "dependency cycle: %s -> %s", strings.Join(cycle, " -> "), cycle[0])
	}
}
