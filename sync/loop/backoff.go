package loop

import (
	"fmt"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/status"
)

// Tunables of the loop's backoffs and flapping detection. They are not
// configurable because the defaults are what a person expects.
const (
	flapWindow     = 10 * time.Minute
	flapThreshold  = 3
	crashBaseDelay = 10 * time.Second
	crashMaxDelay  = 5 * time.Minute
	// crashWindow: a repair this soon after the previous repair of the same
	// container means the container fails again on its own.
	crashWindow   = 10 * time.Minute
	readyDeadline = 2 * time.Minute
)

// backoffInputs are the differ's view of the memory's backoffs at now:
// containers whose repair must wait, and services whose rollout at the
// desired hash failed.
func backoffInputs(m memory, app *manifest.App, appName string, now time.Time) (map[string]time.Time, map[string]drift.RolloutFailure) {
	backoff := map[string]time.Time{}
	for name, cs := range m.crash {
		if cs.until.After(now) {
			backoff[name] = cs.until
		}
	}
	failed := map[string]drift.RolloutFailure{}
	if app == nil {
		return backoff, failed
	}
	for _, svc := range app.Services {
		f, ok := m.failed[svc.Name]
		if !ok || f.Hash != svc.Hash {
			continue
		}
		failed[svc.Name] = f.RolloutFailure
		if !f.NotBefore.After(now) {
			continue
		}
		for slot := 1; slot <= svc.Spec.Replicas; slot++ {
			backoff[manifest.ContainerName(appName, svc.Name, slot)] = f.NotBefore
		}
	}
	return backoff, failed
}

// backsOff reports whether a failure of this cause means the same spec
// would fail again: back off instead of retrying at once. Interference is
// drift, the engine is retried on its own schedule, a stop is nobody's
// fault, and a skipped dependent follows its dependency.
func backsOff(c drift.FailureCause) bool {
	switch c {
	case drift.FailureRollout, drift.FailureOther:
		return true
	}
	return false
}

// noteRolloutFailures backs off services whose new replicas failed on
// their own, so a bad image is reported and retried slowly instead of
// being rolled out in a hot loop; a service whose changes all completed
// is forgiven.
func noteRolloutFailures(m *memory, app *manifest.App, res drift.ApplyResult, now time.Time) {
	failedSvc, okSvc := map[string]drift.Failure{}, map[string]bool{}
	for _, o := range res.Outcomes {
		c := o.Change
		if (c.Kind != drift.KindContainer && c.Kind != drift.KindService) || c.Action == drift.ActionRemove || c.Service == "" {
			continue
		}
		switch {
		case o.Result == drift.ResultDone:
			okSvc[c.Service] = true
		case o.Result == drift.ResultFailed && o.Failure != nil && backsOff(o.Failure.Cause):
			if _, seen := failedSvc[c.Service]; !seen {
				failedSvc[c.Service] = *o.Failure
			}
		}
	}
	for svc, f := range res.Degraded {
		failedSvc[svc] = *f
	}
	for name := range okSvc {
		if _, bad := failedSvc[name]; !bad {
			delete(m.failed, name)
		}
	}
	for name, f := range failedSvc {
		svc := app.Service(name)
		if svc == nil {
			continue
		}
		b, ok := m.failed[name]
		if !ok || b.Hash != svc.Hash {
			b = rolloutBackoff{RolloutFailure: drift.RolloutFailure{Hash: svc.Hash}, delay: crashBaseDelay}
		} else if !f.Transient {
			b.delay = min(b.delay*2, crashMaxDelay)
		} else {
			b.delay = crashBaseDelay
		}
		b.Failure = f
		b.NotBefore = now.Add(b.delay)
		m.failed[name] = b
	}
}

// noteCrash doubles a container's repair backoff when it needs repairing
// again soon after the last repair: it keeps failing on its own, and
// repairing it in a hot loop helps nobody.
func noteCrash(m *memory, name string, now time.Time) {
	cs, ok := m.crash[name]
	if !ok || now.Sub(cs.lastRepair) > crashWindow {
		m.crash[name] = crashState{lastRepair: now}
		return
	}
	if cs.delay == 0 {
		cs.delay = crashBaseDelay
	} else {
		cs.delay = min(cs.delay*2, crashMaxDelay)
	}
	cs.lastRepair = now
	cs.until = now.Add(cs.delay)
	m.crash[name] = cs
}

// noteFlap counts repairs of the same field and returns a history entry
// the moment it starts flapping. Flapping apps keep being repaired: Git
// stays the source of truth, and stopping would leave the app broken;
// instead the fight is reported so a person can find the other party.
func noteFlap(m *memory, k flapKey, now time.Time) (status.Flap, bool) {
	m.repairs[k] = append(m.repairs[k], now)
	pruneFlaps(m, now)
	times := m.repairs[k]
	if len(times) < flapThreshold {
		return status.Flap{}, false
	}
	if f, ok := m.flapping[k]; ok {
		f.Count = len(times)
		m.flapping[k] = f
		return status.Flap{}, false
	}
	f := status.Flap{Container: k.container, Field: k.field, Count: len(times), Since: now}
	m.flapping[k] = f
	return f, true
}

func pruneFlaps(m *memory, now time.Time) {
	for k, times := range m.repairs {
		i := 0
		for i < len(times) && now.Sub(times[i]) > flapWindow {
			i++
		}
		times = times[i:]
		if len(times) == 0 {
			delete(m.repairs, k)
		} else {
			m.repairs[k] = times
		}
		if len(times) < flapThreshold {
			delete(m.flapping, k)
		}
	}
	for k := range m.flapping {
		if _, ok := m.repairs[k]; !ok {
			delete(m.flapping, k)
		}
	}
	for name, cs := range m.crash {
		if now.Sub(cs.lastRepair) > crashWindow && !cs.until.After(now) {
			delete(m.crash, name)
		}
	}
}

func flapEntry(f status.Flap) string {
	return fmt.Sprintf("%s %s was repaired %d times in %s: something outside Git keeps changing it; driftless keeps repairing it",
		f.Container, f.Field, f.Count, flapWindow)
}
