package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// TestAgentPinRollsBackAndUnpinFollowsBranch is the 03:00 path: pin the app
// to an earlier revision through the API (what the dashboard's Roll back
// button does), see it run that revision and ignore the branch, then unpin
// and see it follow the branch again.
func TestAgentPinRollsBackAndUnpinFollowsBranch(t *testing.T) {
	v1 := testenv.WorkloadImage(t, "v1")
	r := startRig(t, func(string) string { return serviceManifest(v1, 1, map[string]string{"MESSAGE": "good"}) })
	good := r.repo.Head()
	r.waitConverged("the good revision", good, 1, v1)
	bad := r.commit("scale to 2", serviceManifest(v1, 2, map[string]string{"MESSAGE": "bad"}))
	r.waitConverged("the new revision", bad, 2, v1)

	r.call("pin", func(ctx context.Context, c *web.Client, app string) error { return c.Pin(ctx, app, good) })
	st := r.wait(60*time.Second, "rolled back to the pinned revision", convergedTo(good, 1, v1))
	if st.Pinned == nil || st.Pinned.SHA != good {
		t.Fatalf("status does not show the pin: %+v", st.Pinned)
	}
	// While pinned, new commits are fetched by nobody: the app stays put.
	r.commit("scale to 3", serviceManifest(v1, 3, map[string]string{"MESSAGE": "bad"}))
	r.call("sync", func(ctx context.Context, c *web.Client, app string) error { return c.Sync(ctx, app) })
	st = r.wait(10*time.Second, "still pinned after a sync", func(st status.AppStatus) bool { return st.Applied != nil && !st.Reconciling })
	if st.Applied.SHA != good || len(dockerContainers(t, r.app)) != 1 {
		t.Fatalf("pinned app moved: applied %s, containers %v", st.Applied.Short(), dockerContainers(t, r.app))
	}

	r.call("unpin", func(ctx context.Context, c *web.Client, app string) error { return c.Unpin(ctx, app) })
	head := r.repo.Head()
	r.waitConverged("following the branch again", head, 3, v1)
	page, err := r.agent.Client().History(context.Background(), r.app, []string{"rollback"}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 2 {
		t.Fatalf("want a rollback entry for the pin and one for the unpin, got %d", len(page.Entries))
	}
}
