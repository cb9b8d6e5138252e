package manifest

import (
	"fmt"
	"slices"
)

// PortBlock is where a preview's fixed host ports go. A preview runs the
// same files as the app it previews, so the host ports those publish would
// collide with the app's and with every other preview's: Size 0 publishes
// none (the services stay reachable on the app's networks), else the
// fixed host ports become Base, Base+1, ... in order of service name, then
// of the service's port list.
type PortBlock struct {
	Base, Size int
}

// RemapHostPorts moves app's fixed host ports into b and rehashes the
// services it changed. Ports Docker picks (AnyHostPort) are left alone:
// they never collide. More fixed host ports than b.Size is an error naming
// the service.
func RemapHostPorts(app *App, b PortBlock) error {
	order := make([]int, len(app.Services))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		if app.Services[x].Name < app.Services[y].Name {
			return -1
		}
		return 1
	})
	next := 0
	for _, i := range order {
		s := &app.Services[i]
		changed := false
		ports := slices.Clone(s.Spec.Ports)
		for j := range ports {
			p := &ports[j]
			if p.HostPort == 0 {
				continue
			}
			changed = true
			if b.Size == 0 {
				p.HostPort, p.HostIP = 0, ""
				continue
			}
			if next >= b.Size {
				return fmt.Errorf("service %s: the preview publishes more than the %d host ports given to each preview (preview.ports.perPreview in driftless.yaml)", s.Name, b.Size)
			}
			p.HostPort = b.Base + next
			next++
		}
		if changed {
			s.Spec.Ports = ports
			s.Hash = HashService(app.SecretKey, s.Labels, s.Spec)
		}
	}
	return nil
}
