package native

import (
	"slices"
)

// nonEmpty copies s, returning nil for an empty list.
func nonEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// sortedSet copies s sorted and deduplicated, nil if empty. Duplicates are
// reported by validation; dropping them here keeps the hash meaningful.
func sortedSet(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(s)))
}
