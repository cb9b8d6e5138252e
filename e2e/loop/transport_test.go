package loop

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// The tests in this file run the real binary against the real engine and
// a real git daemon: an insecure transport is refused until the app opts
// in, and a rewritten branch is shown, followed or refused.

// TestTransportInsecureURLRefusedUntilOptIn: `driftless run` with a git://
// repository and no opt-in exits non-zero, naming the app, the URL, the
// risk and what to set, both from flags and from driftless.yaml; with
// the opt-in the same repository syncs.
func TestTransportInsecureURLRefusedUntilOptIn(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	path := "apps/" + app
	repo.WriteFile(path+"/web.yaml", testenv.ServiceManifest(v1, 1, map[string]string{"MESSAGE": "one"}))
	first := repo.Commit("deploy web")
	url := repo.URL(server.URL)
	risk := "git:// is unauthenticated and unencrypted: anyone on the network path can change what is deployed"

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := []string{"run", "--repo", url, "--branch", "main", "--path", path, "--app", app, "--interval", "1s"}
	out, code := testenv.Run(t, ctx, t.TempDir(), append(args, "--data", t.TempDir(), "--listen", testenv.FreeAddr(t))...)
	if code == 0 {
		t.Fatalf("driftless run with a git:// repository and no opt-in exited 0:\n%s", out)
	}
	for _, want := range []string{"app " + app, url, risk, "--allow-insecure-transport"} {
		if !strings.Contains(out, want) {
			t.Errorf("driftless run (flags) output lacks %q:\n%s", want, out)
		}
	}

	cfg := filepath.Join(t.TempDir(), "driftless.yaml")
	body := fmt.Sprintf("apps:\n  - name: %s\n    repo: %s\n    branch: main\n    path: %s\n", app, url, path)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = testenv.Run(t, ctx, t.TempDir(), "run", "--config", cfg, "--data", t.TempDir(), "--listen", testenv.FreeAddr(t))
	if code == 0 {
		t.Fatalf("driftless run --config with a git:// repository and no opt-in exited 0:\n%s", out)
	}
	for _, want := range []string{cfg, "apps[0] (" + app + "): repo:", url, risk, "allowInsecureTransport: true"} {
		if !strings.Contains(out, want) {
			t.Errorf("driftless run (config) output lacks %q:\n%s", want, out)
		}
	}
	if names := testenv.DockerNames(t, app); len(names) != 0 {
		t.Fatalf("a refused agent started containers: %v", names)
	}

	rig := &testenv.AgentRig{T: t, App: app, Path: path, Repo: repo, Server: server, Data: t.TempDir(),
		Args: append(args, "--allow-insecure-transport")}
	rig.Agent = testenv.StartAgent(t, rig.Data, rig.Args...)
	rig.WaitConverged("the git:// repository to sync with the opt-in", first, 1, v1)
}

func forcePushCondition(st status.AppStatus) string {
	for _, c := range st.Errors {
		if c.Kind == "force-push" {
			return c.Message
		}
	}
	return ""
}

// TestForcePushFollowedIsRecordedAndShown: with the default onForcePush
// (follow) a rewritten main is deployed, recorded in history as not a
// fast-forward, and shown in the status and on the dashboard until the
// next fast-forward.
func TestForcePushFollowedIsRecordedAndShown(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	manifest := func(msg string) string { return testenv.ServiceManifest(v1, 1, map[string]string{"MESSAGE": msg}) }
	rig := testenv.StartRig(t, func(string) string { return manifest("one") })
	first := rig.Repo.Head()
	rig.WaitConverged("the first commit to be deployed", first, 1, v1)
	second := rig.Commit("say two", manifest("two"))
	rig.WaitConverged("the second commit to be deployed", second, 1, v1)

	rewritten := rig.ForcePush(first, "say three instead", manifest("three"))
	st := rig.WaitConverged("the force-pushed head to be followed", rewritten, 1, v1)
	want := fmt.Sprintf("branch main moved from %s to %s, not a fast-forward", second[:7], rewritten[:7])
	if st.ForcePush == nil || st.ForcePush.From != second || st.ForcePush.To.SHA != rewritten || st.ForcePush.Refused {
		t.Errorf("status forcePush = %+v, want from %s to %s, followed", st.ForcePush, second[:7], rewritten[:7])
	}
	if c := forcePushCondition(st); !strings.HasPrefix(c, want) || !strings.Contains(st.Message, want) {
		t.Errorf("status: force-push condition %q, message %q; want both to say %q", c, st.Message, want)
	}
	es := rig.ForcePushEntries()
	if len(es) != 1 || !strings.HasPrefix(es[0].Summary, want) || es[0].Result != "followed" || es[0].Revision == nil || es[0].Revision.SHA != rewritten {
		t.Fatalf("force-push history = %+v, want one followed entry %q", es, want)
	}
	if page := rig.AppPage(); !strings.Contains(page, want) {
		t.Errorf("the dashboard's app page does not show %q", want)
	}

	// A few more polls of the same head: still shown, recorded once.
	time.Sleep(3 * time.Second)
	st = rig.Wait(5*time.Second, "the status", func(status.AppStatus) bool { return true })
	if st.ForcePush == nil || len(rig.ForcePushEntries()) != 1 {
		t.Fatalf("after more polls: forcePush %+v, %d entries; want it still shown, recorded once", st.ForcePush, len(rig.ForcePushEntries()))
	}

	// The next fast-forward clears it.
	fourth := rig.Commit("say four", manifest("four"))
	st = rig.WaitConverged("a fast-forward on top of the force-push", fourth, 1, v1)
	if st.ForcePush != nil || forcePushCondition(st) != "" {
		t.Fatalf("after a fast-forward: forcePush %+v, errors %+v; want it cleared", st.ForcePush, st.Errors)
	}
}

// TestForcePushRefusedKeepsTheAppliedRevision: with onForcePush refuse a
// rewritten main is refused; the container of the applied revision keeps
// running (the same container), the status says why and how to accept
// it; a commit that descends from the applied one then deploys.
func TestForcePushRefusedKeepsTheAppliedRevision(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	manifest := func(msg string) string { return testenv.ServiceManifest(v1, 1, map[string]string{"MESSAGE": msg}) }
	rig := testenv.StartRigWith(t, func(string) string { return manifest("one") }, "--interval", "1s", "--on-force-push", "refuse")
	first := rig.Repo.Head()
	rig.WaitConverged("the first commit to be deployed", first, 1, v1)
	second := rig.Commit("say two", manifest("two"))
	rig.WaitConverged("the second commit to be deployed", second, 1, v1)
	before := testenv.IDsByName(testenv.DockerContainers(t, rig.App))

	rewritten := rig.ForcePush(first, "say three instead", manifest("three"))
	st := rig.Wait(30*time.Second, "the force-pushed head to be refused", func(st status.AppStatus) bool {
		return st.Refused != nil && st.Refused.Revision.SHA == rewritten
	})
	remedy := "push a commit that descends from " + second[:7] + ", or set onForcePush: follow"
	for _, want := range []string{"not a fast-forward", remedy, "still running " + second[:7]} {
		if !strings.Contains(st.Message, want) {
			t.Errorf("status message %q lacks %q", st.Message, want)
		}
	}
	if st.Applied == nil || st.Applied.SHA != second || st.ForcePush == nil || !st.ForcePush.Refused {
		t.Errorf("applied %s, forcePush %+v; want %s still applied and the force-push refused", testenv.RevShort(st.Applied), st.ForcePush, second[:7])
	}
	if es := rig.ForcePushEntries(); len(es) != 1 || es[0].Result != "refused" || !strings.Contains(es[0].Summary, remedy) {
		t.Errorf("force-push history = %+v, want one refused entry with the remedy", es)
	}
	// Several polls later the same container still runs.
	time.Sleep(3 * time.Second)
	if after := testenv.IDsByName(testenv.DockerContainers(t, rig.App)); !maps.Equal(after, before) {
		t.Fatalf("containers changed after a refused force-push: before %v, after %v", before, after)
	}
	if ids := slices.Collect(maps.Values(before)); len(ids) != 1 {
		t.Fatalf("containers before: %v", before)
	}

	// A commit on top of the applied revision is a fast-forward of what
	// runs, even though the remote head was the rewritten one.
	fourth := rig.ForcePush(second, "say four", manifest("four"))
	st = rig.WaitConverged("a commit descending from the applied one to deploy", fourth, 1, v1)
	if st.Refused != nil || st.ForcePush != nil || forcePushCondition(st) != "" {
		t.Fatalf("after the fast-forward: refused %+v, forcePush %+v, errors %+v", st.Refused, st.ForcePush, st.Errors)
	}
}
