package loop

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// states lists the commit statuses posted for sha, in order, and checks
// each went to acme/infra as GitHub wants it: the configured token, the
// documented media type.
func states(t *testing.T, host *testenv.FakeHost, sha string) []string {
	t.Helper()
	var out []string
	for _, s := range host.Statuses(sha) {
		if s.Repo != "acme/infra" || s.Authorization != "Bearer gh-token-1" || s.Accept != "application/vnd.github+json" {
			t.Errorf("commit status to %s with Authorization %q, Accept %q; want acme/infra, the configured token, GitHub's media type", s.Repo, s.Authorization, s.Accept)
		}
		out = append(out, s.State)
	}
	return out
}

// startNotifyAgent runs an agent from a driftless.yaml whose one app
// notifies the fake host's webhook and posts GitHub commit statuses to it.
func startNotifyAgent(t *testing.T, host *testenv.FakeHost, replicas int, extra string) (app string, repo *gitserver.Repo, agent *testenv.Agent, path string) {
	t.Helper()
	v1 := testenv.WorkloadImage(t, "v1")
	app = testenv.UniqueApp(t)
	base := t.TempDir()
	server := gitserver.StartDaemon(t, base)
	repo = gitserver.Init(t, base, "infra")
	path = "apps/" + app
	repo.WriteFile(path+"/web.yaml", testenv.ServiceManifest(v1, replicas, map[string]string{"MESSAGE": "one"}))
	repo.Commit("first deploy")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hook-url"), []byte(host.HookURL()+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "gh-token"), []byte("gh-token-1\n"), 0o600)
	cfg := filepath.Join(dir, "driftless.yaml")
	body := fmt.Sprintf(`externalURL: https://driftless.example.com
%s
notifications:
  - name: team
    urlFile: hook-url
apps:
  - name: %s
    repo: %s
    branch: main
    path: %s
    interval: 1s
    allowInsecureTransport: true
    commitStatus:
      provider: github
      baseURL: http://%s
      repo: acme/infra
      tokenFile: gh-token
`, extra, app, repo.URL(server), path, host.Addr)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	agent = testenv.StartAgent(t, t.TempDir(), "run", "--config", cfg)
	return app, repo, agent, path
}

// TestNotifyGoodCommitThenCrashingImage: a good commit gives exactly one
// "synced" message and a pending then success status for its SHA; a
// crashing image gives one failure message and a failure status, and no
// more messages while the agent backs off and polls every second.
func TestNotifyGoodCommitThenCrashingImage(t *testing.T) {
	t.Parallel()
	host := testenv.StartFakeHost(t)
	app, repo, agent, path := startNotifyAgent(t, host, 2, "")
	first := repo.Head()
	short := first[:7]

	host.WaitFor(t, 90*time.Second, "success status for the first commit", func() bool {
		s := states(t, host, first)
		return len(s) > 0 && s[len(s)-1] == "success"
	})
	if got := states(t, host, first); strings.Join(got, ",") != "pending,success" {
		t.Errorf("statuses for %s = %v, want pending then success", short, got)
	}
	m, ok := host.Message("synced " + short)
	if !ok {
		host.WaitFor(t, 10*time.Second, "synced message", func() bool { _, ok := host.Message("synced " + short); return ok })
		m, _ = host.Message("synced " + short)
	}
	if m.Title != "driftless: "+app+" synced "+short {
		t.Errorf("title %q", m.Title)
	}
	for _, want := range []string{app + ": synced " + short + " “first deploy”", "Revision: " + short + " “first deploy” by ", "Details: https://driftless.example.com/history/"} {
		if !strings.Contains(m.Message, want) {
			t.Errorf("synced message lacks %q:\n%s", want, m.Message)
		}
	}
	all := host.Statuses(first)
	st := all[len(all)-1]
	if st.Context != "driftless/"+app || !strings.HasPrefix(st.TargetURL, "https://driftless.example.com/history/") {
		t.Errorf("status context %q target %q", st.Context, st.TargetURL)
	}

	v1 := testenv.WorkloadImage(t, "v1")
	repo.WriteFile(path+"/web.yaml", testenv.ServiceManifest(v1, 2, map[string]string{"MESSAGE": "two", "WORKLOAD_CRASH": "true"}))
	bad := repo.Commit("crash at start")
	host.WaitFor(t, 90*time.Second, "failure status for the crashing commit", func() bool {
		s := states(t, host, bad)
		return len(s) > 0 && s[len(s)-1] == "failure"
	})
	host.WaitFor(t, 10*time.Second, "failure message", func() bool { return len(host.Titles("rollout-failed")) > 0 })
	failedAt := time.Now()

	// Polls come every second and the failed rollout is retried after a
	// backoff: none of that is news.
	time.Sleep(20 * time.Second)
	if got := host.Titles("rollout-failed"); len(got) != 1 || got[0] != "driftless: "+app+" rollout-failed "+bad[:7] {
		t.Errorf("failure messages = %q, want exactly one for %s", got, bad[:7])
	}
	if got := host.Titles("synced"); len(got) != 1 {
		t.Errorf("synced messages = %q, want only the first commit's", got)
	}
	var after []string
	for _, m := range host.Messages() {
		if m.At.After(failedAt) {
			after = append(after, m.Title)
		}
	}
	t.Logf("messages in the 20 s after the failure: %q; statuses for %s: %v", after, bad[:7], states(t, host, bad))
	if len(after) > 2 {
		t.Errorf("a storm: %d messages in 20 s while the app backs off: %q", len(after), after)
	}
	if s, err := agent.Client().App(t.Context(), app); err == nil && s.Health != drift.HealthDegraded {
		t.Logf("health after the crash: %s (%s)", s.Health, s.Message)
	}
}

// TestNotifyBatchesDriftRepairs: replicas removed again and again inside
// one batch window give one message that counts the repairs.
func TestNotifyBatchesDriftRepairs(t *testing.T) {
	t.Parallel()
	host := testenv.StartFakeHost(t)
	app, repo, agent, _ := startNotifyAgent(t, host, 3, "notify: {repairBatch: 40s}")
	first := repo.Head()
	host.WaitFor(t, 90*time.Second, "success status for the first commit", func() bool {
		s := states(t, host, first)
		return len(s) > 0 && s[len(s)-1] == "success"
	})
	client := agent.Client()
	repairs := func() int {
		page, err := client.History(t.Context(), app, []string{string(status.KindRepair)}, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Entries)
	}
	start := time.Now()
	for i := range 5 {
		name := fmt.Sprintf("%s-web-%d", app, i%3+1)
		testenv.Docker(t, "rm", "-f", name)
		host.WaitFor(t, 30*time.Second, "repair of "+name, func() bool { return repairs() > i })
	}
	n := repairs()
	if time.Since(start) > 40*time.Second {
		t.Skipf("the repairs took %s, longer than the batch window; the engine is too slow for this check", time.Since(start))
	}
	host.WaitFor(t, 60*time.Second, "the batched repair message", func() bool { return len(host.Titles("drift-repaired")) > 0 })
	got := host.Titles("drift-repaired")
	m, _ := host.Message("drift-repaired")
	want := fmt.Sprintf("%s: %d changes made outside Git were repaired", app, n)
	if len(got) != 1 || !strings.HasPrefix(m.Message, want) {
		t.Fatalf("repair messages %q, first %q; want one saying %q", got, m.Message, want)
	}
}

// TestNotifyRefusedRevisionAndTestButton: an invalid commit gives a
// "refused" message that quotes file:line and a failure status for its
// SHA; the API's test action reaches the destination at once.
func TestNotifyRefusedRevisionAndTestButton(t *testing.T) {
	t.Parallel()
	host := testenv.StartFakeHost(t)
	app, repo, agent, path := startNotifyAgent(t, host, 1, "")
	first := repo.Head()
	host.WaitFor(t, 90*time.Second, "success status for the first commit", func() bool {
		s := states(t, host, first)
		return len(s) > 0 && s[len(s)-1] == "success"
	})

	v1 := testenv.WorkloadImage(t, "v1")
	repo.WriteFile(path+"/web.yaml", strings.Replace(testenv.ServiceManifest(v1, 1, nil), "replicas: 1", "replicas: many", 1))
	bad := repo.Commit("typo in replicas")
	host.WaitFor(t, 60*time.Second, "failure status for the refused commit", func() bool {
		return strings.Join(states(t, host, bad), ",") == "failure"
	})
	host.WaitFor(t, 10*time.Second, "refused message", func() bool { _, ok := host.Message("refused " + bad[:7]); return ok })
	m, _ := host.Message("refused " + bad[:7])
	for _, want := range []string{app + ": refused " + bad[:7] + " “typo in replicas”", path + "/web.yaml:", "Details: https://driftless.example.com/history/"} {
		if !strings.Contains(m.Message, want) {
			t.Errorf("refused message lacks %q:\n%s", want, m.Message)
		}
	}

	resp, err := http.Post(agent.URL+"/api/v1/notifications/team/test", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("test notification: %s", resp.Status)
	}
	if got := host.Titles("test notification"); len(got) != 1 {
		t.Fatalf("test messages %q, want one, there when the API answered", got)
	}
}
