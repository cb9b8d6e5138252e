package sources

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestPreviewExpiresAfterTTL: a preview whose branch has not moved for
// preview.ttl is removed with every object, and its history says why; a
// new commit on the branch brings it back. (The branch-delete path
// is TestPreviewPerBranch.)
func TestPreviewExpiresAfterTTL(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	p := prefix()
	app := p + "-preview-ttl"
	removeApps(t, app)
	compose := func(msg string) string {
		return fmt.Sprintf("services:\n  web:\n    image: %s\n    environment: {MESSAGE: %s}\n    stop_grace_period: 1s\n", image, msg)
	}
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "shop")
	repo.WriteFile("deploy/compose.yaml", compose("main"))
	repo.Commit("the shop")
	url := repo.URL(server.URL)
	cfg := writeConfig(t, fmt.Sprintf(`sources:
  - name: %s
    repo: %s
    interval: 2s
    allowInsecureTransport: true
    branches: {match: 'preview/*', path: deploy}
    preview: {ttl: 12s}
`, p, url))
	agent := testenv.StartAgentEnv(t, append(os.Environ(), "DRIFTLESS_WEBHOOK_SECRET="+secret), t.TempDir(), "run", "--config", cfg)

	repo.Branch("preview/ttl")
	repo.WriteFile("deploy/compose.yaml", compose("ttl"))
	repo.Commit("a preview")
	committed := time.Now()
	testenv.WaitApp(t, agent, 2*time.Minute, "the preview synced", apps, synced(app))

	testenv.WaitApp(t, agent, time.Minute, "the preview expired", apps, synced())
	t.Logf("the preview was removed %s after its commit (ttl 12s, polled every 2s)", time.Since(committed).Round(100*time.Millisecond))
	if since := time.Since(committed); since < 12*time.Second {
		t.Errorf("the preview went %s after its commit, before its ttl of 12s", since)
	}
	if c, n, v := objects(t, dockerClient(t), app); c != 0 || n != 0 || v != 0 {
		t.Errorf("after its ttl, %s still has %d containers, %d networks, %d volumes", app, c, n, v)
	}
	page, err := agent.Client().History(t.Context(), "", nil, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range page.Entries {
		if e.App == app {
			notes = append(notes, string(e.Kind)+": "+e.Summary)
		}
	}
	if !slices.ContainsFunc(notes, func(n string) bool {
		return strings.HasPrefix(n, "apps: removed: source "+p+" no longer declares it in its branches: no commit for 12s;")
	}) {
		t.Errorf("%s's history does not say its ttl ran out: %q", app, notes)
	}

	// A new commit brings it back.
	repo.WriteFile("deploy/compose.yaml", compose("ttl again"))
	repo.Commit("the preview moves")
	testenv.WaitApp(t, agent, time.Minute, "the preview back after a commit", apps, synced(app))
}
