package deploy

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/client"
)

// createAnonymousVolume creates a replica slot's anonymous volume, which
// the plan names and places (drift decides which must exist).
func (r *run) createAnonymousVolume(ctx context.Context, s *step) error {
	c := s.change
	// VolumeCreate on an existing name returns the existing volume: check
	// first so that nobody else's volume becomes the slot's.
	if res, err := r.e.api.VolumeInspect(ctx, c.Name, client.VolumeInspectOptions{}); err == nil {
		l := res.Volume.Labels
		if l[drift.LabelApp] != r.app || l[drift.LabelTarget] != c.Target {
			return &drift.Failure{Cause: drift.FailureConflict, Summary: fmt.Sprintf("name %s is held by a volume that is not the anonymous volume of %s slot %d; rename or remove it", c.Name, c.Service, c.Slot)}
		}
		r.emit(s, drift.PhaseCreated, "already exists", nil)
		return nil
	} else if !engineerr.IsNotFound(err) {
		return fmt.Errorf("inspect volume %s: %w", c.Name, err)
	}
	_, err := r.e.api.VolumeCreate(ctx, client.VolumeCreateOptions{
		Name:   c.Name,
		Driver: "local",
		Labels: dockerspec.AnonymousVolumeLabels(r.app, c.Service, c.Slot, c.Target, r.revision),
	})
	if err != nil {
		return fmt.Errorf("create volume %s: %w", c.Name, err)
	}
	r.emit(s, drift.PhaseCreated, "", nil)
	return nil
}

// resourceKey identifies a network or volume create in missingResources:
// kind and manifest name, or for an anonymous volume its service, whose
// replicas must not start without it.
func resourceKey(c drift.Change) string {
	if c.Kind == drift.KindVolume && c.Target != "" {
		return "anonymous/" + c.Service
	}
	return string(c.Kind) + "/" + c.Resource
}

// imageVolumes are the targets ref's image declares volumes at
// (Dockerfile VOLUME), read once per apply: the replica mounts the
// slot's anonymous volume at those its spec leaves free.
func (r *run) imageVolumes(ctx context.Context, ref string) ([]string, error) {
	r.imagesMu.Lock()
	c, ok := r.images[ref]
	if !ok {
		c = &imageCheck{}
		r.images[ref] = c
	}
	r.imagesMu.Unlock()
	c.volumesOnce.Do(func() {
		img, present, err := r.e.inspectImage(ctx, ref)
		switch {
		case err != nil:
			c.volumesErr = err
		case present && img.Config != nil:
			c.volumes = slices.Sorted(maps.Keys(img.Config.Volumes))
		}
	})
	return c.volumes, c.volumesErr
}

// missingAnonymousVolume reports whether a replica slot's anonymous
// volume the desired state mounts is not among the app's own volumes:
// the plan would create it, unless the name is taken by another's.
func missingAnonymousVolume(app string, desired *manifest.App, owned []drift.Volume) bool {
	for i := range desired.Services {
		svc := &desired.Services[i]
		for slot := 1; slot <= svc.Spec.Replicas; slot++ {
			for _, av := range svc.Spec.AnonymousVolumes {
				name := manifest.AnonymousVolumeName(app, svc.Name, slot, av.MountPath)
				if !slices.ContainsFunc(owned, func(v drift.Volume) bool { return v.Name == name }) {
					return true
				}
			}
		}
	}
	return false
}
