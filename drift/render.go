package drift

import (
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// String renders the plan as text, like Render.
func (p Plan) String() string {
	var b strings.Builder
	p.Render(&b)
	return b.String()
}

// Render writes the plan for people: one line per change in execution
// order, field changes under replaces, then deferred changes, what --prune
// would remove, conflicts, and the summary line. Reasons of changes made
// outside Git say "outside Git", so a repair never reads like a deploy.
func (p Plan) Render(w io.Writer) {
	type line struct {
		label, reason string
		fields        []FieldChange
	}
	changeLine := func(c Change, reason string) line {
		label := "  " + c.Action.Symbol() + " " + string(c.Kind) + " " + c.Name
		switch c.Action {
		case ActionStart:
			label += " (start)"
		case ActionUpdate:
			if c.Kind == KindService {
				label += " (update: Swarm rolls the tasks)"
			} else {
				label += " (update in place)"
			}
		case ActionScale:
			label += " (scale)"
		}
		return line{label: label, reason: reason, fields: c.Fields}
	}
	var changes, deferred, pruneable, conflicts []line
	for _, c := range p.Changes {
		changes = append(changes, changeLine(c, c.Reason))
	}
	for _, c := range p.Deferred {
		reason := c.Reason
		if !c.NotBefore.IsZero() {
			reason = "not before " + c.NotBefore.Format("15:04:05") + " (" + c.Reason + ")"
		}
		l := changeLine(c, reason)
		l.fields = nil
		deferred = append(deferred, l)
	}
	for _, c := range p.Pruneable {
		pruneable = append(pruneable, changeLine(c, c.Reason))
	}
	for _, c := range p.Conflicts {
		conflicts = append(conflicts, line{label: "  ! " + string(c.Kind) + " " + c.Name, reason: c.Reason})
	}

	// One reason column for the whole plan keeps sections aligned.
	width := 0
	for _, ls := range [][]line{changes, deferred, pruneable, conflicts} {
		for _, l := range ls {
			width = max(width, utf8.RuneCountInString(l.label))
		}
	}
	width += 2

	var b strings.Builder
	b.WriteString("Plan for app " + p.App)
	if p.Revision != "" {
		b.WriteString(" at revision " + ShortRevision(p.Revision))
	}
	b.WriteString(":\n\n")
	section := func(header string, ls []line) {
		if len(ls) == 0 {
			return
		}
		if header != "" {
			b.WriteString(header + "\n")
		}
		for _, l := range ls {
			b.WriteString(l.label)
			if l.reason != "" {
				b.WriteString(strings.Repeat(" ", width-utf8.RuneCountInString(l.label)))
				b.WriteString(l.reason)
			}
			b.WriteByte('\n')
			for _, f := range l.fields {
				b.WriteString("        " + f.Path + ": " + shown(f.Before) + " → " + shown(f.After) + "\n")
			}
		}
		b.WriteByte('\n')
	}
	section("", changes)
	deferredHeader := "Deferred (crash-loop backoff):"
	for _, c := range p.Deferred {
		if c.NotBefore.IsZero() {
			deferredHeader = "Held back (waiting for a dependency or a backoff):"
		}
	}
	section(deferredHeader, deferred)
	section("Would be removed with --prune:", pruneable)
	section("Conflicts (driftless will not touch these):", conflicts)
	b.WriteString(p.Summary() + "\n")
	io.WriteString(w, b.String())
}

// shown is a field value as a plan prints it: an empty value is "".
func shown(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

// Summary is the plan in one line.
func (p Plan) Summary() string {
	if len(p.Changes) == 0 {
		var held []string
		if len(p.Deferred) > 0 {
			held = append(held, count(len(p.Deferred), "deferred", "deferred"))
		}
		if len(p.Conflicts) > 0 {
			held = append(held, count(len(p.Conflicts), "conflict", "conflicts"))
		}
		if len(held) > 0 {
			// Not "matches": something declared is held back.
			return "No changes to make now: " + strings.Join(held, ", ") + "."
		}
		if p.Revision == "" {
			return "No changes."
		}
		return "No changes: running state matches revision " + ShortRevision(p.Revision) + "."
	}
	var create, replace, start, remove, update, scale int
	for _, c := range p.Changes {
		switch c.Action {
		case ActionCreate:
			create++
		case ActionReplace:
			replace++
		case ActionStart:
			start++
		case ActionRemove:
			remove++
		case ActionUpdate:
			update++
		case ActionScale:
			scale++
		}
	}
	s := "Plan: " + strconv.Itoa(create) + " to create, " + strconv.Itoa(replace) + " to replace, " +
		strconv.Itoa(start) + " to start, " + strconv.Itoa(remove) + " to remove"
	if update > 0 {
		s += ", " + strconv.Itoa(update) + " to update in place"
	}
	if scale > 0 {
		s += ", " + strconv.Itoa(scale) + " to scale"
	}
	return s + "."
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
