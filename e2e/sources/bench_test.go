package sources

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestBenchPreviewFromWebhook: issue 28's "creating a preview from a branch
// push webhook to its first replica running under 1 s plus the engine's
// create+start". Each sample pushes a new preview/* branch, sends its
// signed webhook and times from the send to the preview's container's
// StartedAt (docker inspect). The baseline, alternated with it in the
// same run, is the engine API's create+start of the same image, timed
// from the create call to StartedAt. After each sample the branch is
// deleted and the preview's removal awaited. Skipped unless
// DRIFTLESS_BENCH=1; DRIFTLESS_BENCH_PREVIEW_TRIALS sets the samples (7).
func TestBenchPreviewFromWebhook(t *testing.T) {
	testenv.BenchOnly(t)
	trials := testenv.BenchInt("DRIFTLESS_BENCH_PREVIEW_TRIALS", 7)
	image := testenv.WorkloadImage(t, "v1")
	p := prefix()
	compose := func(msg string) string {
		return fmt.Sprintf("services:\n  web:\n    image: %s\n    environment: {MESSAGE: %s}\n", image, msg)
	}
	repo, url, agent := startPreviews(t, p, compose("main"), "")
	cli := dockerClient(t)
	ctx := context.Background()

	var preview, baseline, added []time.Duration
	for i := range trials {
		name := fmt.Sprintf("%s-base-%d", p, i)
		t.Cleanup(func() {
			_, _ = cli.ContainerRemove(context.Background(), name, client.ContainerRemoveOptions{Force: true})
		})
		baseline = append(baseline, createStart(t, cli, name, image))
		if _, err := cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}

		branch := fmt.Sprintf("preview/b%d", i)
		app := fmt.Sprintf("%s-preview-b%d", p, i)
		removeApps(t, app)
		repo.Branch(branch)
		repo.WriteFile("deploy/compose.yaml", compose(branch))
		repo.Commit("a preview")
		t0 := time.Now()
		listed := appAdded(agent, app)
		hook(t, agent, url, "refs/heads/"+branch)
		started := firstStarted(t, cli, app, 2*time.Minute)
		preview = append(preview, started.Sub(t0))
		added = append(added, (<-listed).Sub(t0))
		t.Logf("sample %d: create+start %s, webhook → preview running %s (listed by the API after %s)", i+1, testenv.Ms(baseline[i]), testenv.Ms(preview[i]), testenv.Ms(added[i]))

		testenv.WaitApp(t, agent, time.Minute, "the preview synced", apps, synced(app))
		deleteBranch(t, repo, agent, url, branch)
		testenv.WaitApp(t, agent, time.Minute, "the preview removed", apps, synced())
		if c, n, v := objects(t, cli, app); c+n+v != 0 {
			t.Fatalf("after its branch was deleted, %s still has %d containers, %d networks, %d volumes", app, c, n, v)
		}
	}
	pm, bm := testenv.Median(preview), testenv.Median(baseline)
	budget := time.Second + bm
	t.Logf("| measurement (source of previews, interval 10m, signed webhook) | p50 | min | max | n |")
	t.Logf("|---|---|---|---|---|")
	t.Logf("| webhook sent → preview's first container StartedAt | %s | %s | %s | %d |", testenv.Ms(pm), testenv.Ms(testenv.Quantile(preview, 0)), testenv.Ms(testenv.Quantile(preview, 1)), len(preview))
	t.Logf("| webhook sent → preview listed by the API (branches listed, app added) | %s | %s | %s | %d |", testenv.Ms(testenv.Median(added)), testenv.Ms(testenv.Quantile(added, 0)), testenv.Ms(testenv.Quantile(added, 1)), len(added))
	t.Logf("| engine create+start → StartedAt (alternated, same run) | %s | %s | %s | %d |", testenv.Ms(bm), testenv.Ms(testenv.Quantile(baseline, 0)), testenv.Ms(testenv.Quantile(baseline, 1)), len(baseline))
	t.Logf("| difference of the medians (driftless's share) | %s | | | |", testenv.Ms(pm-bm))
	t.Logf("| target: 1 s + create+start = %s | %s | | | |", testenv.Ms(budget), testenv.Verdict(t, "webhook → preview running within 1 s + create/start", pm <= budget))
}

// appAdded polls the agent's API every 10 ms (for two minutes at most)
// and sends when it first lists app.
func appAdded(agent *testenv.Agent, app string) <-chan time.Time {
	ch := make(chan time.Time, 1)
	go func() {
		defer close(ch)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := agent.Client()
		for ctx.Err() == nil {
			if _, err := c.App(ctx, app); err == nil {
				ch <- time.Now()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return ch
}

// createStart creates and starts a container of image through the engine
// API, as `docker run -d` does, and returns the time from the create call
// to the container's StartedAt.
func createStart(t *testing.T, cli *client.Client, name, image string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now()
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name, Config: &container.Config{Image: image}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	return startedAt(t, cli, created.ID).Sub(t0)
}

// firstStarted waits until a container of app runs and returns its
// StartedAt.
func firstStarted(t *testing.T, cli *client.Client, app string, timeout time.Duration) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	f := make(client.Filters).Add("label", drift.LabelApp+"="+app).Add("status", "running")
	for {
		cs, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: f})
		if err == nil && len(cs.Items) > 0 {
			return startedAt(t, cli, cs.Items[0].ID)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no container of %s running after %s (last error %v)", app, timeout, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// startedAt is when the engine started the container.
func startedAt(t *testing.T, cli *client.Client, id string) time.Time {
	t.Helper()
	res, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil || res.Container.State == nil {
		t.Fatalf("inspect %s: %v", id, err)
	}
	at, err := time.Parse(time.RFC3339Nano, res.Container.State.StartedAt)
	if err != nil {
		t.Fatalf("container %s: StartedAt %q: %v", id, res.Container.State.StartedAt, err)
	}
	return at
}
