package gitsource_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/gitsource"
)

func newSource(t *testing.T, cfg gitsource.Config) *gitsource.Source {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(t.TempDir(), "clone")
	}
	// The test servers speak git://, http:// and file://.
	cfg.AllowInsecureTransport = true
	s, err := gitsource.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func fetch(t *testing.T, s *gitsource.Source) gitsource.FetchResult {
	t.Helper()
	res, err := s.Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch %s: %v", s.Describe(), err)
	}
	return res
}

func readFile(t *testing.T, fsys fs.FS, name string) string {
	t.Helper()
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func TestFetchTracksBranchOverGitDaemon(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	repo.WriteFile("README.md", "not a manifest")
	repo.WriteFile("deploy/web.yaml", "image: web:1\n")
	first := repo.Commit("deploy web 1\n\nlonger body")
	url := repo.URL(gitserver.StartDaemon(t, base))

	s := newSource(t, gitsource.Config{URL: url, Path: "deploy"})
	res := fetch(t, s)
	if !res.Changed || res.Revision.SHA != first || res.ForcePushed {
		t.Fatalf("first fetch = %+v, want changed head %s", res, first)
	}
	if res.Revision.Subject != "deploy web 1" || res.Revision.Author != "Test Author" || res.Revision.Email != "author@example.com" {
		t.Errorf("revision metadata = %+v", res.Revision)
	}
	if res.Revision.Time.IsZero() {
		t.Error("revision has no time")
	}

	again := fetch(t, s)
	if again.Changed || again.Revision.SHA != first {
		t.Fatalf("fetch without remote change = %+v, want unchanged %s", again, first)
	}

	repo.WriteFile("deploy/web.yaml", "image: web:2\n")
	second := repo.Commit("deploy web 2")
	res = fetch(t, s)
	if !res.Changed || res.Revision.SHA != second || res.Previous != first || res.ForcePushed {
		t.Fatalf("fetch after push = %+v, want changed %s (previous %s)", res, second, first)
	}

	oldFiles, err := s.Files(context.Background(), first)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, oldFiles, "web.yaml"); got != "image: web:1\n" {
		t.Errorf("web.yaml at first commit = %q", got)
	}
	if _, err := fs.Stat(oldFiles, "README.md"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("files outside the manifests path are visible: %v", err)
	}
	newFiles, err := s.Files(context.Background(), second)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, newFiles, "web.yaml"); got != "image: web:2\n" {
		t.Errorf("web.yaml at second commit = %q", got)
	}

	log, err := s.Log(context.Background(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 || log[0].SHA != second || log[1].SHA != first {
		t.Errorf("Log = %+v, want [%s %s]", log, second, first)
	}
}

func TestRevertCommitsAreRecognised(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	repo.WriteFile("web.yaml", "image: web:1\n")
	repo.Commit("v1")
	repo.WriteFile("web.yaml", "image: web:2\n")
	bad := repo.Commit("v2")
	revert := repo.Revert(bad)
	handRevert := repo.Commit("Roll back again\n\nThis reverts commit " + bad[:9] + ".")

	s := newSource(t, gitsource.Config{URL: repo.Bare})
	fetch(t, s)

	rev, err := s.Revision(context.Background(), revert)
	if err != nil {
		t.Fatal(err)
	}
	if !rev.Revert || rev.Reverts != bad || rev.Subject != `Revert "v2"` {
		t.Errorf("git revert commit = %+v, want revert of %s", rev, bad)
	}
	rev, err = s.Revision(context.Background(), handRevert)
	if err != nil {
		t.Fatal(err)
	}
	if !rev.Revert || rev.Reverts != bad[:9] {
		t.Errorf("hand-written revert = %+v, want revert of %s", rev, bad[:9])
	}
	rev, err = s.Revision(context.Background(), bad)
	if err != nil {
		t.Fatal(err)
	}
	if rev.Revert || rev.Reverts != "" {
		t.Errorf("ordinary commit marked as revert: %+v", rev)
	}
}

func TestTracksTagOverHTTP(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	repo.WriteFile("web.yaml", "v1")
	v1 := repo.Commit("v1")
	repo.Tag("release")
	repo.WriteFile("web.yaml", "v2")
	v2 := repo.Commit("v2")
	url := repo.URL(gitserver.StartHTTP(t, base, "", ""))

	s := newSource(t, gitsource.Config{URL: url, Tag: "release"})
	if res := fetch(t, s); res.Revision.SHA != v1 {
		t.Fatalf("tag fetch = %s, want %s (the tagged commit, not the branch head %s)", res.Revision.SHA, v1, v2)
	}
	if res := fetch(t, s); res.Changed {
		t.Fatalf("unchanged tag reported as changed")
	}
	repo.Tag("release") // move the tag forward to v2
	if res := fetch(t, s); !res.Changed || res.Revision.SHA != v2 || res.ForcePushed {
		t.Fatalf("moved tag fetch = %+v, want changed %s", res, v2)
	}
}

func TestTracksFixedCommitFromFileURL(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	repo.WriteFile("web.yaml", "v1")
	v1 := repo.Commit("v1")
	repo.WriteFile("web.yaml", "v2")
	repo.Commit("v2")

	for _, commit := range []string{v1, v1[:8]} {
		s := newSource(t, gitsource.Config{URL: "file://" + repo.Bare, Commit: commit})
		res := fetch(t, s)
		if res.Revision.SHA != v1 || !res.Changed {
			t.Fatalf("commit %s: fetch = %+v, want %s", commit, res, v1)
		}
		repo.Commit("more")
		if res := fetch(t, s); res.Changed || res.Revision.SHA != v1 {
			t.Fatalf("commit %s: later fetch = %+v, want unchanged %s", commit, res, v1)
		}
		log, err := s.Log(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 1 || log[0].SHA != v1 {
			t.Errorf("Log for fixed commit = %+v", log)
		}
	}

	s := newSource(t, gitsource.Config{URL: repo.Bare, Commit: strings.Repeat("0", 40)})
	if _, err := s.Fetch(context.Background()); !errors.Is(err, gitsource.ErrRefNotFound) {
		t.Errorf("unknown commit: err = %v, want ErrRefNotFound", err)
	}
}

func TestMissingRefAndPath(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	repo.WriteFile("deploy/web.yaml", "x")
	head := repo.Commit("init")
	url := repo.URL(gitserver.StartDaemon(t, base))

	s := newSource(t, gitsource.Config{URL: url, Branch: "nope"})
	if _, err := s.Fetch(context.Background()); !errors.Is(err, gitsource.ErrRefNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing branch: err = %v, want ErrRefNotFound naming the branch", err)
	}
	s = newSource(t, gitsource.Config{URL: url, Tag: "v9"})
	if _, err := s.Fetch(context.Background()); !errors.Is(err, gitsource.ErrRefNotFound) {
		t.Errorf("missing tag: err = %v, want ErrRefNotFound", err)
	}

	for _, path := range []string{"manifests", "deploy/web.yaml"} {
		s = newSource(t, gitsource.Config{URL: url, Path: path})
		fetch(t, s)
		_, err := s.Files(context.Background(), head)
		if !errors.Is(err, gitsource.ErrPathMissing) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), head) {
			t.Errorf("path %q: err = %v, want ErrPathMissing naming path and sha", path, err)
		}
	}

	s = newSource(t, gitsource.Config{URL: url, Path: "./deploy/"})
	fetch(t, s)
	files, err := s.Files(context.Background(), head)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, files, "web.yaml"); got != "x" {
		t.Errorf("web.yaml = %q", got)
	}
	if _, err := s.Files(context.Background(), strings.Repeat("1", 40)); !errors.Is(err, gitsource.ErrCommitNotFound) {
		t.Errorf("unknown sha: err = %v, want ErrCommitNotFound", err)
	}
}

func TestFilesReadsWholeTree(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	repo.WriteFile("a.yaml", "a")
	repo.WriteFile("sub/dir/b.yaml", "b")
	head := repo.Commit("tree")
	s := newSource(t, gitsource.Config{URL: repo.Bare, Path: "."})
	fetch(t, s)
	files, err := s.Files(context.Background(), head)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			got = append(got, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "a.yaml,sub/dir/b.yaml" {
		t.Errorf("files = %v", got)
	}
}

func TestDefaultBranchFollowsRemoteHEAD(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	mainHead := repo.Commit("on main")
	repo.Branch("trunk")
	trunkHead := repo.Commit("on trunk")
	url := repo.URL(gitserver.StartDaemon(t, base))

	repo.Git("--git-dir="+repo.Bare, "symbolic-ref", "HEAD", "refs/heads/trunk")
	if res := fetch(t, newSource(t, gitsource.Config{URL: url})); res.Revision.SHA != trunkHead {
		t.Errorf("remote HEAD -> trunk: got %s, want %s", res.Revision.SHA, trunkHead)
	}
	// HEAD pointing at an unborn branch is not advertised: fall back to main.
	repo.Git("--git-dir="+repo.Bare, "symbolic-ref", "HEAD", "refs/heads/master")
	if res := fetch(t, newSource(t, gitsource.Config{URL: url})); res.Revision.SHA != mainHead {
		t.Errorf("unborn remote HEAD: got %s, want main %s", res.Revision.SHA, mainHead)
	}
}

func TestForcePushIsReported(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	c1 := repo.Commit("c1")
	c2 := repo.Commit("c2")
	url := repo.URL(gitserver.StartDaemon(t, base))
	dir := filepath.Join(t.TempDir(), "clone")

	s := newSource(t, gitsource.Config{URL: url, Dir: dir})
	fetch(t, s)
	repo.ResetHard(c1)
	c3 := repo.Commit("c3 replaces c2")
	res := fetch(t, s)
	if !res.Changed || !res.ForcePushed || res.Previous != c2 || res.Revision.SHA != c3 {
		t.Fatalf("after force-push: %+v, want force-pushed %s (previous %s)", res, c3, c2)
	}

	// Across a restart the previous head comes from the clone on disk.
	repo.ResetHard(c1)
	restarted := newSource(t, gitsource.Config{URL: url, Dir: dir})
	res = fetch(t, restarted)
	if !res.Changed || !res.ForcePushed || res.Previous != c3 || res.Revision.SHA != c1 {
		t.Fatalf("force-push seen after restart: %+v, want force-pushed %s (previous %s)", res, c1, c3)
	}
}

func TestReopensCloneAfterRestart(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	repo.WriteFile("web.yaml", "v1")
	v1 := repo.Commit("v1")
	srv := gitserver.RunDaemon(t, base)
	url := repo.URL(srv.URL)
	dir := filepath.Join(t.TempDir(), "clone")

	fetch(t, newSource(t, gitsource.Config{URL: url, Dir: dir}))
	srv.Stop()

	// The clone alone answers for already-fetched commits.
	restarted := newSource(t, gitsource.Config{URL: url, Dir: dir})
	files, err := restarted.Files(context.Background(), v1)
	if err != nil {
		t.Fatalf("Files from reopened clone with server down: %v", err)
	}
	if got := readFile(t, files, "web.yaml"); got != "v1" {
		t.Errorf("web.yaml = %q", got)
	}
	log, err := restarted.Log(context.Background(), 1)
	if err != nil || len(log) != 1 || log[0].SHA != v1 {
		t.Errorf("Log from reopened clone = %+v, %v", log, err)
	}
	if _, err := restarted.Fetch(context.Background()); !errors.Is(err, gitsource.ErrUnreachable) {
		t.Errorf("fetch with server down: err = %v, want ErrUnreachable", err)
	}
}

func TestRecreatesCloneWhenURLChangesOrCorrupt(t *testing.T) {
	base := t.TempDir()
	one := gitserver.Init(t, base, "one")
	oneHead := one.Commit("one")
	two := gitserver.Init(t, base, "two")
	twoHead := two.Commit("two")
	dir := filepath.Join(t.TempDir(), "clone")

	fetch(t, newSource(t, gitsource.Config{URL: one.Bare, Dir: dir}))
	res := fetch(t, newSource(t, gitsource.Config{URL: two.Bare, Dir: dir}))
	if res.Revision.SHA != twoHead || res.ForcePushed || res.Previous != "" {
		t.Fatalf("after URL change: %+v, want %s with no history from the old repo", res, twoHead)
	}
	s := newSource(t, gitsource.Config{URL: two.Bare, Dir: dir})
	if _, err := s.Revision(context.Background(), oneHead); !errors.Is(err, gitsource.ErrCommitNotFound) {
		t.Errorf("commit of the old repository still in clone: %v", err)
	}

	if err := os.WriteFile(filepath.Join(dir, "config"), []byte("[[[ garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	res = fetch(t, newSource(t, gitsource.Config{URL: two.Bare, Dir: dir}))
	if res.Revision.SHA != twoHead {
		t.Fatalf("after corrupting the clone: %+v", res)
	}
}

func TestRefusesForeignDirectory(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	repo.Commit("c")
	dir := t.TempDir()
	precious := filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(precious, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newSource(t, gitsource.Config{URL: repo.Bare, Dir: dir})
	if _, err := s.Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("fetch into a foreign directory: err = %v, want refusal naming it", err)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Errorf("foreign file was removed: %v", err)
	}
}

func TestUnreachableServer(t *testing.T) {
	s := newSource(t, gitsource.Config{URL: gitserver.ClosedURL(t, "app.git")})
	_, err := s.Fetch(context.Background())
	if !errors.Is(err, gitsource.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
}

func TestCancelledContextAbortsFetch(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	repo.Commit("c")
	url := repo.URL(gitserver.StartDaemon(t, base))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newSource(t, gitsource.Config{URL: url}).Fetch(ctx)
	if !errors.Is(err, context.Canceled) || errors.Is(err, gitsource.ErrUnreachable) {
		t.Fatalf("err = %v, want context.Canceled (not a server problem)", err)
	}
}

func TestHTTPBasicAuth(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	head := repo.Commit("c")
	url := repo.URL(gitserver.StartHTTP(t, base, "deployer", "s3cret-token"))

	s := newSource(t, gitsource.Config{URL: url})
	if _, err := s.Fetch(context.Background()); !errors.Is(err, gitsource.ErrAuth) {
		t.Errorf("no credentials: err = %v, want ErrAuth", err)
	}

	const wrong = "wrong-Secret-123"
	s = newSource(t, gitsource.Config{URL: url, Auth: gitsource.Auth{Username: "deployer", Password: wrong}})
	_, err := s.Fetch(context.Background())
	if !errors.Is(err, gitsource.ErrAuth) {
		t.Errorf("wrong password: err = %v, want ErrAuth", err)
	}
	if err != nil && strings.Contains(err.Error(), wrong) {
		t.Errorf("error leaks the password: %v", err)
	}

	s = newSource(t, gitsource.Config{URL: url, Auth: gitsource.Auth{Username: "deployer", Password: "s3cret-token"}})
	if res := fetch(t, s); res.Revision.SHA != head {
		t.Errorf("with credentials: got %s, want %s", res.Revision.SHA, head)
	}
	if strings.Contains(s.Describe(), "s3cret") {
		t.Errorf("Describe leaks the password: %s", s.Describe())
	}
}

func TestNewRejectsBadConfigWithoutLeakingSecrets(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]gitsource.Config{
		"credentials in URL": {URL: "https://bob:hunter2-secret@example.com/app.git", Dir: dir},
		"token in URL":       {URL: "https://hunter2-secret@example.com/app.git", Dir: dir},
		"two refs":           {URL: "https://example.com/app.git", Dir: dir, Branch: "main", Tag: "v1"},
		"bad commit":         {URL: "https://example.com/app.git", Dir: dir, Commit: "HEAD~1"},
		"path escapes":       {URL: "https://example.com/app.git", Dir: dir, Path: "../etc"},
		"no dir":             {URL: "https://example.com/app.git"},
		"ssh without known_hosts": {URL: "git@example.com:org/app.git", Dir: dir,
			Auth: gitsource.Auth{SSHKeyFile: "/nonexistent"}},
		"ssh key for https": {URL: "https://example.com/app.git", Dir: dir,
			Auth: gitsource.Auth{SSHKeyFile: "/k", KnownHostsFile: "/kh"}},
		"unsupported scheme": {URL: "ftp://example.com/app.git", Dir: dir},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := gitsource.New(cfg)
			if err == nil {
				t.Fatal("New accepted the config")
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks the secret: %v", err)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	s := newSource(t, gitsource.Config{URL: "https://example.com/org/app.git", Branch: "prod", Path: "deploy/"})
	if got, want := s.Describe(), "https://example.com/org/app.git (branch prod, path deploy)"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	// The repository root reads as status shows it: ".".
	root := newSource(t, gitsource.Config{URL: "https://example.com/org/app.git", Branch: "prod"})
	if got, want := root.Describe(), "https://example.com/org/app.git (branch prod, path .)"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}

func TestConcurrentReads(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	var shas []string
	for i := range 5 {
		repo.WriteFile("web.yaml", strings.Repeat("x", i+1))
		shas = append(shas, repo.Commit("c"))
	}
	s := newSource(t, gitsource.Config{URL: repo.Bare})
	fetch(t, s)

	var wg sync.WaitGroup
	errs := make(chan error, 4*len(shas))
	for range 4 {
		for i, sha := range shas {
			wg.Go(func() {
				files, err := s.Files(context.Background(), sha)
				if err != nil {
					errs <- err
					return
				}
				if b, err := fs.ReadFile(files, "web.yaml"); err != nil || len(b) != i+1 {
					errs <- errors.New("wrong content for " + sha)
				}
				if _, err := s.Revision(context.Background(), sha); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSSHWithKnownHosts(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	repo.WriteFile("deploy/web.yaml", "ssh")
	head := repo.Commit("over ssh")
	const passphrase = "key-Passphrase-42"
	keyFile, pub := gitserver.WriteSSHKey(t, passphrase)
	srv := gitserver.RunSSH(t, base, pub)
	url := repo.URL(srv.URL)
	knownHosts := srv.KnownHostsFile(t)

	s := newSource(t, gitsource.Config{URL: url, Path: "deploy", Auth: gitsource.Auth{
		SSHKeyFile: keyFile, SSHKeyPassphrase: passphrase, KnownHostsFile: knownHosts,
	}})
	if res := fetch(t, s); res.Revision.SHA != head {
		t.Fatalf("ssh fetch = %s, want %s", res.Revision.SHA, head)
	}
	files, err := s.Files(context.Background(), head)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, files, "web.yaml"); got != "ssh" {
		t.Errorf("web.yaml = %q", got)
	}

	// A key the server does not accept.
	otherKey, _ := gitserver.WriteSSHKey(t, "")
	s = newSource(t, gitsource.Config{URL: url, Auth: gitsource.Auth{SSHKeyFile: otherKey, KnownHostsFile: knownHosts}})
	if _, err := s.Fetch(context.Background()); !errors.Is(err, gitsource.ErrAuth) {
		t.Errorf("refused key: err = %v, want ErrAuth", err)
	}

	// A server whose host key is not the one in known_hosts. (Unencrypted
	// key: decrypting is slow under the race detector.)
	plainKey, plainPub := gitserver.WriteSSHKey(t, "")
	impostor := gitserver.RunSSH(t, base, plainPub)
	s = newSource(t, gitsource.Config{URL: repo.URL(impostor.URL), Auth: gitsource.Auth{
		SSHKeyFile: plainKey, KnownHostsFile: knownHosts,
	}})
	if _, err := s.Fetch(context.Background()); !errors.Is(err, gitsource.ErrAuth) {
		t.Errorf("unknown host key: err = %v, want ErrAuth", err)
	}
	s = newSource(t, gitsource.Config{URL: repo.URL(impostor.URL), Auth: gitsource.Auth{
		SSHKeyFile: plainKey, InsecureIgnoreHostKey: true,
	}})
	if res := fetch(t, s); res.Revision.SHA != head {
		t.Errorf("host key check disabled: got %s, want %s", res.Revision.SHA, head)
	}

	// A wrong passphrase is a config error caught by New, without echoing it.
	_, err = gitsource.New(gitsource.Config{URL: url, Dir: t.TempDir(), Auth: gitsource.Auth{
		SSHKeyFile: keyFile, SSHKeyPassphrase: "wrong-Passphrase-99", KnownHostsFile: knownHosts,
	}})
	if err == nil || strings.Contains(err.Error(), "wrong-Passphrase-99") {
		t.Errorf("wrong passphrase: err = %v, want an error without the passphrase", err)
	}
}

func TestEmptyRemoteHasNoRef(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "empty")
	url := repo.URL(gitserver.StartDaemon(t, base))
	_, err := newSource(t, gitsource.Config{URL: url}).Fetch(context.Background())
	if !errors.Is(err, gitsource.ErrRefNotFound) {
		t.Errorf("empty repository: err = %v, want ErrRefNotFound", err)
	}
}

// A clone whose objects were damaged on disk (a truncated pack, a lost
// object) is deleted and cloned again by the next Fetch; nothing is lost,
// since the clone holds nothing that Git does not.
func TestCorruptCloneIsClonedAgain(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	repo.WriteFile("deploy/web.yaml", "image: web:1\n")
	first := repo.Commit("one")
	url := repo.URL(gitserver.StartDaemon(t, base))
	dir := filepath.Join(t.TempDir(), "clone")
	s := newSource(t, gitsource.Config{URL: url, Path: "deploy", Dir: dir})
	fetch(t, s)

	// Damage every object the clone holds.
	damaged := 0
	err := filepath.WalkDir(filepath.Join(dir, "objects"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		damaged++
		return os.WriteFile(p, []byte("garbage"), 0o644)
	})
	if err != nil || damaged == 0 {
		t.Fatalf("damaging the clone: %v (%d files)", err, damaged)
	}

	// A fresh Source (as after a restart) on the damaged directory: the
	// head has not moved, the fetch cannot read it locally, so it clones
	// again, and the revision reads.
	s = newSource(t, gitsource.Config{URL: url, Path: "deploy", Dir: dir})
	if res := fetch(t, s); res.Revision.SHA != first {
		t.Fatalf("fetch after damage: %+v", res)
	}
	files, err := s.Files(context.Background(), first)
	if err != nil {
		t.Fatalf("files after re-clone: %v", err)
	}
	if got := readFile(t, files, "web.yaml"); got != "image: web:1\n" {
		t.Fatalf("web.yaml = %q", got)
	}
}

// A ref file left empty (the agent killed while Git wrote it, as a SIGKILL
// campaign found) makes the clone unreadable for every later fetch: the
// next Fetch clones again instead of failing on it for good.
func TestEmptyRefFileIsClonedAgain(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	repo.WriteFile("deploy/web.yaml", "image: web:1\n")
	repo.Commit("one")
	url := repo.URL(gitserver.StartDaemon(t, base))
	dir := filepath.Join(t.TempDir(), "clone")
	s := newSource(t, gitsource.Config{URL: url, Path: "deploy", Branch: "main", Dir: dir})
	fetch(t, s)

	emptied := 0
	err := filepath.WalkDir(filepath.Join(dir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		emptied++
		return os.WriteFile(p, nil, 0o644)
	})
	if err != nil || emptied == 0 {
		t.Fatalf("emptying the clone's refs: %v (%d files)", err, emptied)
	}
	repo.WriteFile("deploy/web.yaml", "image: web:2\n")
	second := repo.Commit("two")

	s = newSource(t, gitsource.Config{URL: url, Path: "deploy", Branch: "main", Dir: dir})
	if res := fetch(t, s); res.Revision.SHA != second {
		t.Fatalf("fetch after the refs were emptied: %+v, want %s", res.Revision, second[:7])
	}
}
