package manifest

import (
	"maps"
	"slices"
)

// copyMap copies m, returning nil for an empty map.
func copyMap[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
