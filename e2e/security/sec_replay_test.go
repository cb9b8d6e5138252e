package security

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// Replayed signed commits (#24, item 4): with verify on, someone who can
// push but holds no signing key must not be able to deploy an older signed
// commit by force-pushing the branch back to it. Real signatures (git
// commit -S with ssh-keygen and gpg keys), a real git daemon, the real
// agent binary.

// replayRig is an app whose two signed commits were deployed in turn.
type replayRig struct {
	app           string
	repo          *gitserver.Repo
	agent         *testenv.Agent
	older, newer  string
	image         string
	newerReplicas map[string]string // container name -> ID running the newer commit
}

// startReplayRig signs two commits with signer, starts the agent with
// args(app, url) and waits for each to be deployed.
func startReplayRig(t *testing.T, signer map[string]string, args func(app, url string) []string) *replayRig {
	t.Helper()
	r := &replayRig{app: testenv.UniqueApp(t), image: testenv.WorkloadImage(t, "v1")}
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	r.repo = gitserver.Init(t, base, "infra")
	r.repo.SignWith(signer)
	commit := func(msg, message string) string {
		r.repo.WriteFile("apps/"+r.app+"/web.yaml", testenv.ServiceManifest(r.image, 1, map[string]string{"MESSAGE": message}))
		return r.repo.Commit(msg)
	}
	r.older = commit("say one", "one")
	r.agent = testenv.StartAgent(t, t.TempDir(), args(r.app, r.repo.URL(server.URL))...)
	r.wait(t, "the older signed commit deployed", testenv.ConvergedTo(r.older, 1, r.image))
	r.newer = commit("say two", "two")
	r.wait(t, "the newer signed commit deployed", testenv.ConvergedTo(r.newer, 1, r.image))
	r.newerReplicas = testenv.IDsByName(testenv.DockerContainers(t, r.app))
	return r
}

func (r *replayRig) wait(t *testing.T, what string, ok func(status.AppStatus) bool) status.AppStatus {
	t.Helper()
	return testenv.WaitApp(t, r.agent, 60*time.Second, what, func(ctx context.Context, c *web.Client) (status.AppStatus, error) {
		return c.App(ctx, r.app)
	}, ok)
}

// TestSecReplayedSignedCommitIsRefusedWithVerify: verify on, onForcePush
// left out. The attacker resets main to the older signed commit and
// force-pushes; the signature verifies, but the agent keeps the newer
// revision running (the same container) and says why and how to accept.
func TestSecReplayedSignedCommitIsRefusedWithVerify(t *testing.T) {
	t.Parallel()
	signer := gitserver.NewSSHSigner(t, "ed25519")
	signers := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(signers, []byte(signer.AllowedSigner("deploy@example.com", `namespaces="git"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startReplayRig(t, signer.GitConfig(), func(app, url string) []string {
		return []string{"run", "--repo", url, "--branch", "main", "--path", "apps/" + app, "--app", app,
			"--interval", "1s", "--verify-ssh-allowed-signers", signers, "--allow-insecure-transport"}
	})

	r.repo.ResetHard(r.older) // git reset --hard OLDER && git push --force
	st := r.wait(t, "the replayed commit refused", func(st status.AppStatus) bool {
		return st.Refused != nil && st.Refused.Revision.SHA == r.older
	})
	why := "onForcePush: refuse, the default with verify on: a replayed older signed commit is not accepted"
	remedy := "push a commit that descends from " + r.newer[:7] + ", or set onForcePush: follow"
	for _, want := range []string{"not a fast-forward", why, remedy, "still running " + r.newer[:7]} {
		if !strings.Contains(st.Message, want) {
			t.Errorf("status message %q lacks %q", st.Message, want)
		}
	}
	if st.Applied == nil || st.Applied.SHA != r.newer || st.ForcePush == nil || !st.ForcePush.Refused || !st.ForcePush.VerifyDefault {
		t.Errorf("applied %s, forcePush %+v; want %s kept and the force-push refused by verify's default", testenv.RevShort(st.Applied), st.ForcePush, r.newer[:7])
	}
	es := testenv.History(t, r.agent.Client(), r.app, string(status.KindForcePush))
	if len(es) != 1 || es[0].Result != "refused" || !strings.Contains(es[0].Summary, why) {
		t.Errorf("force-push history = %+v, want one refused entry saying %q", es, why)
	}
	// Several polls later nothing was created or replaced.
	time.Sleep(3 * time.Second)
	if after := testenv.IDsByName(testenv.DockerContainers(t, r.app)); fmt.Sprint(after) != fmt.Sprint(r.newerReplicas) {
		t.Fatalf("containers changed after the replay: before %v, after %v", r.newerReplicas, after)
	}
}

// TestSecReplayedSignedCommitIsFollowedWhenExplicit: verify on and
// onForcePush: follow in driftless.yaml: the operator chose to follow
// rewritten history, and the older signed commit deploys.
func TestSecReplayedSignedCommitIsFollowedWhenExplicit(t *testing.T) {
	t.Parallel()
	signer := gitserver.NewGPGSigner(t, "Deploy Bot", "deploy@example.com")
	r := startReplayRig(t, signer.GitConfig(), func(app, url string) []string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "deploy.asc"), []byte(signer.PublicKey), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(dir, "driftless.yaml")
		body := fmt.Sprintf(`apps:
  - name: %s
    repo: %s
    branch: main
    path: apps/%s
    interval: 1s
    allowInsecureTransport: true
    onForcePush: follow
    verify:
      openpgpKeys: [deploy.asc]
`, app, url, app)
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{"run", "--config", cfg}
	})

	r.repo.ResetHard(r.older)
	st := r.wait(t, "the older signed commit followed", testenv.ConvergedTo(r.older, 1, r.image))
	if st.ForcePush == nil || st.ForcePush.Refused || st.Refused != nil {
		t.Errorf("forcePush %+v, refused %+v; want the force-push followed", st.ForcePush, st.Refused)
	}
	if es := testenv.History(t, r.agent.Client(), r.app, string(status.KindForcePush)); len(es) != 1 || es[0].Result != "followed" {
		t.Errorf("force-push history = %+v, want one followed entry", es)
	}
}
