package gitsource_test

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/gitsource"
)

func TestCheckTransport(t *testing.T) {
	cases := []struct {
		url    string
		scheme string // "" = accepted
		shown  string // the URL as the error shows it
		reason string
	}{
		{url: "https://example.com/org/app.git"},
		{url: "HTTPS://example.com/org/app.git"},
		{url: "ssh://git@example.com/org/app.git"},
		{url: "ssh://git@example.com:2222/org/app.git"},
		{url: "git@example.com:org/app.git"},
		{url: "deploy@example.com:repos/app"},
		{url: "git://example.com/app.git", scheme: "git", shown: "git://example.com/app.git",
			reason: "git:// is unauthenticated and unencrypted: anyone on the network path can change what is deployed"},
		{url: "GIT://example.com/app.git", scheme: "git", shown: "GIT://example.com/app.git", reason: "git:// is unauthenticated"},
		{url: "http://example.com/app.git", scheme: "http", shown: "http://example.com/app.git", reason: "http:// is unencrypted"},
		{url: "http://user:pass@example.com/app.git", scheme: "http", shown: "http://example.com/app.git", reason: "read the credentials sent"},
		{url: "http://tok3n@example.com/app.git", scheme: "http", shown: "http://example.com/app.git", reason: "http://"},
		{url: "file:///x", scheme: "file", shown: "file:///x", reason: "anyone who can write to it on this host"},
		{url: "/abs/path", scheme: "file", shown: "/abs/path", reason: "a local repository"},
		{url: "./rel", scheme: "file", shown: "./rel", reason: "a local repository"},
		{url: "../rel/app.git", scheme: "file", shown: "../rel/app.git", reason: "a local repository"},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			err := gitsource.CheckTransport(c.url)
			if c.scheme == "" {
				if err != nil {
					t.Fatalf("refused a secure URL: %v", err)
				}
				return
			}
			var te *gitsource.InsecureTransportError
			if !errors.As(err, &te) || !errors.Is(err, gitsource.ErrInsecureTransport) {
				t.Fatalf("CheckTransport(%q) = %v, want an InsecureTransportError", c.url, err)
			}
			if te.Scheme != c.scheme || te.URL != c.shown {
				t.Errorf("scheme, URL = %q, %q; want %q, %q", te.Scheme, te.URL, c.scheme, c.shown)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.shown) || !strings.Contains(msg, c.reason) {
				t.Errorf("message %q should name %q and say %q", msg, c.shown, c.reason)
			}
			for _, secret := range []string{"pass", "tok3n"} {
				if strings.Contains(msg, secret) {
					t.Errorf("message leaks %q: %s", secret, msg)
				}
			}
		})
	}
}

func TestNewRefusesInsecureTransportUnlessAllowed(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	head := repo.Commit("c1")
	url := repo.URL(gitserver.StartDaemon(t, base))

	_, err := gitsource.New(gitsource.Config{URL: url, Dir: filepath.Join(t.TempDir(), "clone")})
	if !errors.Is(err, gitsource.ErrInsecureTransport) || !strings.Contains(err.Error(), url) {
		t.Fatalf("New(%s) = %v, want the insecure transport refused", url, err)
	}
	s, err := gitsource.New(gitsource.Config{URL: url, Dir: filepath.Join(t.TempDir(), "clone"), AllowInsecureTransport: true})
	if err != nil {
		t.Fatalf("New with the opt-in: %v", err)
	}
	if res := fetch(t, s); res.Revision.SHA != head {
		t.Fatalf("fetched %s, want %s", res.Revision.SHA, head)
	}
}

// FuzzCheckTransport: no URL makes it panic, and no password in a URL
// reaches the message.
func FuzzCheckTransport(f *testing.F) {
	for _, seed := range []string{
		"https://example.com/a.git", "http://u:p@h/r", "git://h/r", "file:///x", "/abs", "./rel",
		"git@h:r", "ssh://u@h:22/r", "HTTP://U:P@H/R", "http://[::1]:80/r", "", "::", "http://%zz@h/",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		err := gitsource.CheckTransport(raw)
		shown := gitsource.RedactURL(raw)
		u, perr := url.Parse(raw)
		if perr != nil || u.User == nil || !strings.Contains(raw, "://") {
			return
		}
		pass, ok := u.User.Password()
		if !ok || len(pass) < 4 || strings.Contains(u.Host+u.Path, pass) || strings.Contains(u.Scheme, pass) {
			return
		}
		if strings.Contains(shown, pass) {
			t.Fatalf("RedactURL(%q) = %q keeps the password", raw, shown)
		}
		if err != nil && strings.Contains(err.Error(), pass) {
			t.Fatalf("CheckTransport(%q) leaks the password: %v", raw, err)
		}
	})
}

func TestIsAncestor(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	c1 := repo.Commit("c1")
	c2 := repo.Commit("c2")
	// A feature branch merged back: both sides descend from c2, the merge
	// from both.
	repo.Branch("feature")
	f1 := repo.Commit("f1")
	repo.Git("checkout", "--quiet", "main")
	m1 := repo.Commit("m1 on main")
	repo.Git("merge", "--quiet", "--no-ff", "-m", "merge feature", "feature")
	merge := repo.Commit("after merge")
	url := repo.URL(gitserver.StartDaemon(t, base))
	dir := filepath.Join(t.TempDir(), "clone")
	s := newSource(t, gitsource.Config{URL: url, Branch: "main", Dir: dir})
	fetch(t, s)

	// History rewritten: c2 and everything after it replaced by r2.
	repo.ResetHard(c1)
	r2 := repo.Commit("r2 replaces c2")
	if res := fetch(t, s); !res.ForcePushed {
		t.Fatalf("rewrite not seen as a force-push: %+v", res)
	}

	ctx := context.Background()
	cases := []struct {
		name                 string
		ancestor, descendant string
		want                 bool
	}{
		{"linear", c1, c2, true},
		{"same commit", c2, c2, true},
		{"backwards", c2, c1, false},
		{"merge from main side", m1, merge, true},
		{"merge from feature side", f1, merge, true},
		{"feature tip is not after main", m1, f1, false},
		{"rewritten head does not descend from the old one", merge, r2, false},
		{"rewritten head still descends from the shared base", c1, r2, true},
	}
	for _, c := range cases {
		got, err := s.IsAncestor(ctx, c.ancestor, c.descendant)
		if err != nil || got != c.want {
			t.Errorf("%s: IsAncestor = %v, %v; want %v", c.name, got, err, c.want)
		}
	}

	// The old head is unreachable from every ref now, but the clone still
	// holds it, also for a Source opened after a restart.
	restarted := newSource(t, gitsource.Config{URL: url, Branch: "main", Dir: dir})
	if got, err := restarted.IsAncestor(ctx, merge, r2); err != nil || got {
		t.Errorf("after restart: IsAncestor(old head, new head) = %v, %v; want false, nil", got, err)
	}

	// A fresh clone never saw the old head: it cannot tell, and says so.
	fresh := newSource(t, gitsource.Config{URL: url, Branch: "main"})
	fetch(t, fresh)
	_, err := fresh.IsAncestor(ctx, merge, r2)
	if !errors.Is(err, gitsource.ErrCommitNotFound) || !strings.Contains(err.Error(), merge) {
		t.Errorf("unknown base: err = %v, want ErrCommitNotFound naming %s", err, merge)
	}
}

func TestTagMovedSidewaysIsAForcePush(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	c1 := repo.Commit("c1")
	c2 := repo.Commit("c2")
	repo.Tag("release")
	url := repo.URL(gitserver.StartDaemon(t, base))
	s := newSource(t, gitsource.Config{URL: url, Tag: "release"})
	fetch(t, s)

	repo.ResetHard(c1)
	side := repo.Commit("side")
	repo.Tag("release")
	res := fetch(t, s)
	if res.Revision.SHA != side || !res.ForcePushed {
		t.Fatalf("tag moved sideways: %+v, want force-pushed %s", res, side)
	}
	if ok, err := s.IsAncestor(context.Background(), c2, side); err != nil || ok {
		t.Fatalf("IsAncestor(old tag target, new) = %v, %v; want false", ok, err)
	}

	forward := repo.Commit("forward")
	repo.Tag("release")
	if res := fetch(t, s); res.Revision.SHA != forward || res.ForcePushed {
		t.Fatalf("tag moved forward: %+v, want a fast-forward to %s", res, forward)
	}
}
