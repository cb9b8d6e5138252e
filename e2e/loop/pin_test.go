package loop

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
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	r := testenv.StartRig(t, func(string) string { return testenv.ServiceManifest(v1, 1, map[string]string{"MESSAGE": "good"}) })
	good := r.Repo.Head()
	r.WaitConverged("the good revision", good, 1, v1)
	bad := r.Commit("scale to 2", testenv.ServiceManifest(v1, 2, map[string]string{"MESSAGE": "bad"}))
	r.WaitConverged("the new revision", bad, 2, v1)

	r.Call("pin", func(ctx context.Context, c *web.Client, app string) error { return c.Pin(ctx, app, good) })
	st := r.Wait(60*time.Second, "rolled back to the pinned revision", testenv.ConvergedTo(good, 1, v1))
	if st.Pinned == nil || st.Pinned.SHA != good {
		t.Fatalf("status does not show the pin: %+v", st.Pinned)
	}
	// While pinned, new commits are fetched by nobody: the app stays put.
	r.Commit("scale to 3", testenv.ServiceManifest(v1, 3, map[string]string{"MESSAGE": "bad"}))
	r.Call("sync", func(ctx context.Context, c *web.Client, app string) error { return c.Sync(ctx, app) })
	st = r.Wait(10*time.Second, "still pinned after a sync", func(st status.AppStatus) bool { return st.Applied != nil && !st.Reconciling })
	if st.Applied.SHA != good || len(testenv.DockerContainers(t, r.App)) != 1 {
		t.Fatalf("pinned app moved: applied %s, containers %v", st.Applied.Short(), testenv.DockerContainers(t, r.App))
	}

	r.Call("unpin", func(ctx context.Context, c *web.Client, app string) error { return c.Unpin(ctx, app) })
	head := r.Repo.Head()
	r.WaitConverged("following the branch again", head, 3, v1)
	page, err := r.Agent.Client().History(context.Background(), r.App, []string{"rollback"}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 2 {
		t.Fatalf("want a rollback entry for the pin and one for the unpin, got %d", len(page.Entries))
	}
}
