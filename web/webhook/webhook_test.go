package webhook

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNormalizeRepo(t *testing.T) {
	want := "github.com/acme/shop"
	for _, in := range []string{
		"https://github.com/acme/shop.git",
		"https://github.com/acme/shop",
		"https://github.com/acme/shop/",
		"https://user:p4ss@GitHub.com/acme/shop.git",
		"http://github.com:443/acme/shop.git",
		"git@github.com:acme/shop.git",
		"ssh://git@github.com:22/acme/shop.git",
		"git://github.com/acme/shop.git",
		"github.com/Acme/Shop",
	} {
		if got := NormalizeRepo(in); got != want {
			t.Errorf("NormalizeRepo(%q) = %q, want %q", in, got, want)
		}
	}
	if got := NormalizeRepo("https://github.com/acme/shop-api.git"); got == want {
		t.Errorf("a different repository normalized to %q", got)
	}
	if got := NormalizeRepo("gitea.local:2222/acme/wiki.git"); got != "gitea.local/acme/wiki" {
		t.Errorf("host:port/path form: got %q", got)
	}
	if got := NormalizeRepo(""); got != "" {
		t.Errorf("empty URL normalized to %q", got)
	}
}

// FuzzParsePush feeds arbitrary payloads to every provider's parser: none
// may panic, and a parsed push names refs in full form.
func FuzzParsePush(f *testing.F) {
	for _, name := range []string{"github_push.json", "github_ping.json", "gitlab_push.json", "gitea_push.json", "bitbucket_push.json", "generic_push.json"} {
		f.Add(readFixture(f, name))
	}
	f.Add(`{"push":{"changes":[{"new":null}]},"repository":{"links":{"html":{"href":"x"}}}}`)
	f.Add(`{"ref":"","repository":null}`)
	f.Add(`null`)
	f.Add(`{"repository":"git@h:o/r","ref":"main"}`)
	headers := []http.Header{
		{"X-Github-Event": {"push"}}, {"X-Gitlab-Event": {"Push Hook"}}, {"X-Gitea-Event": {"push"}},
		{"X-Event-Key": {"repo:push"}}, {},
	}
	f.Fuzz(func(t *testing.T, body string) {
		for i, p := range Providers() {
			ev, err := p.Parse(headers[i], []byte(body))
			if err != nil {
				continue
			}
			for _, ref := range ev.Refs {
				if !strings.HasPrefix(ref, "refs/") {
					t.Errorf("%s: ref %q is not a full ref", p.Name, ref)
				}
			}
			for _, r := range ev.Repos {
				NormalizeRepo(r)
			}
		}
	})
}

// TestParseForgePayloads reads each forge's real payload as the pushed
// repository and ref; a ping is a ping whatever else it carries.
func TestParseForgePayloads(t *testing.T) {
	byName := map[string]Provider{}
	for _, p := range Providers() {
		byName[p.Name] = p
	}
	cases := []struct {
		provider, fixture string
		header            http.Header
		repo, ref         string
		ping              bool
	}{
		{"github", "github_push.json", http.Header{"X-Github-Event": {"push"}}, "github.com/acme/shop", "refs/heads/main", false},
		{"github", "github_ping.json", http.Header{"X-Github-Event": {"ping"}}, "", "", true},
		{"gitlab", "gitlab_push.json", http.Header{"X-Gitlab-Event": {"Push Hook"}}, "gitlab.com/acme/blog", "refs/heads/release", false},
		{"gitea", "gitea_push.json", http.Header{"X-Forgejo-Event": {"push"}}, "gitea.example.com/acme/wiki", "refs/heads/main", false},
		// A branch created or deleted changes a source of previews.
		{"github", "github_delete.json", http.Header{"X-Github-Event": {"delete"}}, "github.com/acme/shop", "refs/heads/preview/login", false},
		{"gitea", "gitea_create.json", http.Header{"X-Gitea-Event": {"create"}}, "gitea.example.com/acme/wiki", "refs/heads/preview/login", false},
		{"bitbucket", "bitbucket_push.json", http.Header{"X-Event-Key": {"repo:push"}}, "bitbucket.org/acme/docs", "refs/heads/main", false},
		{"generic", "generic_push.json", http.Header{}, "github.com/acme/shop", "refs/heads/main", false},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			got, err := byName[c.provider].Parse(c.header, []byte(readFixture(t, c.fixture)))
			if err != nil {
				t.Fatal(err)
			}
			if got.Ping != c.ping {
				t.Fatalf("Ping = %v, want %v (%+v)", got.Ping, c.ping, got)
			}
			if c.ping {
				return
			}
			var repos []string
			for _, r := range got.Repos {
				repos = append(repos, NormalizeRepo(r))
			}
			if !slices.Contains(repos, c.repo) || !slices.Equal(got.Refs, []string{c.ref}) {
				t.Errorf("got repos %v refs %v, want %s at %s", repos, got.Refs, c.repo, c.ref)
			}
		})
	}
	// Another event is named, not mistaken for a push.
	got, err := byName["github"].Parse(http.Header{"X-Github-Event": {"issues"}}, []byte(readFixture(t, "github_push.json")))
	if err != nil || got.Event != "issues" {
		t.Errorf("issues event: got %+v, %v", got, err)
	}
}
