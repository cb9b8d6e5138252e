package web

import (
	"strings"
	"testing"
)

func TestRecognizeHost(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		url, path    string
		commit, tree string
	}{
		{"https://github.com/acme/shop.git", "deploy/prod",
			"https://github.com/acme/shop/commit/" + sha, "https://github.com/acme/shop/tree/" + sha + "/deploy/prod"},
		{"git@github.com:acme/shop.git", ".",
			"https://github.com/acme/shop/commit/" + sha, "https://github.com/acme/shop/tree/" + sha},
		{"ssh://git@github.com/acme/shop", "/apps/web/",
			"https://github.com/acme/shop/commit/" + sha, "https://github.com/acme/shop/tree/" + sha + "/apps/web"},
		{"https://gitlab.com/group/sub/shop.git", "k8s",
			"https://gitlab.com/group/sub/shop/-/commit/" + sha, "https://gitlab.com/group/sub/shop/-/tree/" + sha + "/k8s"},
		{"ssh://git@gitlab.example.com:2222/ops/shop.git", "",
			"https://gitlab.example.com/ops/shop/-/commit/" + sha, "https://gitlab.example.com/ops/shop/-/tree/" + sha},
		{"https://codeberg.org/me/shop", "x y",
			"https://codeberg.org/me/shop/commit/" + sha, "https://codeberg.org/me/shop/src/commit/" + sha + "/x%20y"},
		{"https://gitea.internal:3000/me/shop.git", "app",
			"https://gitea.internal:3000/me/shop/commit/" + sha, "https://gitea.internal:3000/me/shop/src/commit/" + sha + "/app"},
		{"git@forgejo.lan:me/shop.git", "app",
			"https://forgejo.lan/me/shop/commit/" + sha, "https://forgejo.lan/me/shop/src/commit/" + sha + "/app"},
		{"https://bitbucket.org/team/shop.git", "app",
			"https://bitbucket.org/team/shop/commits/" + sha, "https://bitbucket.org/team/shop/src/" + sha + "/app"},
		{"git@bitbucket.org:team/shop.git", "",
			"https://bitbucket.org/team/shop/commits/" + sha, "https://bitbucket.org/team/shop/src/" + sha},
		// Unknown hosts and unusable URLs link nowhere.
		{"https://git.example.com/team/shop.git", "app", "", ""},
		{"git://127.0.0.1:9418/shop.git", "app", "", ""},
		{"/srv/git/shop.git", "app", "", ""},
		{"https://github.com/justowner", "", "", ""},
		{"file:///github.com/acme/shop", "", "", ""},
		{"", "", "", ""},
	}
	for _, tt := range tests {
		h := RecognizeHost(tt.url)
		if got := h.CommitURL(sha); got != tt.commit {
			t.Errorf("RecognizeHost(%q).CommitURL = %q, want %q", tt.url, got, tt.commit)
		}
		if got := h.TreeURL(sha, tt.path); got != tt.tree {
			t.Errorf("RecognizeHost(%q).TreeURL(%q) = %q, want %q", tt.url, tt.path, got, tt.tree)
		}
	}
}

func TestLinksForTemplatesWin(t *testing.T) {
	h := LinksFor("git://127.0.0.1:9418/shop.git", "https://git.example.com/shop/commit/{sha}", "https://git.example.com/shop/src/{sha}/{path}")
	if got, want := h.CommitURL("abc1234"), "https://git.example.com/shop/commit/abc1234"; got != want {
		t.Errorf("CommitURL = %q, want %q", got, want)
	}
	if got, want := h.TreeURL("abc1234", "./deploy"), "https://git.example.com/shop/src/abc1234/deploy"; got != want {
		t.Errorf("TreeURL = %q, want %q", got, want)
	}
	// A template overrides one link only; the other still comes from the host.
	h = LinksFor("https://github.com/acme/shop", "https://mirror.example/{sha}", "")
	if got, want := h.TreeURL("abc", ""), "https://github.com/acme/shop/tree/abc"; got != want {
		t.Errorf("TreeURL = %q, want %q", got, want)
	}
	if got := (HostLinks{}).CommitURL("abc"); got != "" {
		t.Errorf("zero HostLinks linked %q", got)
	}
}

// Every SHA shown for a GitHub-hosted app links to its commit, the path to
// the tree at the running revision, and the API carries the same links.
func TestPagesAndAPILinkToGitHost(t *testing.T) {
	env := newTestEnv(t, nil)
	const applied = "0f1e2d3c4b5a69788796a5b4c3d2e1f001234567"
	body := env.page("/apps/shop")
	assertContains(t, "app page", body,
		`href="https://github.com/acme/shop/commit/`+applied+`"`,
		`href="https://github.com/acme/shop/tree/`+applied+`/deploy"`,
		// the branch head and the refused revision link too
		`href="https://github.com/acme/shop/commit/a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"`,
	)
	hist := env.page("/history")
	assertContains(t, "history", hist,
		`href="https://gitlab.com/acme/blog/-/commit/0000000000000000000000000000000000000024"`, // blog is on GitLab
		`href="https://github.com/acme/shop/commit/0000000000000000000000000000000000000027"`)
	entry := env.page("/history/27")
	assertContains(t, "entry page", entry, `href="https://github.com/acme/shop/commit/0000000000000000000000000000000000000027"`)

	w := env.do("GET", "/api/v1/apps/shop", "")
	assertContains(t, "app API", w.Body.String(),
		`"links":{"applied":{"commit":"https://github.com/acme/shop/commit/`+applied+`","tree":"https://github.com/acme/shop/tree/`+applied+`/deploy"}`)
	w = env.do("GET", "/api/v1/history/27", "")
	assertContains(t, "entry API", w.Body.String(), `"links":{"commit":"https://github.com/acme/shop/commit/0000000000000000000000000000000000000027"`)
	// An app on an unknown host has no links, and no empty anchors.
	if body := env.page("/apps/wiki"); strings.Contains(body, `class="sha commit"`) {
		t.Error("app on an unrecognised host shows commit links")
	}
}
