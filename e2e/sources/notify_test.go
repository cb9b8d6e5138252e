package sources

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestPreviewNotifiesAndPostsCommitStatuses: a source's template with its
// own notification and a Gitea commitStatus gives a preview, deployed
// from a webhook, a pending then success status for its branch's commit
// on the source's repository, linked to the preview's URL, and a
// "synced" message to the source's destination that names the app and
// its preview.
func TestPreviewNotifiesAndPostsCommitStatuses(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	host := testenv.StartFakeHost(t)
	p := prefix()
	app := p + "-preview-login"
	removeApps(t, app)
	token := filepath.Join(t.TempDir(), "gitea-token")
	if err := os.WriteFile(token, []byte("gitea-token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	compose := func(msg string) string {
		return fmt.Sprintf("services:\n  web:\n    image: %s\n    environment: {MESSAGE: %s}\n", image, msg)
	}
	repo, url, agent := startPreviews(t, p, compose("main"), fmt.Sprintf(`
    preview:
      url: 'https://{{.Slug}}.preview.example.com'
    template:
      notifications:
        - name: shop-team
          url: '%s'
      commitStatus:
        provider: gitea
        baseURL: http://%s/api/v1
        repo: acme/shop
        tokenFile: %s
`, host.HookURL(), host.Addr, token))

	repo.Branch("preview/login")
	repo.WriteFile("deploy/compose.yaml", compose("login"))
	sha := repo.Commit("login page")
	forgeHook(t, agent, "gitea", "create", url, "preview/login")

	host.WaitFor(t, 2*time.Minute, "success status for the preview's commit", func() bool {
		s := host.Statuses(sha)
		return len(s) > 0 && s[len(s)-1].State == "success"
	})
	const previewURL = "https://preview-login.preview.example.com"
	var states []string
	for _, s := range host.Statuses(sha) {
		states = append(states, s.State)
		if s.Repo != "acme/shop" || s.Context != "driftless/"+app || s.TargetURL != previewURL || s.Authorization != "token gitea-token-1" {
			t.Errorf("status %+v: want repo acme/shop, context driftless/%s, target %s, the token", s, app, previewURL)
		}
	}
	if strings.Join(states, ",") != "pending,success" {
		t.Errorf("statuses for %s = %v, want pending then success", sha[:7], states)
	}

	title := "driftless: " + app + " synced " + sha[:7]
	host.WaitFor(t, 30*time.Second, "synced message", func() bool { _, ok := host.Message(title); return ok })
	m, _ := host.Message(title)
	for _, want := range []string{app + ": synced " + sha[:7], "Preview: " + previewURL} {
		if !strings.Contains(m.Message, want) {
			t.Errorf("synced message lacks %q:\n%s", want, m.Message)
		}
	}
}
