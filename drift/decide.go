package drift

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Policy is the app's judgement calls about a plan: what may be applied
// now, and when a revision is refused as a whole. It is not state.
type Policy struct {
	// SelfHeal repairs changes made outside Git on the agent's own
	// initiative. Off, they are shown and held.
	SelfHeal bool
	// Manual says a person asked for this sync ("Sync now"): the whole
	// plan is applied, drift included, even with SelfHeal off — as an
	// Argo CD sync does. Suspended still wins.
	Manual bool
	// Suspended holds every change.
	Suspended bool
	// Guard checks a revision that is not accepted yet: it is refused when
	// it declares no service (unless AllowEmpty), when it uses another
	// app's network or volume (a conflict with an Owner), or when its plan
	// would remove more than MaxRemovalPercent of the services running
	// now.
	Guard             bool
	AllowEmpty        bool
	MaxRemovalPercent int // 100 = no limit
}

// Hold reasons: why a change of the plan is not applied now.
const (
	HeldSuspended  = "suspended: changes are not applied"
	HeldNoSelfHeal = "self-heal is off: changes made outside Git are shown, not repaired"
)

// HeldChange is a change the policy keeps from being applied now.
type HeldChange struct {
	Change Change `json:"change"`
	Reason string `json:"reason"`
}

// Decision sorts a plan's changes into what to do now and what to hold,
// or refuses the revision. Like Nomad's reconciler results it is plain
// data with one bucket per outcome.
type Decision struct {
	// Apply is the plan to carry out now: the plan's Changes that the
	// policy lets through, with its Deferred, Conflicts and Pruneable kept
	// for context (the applier ignores them).
	Apply Plan `json:"apply"`
	// Held are changes shown but not applied, each with its reason.
	Held []HeldChange `json:"held,omitempty"`
	// Refusal, when set, refuses the revision as a whole: nothing of it
	// is applied and the last accepted revision stays.
	Refusal string `json:"refusal,omitempty"`
}

// HeldReason is the reason shared by the held changes, or "".
func (d *Decision) HeldReason() string {
	if len(d.Held) == 0 {
		return ""
	}
	return d.Held[0].Reason
}

// String is a one-line summary for people and test failures:
// "apply 2, hold 1 (self-heal is off: …)" or "refuse: …".
func (d Decision) String() string {
	if d.Refusal != "" {
		return "refuse: " + d.Refusal
	}
	s := "apply " + strconv.Itoa(len(d.Apply.Changes)) + ", hold " + strconv.Itoa(len(d.Held))
	if r := d.HeldReason(); r != "" {
		s += " (" + r + ")"
	}
	return s
}

// Decide applies the policy to a plan computed from in. It is pure.
func Decide(in Input, plan Plan, p Policy) Decision {
	if p.Guard {
		if why := guard(in, plan, p); why != "" {
			return Decision{Refusal: why}
		}
	}
	d := Decision{Apply: plan}
	d.Apply.Changes = nil
	for _, c := range plan.Changes {
		switch {
		case p.Suspended:
			d.Held = append(d.Held, HeldChange{Change: c, Reason: HeldSuspended})
		case c.Cause == CauseDrift && !p.SelfHeal && !p.Manual:
			d.Held = append(d.Held, HeldChange{Change: c, Reason: HeldNoSelfHeal})
		default:
			d.Apply.Changes = append(d.Apply.Changes, c)
		}
	}
	return d
}

// runsAnything reports whether any container of the app exists.
func runsAnything(in Input) bool {
	for _, c := range in.Actual.Containers {
		if c.App == in.App {
			return true
		}
	}
	return false
}

// othersObjects refuses a revision that reaches another app's networks
// or volumes: nothing of it is applied, not even the services that do
// not use them, since the revision as written is not one this app may
// run. "" when it reaches none.
func othersObjects(plan Plan) string {
	var whys []string
	for _, c := range plan.Conflicts {
		if c.Owner != "" {
			whys = append(whys, c.Reason)
		}
	}
	if len(whys) == 0 {
		return ""
	}
	return "the revision uses another app's objects: " + strings.Join(whys, "; ")
}

// guard refuses a revision that must not be applied as a whole, reusing
// the plan.
func guard(in Input, plan Plan, p Policy) string {
	if (in.Desired == nil || len(in.Desired.Services) == 0) && !p.AllowEmpty {
		const allow = "allowEmpty: true in driftless.yaml (or --allow-empty for driftless run)"
		if !runsAnything(in) {
			return "the revision declares no services: check the app's path, which holds no manifests; to accept an empty revision set " + allow
		}
		return "the revision declares no services, so applying it would remove everything the app runs; to allow it set " + allow
	}
	if why := othersObjects(plan); why != "" {
		return why
	}
	if p.MaxRemovalPercent >= 100 {
		return ""
	}
	running := map[string]bool{}
	for _, c := range in.Actual.Containers {
		if c.App == in.App && c.Service != "" {
			running[c.Service] = true
		}
	}
	if len(running) == 0 {
		return ""
	}
	removed := map[string]bool{}
	for _, c := range plan.Changes {
		if (c.Kind == KindContainer || c.Kind == KindService) && c.Action == ActionRemove && running[c.Service] && in.Desired.Service(c.Service) == nil {
			removed[c.Service] = true
		}
	}
	if len(removed)*100 <= p.MaxRemovalPercent*len(running) {
		return ""
	}
	names := make([]string, 0, len(removed))
	for s := range removed {
		names = append(names, s)
	}
	slices.Sort(names)
	return fmt.Sprintf("applying it would remove %d of %d running services (%s), more than maxRemovalPercent %d%%; raise maxRemovalPercent for this app (100 = no limit) to allow it",
		len(removed), len(running), strings.Join(names, ", "), p.MaxRemovalPercent)
}
