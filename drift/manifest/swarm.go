package manifest

import (
	"fmt"
	"slices"
	"strings"
)

// CheckSwarm returns one error, located where the manifest declares it,
// for everything a service asks for that a Swarm target cannot carry out
// (or that this release does not map to Swarm yet). Both front ends' apps
// go through it when the app's target is TargetSwarm. A Swarm task may
// run on any node, so nothing may depend on the agent's host: repository
// directories and files (other than compose configs), builds and
// driftless's own readiness probes. Secrets become Swarm secrets.
func CheckSwarm(app *App) ErrorList {
	var errs ErrorList
	for i := range app.Services {
		svc := &app.Services[i]
		refuse := func(field, format string, args ...any) {
			ref := svc.Field(field)
			errs = append(errs, &Error{Pos: ref.Pos, Field: ref.Field, Msg: fmt.Sprintf(format, args...) + " (target: swarm)"})
		}
		checkSwarmService(&svc.Spec, refuse)
		for i, b := range svc.Spec.Binds {
			if b.RepoPath == "" {
				continue
			}
			if t := app.Content[b.ContentHash]; b.Object == nil || t == nil || t.Dir {
				refuse(fmt.Sprintf("binds[%d]", i), "repository files are delivered to Swarm tasks only as a compose secret or config of one file (a task may run on another node): %s", b.RepoPath)
			}
		}
	}
	for _, n := range app.Networks {
		if d := n.Spec.Driver; d != "" && d != "bridge" && d != "overlay" && !n.Spec.External {
			errs = append(errs, &Error{Pos: n.Source, Field: "driver", Msg: fmt.Sprintf("network driver %q cannot span nodes: use overlay (target: swarm)", d)})
		}
	}
	return errs
}

func checkSwarmService(s *ServiceSpec, refuse denyFunc) {
	switch {
	case s.Build != nil:
		refuse("build", "images are not built for Swarm: every node pulls the image, so push it to a registry and name it in image")
	case s.Readiness != nil:
		refuse("readiness", "driftless's own readiness probes do not run against Swarm tasks: declare a healthcheck, which Swarm uses to gate its rolling update")
	case s.NetworkMode != "":
		refuse("networkMode", "network mode %q is not supported for Swarm services: use the app's overlay networks", s.NetworkMode)
	case s.Privileged:
		refuse("privileged", "Swarm services cannot run privileged")
	case len(s.Devices) > 0:
		refuse("devices", "Swarm services cannot be given host devices")
	case s.PID != "" || s.IPC != "":
		refuse("pid", "Swarm services share no namespaces with the host")
	case len(s.SecurityOpt) > 0:
		refuse("securityOpt", "security options are not supported for Swarm services")
	case len(s.DNS) > 0:
		refuse("dns", "DNS servers are not supported for Swarm services yet (dns_search and dns_opt are)")
	case s.MacAddress != "" || s.ShmSizeBytes != 0:
		refuse("macAddress", "mac_address and shm_size are not supported for Swarm services")
	}
	if slices.ContainsFunc(s.Ports, func(p Port) bool { return p.HostIP != "" }) {
		refuse("ports", "Swarm publishes ports on every node's ingress: a host IP cannot be given")
	}
	if w := s.Swarm; w != nil && w.Global && s.Replicas != 1 {
		refuse("replicas", "a global service runs one task per node: do not set replicas")
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
