package sources

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// configRig is an agent run with --config-from over a config repository
// whose driftless.yaml lists apps of a second repository.
type configRig struct {
	agent          *testenv.Agent
	agentRepo      *gitserver.Repo
	cfgURL, svcURL string
	api, web, jobs string
	apiIDs, webIDs []string
}

// entry is a driftless.yaml apps: entry of the services repository.
func (r *configRig) entry(name, path string) string {
	return fmt.Sprintf("  - name: %s\n    repo: %s\n    path: %s\n", name, r.svcURL, path)
}

// TestConfigFromGit: `driftless run --config-from URL` reads the apps:
// of a driftless.yaml in a config repository; its three apps live in a
// second repository on the same git daemon. A commit to the config
// repository moves one app to another directory and drops another: the
// moved app runs from its new path, the unchanged one keeps its
// containers, and the dropped one stays running, shown as "no longer in
// Git" (no --prune). A commit that puts a local setting in the file is
// refused with file:line, and the apps keep running.
func TestConfigFromGit(t *testing.T) {
	t.Parallel()
	r := startConfigRig(t)
	r.moveAndDrop(t)
	r.refuseLocalSetting(t)
}

func startConfigRig(t *testing.T) *configRig {
	image := testenv.WorkloadImage(t, "v1")
	p := prefix()
	r := &configRig{api: p + "-api", web: p + "-web", jobs: p + "-jobs"}
	removeApps(t, r.api, r.web, r.jobs)
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	svc := gitserver.Init(t, base, "services")
	for dir, msg := range map[string]string{"api": "api", "web": "web", "web-v2": "web v2", "jobs": "jobs"} {
		svc.WriteFile("svc/"+dir+"/web.yaml", testenv.WebManifest(image, 1, msg))
	}
	svc.Commit("services")
	r.svcURL = svc.URL(server.URL)

	r.agentRepo = gitserver.Init(t, base, "agent")
	r.agentRepo.WriteFile("driftless.yaml", "# this host's apps\napps:\n"+r.entry(r.api, "svc/api")+r.entry(r.web, "svc/web")+r.entry(r.jobs, "svc/jobs"))
	r.agentRepo.Commit("three apps")
	r.cfgURL = r.agentRepo.URL(server.URL)

	// The local file gives settings only; the apps come from Git.
	local := writeConfig(t, "externalURL: http://driftless.test\n")
	env := append(os.Environ(), "DRIFTLESS_WEBHOOK_SECRET="+secret)
	r.agent = testenv.StartAgentEnv(t, env, t.TempDir(), "run", "--config", local, "--config-from", r.cfgURL,
		"--branch", "main", "--interval", "10m", "--allow-insecure-transport")
	testenv.WaitApp(t, r.agent, 2*time.Minute, "the three apps of the configuration synced", apps, synced(r.api, r.jobs, r.web))
	srcs := testenv.WaitApp(t, r.agent, 10*time.Second, "the config source lists its apps", sourcesOf, func(s []status.SourceSet) bool { return len(s) == 1 && len(s[0].Apps) == 3 })
	if s := srcs[0]; s.Name != "config" || s.Generator != "config driftless.yaml" || s.Revision == nil || s.Revision.SHA != r.agentRepo.Head() {
		t.Fatalf("source status %+v", s)
	}
	st := testenv.WaitAppStatus(t, r.agent, r.api, 10*time.Second, "from source config, in the services repository", func(st status.AppStatus) bool {
		return st.FromSource == "config" && st.Source.Path == "svc/api" && strings.Contains(st.Source.URL, "services")
	})
	r.apiIDs = testenv.ContainerIDs(st)
	st = testenv.WaitAppStatus(t, r.agent, r.web, 10*time.Second, "one container", func(st status.AppStatus) bool { return len(testenv.ContainerIDs(st)) == 1 })
	r.webIDs = testenv.ContainerIDs(st)
	return r
}

// moveAndDrop moves web to svc/web-v2 and drops jobs.
func (r *configRig) moveAndDrop(t *testing.T) {
	r.agentRepo.WriteFile("driftless.yaml", "apps:\n"+r.entry(r.api, "svc/api")+r.entry(r.web, "svc/web-v2"))
	dropped := r.agentRepo.Commit("web v2; jobs leave")
	hook(t, r.agent, r.cfgURL)
	testenv.WaitAppStatus(t, r.agent, r.web, time.Minute, "runs from svc/web-v2", func(st status.AppStatus) bool {
		ids := testenv.ContainerIDs(st)
		return st.Source.Path == "svc/web-v2" && st.Sync == drift.SyncSynced && len(ids) == 1 && !slices.Equal(ids, r.webIDs)
	})
	left := testenv.WaitAppStatus(t, r.agent, r.jobs, time.Minute, "shown as no longer in Git", func(st status.AppStatus) bool { return st.LeftGit != nil })
	if left.LeftGit.Source != "config" || left.LeftGit.Revision != dropped || !strings.Contains(left.Message, "no longer in Git") {
		t.Fatalf("jobs status %+v", left)
	}
	if c, _, _ := objects(t, dockerClient(t), r.jobs); c != 1 {
		t.Fatalf("%s has %d containers; without --prune it must be left running", r.jobs, c)
	}
	after, err := r.agent.Client().App(context.Background(), r.api)
	if err != nil || !slices.Equal(testenv.ContainerIDs(after), r.apiIDs) {
		t.Fatalf("the unchanged app's containers %v, want %v kept (%v)", testenv.ContainerIDs(after), r.apiIDs, err)
	}
}

// refuseLocalSetting commits a file that asks for host power: the
// revision is refused as a whole, with file:line, and the apps keep
// running.
func (r *configRig) refuseLocalSetting(t *testing.T) {
	accepted := r.agentRepo.Head()
	r.agentRepo.WriteFile("driftless.yaml", "apps:\n"+r.entry(r.api, "svc/api")+r.entry(r.web, "svc/web-v2")+"    allow: [privileged]\n")
	refused := r.agentRepo.Commit("ask for host power")
	hook(t, r.agent, r.cfgURL)
	srcs := testenv.WaitApp(t, r.agent, time.Minute, "the configuration refused", sourcesOf, func(s []status.SourceSet) bool {
		return len(s) == 1 && s[0].Refused != nil && s[0].Refused.Revision.SHA == refused
	})
	const want = "driftless.yaml:8:5: apps[1].allow: host power is a local setting"
	if r := srcs[0].Refused; len(r.Errors) == 0 || !strings.HasPrefix(r.Errors[0], want) {
		t.Fatalf("refusal %+v: want %q", r, want)
	}
	if s := srcs[0]; s.Revision == nil || s.Revision.SHA != accepted {
		t.Fatalf("accepted revision %+v, want %s kept", s.Revision, accepted)
	}
	hist, err := r.agent.Client().History(context.Background(), "", []string{string(status.KindRefused)}, 0, 0)
	if err != nil || !slices.ContainsFunc(hist.Entries, func(e status.HistoryEntry) bool {
		return e.App == "source:config" && e.Revision != nil && e.Revision.SHA == refused && len(e.Errors) > 0 && strings.HasPrefix(e.Errors[0], want)
	}) {
		t.Fatalf("no refusal with file:line in the history: %+v %v", hist, err)
	}
	testenv.WaitApp(t, r.agent, 10*time.Second, "the apps keep running", apps, func(as []status.AppStatus) bool {
		return len(as) == 3 && as[0].Name == r.api && as[0].Sync == drift.SyncSynced && slices.Equal(testenv.ContainerIDs(as[0]), r.apiIDs) &&
			as[2].Name == r.web && as[2].Sync == drift.SyncSynced
	})
}
