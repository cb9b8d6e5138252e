package status

import (
	"strings"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
)

// How history entries read. Wording lives here so a change of words is a
// change of one file.

// SyncSummary is a sync entry's summary: how it ended first, then the
// revision and the plan.
func SyncSummary(rev gitsource.Revision, plan drift.Plan, result string) string {
	what := "synced"
	switch result {
	case "failed":
		what = "failed to sync"
	case "partial":
		what = "partly synced"
	case "stopped for something newer":
		what = "stopped syncing"
	}
	if rev.Revert {
		what += " revert"
	}
	s := what + " " + rev.Short() + " “" + rev.Subject + "”"
	if result == "stopped for something newer" {
		s += " for a newer revision"
	}
	return s + ": " + strings.TrimPrefix(plan.Summary(), "Plan: ")
}

// ResultWord is a sync's result: succeeded, partial (some changes done)
// or failed.
func ResultWord(res drift.ApplyResult) string {
	if res.Err == nil {
		return "succeeded"
	}
	if res.OnlyCause(drift.FailureStopped) {
		return "stopped for something newer"
	}
	for _, o := range res.Outcomes {
		if o.Result == drift.ResultDone {
			return "partial"
		}
	}
	return "failed"
}

// RefusedSummary is a refused revision's summary, with what still runs.
func RefusedSummary(r Refusal, running *gitsource.Revision) string {
	keeping := "nothing was deployed before"
	if running != nil {
		keeping = "still running " + running.Short()
	}
	return "refused " + r.Revision.Short() + " “" + r.Revision.Subject + "”: " + r.Reason + "; " + keeping
}

// RepairSummary says in words what was changed outside Git and what was
// done about it.
func RepairSummary(c drift.Change) string {
	what := c.Name
	if c.Kind != drift.KindContainer {
		what = string(c.Kind) + " " + c.Name
	}
	if c.MergeInto != "" {
		return what + " existed twice (a create interrupted by a crash, or one made outside Git) and every container start failed; kept the oldest, moved the other's containers to it and removed it"
	}
	switch c.Action {
	case drift.ActionCreate:
		return what + " was removed outside Git; recreated"
	case drift.ActionStart:
		return what + " was stopped outside Git; started"
	case drift.ActionRemove:
		return what + " was added outside Git; removed"
	case drift.ActionScale:
		if len(c.Fields) == 1 {
			return what + " was scaled outside Git to " + c.Fields[0].Before + " replicas; scaled back to " + c.Fields[0].After
		}
		return what + " was scaled outside Git; scaled back"
	}
	verb := "recreated"
	if c.Kind == drift.KindService {
		verb = "reverted (Swarm rolls the tasks)"
	}
	fields := fieldPaths(c)
	if len(fields) == 0 {
		return what + " was changed outside Git; " + verb
	}
	return what + " was changed outside Git (" + strings.Join(fields, ", ") + "); " + verb
}

// InterferenceSummary says what someone did to a container while driftless
// worked on it, and that it is repaired like any drift.
func InterferenceSummary(o drift.Outcome) string {
	return o.Failure.Summary + "; driftless repairs it at once"
}

// RepairFields are the keys flapping is counted by.
func RepairFields(c drift.Change) []string {
	if c.MergeInto != "" {
		return []string{"duplicate"}
	}
	switch c.Action {
	case drift.ActionCreate:
		return []string{"removed"}
	case drift.ActionStart:
		return []string{"state"}
	case drift.ActionRemove:
		return []string{"added"}
	}
	if fields := fieldPaths(c); len(fields) > 0 {
		return fields
	}
	return []string{"spec"}
}

func fieldPaths(c drift.Change) []string {
	var fields []string
	for _, f := range c.Fields {
		fields = append(fields, f.Path)
	}
	return fields
}
