// Package stackdump picks, out of a Go program's goroutine dump (what
// SIGQUIT prints, or dockerd's SIGUSR1 file), the goroutines that have
// waited for minutes: after a test timed out waiting for a process, they
// say where it hung.
package stackdump

import (
	"regexp"
	"strings"
)

// header is a goroutine's first line, e.g.
// "goroutine 412 [sync.Mutex.Lock, 3 minutes]:"; the runtime names the
// wait only once it lasted a minute.
var header = regexp.MustCompile(`^goroutine \d+ \[([^,\]]*)[^\]]*, \d+ minutes?[^\]]*\]:`)

// Waiting returns the goroutines of dump that have waited for a minute or
// more in a state that state matches (nil: any), separated by blank lines.
func Waiting(dump string, state *regexp.Regexp) string {
	var out []string
	for _, g := range strings.Split(dump, "\n\n") {
		g = strings.TrimSpace(g)
		m := header.FindStringSubmatch(g)
		if m != nil && (state == nil || state.MatchString(m[1])) {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
