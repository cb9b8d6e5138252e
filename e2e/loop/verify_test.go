package loop

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// Signed commits: an app with verify on applies only commits signed by a
// trusted key, made with the real `git commit -S` (ssh-keygen or gpg),
// served by a real git daemon and checked by the real agent binary.

// signedScenario is one kind of signature: how to sign with a trusted and
// with an unknown key, and how to start an agent that trusts the first.
type signedScenario struct {
	trusted, stranger map[string]string // git config of each signer
	signerType        string
	identity          string // the trusted signer as status shows it
	strangerRefusal   string // what the refusal of the stranger's commit says
	// agentArgs are the agent's arguments for app, given the repository URL.
	agentArgs func(t *testing.T, app, url string) []string
}

// TestSSHSignedCommitsOnlyAreApplied: --verify-ssh-allowed-signers.
func TestSSHSignedCommitsOnlyAreApplied(t *testing.T) {
	t.Parallel()
	trusted := gitserver.NewSSHSigner(t, "ed25519")
	stranger := gitserver.NewSSHSigner(t, "ed25519")
	signers := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(signers, []byte(trusted.AllowedSigner("deploy@example.com", `namespaces="git"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	runSignedScenario(t, signedScenario{
		trusted: trusted.GitConfig(), stranger: stranger.GitConfig(),
		signerType: gitsource.SignerSSH, identity: "deploy@example.com",
		strangerRefusal: "(not in allowed signers " + signers + ")",
		agentArgs: func(t *testing.T, app, url string) []string {
			return []string{"run", "--repo", url, "--branch", "main", "--path", "apps/" + app, "--app", app,
				"--interval", "1s", "--verify-ssh-allowed-signers", signers, "--allow-insecure-transport"}
		},
	})
}

// TestOpenPGPSignedCommitsOnlyAreApplied: verify.openpgpKeys in
// driftless.yaml, relative to the file.
func TestOpenPGPSignedCommitsOnlyAreApplied(t *testing.T) {
	t.Parallel()
	trusted := gitserver.NewGPGSigner(t, "Deploy Bot", "deploy@example.com")
	stranger := gitserver.NewGPGSigner(t, "Mallory", "mallory@example.com")
	runSignedScenario(t, signedScenario{
		trusted: trusted.GitConfig(), stranger: stranger.GitConfig(),
		signerType: gitsource.SignerOpenPGP, identity: "Deploy Bot <deploy@example.com>",
		strangerRefusal: "is signed by OpenPGP key " + stranger.Fingerprint + ", which is not in the trusted keys",
		agentArgs: func(t *testing.T, app, url string) []string {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "deploy.asc"), []byte(trusted.PublicKey), 0o600); err != nil {
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
    verify:
      openpgpKeys: [deploy.asc]
`, app, url, app)
			if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{"run", "--config", cfg}
		},
	})
}

func runSignedScenario(t *testing.T, sc signedScenario) {
	v1 := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	commit := func(msg, message string, signer map[string]string) string {
		t.Helper()
		repo.SignWith(signer)
		repo.WriteFile("apps/"+app+"/web.yaml", testenv.ServiceManifest(v1, 1, map[string]string{"MESSAGE": message}))
		return repo.Commit(msg)
	}
	waitStatus := func(what string, ok func(status.AppStatus) bool, agent *testenv.Agent) status.AppStatus {
		t.Helper()
		return testenv.WaitApp(t, agent, 60*time.Second, what, func(ctx context.Context, c *web.Client) (status.AppStatus, error) {
			return c.App(ctx, app)
		}, ok)
	}

	first := commit("deploy web", "one", sc.trusted)
	agent := testenv.StartAgent(t, t.TempDir(), sc.agentArgs(t, app, repo.URL(server.URL))...)
	st := waitStatus("the signed commit deployed", testenv.ConvergedTo(first, 1, v1), agent)
	if by := st.Applied.SignedBy; by.Type != sc.signerType || by.Identity != sc.identity || by.Key == "" {
		t.Errorf("applied revision signed by %+v, want a %s key of %q", by, sc.signerType, sc.identity)
	}
	ids := testenv.IDsByName(testenv.DockerContainers(t, app))

	refused := func(sha, want string) {
		t.Helper()
		st := waitStatus("commit "+sha[:7]+" refused", func(st status.AppStatus) bool {
			return st.Refused != nil && st.Refused.Revision.SHA == sha
		}, agent)
		if !strings.Contains(st.Refused.Reason, want) || !strings.Contains(st.Message, want) {
			t.Errorf("refusal %q, message %q: want both to say %q", st.Refused.Reason, st.Message, want)
		}
		if st.Applied == nil || st.Applied.SHA != first {
			t.Errorf("applied %+v after the refusal, want %s to keep running", st.Applied, first[:7])
		}
		if after := testenv.IDsByName(testenv.DockerContainers(t, app)); fmt.Sprint(after) != fmt.Sprint(ids) {
			t.Errorf("containers changed after refusing %s: before %v, after %v", sha[:7], ids, after)
		}
		es := testenv.History(t, agent.Client(), app, string(status.KindRefused))
		if len(es) == 0 || es[0].Revision == nil || es[0].Revision.SHA != sha || !strings.Contains(es[0].Summary, want) {
			t.Errorf("latest refusal in history = %+v, want %s saying %q", es, sha[:7], want)
		}
	}

	unsigned := commit("unsigned change", "two", nil)
	refused(unsigned, "commit "+unsigned[:7]+" is not signed; verify is on for this app")

	foreign := commit("change signed by a stranger", "two", sc.stranger)
	refused(foreign, sc.strangerRefusal)

	next := commit("signed change", "three", sc.trusted)
	st = waitStatus("the next signed commit deployed", testenv.ConvergedTo(next, 1, v1), agent)
	if st.Refused != nil {
		t.Errorf("refusal still shown after a signed commit: %+v", st.Refused)
	}
	if st.Applied.SignedBy.Identity != sc.identity {
		t.Errorf("applied revision signed by %+v, want %q", st.Applied.SignedBy, sc.identity)
	}

	// The dashboard and the CLI say who signed what runs.
	// html/template escapes more than html.EscapeString (a base64 "+"),
	// so compare unescaped text.
	page := html.UnescapeString(getPage(t, agent.URL+"/apps/"+app))
	if want := "<dt>Signed by</dt><dd><code>" + st.Applied.SignedBy.String() + "</code></dd>"; !strings.Contains(page, want) {
		t.Errorf("app page does not contain %q", want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, code := testenv.Run(t, ctx, t.TempDir(), "status", app, "--server="+agent.URL)
	if want := "signed:   by " + st.Applied.SignedBy.String(); code != 0 || !strings.Contains(out, want) {
		t.Errorf("driftless status: exit %d, want a line %q:\n%s", code, want, out)
	}
}

func getPage(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(body)
}
