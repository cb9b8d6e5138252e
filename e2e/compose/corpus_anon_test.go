package compose

import (
	"regexp"
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
)

// anonStacks are the corpus stacks for anonymous volumes.
func anonStacks() []corpusStack { return nil }

// anonEquivCases are the equivalence cases for anonymous volumes.
func anonEquivCases() []equivCase {
	return []equivCase{{
		dir:      "equiv-anon",
		services: []string{"db", "web"},
		volumes:  []string{"data"},
		declared: map[string][]string{
			"container db": {
				"Mounts./var/lib/postgresql/data.Volume", "Mounts./var/lib/postgresql/data.RW",
				"Mounts./var/cache/seed.Volume", "Mounts./var/cache/seed.RW",
			},
			"container web": {
				"Config.WorkingDir", "Mounts./srv/app.Content", "Mounts./srv/app/node_modules.Volume", "Mounts./data.Volume",
			},
		},
	}}
}

// dockerAnonymous is the name Docker gives an anonymous volume.
var dockerAnonymous = regexp.MustCompile(`^[0-9a-f]{64}$`)

// volumeName is a mounted volume's name as the comparison sees it: an
// anonymous volume's is "<anonymous>", by design. Compose 1.29 lets
// Docker name it (64 random hex digits, a new one for each container it
// does not recreate from an old one); driftless names it after its
// replica slot and target and labels it so (docs/manifests.md,
// "Anonymous volumes"), so that a replacement mounts it again.
func volumeName(t *testing.T, name string, logical func(string) string) string {
	t.Helper()
	if dockerAnonymous.MatchString(name) {
		return "<anonymous>"
	}
	if target, _ := testenv.Field(testenv.Inspect(t, "volume", name), "Labels."+drift.LabelTarget).(string); target != "" {
		return "<anonymous>"
	}
	return logical(name)
}
