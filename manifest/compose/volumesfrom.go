package compose

import (
	"strings"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// mapVolumesFrom maps volumes_from: [SERVICE, SERVICE:ro, SERVICE:rw]:
// the replicas mount what SERVICE's first replica mounts, and start after
// it (the dependency compose adds, condition started, unless depends_on
// names it). container:NAME is the service whose container_name is NAME;
// any other container is refused: a container driftless does not manage,
// or another app's, is not the commit's to reach.
func (sm *serviceMap) mapVolumesFrom() {
	for i, entry := range sm.s.VolumesFrom {
		attr := yamlpos.IndexPath("volumes_from", i)
		if ref, ok := sm.m.byContainerName(entry); ok {
			entry = strings.TrimPrefix(ref, types.ServicePrefix)
		}
		if strings.HasPrefix(entry, types.ContainerPrefix) {
			sm.refuse(attr, "%q mounts the volumes of a container driftless does not manage: name a service of this file, or share a named volume", entry)
			continue
		}
		target, mode, _ := strings.Cut(entry, ":")
		if mode != "" && mode != "ro" && mode != "rw" {
			sm.refuse(attr, "must be SERVICE, SERVICE:ro or SERVICE:rw, got %q", entry)
			continue
		}
		name, active := sm.m.svcNames[target]
		_, exists := sm.m.p.Services[target]
		switch {
		case target == sm.cname:
			sm.refuse(attr, "a service cannot mount its own volumes")
			continue
		case !exists:
			sm.refuseMissingService(attr, target, "volumes_from names a service of this file")
			continue
		case !active:
			continue // its name was refused
		}
		sm.spec.VolumesFrom = append(sm.spec.VolumesFrom, manifest.VolumesFrom{Service: name, ReadOnly: mode == "ro"})
		sm.record(yamlpos.IndexPath("volumesFrom", len(sm.spec.VolumesFrom)-1), attr)
		sm.addImplicitDependency(name, attr)
	}
}
