package status

import (
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// Services are app's services as status shows them: desired and ready
// replicas, health as judged, and each container the observation holds.
func Services(app *manifest.App, h *drift.AppHealth, actual *drift.Actual) []ServiceStatus {
	health := map[string]drift.ServiceHealth{}
	if h != nil {
		for _, sh := range h.Services {
			health[sh.Service] = sh
		}
	}
	var out []ServiceStatus
	for _, svc := range app.Services {
		sh := health[svc.Name]
		ss := ServiceStatus{
			Name: svc.Name, Image: svc.Spec.Image, Desired: svc.Spec.Replicas,
			Running: sh.Running, Ready: sh.Ready, Health: sh.Health, Message: sh.Message,
			Containers: []ContainerStatus{},
		}
		if ss.Health == "" {
			ss.Health = HealthUnknown
		}
		if sh.Service != "" {
			// What the judgement counted against: for a Swarm global
			// service, one task per eligible node, not a replica count.
			ss.Desired = sh.Desired
		}
		if actual != nil {
			for _, c := range actual.Containers {
				if c.Service != svc.Name {
					continue
				}
				ss.Containers = append(ss.Containers, ContainerStatus{
					Name: c.Name, ID: c.ID, Slot: c.Slot, State: string(c.State), Status: c.Status,
					Ready: c.Ready, ReadyReason: c.ReadyReason, RestartCount: c.RestartCount,
					Image: c.Image, ImageDigest: c.ImageDigest, Revision: c.Revision, Created: c.Created, Node: c.Node,
					ExitCode: c.ExitCode, Health: c.Health, StartedAt: c.StartedAt, FinishedAt: c.FinishedAt,
				})
			}
		}
		out = append(out, ss)
	}
	return out
}
