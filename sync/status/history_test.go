package status

import (
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
)

// A sync entry's summary says how the sync ended before anything else, so
// a failed one never reads as "synced".
func TestSyncSummaryLeadsWithTheResult(t *testing.T) {
	rev := gitsource.Revision{SHA: "1a2b3c4d5e6f", Subject: "Bump web"}
	revert := gitsource.Revision{SHA: "9f8e7d6c5b4a", Subject: `Revert "Bump web"`, Revert: true}
	plan := drift.Plan{Changes: []drift.Change{{Action: drift.ActionReplace, Kind: drift.KindContainer, Name: "shop-web-1"}}}
	for _, tc := range []struct {
		rev    gitsource.Revision
		result string
		want   string
	}{
		{rev, "succeeded", "synced 1a2b3c4 “Bump web”: 0 to create, 1 to replace, 0 to start, 0 to remove."},
		{revert, "succeeded", "synced revert 9f8e7d6 “Revert \"Bump web\"”: 0 to create, 1 to replace, 0 to start, 0 to remove."},
		{rev, "failed", "failed to sync 1a2b3c4 “Bump web”: 0 to create, 1 to replace, 0 to start, 0 to remove."},
		{rev, "partial", "partly synced 1a2b3c4 “Bump web”: 0 to create, 1 to replace, 0 to start, 0 to remove."},
		{rev, "stopped for something newer", "stopped syncing 1a2b3c4 “Bump web” for a newer revision: 0 to create, 1 to replace, 0 to start, 0 to remove."},
	} {
		if got := SyncSummary(tc.rev, plan, tc.result); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.result, got, tc.want)
		}
	}
}
