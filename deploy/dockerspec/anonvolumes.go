package dockerspec

import (
	"path"
	"slices"
	"strconv"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
)

// AnonymousVolumeLabels are the labels of a replica slot's anonymous
// volume: its app, service, slot and target identify it (see
// VolumeFromSummary); revision is the commit that created it.
func AnonymousVolumeLabels(app, service string, slot int, target, revision string) map[string]string {
	return map[string]string{
		drift.LabelApp:      app,
		drift.LabelService:  service,
		drift.LabelSlot:     strconv.Itoa(slot),
		drift.LabelTarget:   target,
		drift.LabelRevision: revision,
	}
}

// anonymousMounts mounts the slot's anonymous volumes by their
// deterministic names: the spec's, and one at each target the image
// declares a volume at that nothing else mounts. Docker would give the
// latter a new volume of a random name with every container, losing its
// data on each replacement; compose carries it over to the recreated
// container, and the slot's volume does the same. The plan creates the
// spec's volumes before the replica; the labels are also given here, so
// that a volume Docker makes at create (an image's, or one that went
// missing in between) is still the slot's.
func anonymousMounts(in ReplicaInput, host *container.HostConfig) {
	add := func(target string, noCopy bool) {
		host.Mounts = append(host.Mounts, mount.Mount{
			Type:   mount.TypeVolume,
			Source: manifest.AnonymousVolumeName(in.App.Name, in.Service.Name, in.Slot, target),
			Target: target,
			VolumeOptions: &mount.VolumeOptions{
				Labels: AnonymousVolumeLabels(in.App.Name, in.Service.Name, in.Slot, target, in.Revision),
				NoCopy: noCopy,
			},
		})
	}
	for _, v := range in.Service.Spec.AnonymousVolumes {
		add(v.MountPath, v.NoCopy)
	}
	if len(in.ImageVolumes) == 0 {
		return
	}
	used := mountedTargets(&in.Service.Spec)
	for _, target := range slices.Sorted(slices.Values(in.ImageVolumes)) {
		if !used[path.Clean(target)] {
			add(target, false)
		}
	}
}

// mountedTargets are the container paths the spec mounts something at.
func mountedTargets(spec *manifest.ServiceSpec) map[string]bool {
	used := map[string]bool{}
	for _, v := range spec.Volumes {
		used[path.Clean(v.MountPath)] = true
	}
	for _, b := range spec.Binds {
		used[path.Clean(b.MountPath)] = true
	}
	for _, t := range spec.Tmpfs {
		used[path.Clean(t.MountPath)] = true
	}
	for _, v := range spec.AnonymousVolumes {
		used[path.Clean(v.MountPath)] = true
	}
	for _, s := range spec.Secrets {
		used[path.Clean(s.Target)] = true
	}
	return used
}

// anonymousIdentity reads an anonymous volume's slot from its labels.
func anonymousIdentity(v *drift.Volume, labels map[string]string) {
	if labels[drift.LabelTarget] == "" {
		return
	}
	v.Service, v.Target = labels[drift.LabelService], labels[drift.LabelTarget]
	v.Slot, _ = strconv.Atoi(labels[drift.LabelSlot])
}
