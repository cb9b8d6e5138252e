package compose

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestComposeBadRevisionsAreRefused: a compose revision with an error is
// refused by the agent with the compose file's position and field path,
// the message in the status and the history, and the last good revision
// keeps running untouched (and keeps being healed); the next good commit
// applies.
func TestComposeBadRevisionsAreRefused(t *testing.T) {
	t.Parallel()
	images := testenv.NewImageSet(t)
	web, worker := images.Ref("shop/web:1"), images.Ref("shop/worker:1")
	images.Ensure(web, worker)
	app := testenv.UniqueApp(t)
	path := "apps/" + app
	good := `services:
  web:
    image: ` + web + `
    environment:
      GREETING: hello
    env_file: [web.env]
    volumes:
      - ./site.conf:/etc/site.conf:ro
  worker:
    image: ` + worker + `
`
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	repo.WriteFile(path+"/compose.yaml", good)
	repo.WriteFile(path+"/web.env", "APP_FROM_FILE=1\n")
	repo.WriteFile(path+"/site.conf", "site v1\n")
	first := repo.Commit("deploy the shop")
	agent := testenv.StartConfigAgent(t, []testenv.ComposeAppConfig{{Name: app, Repo: repo.URL(server.URL), Branch: "main", Path: path, Interval: "1s"}})

	replicas := map[string]int{"web": 1, "worker": 1}
	testenv.WaitAppStatus(t, agent, app, 60*time.Second, "the good revision to deploy", testenv.ConvergedServices(first, replicas))
	running := testenv.ServiceContainers(t, app)

	for i, tc := range []struct {
		name string
		edit func() // changes the working clone from the good revision
		want string // the error, relative to the app directory
	}{
		{"unknown field", func() {
			repo.WriteFile(path+"/compose.yaml", strings.Replace(good, "    image: "+web+"\n", "    image: "+web+"\n    labelz: {team: shop}\n", 1))
		}, `compose.yaml:4:5: services.web.labelz: unknown field: not part of the compose specification (did you mean "labels"?)`},
		{"a required variable that is not set", func() {
			repo.WriteFile(path+"/compose.yaml", strings.Replace(good, "GREETING: hello", "GREETING: ${GREETING:?must be set}", 1))
		}, `compose.yaml:5:17: services.web.environment.GREETING: required variable GREETING is not set: must be set`},
		{"a missing env_file", func() {
			repo.WriteFile(path+"/compose.yaml", strings.Replace(good, "env_file: [web.env]", "env_file: [missing.env]", 1))
		}, `compose.yaml:6:16: services.web.env_file[0]: env file "missing.env" does not exist in the repository: commit it, or mark it required: false`},
		{"a bind source that leaves the repository", func() {
			repo.WriteFile(path+"/compose.yaml", strings.Replace(good, "./site.conf:/etc/site.conf:ro", "../../../etc/hostname:/etc/site.conf:ro", 1))
		}, `compose.yaml:8:9: services.web.volumes[0]: bind source "../../../etc/hostname" leaves the app directory: a relative source is a file of the app directory or, when the revision does not hold it, a directory of the app's state, and stays inside; mount other places by their absolute path (policy hostPaths)`},
		{"privileged without the policy", func() {
			repo.WriteFile(path+"/compose.yaml", strings.Replace(good, "  worker:\n", "  worker:\n    privileged: true\n", 1))
		}, "compose.yaml:10:17: services.worker.privileged: a privileged container can take over the host; allow it for this app with `allow: [privileged]` in driftless.yaml (or `--allow privileged`)"},
		{"a native manifest beside the compose file", func() {
			repo.WriteFile(path+"/compose.yaml", good)
			repo.WriteFile(path+"/extra.yaml", "apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: extra}\nspec: {image: "+web+"}\n")
		}, `extra.yaml:1:13: apiVersion: a driftless manifest beside the compose file compose.yaml: an app directory holds either a compose file or driftless manifests, not both; move the manifests to their own app directory, or list this file in .driftlessignore`},
	} {
		tc.edit()
		bad := repo.Commit("bad: " + tc.name)
		want := path + "/" + tc.want
		st := testenv.WaitAppStatus(t, agent, app, 30*time.Second, "the refusal of "+tc.name, func(st status.AppStatus) bool {
			return st.Refused != nil && st.Refused.Revision.SHA == bad
		})
		if !slices.Equal(st.Refused.Errors, []string{want}) {
			t.Errorf("%s: refusal errors\n  %q\nwant\n  %q", tc.name, st.Refused.Errors, want)
		}
		if st.Applied == nil || st.Applied.SHA != first || !strings.Contains(st.Message, first[:7]) {
			t.Errorf("%s: applied %s, message %q; want %s still running and said so", tc.name, testenv.RevShort(st.Applied), st.Message, first[:7])
		}
		refused := testenv.History(t, agent.Client(), app, string(status.KindRefused))
		if len(refused) != i+1 || refused[0].Revision == nil || refused[0].Revision.SHA != bad || !slices.Contains(refused[0].Errors, want) {
			t.Errorf("%s: newest refused history entry %+v (of %d), want %s with the error", tc.name, firstOf(refused), len(refused), bad[:7])
		}
		if now := testenv.ServiceContainers(t, app); !maps.EqualFunc(now, running, maps.Equal) {
			t.Fatalf("%s: the refused revision changed the running containers: %v, before %v", tc.name, now, running)
		}
		if i == 0 {
			// The last good revision is still healed while a bad one is
			// refused, and the repair is recorded.
			victim := app + "-web-1"
			testenv.Docker(t, "rm", "-f", victim)
			oldID := running["web"][victim]
			testenv.WaitAppStatus(t, agent, app, 60*time.Second, victim+" to be recreated at the good revision", func(st status.AppStatus) bool {
				id := testenv.ServiceContainers(t, app)["web"][victim]
				return id != "" && id != oldID && st.Applied != nil && st.Applied.SHA == first && slices.ContainsFunc(st.Services, func(s status.ServiceStatus) bool {
					return s.Name == "web" && s.Ready == 1 && len(s.Containers) == 1 && s.Containers[0].ID == id && s.Containers[0].Ready
				})
			})
			if got := testenv.FieldString(testenv.Inspect(t, "container", victim), "Config.Labels.dev.driftless.revision"); got != first {
				t.Errorf("the repaired %s carries revision %s, want the good %s", victim, got, first)
			}
			wantRepair := victim + " was removed outside Git; recreated"
			deadline := time.Now().Add(5 * time.Second)
			for !slices.ContainsFunc(testenv.History(t, agent.Client(), app, string(status.KindRepair)), func(e status.HistoryEntry) bool { return e.Summary == wantRepair }) {
				if time.Now().After(deadline) {
					// Known bug, see the report: Agent.trigger stops the
					// repair pass at its readiness wait because the head
					// (the refused revision) differs from the pass's
					// target, so the repair ends "stopped" and is never
					// recorded.
					var got []string
					for _, e := range testenv.History(t, agent.Client(), app, "") {
						got = append(got, string(e.Kind)+": "+e.Summary)
					}
					t.Errorf("%s was recreated while %s is refused, but no repair %q is in the history: %q",
						victim, bad[:7], wantRepair, got)
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			running = testenv.ServiceContainers(t, app)
		}
		repo.Remove(path + "/extra.yaml")
	}

	// The next good commit applies, and the refusal is gone.
	repo.WriteFile(path+"/compose.yaml", strings.Replace(good, "GREETING: hello", "GREETING: welcome", 1))
	fixed := repo.Commit("welcome")
	st := testenv.WaitAppStatus(t, agent, app, 60*time.Second, "the fixed revision to deploy", testenv.ConvergedServices(fixed, replicas))
	if st.Refused != nil {
		t.Errorf("refusal still shown after a good commit: %+v", st.Refused)
	}
	wantEnv(t, app+"-web-1", map[string]string{"GREETING": "welcome", "APP_FROM_FILE": "1"})
}
