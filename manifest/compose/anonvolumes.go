package compose

import (
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/driftless-dev/driftless/manifest"
)

// mapAnonymousVolume maps a volume entry without a source ("-
// /var/lib/postgresql/data"): a volume of each replica slot, which the
// slot's next container mounts again, as compose carries anonymous
// volumes over to a recreated container.
func (sm *serviceMap) mapAnonymousVolume(attr string, v types.ServiceVolumeConfig) {
	if sm.m.opts.Target == manifest.TargetSwarm {
		sm.refuse(attr, "anonymous volumes are not supported on a Swarm target (Swarm makes a new one for every task, so its data does not survive an update): name the volume (NAME:%s) and declare it under the top-level volumes:", v.Target)
		return
	}
	if vv := v.Volume; vv != nil {
		if vv.Subpath != "" {
			sm.refuse(attr+".volume.subpath", "a subpath of an anonymous volume is not supported: the volume starts empty")
		}
		if len(vv.Labels) > 0 {
			sm.refuse(attr+".volume.labels", "is not supported on an anonymous volume: driftless labels it with its app, service, slot and target")
		}
	}
	if v.ReadOnly {
		sm.refuse(attr, "a read-only anonymous volume is refused by Docker (it could only ever be empty): drop :ro/read_only, or name the volume (NAME:%s:ro) and declare it under the top-level volumes:", v.Target)
	}
	if v.Bind != nil || v.Tmpfs != nil || v.Image != nil {
		sm.refuse(attr, "bind, tmpfs or image options on a volume are not supported")
	}
	if sm.claimMountPath(attr, v.Target) {
		sm.spec.AnonymousVolumes = append(sm.spec.AnonymousVolumes, manifest.AnonymousVolume{MountPath: v.Target, NoCopy: v.Volume != nil && v.Volume.NoCopy})
	}
}
