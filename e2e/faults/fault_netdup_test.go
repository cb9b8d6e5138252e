package faults

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/moby/moby/client"
)

// TestDuplicateNetworkRepaired: Docker on API 1.41 creates a second
// network with a name that exists (only the docker CLI asks it not to), as
// an agent killed right after Docker made the app's network does when it
// makes it again after its restart. Every container start then fails with
// "network … is ambiguous". Here the duplicate is made by hand, with the
// app's labels, for a running app, and one replica is put on it; the next
// rollout must still converge: the agent keeps the oldest network, moves
// the replica to it with its aliases, removes the duplicate and records
// the repair.
func TestDuplicateNetworkRepaired(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	env := map[string]string{"MESSAGE": "one"}
	r := testenv.StartRig(t, func(string) string { return testenv.ServiceManifest(v1, 2, env) })
	first := r.Repo.Head()
	r.WaitConverged("first deploy", first, 2, v1)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := testenv.DockerClient(t)
	name := r.App + "-default"
	orig, err := cli.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if orig.Network.Labels[drift.LabelApp] != r.App {
		t.Fatalf("network %s: labels %v", name, orig.Network.Labels)
	}
	// Suspended, the agent leaves the duplicate alone until the replica is
	// on it: otherwise the network's create event can start a pass that
	// removes it first, and the rollout below has nothing to repair.
	if err := r.Agent.Client().Suspend(ctx, r.App); err != nil {
		t.Fatal(err)
	}
	// The Go client sends no CheckDuplicate: the engine makes a second
	// network with the name, as after the kill.
	dup, err := cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: maps.Clone(orig.Network.Labels)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("duplicate %s of %s (%s); warning: %v", dup.ID[:12], name, orig.Network.ID[:12], dup.Warning)
	if n := networksNamed(t, cli, name); len(n) != 2 {
		t.Fatalf("networks named %s: %v; the engine refused the duplicate, so this test proves nothing", name, n)
	}
	moved := r.App + "-web-1"
	if _, err := cli.NetworkConnect(ctx, dup.ID, client.NetworkConnectOptions{Container: moved}); err != nil {
		t.Fatal(err)
	}

	if err := r.Agent.Client().Resume(ctx, r.App); err != nil {
		t.Fatal(err)
	}
	env["MESSAGE"] = "two"
	second := r.Commit("new message", testenv.ServiceManifest(v1, 2, env))
	r.Wait(3*time.Minute, "the rollout after the duplicate", testenv.ConvergedTo(second, 2, v1))

	if n := networksNamed(t, cli, name); len(n) != 1 || n[0] != orig.Network.ID {
		t.Errorf("networks named %s after the repair: %v, want only the oldest %s", name, n, orig.Network.ID)
	}
	for _, c := range testenv.DockerContainers(t, r.App) {
		res, err := cli.ContainerInspect(ctx, c.Name, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ep := res.Container.NetworkSettings.Networks[name]
		if ep == nil || ep.NetworkID != orig.Network.ID || !slices.Contains(ep.Aliases, "web") {
			t.Errorf("%s: endpoint on %s %+v, want the kept network with alias web", c.Name, name, ep)
		}
	}
	page, err := r.Agent.Client().History(ctx, r.App, []string{"repair"}, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	var repairs []string
	for _, e := range page.Entries {
		repairs = append(repairs, e.Summary)
	}
	if !strings.Contains(strings.Join(repairs, "\n"), "network "+name+" existed twice") {
		t.Errorf("repairs in history: %q; want the duplicate's", repairs)
	}
}

// networksNamed lists the IDs of the networks named exactly name.
func networksNamed(t *testing.T, cli *client.Client, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("name", name)})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range res.Items {
		if n.Name == name {
			out = append(out, n.ID)
		}
	}
	return out
}
