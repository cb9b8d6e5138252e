package notify

import (
	"fmt"
	"strings"
)

// maxErrorsShown keeps a refusal with hundreds of errors readable in chat.
const maxErrorsShown = 10

// title is the message's first line: app, kind and revision.
func title(e Event) string {
	s := "driftless: " + e.App + " " + string(e.Kind)
	if e.Revision != nil {
		s += " " + e.Revision.Short()
	}
	return s
}

// body says what happened, which revision (short SHA, subject, author),
// the errors of a refusal, and where to read more.
func body(e Event, externalURL string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", e.App, e.What)
	if r := e.Revision; r != nil {
		fmt.Fprintf(&b, "Revision: %s “%s”", r.Short(), r.Subject)
		if r.Author != "" {
			fmt.Fprintf(&b, " by %s", r.Author)
		}
		b.WriteString("\n")
	}
	for i, err := range e.Errors {
		if i == maxErrorsShown {
			fmt.Fprintf(&b, "  … and %d more\n", len(e.Errors)-maxErrorsShown)
			break
		}
		fmt.Fprintf(&b, "  %s\n", err)
	}
	if e.PreviewURL != "" {
		fmt.Fprintf(&b, "Preview: %s\n", e.PreviewURL)
	}
	if link := entryLink(externalURL, e); link != "" {
		fmt.Fprintf(&b, "Details: %s\n", link)
	}
	return strings.TrimRight(b.String(), "\n")
}

// entryLink is the dashboard page of the event's history entry, or of the
// app when there is none; "" without an external URL.
func entryLink(externalURL string, e Event) string {
	if externalURL == "" {
		return ""
	}
	if e.EntryID != 0 {
		return fmt.Sprintf("%s/history/%d", externalURL, e.EntryID)
	}
	return externalURL + "/apps/" + e.App
}
