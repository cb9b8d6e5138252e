package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/client"
)

// rolloutBatch is a number of consecutive replacements done together:
// the first Surge of them keep their old replica serving until the new one
// is ready; the rest stop the old replica first.
type rolloutBatch struct {
	Size  int
	Surge int
}

// rolloutBatches splits n replacements into batches that never run more
// than maxSurge extra replicas nor take more than maxUnavailable replicas
// out of service at once. With both zero (a spec that cannot make progress)
// it surges one at a time.
func rolloutBatches(n, maxSurge, maxUnavailable int) []rolloutBatch {
	maxSurge, maxUnavailable = max(maxSurge, 0), max(maxUnavailable, 0)
	if maxSurge == 0 && maxUnavailable == 0 {
		maxSurge = 1
	}
	size := maxSurge + maxUnavailable
	var out []rolloutBatch
	for n > 0 {
		b := rolloutBatch{Size: min(size, n)}
		b.Surge = min(maxSurge, b.Size)
		out = append(out, b)
		n -= b.Size
	}
	return out
}

// rolling replaces replicas batch by batch. When a new replica does not
// become ready, the rollout of this service stops: the failed replica is
// removed, the old one is put back under its name (it kept serving), and
// the remaining replacements are skipped.
func (r *run) rolling(ctx context.Context, svc *manifest.Service, replaces []indexed) bool {
	u := svc.Spec.Update
	surge, unavailable := u.MaxSurge, u.MaxUnavailable
	if publishesHostPorts(&svc.Spec) {
		// A host port is bound by one container at a time: a surge replica
		// could never start, so old replicas are stopped first, one at a time
		// at least.
		surge, unavailable = 0, max(unavailable, 1)
	}
	replaces = notReadyFirst(replaces, func(id string) bool {
		ready, _, _, _ := r.e.prober.Result(id)
		return ready
	})
	next := 0
	for _, b := range rolloutBatches(len(replaces), surge, unavailable) {
		batch := replaces[next : next+b.Size]
		next += b.Size
		errs := make([]error, len(batch))
		var wg sync.WaitGroup
		for j, ic := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := r.begin(ic.index, ic.change)
				errs[j] = r.replaceOne(ctx, s, svc, j < b.Surge)
				r.noteNotReady(svc.Name, errs[j])
				r.finish(s, errs[j])
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			f := classify(err)
			why := &drift.Failure{Cause: f.Cause, Summary: "rollout of " + svc.Name + " stopped: " + f.Summary}
			if ctx.Err() != nil {
				why = cancelled(ctx)
			}
			r.skipAll(replaces[next:], why)
			return false
		}
		if next < len(replaces) {
			if r.stopped() {
				r.skipAll(replaces[next:], errStopped)
				return false
			}
			if d := svc.Spec.Update.Delay; d > 0 {
				select {
				case <-ctx.Done():
					r.skipAll(replaces[next:], cancelled(ctx))
					return false
				case <-time.After(d):
				}
			}
		}
	}
	return true
}

// notReadyFirst orders replacements so old replicas that do not serve
// anyway go first: replacing them costs no ready capacity, so the
// maxUnavailable budget is spent on them before any ready replica.
func notReadyFirst(replaces []indexed, ready func(id string) bool) []indexed {
	out := slices.Clone(replaces)
	slices.SortStableFunc(out, func(a, b indexed) int {
		ra, rb := ready(a.change.ID), ready(b.change.ID)
		switch {
		case ra == rb:
			return 0
		case !ra:
			return -1
		default:
			return 1
		}
	})
	return out
}

func publishesHostPorts(spec *manifest.ServiceSpec) bool {
	for _, p := range spec.Ports {
		if p.HostPort != 0 {
			return true
		}
	}
	return false
}

// replaceOne replaces one replica. The old container is renamed to
// <name>-old-<shortid> (it keeps its labels, so it is still ours and still
// in its slot: if driftless dies mid-way the differ removes the extra), the
// new one is created under the stable name and must become ready before the
// old one is removed. Without surge the old one is stopped first.
func (r *run) replaceOne(ctx context.Context, s *step, svc *manifest.Service, surge bool) error {
	stable := manifest.ContainerName(r.app, svc.Name, s.change.Slot)
	old, err := r.changeableContainer(ctx, s.change)
	if err != nil {
		if !engineerr.IsNotFound(err) {
			return err
		}
		// The old replica is already gone: only the new one is left to do.
		_, err := r.createAndWait(ctx, s, svc, s.change.Slot)
		return err
	}
	oldName := strings.TrimPrefix(old.Name, "/")
	renamed, stopped := false, r.stopRestarting(ctx, old)
	if oldName == stable {
		park := stable + "-old-" + shortID(old.ID)
		if _, err := r.e.api.ContainerRename(ctx, old.ID, client.ContainerRenameOptions{NewName: park}); err != nil {
			return fmt.Errorf("rename %s to %s: %w", stable, park, err)
		}
		renamed = true
	}
	// restore puts the old replica back as it was; it runs on a context
	// that outlives a cancelled apply, since leaving the slot empty is worse.
	restore := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if renamed {
			if _, err := r.e.api.ContainerRename(rctx, old.ID, client.ContainerRenameOptions{NewName: stable}); err != nil {
				r.e.log.Error("could not rename the old replica back", "container", old.ID, "name", stable, "err", err)
			}
		}
		if stopped {
			if _, err := r.e.api.ContainerStart(rctx, old.ID, client.ContainerStartOptions{}); err != nil {
				r.e.log.Error("could not restart the old replica", "container", stable, "err", err)
			}
		}
	}
	if !surge && !stopped && old.State != nil && old.State.Running {
		rec := recordedSpec(old, &svc.Spec)
		if err := r.preStop(ctx, old, rec, &svc.Spec); err != nil {
			restore()
			return err
		}
		if err := r.stopHeld(ctx, old, gracePeriod(rec)); err != nil {
			restore()
			return fmt.Errorf("stop %s: %w", oldName, err)
		}
		stopped = true
	}
	id, err := r.createReplica(ctx, s, svc, s.change.Slot)
	if err != nil {
		restore()
		return err
	}
	if err := r.waitReady(ctx, s, id, &svc.Spec, 0, false); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		if rmErr := r.e.forceRemove(rctx, id); rmErr != nil {
			r.e.log.Error("could not remove the replica that failed to become ready", "container", stable, "err", rmErr)
		}
		cancel()
		r.e.prober.Remove(id)
		restore()
		r.emit(s, drift.PhaseRemoved, "removed the new replica that did not become ready; the old one ("+shortID(old.ID)+") stays in service", nil)
		return err
	}
	if err := r.stopAndRemove(ctx, old, &svc.Spec); err != nil {
		return fmt.Errorf("new %s is ready but the old replica stays: %w", stable, err)
	}
	r.emit(s, drift.PhaseRemoved, "old replica "+shortID(old.ID)+" removed", nil)
	return nil
}

// recreate stops and removes every old replica, then creates all new ones
// and waits for them.
func (r *run) recreate(ctx context.Context, svc *manifest.Service, replaces []indexed) bool {
	steps := make([]*step, len(replaces))
	errs := make([]error, len(replaces))
	var wg sync.WaitGroup
	if r.stopped() {
		r.skipAll(replaces, errStopped)
		return false
	}
	for j, ic := range replaces {
		steps[j] = r.begin(ic.index, ic.change)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.acquire(ctx); err != nil {
				errs[j] = err
				return
			}
			defer r.release()
			errs[j] = r.removeContainer(ctx, steps[j], &svc.Spec)
		}()
	}
	wg.Wait()
	for j := range replaces {
		if errs[j] != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[j] = r.createAndWait(ctx, steps[j], svc, steps[j].change.Slot)
			r.noteNotReady(svc.Name, errs[j])
		}()
	}
	wg.Wait()
	ok := true
	for j := range replaces {
		if errs[j] != nil {
			ok = false
		}
		r.finish(steps[j], errs[j])
	}
	return ok
}

// stopRestarting stops a replica Docker is restarting, without a grace
// period, and reports whether it did. Docker refuses to rename a container
// between two restarts ("sandbox not found"), and a crash-looping replica
// serves nothing (a rollback away from a crashing release replaces exactly
// these, and waits on it).
func (r *run) stopRestarting(ctx context.Context, old container.InspectResponse) bool {
	if old.State == nil || !old.State.Restarting {
		return false
	}
	now := 0
	return r.stopHeld(ctx, old, &now) == nil
}

// stopHeld stops a container while holding its networks (netleave).
func (r *run) stopHeld(ctx context.Context, c container.InspectResponse, timeout *int) error {
	release, err := r.e.holdNetworks(ctx, c.NetworkSettings)
	if err != nil {
		return err
	}
	defer release()
	_, err = r.e.api.ContainerStop(ctx, c.ID, client.ContainerStopOptions{Timeout: timeout})
	return err
}
