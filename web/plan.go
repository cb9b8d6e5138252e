package web

import (
	"fmt"
	"strings"

	"github.com/driftless-dev/driftless/drift"
)

// planText renders a plan the way the CLI prints it. drift.Plan renders
// itself once it has a String method; until then (and as a fallback) web
// renders it in the same Terraform-like shape.
func planText(p drift.Plan) string {
	if st, ok := any(p).(fmt.Stringer); ok {
		return st.String()
	}
	return renderPlan(p)
}

func renderPlan(p drift.Plan) string {
	var b strings.Builder
	rev := p.Revision
	if len(rev) > 7 {
		rev = rev[:7]
	}
	if p.Empty() {
		fmt.Fprintf(&b, "No changes. %s matches revision %s.\n", p.App, rev)
	} else {
		fmt.Fprintf(&b, "Plan for %s at %s: %s.\n\n", p.App, rev, planCounts(p.Changes))
		for _, c := range p.Changes {
			writeChange(&b, c, "")
		}
	}
	if len(p.Deferred) > 0 {
		b.WriteString("\nDeferred (crash-loop backoff):\n")
		for _, c := range p.Deferred {
			writeChange(&b, c, "not before "+c.NotBefore.UTC().Format("15:04:05 MST"))
		}
	}
	if len(p.Conflicts) > 0 {
		b.WriteString("\nConflicts (not touched; remove or rename them):\n")
		for _, c := range p.Conflicts {
			fmt.Fprintf(&b, "  ! %s %s: %s\n", c.Kind, c.Name, c.Reason)
		}
	}
	if len(p.Pruneable) > 0 {
		b.WriteString("\nNo longer declared (kept; --prune would remove):\n")
		for _, c := range p.Pruneable {
			writeChange(&b, c, "")
		}
	}
	return b.String()
}

func writeChange(b *strings.Builder, c drift.Change, note string) {
	fmt.Fprintf(b, "  %-3s %s %s", string(c.Action), c.Kind, c.Name)
	var why []string
	if c.Cause != "" {
		why = append(why, string(c.Cause))
	}
	if c.Reason != "" {
		why = append(why, c.Reason)
	}
	if len(why) > 0 {
		fmt.Fprintf(b, "  (%s)", strings.Join(why, ": "))
	}
	if note != "" {
		fmt.Fprintf(b, "  %s", note)
	}
	b.WriteString("\n")
	for _, f := range c.Fields {
		fmt.Fprintf(b, "        %s: %q -> %q\n", f.Path, f.Before, f.After)
	}
}

// planCounts summarises changes by action: "1 to create, 2 to replace".
func planCounts(changes []drift.Change) string {
	counts := map[drift.Action]int{}
	for _, c := range changes {
		counts[c.Action]++
	}
	words := []struct {
		a    drift.Action
		verb string
	}{
		{drift.ActionCreate, "create"}, {drift.ActionStart, "start"},
		{drift.ActionReplace, "replace"}, {drift.ActionRemove, "remove"},
	}
	var parts []string
	for _, w := range words {
		if n := counts[w.a]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d to %s", n, w.verb))
		}
	}
	if len(parts) == 0 {
		return "nothing to do"
	}
	return strings.Join(parts, ", ")
}
