package secrets

import (
	"slices"
	"strings"
)

// Marker replaces a secret value in text that is kept or shown: log
// excerpts, probe output, error messages. It is the word plans use for a
// secret value.
const Marker = "(sensitive)"

// Scrub returns text with every occurrence of each non-empty value
// replaced by Marker. Longer values go first, so a secret that contains
// another is hidden whole. Values are also matched with surrounding
// whitespace trimmed, since a value read from a file usually ends in a
// newline the output does not repeat.
func Scrub(text string, values ...string) string {
	var vs []string
	for _, v := range values {
		for _, w := range []string{v, strings.TrimSpace(v)} {
			if w != "" && !slices.Contains(vs, w) {
				vs = append(vs, w)
			}
		}
	}
	if len(vs) == 0 || text == "" {
		return text
	}
	slices.SortFunc(vs, func(a, b string) int { return len(b) - len(a) })
	for _, v := range vs {
		text = strings.ReplaceAll(text, v, Marker)
	}
	return text
}
