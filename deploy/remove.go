package deploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
	"github.com/driftless-dev/driftless/drift"
)

// RemoveApp removes every container, network and volume labelled with the
// app — and nothing else: the label filter is the whole selection. It is
// `driftless demo --clean` and the tests' clean-up, not part of a plan
// (plans never remove volumes). removed, if set, is told each object gone,
// one call at a time.
func (e *Engine) RemoveApp(ctx context.Context, app string, removed func(kind drift.Kind, name string)) error {
	return e.removeApp(ctx, app, false, removed)
}

// RemoveAppObjects removes an app that left Git (loop.AppRemover): its
// containers and networks, and its volumes unless keepVolumes — a normal
// app's data outlives the app, a preview's does not.
func (e *Engine) RemoveAppObjects(ctx context.Context, app string, keepVolumes bool) error {
	return e.removeApp(ctx, app, keepVolumes, nil)
}

// removeAppNetwork removes a network whose containers were just removed,
// after the probe container (remote engines) leaves it.
func (e *Engine) removeAppNetwork(ctx context.Context, id, name string) (err error) {
	e.probe.Detach(ctx, id)
	// Right after its containers are removed the engine may still be
	// detaching their endpoints: retry briefly.
	for attempt := 0; ; attempt++ {
		_, err = e.api.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
		if err == nil || engineerr.IsNotFound(err) || attempt == 10 || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil && !engineerr.IsNotFound(err) {
		return fmt.Errorf("remove network %s: %w", name, err)
	}
	return nil
}

func (e *Engine) removeApp(ctx context.Context, app string, keepVolumes bool, removed func(kind drift.Kind, name string)) error {
	if removed == nil {
		removed = func(drift.Kind, string) {}
	}
	filters := make(client.Filters).Add("label", drift.LabelApp+"="+app)
	cs, err := e.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filters})
	if err != nil {
		return fmt.Errorf("list containers of %s: %w", app, err)
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	sem := make(chan struct{}, max(e.opts.Parallelism, 8))
	for _, c := range cs.Items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var nets []string
			if c.NetworkSettings != nil {
				nets = slices.Collect(maps.Keys(c.NetworkSettings.Networks))
			}
			release, err := e.leave.Hold(ctx, nets)
			if err == nil {
				_, err = e.api.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: !keepVolumes})
				release()
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !engineerr.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("remove container %s: %w", c.ID[:12], err))
				return
			}
			removed(drift.KindContainer, strings.TrimPrefix(firstName(c.Names), "/"))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	ns, err := e.api.NetworkList(ctx, client.NetworkListOptions{Filters: filters})
	if err != nil {
		return fmt.Errorf("list networks of %s: %w", app, err)
	}
	for _, n := range ns.Items {
		if err := e.removeAppNetwork(ctx, n.ID, n.Name); err != nil {
			return err
		}
		removed(drift.KindNetwork, n.Name)
	}

	if keepVolumes {
		return nil
	}
	vs, err := e.api.VolumeList(ctx, client.VolumeListOptions{Filters: filters})
	if err != nil {
		return fmt.Errorf("list volumes of %s: %w", app, err)
	}
	for _, v := range vs.Items {
		if _, err := e.api.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{}); err != nil && !engineerr.IsNotFound(err) {
			return fmt.Errorf("remove volume %s: %w", v.Name, err)
		}
		removed(drift.KindVolume, v.Name)
	}
	return nil
}

func firstName(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// RemoveImage untags ref (and deletes the image when nothing else uses it).
// It reports false, nil when there was no such image.
func (e *Engine) RemoveImage(ctx context.Context, ref string) (bool, error) {
	if _, err := e.api.ImageRemove(ctx, ref, client.ImageRemoveOptions{}); err != nil {
		if engineerr.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("remove image %s: %w", ref, err)
	}
	return true, nil
}
