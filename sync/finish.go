package sync

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift"
)

// finish is the one status write of a pass, whatever happened in it.
func (p *pass) finish(ctx context.Context, passErr error) {
	a, st := p.a, p.st
	now := a.now()
	name := p.cfg.Name
	shutdown := ctx.Err() != nil

	// Source transitions are recorded once, not on every failed poll.
	if !shutdown {
		switch {
		case p.sourceErr != nil && !st.sourceFail:
			st.sourceFail = true
			keeping := "nothing is deployed yet"
			if st.accepted != nil {
				keeping = "keeping " + st.accepted.rev.Short() + " running"
			}
			p.history = append(p.history, HistoryEntry{App: name, Kind: KindSource, Trigger: p.trigger, Result: "failed",
				Summary: fmt.Sprintf("source failed: %v; %s and retrying with backoff", p.sourceErr, keeping)})
		case p.sourceErr == nil && p.fetchOK && st.sourceFail:
			st.sourceFail = false
			p.history = append(p.history, HistoryEntry{App: name, Kind: KindSource, Trigger: p.trigger, Result: "succeeded", Revision: cloneRev(p.fetched),
				Summary: "source recovered: fetched " + p.fetched.Short()})
		}
	}
	if p.sourceErr != nil && !shutdown {
		a.metrics.errors.WithLabelValues(name, "source").Inc()
	}
	if p.engineErr != nil && !shutdown {
		a.metrics.errors.WithLabelValues(name, "engine").Inc()
	}
	if p.applyErr != nil && !shutdown {
		a.metrics.errors.WithLabelValues(name, "apply").Inc()
	}
	if p.refusal != nil {
		a.metrics.errors.WithLabelValues(name, "validation").Inc()
	}

	// Conditions keep their Since while the same kind of problem lasts.
	active := map[string]string{}
	if p.sourceErr != nil {
		active["source"] = p.sourceErr.Error()
	}
	if p.refusal != nil {
		active["validation"] = fmt.Sprintf("revision %s refused: %s", p.refusal.Revision.Short(), p.refusal.Reason)
	}
	if p.engineErr != nil {
		active["engine"] = "Docker engine unreachable: " + p.engineErr.Error()
	}
	if p.applyErr != nil {
		active["apply"] = p.applyErr.Error()
	}
	if p.plan != nil && len(p.plan.Conflicts) > 0 {
		var msgs []string
		for _, c := range p.plan.Conflicts {
			msgs = append(msgs, c.Name+": "+c.Reason)
		}
		active["conflict"] = strings.Join(msgs, "; ")
	}
	if len(st.flapping) > 0 {
		var msgs []string
		for _, k := range sortedFlaps(st.flapping) {
			f := st.flapping[k]
			msgs = append(msgs, fmt.Sprintf("%s %s repaired %d times", f.Container, f.Field, f.Count))
		}
		active["flapping"] = "something outside Git keeps changing the app: " + strings.Join(msgs, "; ")
	}
	if shutdown {
		// A cancelled pass says nothing new about the world.
		for kind := range active {
			if _, had := st.conditions[kind]; !had {
				delete(active, kind)
			}
		}
	}
	conds := map[string]Condition{}
	for kind, msg := range active {
		since := now
		if old, ok := st.conditions[kind]; ok {
			since = old.Since
		}
		conds[kind] = Condition{Kind: kind, Message: msg, Since: since}
	}
	st.conditions = conds

	success := passErr == nil || isStalled(passErr)
	if p.persist != nil {
		if err := a.store.UpdateApp(name, p.persist); err != nil {
			a.log.Error("app state not saved", "app", name, "err", err)
		}
	}
	a.record(p.history...)

	a.mu.Lock()
	s := &st.status
	prev := cloneStatus(*s)
	s.Reconciling = false
	s.LastPass = now
	if success && !shutdown {
		s.LastSuccess = now
	}
	s.Suspended = st.cfg.Suspend
	s.SelfHeal = st.cfg.SelfHeal
	s.Prune = st.cfg.Prune
	s.Pinned = cloneRev(st.pinned)
	if p.fetched != nil {
		s.Fetched = cloneRev(p.fetched)
		s.Source.LastFetch = now
	}
	if p.sourceErr != nil {
		s.Source.Error = p.sourceErr.Error()
		s.Source.ErrorSince = conds["source"].Since
	} else if p.fetchOK || p.pinned != nil {
		s.Source.Error = ""
		s.Source.ErrorSince = time.Time{}
	}
	s.Applied = cloneRev(st.appliedRev)
	if p.refusal != nil {
		r := *p.refusal
		s.Refused = &r
	} else if p.desired != nil && (p.fetchOK || p.pinned != nil) {
		s.Refused = nil
	}
	s.Errors = s.Errors[:0:0]
	for _, kind := range []string{"engine", "source", "validation", "apply", "conflict", "flapping"} {
		if c, ok := conds[kind]; ok {
			s.Errors = append(s.Errors, c)
		}
	}
	s.Flapping = nil
	for _, k := range sortedFlaps(st.flapping) {
		s.Flapping = append(s.Flapping, *st.flapping[k])
	}
	if p.engineErr != nil && !shutdown {
		s.Sync, s.Health = Unknown, HealthUnknown
		s.Drift = nil
	} else if p.plan != nil {
		plan := clonePlan(*p.plan)
		s.Drift = &plan
		s.Sync = Synced
		if !p.plan.Empty() || len(p.plan.Deferred) > 0 || s.Refused != nil {
			s.Sync = OutOfSync
		}
		s.Health = appHealth(p.health)
		s.Services = serviceStatuses(p.desired, p.health, p.actual)
	} else if p.desired == nil && !shutdown {
		s.Sync, s.Health, s.Drift, s.Services = Unknown, Missing, nil, nil
	}
	if s.Suspended {
		s.Health = Suspended
	}
	s.Message = p.message(s)
	changed := statusChanged(prev, *s)
	snapshot := cloneStatus(*s)
	a.mu.Unlock()

	a.metrics.observe(snapshot, p.cfg.Name, now, p.start)
	if changed || len(p.history) > 0 {
		a.log.Info("pass", "app", name, "trigger", p.trigger, "sync", snapshot.Sync, "health", snapshot.Health, "message", snapshot.Message)
	}
	a.notify(name, "status")
}

func isStalled(err error) bool {
	_, ok := err.(*stalledError)
	return ok
}

// message is the one line a user reads first: the most pressing problem,
// what it means, and what the loop does next.
func (p *pass) message(s *AppStatus) string {
	running := "nothing deployed yet"
	if p.st.accepted != nil {
		running = "still running " + p.st.accepted.rev.Short()
	}
	switch {
	case p.engineErr != nil:
		return "Docker engine unreachable: " + p.engineErr.Error() + "; retrying"
	case p.refusal != nil:
		return fmt.Sprintf("revision %s refused: %s; %s", p.refusal.Revision.Short(), p.refusal.Reason, running)
	case p.sourceErr != nil:
		return fmt.Sprintf("cannot read the Git source: %v; %s, retrying", p.sourceErr, running)
	case p.applyErr != nil:
		return p.applyErr.Error() + "; retrying with backoff"
	case len(s.Flapping) > 0:
		return s.Errors[len(s.Errors)-1].Message
	case p.skipped != "" && p.plan != nil:
		return p.skipped + " (" + p.plan.Summary() + ")"
	case p.plan != nil && len(p.plan.Conflicts) > 0:
		return fmt.Sprintf("%d conflict(s) with objects driftless does not own; remove or rename them", len(p.plan.Conflicts))
	case p.health != nil && p.health.Health != drift.HealthHealthy:
		for _, svc := range p.health.Services {
			if svc.Health != drift.HealthHealthy && svc.Message != "" {
				return svc.Service + ": " + svc.Message
			}
		}
	}
	if s.Applied != nil && s.Sync == Synced {
		return "synced to " + s.Applied.Short()
	}
	if p.plan != nil {
		return p.plan.Summary()
	}
	return s.Message
}

func appHealth(h *drift.AppHealth) Health {
	if h == nil {
		return HealthUnknown
	}
	return mapHealth(h.Health)
}

func mapHealth(h drift.Health) Health {
	switch h {
	case drift.HealthHealthy:
		return Healthy
	case drift.HealthProgressing:
		return Progressing
	case drift.HealthMissing:
		return Missing
	case drift.HealthDegraded:
		return Degraded
	}
	return HealthUnknown
}

func serviceStatuses(desired *revisionState, h *drift.AppHealth, actual *drift.Actual) []ServiceStatus {
	if desired == nil || desired.app == nil {
		return nil
	}
	health := map[string]drift.ServiceHealth{}
	if h != nil {
		for _, sh := range h.Services {
			health[sh.Service] = sh
		}
	}
	var out []ServiceStatus
	for _, svc := range desired.app.Services {
		sh := health[svc.Name]
		ss := ServiceStatus{
			Name: svc.Name, Image: svc.Spec.Image, Desired: svc.Spec.Replicas,
			Running: sh.Running, Ready: sh.Ready, Health: mapHealth(sh.Health), Message: sh.Message,
			Containers: []ContainerStatus{},
		}
		if actual != nil {
			for _, c := range actual.Containers {
				if c.Service != svc.Name {
					continue
				}
				ss.Containers = append(ss.Containers, ContainerStatus{
					Name: c.Name, ID: c.ID, Slot: c.Slot, State: string(c.State), Status: c.Status,
					Ready: c.Ready, ReadyReason: c.ReadyReason, RestartCount: c.RestartCount,
					Image: c.Image, Revision: c.Revision, Created: c.Created,
				})
			}
		}
		out = append(out, ss)
	}
	return out
}

func sortedFlaps(m map[flapKey]*Flap) []flapKey {
	keys := make([]flapKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b flapKey) int {
		if c := strings.Compare(a.container, b.container); c != 0 {
			return c
		}
		return strings.Compare(a.field, b.field)
	})
	return keys
}

// statusChanged ignores the fields every pass touches, and Docker's status
// words ("Up 3 minutes"), which change with the clock alone.
func statusChanged(a, b AppStatus) bool {
	a, b = cloneStatus(a), cloneStatus(b)
	a.LastPass, a.LastSuccess, a.Reconciling, a.Source.LastFetch = b.LastPass, b.LastSuccess, b.Reconciling, b.Source.LastFetch
	for _, s := range []*AppStatus{&a, &b} {
		for i := range s.Services {
			for j := range s.Services[i].Containers {
				s.Services[i].Containers[j].Status = ""
			}
		}
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA != nil || errB != nil || !bytes.Equal(ja, jb)
}
