package deploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/client"
)

// applyResource carries out one network or volume change.
func (r *run) applyResource(ctx context.Context, ic indexed) {
	s := r.begin(ic.index, ic.change)
	c := ic.change
	var err error
	switch {
	case c.Kind == drift.KindNetwork && c.Action == drift.ActionCreate:
		err = r.createNetwork(ctx, s, "")
	case c.Kind == drift.KindNetwork && c.Action == drift.ActionRemove && c.MergeInto != "":
		err = r.mergeNetwork(ctx, s)
	case c.Kind == drift.KindNetwork && c.Action == drift.ActionRemove:
		_, err = r.removeNetwork(ctx, s)
	case c.Kind == drift.KindNetwork && c.Action == drift.ActionReplace:
		// The new network gets the old one's allocated subnet back.
		var subnet string
		if subnet, err = r.removeNetwork(ctx, s); err == nil {
			err = r.createNetwork(ctx, s, subnet)
		}
	case c.Kind == drift.KindVolume:
		err = r.applyVolume(ctx, s)
	default:
		err = fmt.Errorf("cannot %s a %s", c.Action, c.Kind)
	}
	r.finish(s, err)
}

// applyVolume carries out one volume change: a declared volume's, or a
// replica slot's anonymous volume (Target set).
func (r *run) applyVolume(ctx context.Context, s *step) error {
	c := s.change
	switch {
	case c.Action == drift.ActionCreate && c.Target != "":
		return r.createAnonymousVolume(ctx, s)
	case c.Action == drift.ActionCreate:
		return r.createVolume(ctx, s)
	case c.Action == drift.ActionRemove:
		return r.removeVolume(ctx, s)
	case c.Action == drift.ActionReplace:
		// The differ only plans this when volume removal is allowed.
		if err := r.removeVolume(ctx, s); err != nil {
			return err
		}
		return r.createVolume(ctx, s)
	}
	return fmt.Errorf("cannot %s a %s", c.Action, c.Kind)
}

// resourceName is the manifest name a change acts on.
func resourceName(app string, c drift.Change) string {
	if c.Resource != "" {
		return c.Resource
	}
	return strings.TrimPrefix(c.Name, app+"-")
}

func (r *run) declaredNetwork(c drift.Change) (*manifest.Network, error) {
	name := resourceName(r.app, c)
	for i := range r.desired.Networks {
		if r.desired.Networks[i].Name == name {
			return &r.desired.Networks[i], nil
		}
	}
	return nil, fmt.Errorf("network %s is not declared in app %s", name, r.app)
}

// createNetwork creates a declared network; previous is the subnet
// allocated to the network it replaces, if any.
func (r *run) createNetwork(ctx context.Context, s *step, previous string) error {
	decl, err := r.declaredNetwork(s.change)
	if err != nil {
		return err
	}
	if decl.Spec.External {
		return fmt.Errorf("network %s is external: driftless never creates it", decl.DockerName(r.app))
	}
	name := decl.DockerName(r.app)
	driver := decl.Spec.Driver
	if driver == "" {
		driver = "bridge"
	}
	opts := client.NetworkCreateOptions{
		Driver:     driver,
		Internal:   decl.Spec.Internal,
		Attachable: decl.Spec.Attachable,
		Options:    maps.Clone(decl.Spec.DriverOpts),
		Labels:     dockerspec.ResourceLabels(r.app, decl.Name, decl.Hash, r.revision, decl.Labels),
	}
	if decl.Spec.EnableIPv6 {
		ipv6 := true
		opts.EnableIPv6 = &ipv6
	}
	// Docker allows two networks with one name: createWithSubnet looks
	// the name up right before each create, and never adopts a foreign
	// network.
	existed, subnet, err := r.e.createWithSubnet(ctx, r.app, name, decl.Spec, previous, opts)
	var f *drift.Failure
	if errors.As(err, &f) {
		return err
	} else if err != nil {
		return fmt.Errorf("create network %s: %w", name, err)
	}
	if existed {
		r.emit(s, drift.PhaseCreated, "already exists", nil)
		return nil
	}
	msg := ""
	if subnet.IsValid() {
		msg = "subnet " + subnet.String()
	}
	r.emit(s, drift.PhaseCreated, msg, nil)
	return nil
}

// removeNetwork removes an owned network; it returns the subnet
// driftless had allocated to it, if any.
func (r *run) removeNetwork(ctx context.Context, s *step) (string, error) {
	ref := s.change.ID
	if ref == "" {
		ref = s.change.Name
	}
	r.e.probe.Detach(ctx, ref)
	res, err := r.e.api.NetworkInspect(ctx, ref, client.NetworkInspectOptions{})
	if err != nil {
		if engineerr.IsNotFound(err) {
			r.emit(s, drift.PhaseRemoved, "was already gone", nil)
			return "", nil
		}
		return "", fmt.Errorf("inspect network %s: %w", s.change.Name, err)
	}
	n := res.Network
	if n.Labels[drift.LabelApp] != r.app {
		return "", fmt.Errorf("network %s is not owned by driftless app %s; leaving it alone", n.Name, r.app)
	}
	if len(n.Containers) > 0 {
		var names []string
		for _, ep := range n.Containers {
			names = append(names, ep.Name)
		}
		slices.Sort(names)
		return "", fmt.Errorf("network %s still has containers attached (%s); it is removed once they are gone", n.Name, strings.Join(names, ", "))
	}
	if _, err := r.e.api.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil {
		return "", fmt.Errorf("remove network %s: %w", n.Name, err)
	}
	r.emit(s, drift.PhaseRemoved, "", nil)
	return n.Labels[drift.LabelSubnet], nil
}

func (r *run) createVolume(ctx context.Context, s *step) error {
	name := resourceName(r.app, s.change)
	var decl *manifest.Volume
	for i := range r.desired.Volumes {
		if r.desired.Volumes[i].Name == name {
			decl = &r.desired.Volumes[i]
		}
	}
	if decl == nil {
		return fmt.Errorf("volume %s is not declared in app %s", name, r.app)
	}
	if decl.Spec.External {
		return fmt.Errorf("volume %s is external: driftless never creates it", decl.DockerName(r.app))
	}
	dockerName := decl.DockerName(r.app)
	// VolumeCreate on an existing name returns the existing volume: check
	// first so a foreign volume is never adopted.
	if res, err := r.e.api.VolumeInspect(ctx, dockerName, client.VolumeInspectOptions{}); err == nil {
		if res.Volume.Labels[drift.LabelApp] != r.app {
			return fmt.Errorf("name %s is held by a volume driftless does not own; rename or remove it", dockerName)
		}
		r.emit(s, drift.PhaseCreated, "already exists", nil)
		return nil
	} else if !engineerr.IsNotFound(err) {
		return fmt.Errorf("inspect volume %s: %w", dockerName, err)
	}
	driver := decl.Spec.Driver
	if driver == "" {
		driver = "local"
	}
	_, err := r.e.api.VolumeCreate(ctx, client.VolumeCreateOptions{
		Name:       dockerName,
		Driver:     driver,
		DriverOpts: maps.Clone(decl.Spec.DriverOpts),
		Labels:     dockerspec.ResourceLabels(r.app, decl.Name, decl.Hash, r.revision, decl.Labels),
	})
	if err != nil {
		return fmt.Errorf("create volume %s: %w", dockerName, err)
	}
	r.emit(s, drift.PhaseCreated, "", nil)
	return nil
}

// removeVolume runs only because the plan says so: the differ decides
// whether data may be removed.
func (r *run) removeVolume(ctx context.Context, s *step) error {
	name := s.change.Name
	res, err := r.e.api.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
	if err != nil {
		if engineerr.IsNotFound(err) {
			r.emit(s, drift.PhaseRemoved, "was already gone", nil)
			return nil
		}
		return fmt.Errorf("inspect volume %s: %w", name, err)
	}
	if res.Volume.Labels[drift.LabelApp] != r.app {
		return fmt.Errorf("volume %s is not owned by driftless app %s; leaving it alone", name, r.app)
	}
	if _, err := r.e.api.VolumeRemove(ctx, name, client.VolumeRemoveOptions{}); err != nil {
		return fmt.Errorf("remove volume %s: %w", name, err)
	}
	r.emit(s, drift.PhaseRemoved, "", nil)
	return nil
}
