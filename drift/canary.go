package drift

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/driftless-dev/driftless/manifest"
)

// Canary is the first step of a rollout with update.canary: a few replicas
// of a service get the new spec, are watched for update.canaryWatch with
// the release's regression rules, and only then are the rest replaced.

// CanaryStep is a service whose rollout is held to its canary replicas.
type CanaryStep struct {
	Service string
	Hash    string // the new spec's hash
	// Replicas is how many replicas the canary runs; Rest how many wait.
	Replicas, Rest int
}

// HoldForCanary takes a plan about to be applied and holds, for each
// service with update.canary whose new spec has not passed its canary
// (passed[service] != its hash), every spec replacement beyond the canary
// replicas. It returns the plan to apply now, the changes held, and the
// services in their canary step. It is pure.
func HoldForCanary(desired *manifest.App, actual Actual, plan Plan, passed map[string]string) (Plan, []HeldChange, []CanaryStep) {
	if desired == nil {
		return plan, nil, nil
	}
	var held []HeldChange
	var steps []CanaryStep
	out := plan
	for _, svc := range desired.Services {
		n := svc.Spec.Update.Canary
		if n <= 0 || passed[svc.Name] == svc.Hash {
			continue
		}
		var replaces []int // indexes into out.Changes: the service's spec replacements
		for i, c := range out.Changes {
			if c.Kind == KindContainer && c.Service == svc.Name && c.Action == ActionReplace && c.Cause == CauseGit {
				replaces = append(replaces, i)
			}
		}
		if len(replaces) == 0 {
			continue
		}
		already := 0
		for _, c := range actual.Containers {
			if c.App == desired.Name && c.Service == svc.Name && c.SpecHash == svc.Hash {
				already++
			}
		}
		slices.SortFunc(replaces, func(a, b int) int { return cmp.Compare(out.Changes[a].Slot, out.Changes[b].Slot) })
		allowed := max(n-already, 0)
		if allowed >= len(replaces) {
			continue // nothing left to hold: the canary is the whole rollout
		}
		hold := map[int]bool{}
		for _, i := range replaces[allowed:] {
			hold[i] = true
		}
		reason := "canary: " + strconv.Itoa(n) + " replica(s) of " + svc.Name + " run the new spec first and must pass update.canaryWatch (" +
			svc.Spec.Update.CanaryWatch.String() + ") before the rest are replaced"
		var keep []Change
		for i, c := range out.Changes {
			if hold[i] {
				held = append(held, HeldChange{Change: c, Reason: reason})
				continue
			}
			keep = append(keep, c)
		}
		out.Changes = keep
		steps = append(steps, CanaryStep{Service: svc.Name, Hash: svc.Hash, Replicas: n, Rest: len(hold)})
	}
	return out, held, steps
}
