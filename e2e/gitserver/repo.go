package gitserver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Repo is a bare repository under a server's base directory plus a working
// clone that pushes to it, so tests change the "remote" as a user would.
type Repo struct {
	t    testing.TB
	Bare string // the served bare repository, <baseDir>/<name>.git
	Work string // the working clone
	Name string // "<name>.git": append to a server URL
	// commits get increasing, fixed dates so that ordering by time is
	// deterministic even when commits land in the same second.
	commits int
}

// Init creates <baseDir>/<name>.git (default branch main) and a working
// clone of it in a temporary directory.
func Init(t testing.TB, baseDir, name string) *Repo {
	t.Helper()
	r := &Repo{
		t:    t,
		Bare: filepath.Join(baseDir, name+".git"),
		Work: t.TempDir(),
		Name: name + ".git",
	}
	r.run(baseDir, "init", "--quiet", "--bare", "--initial-branch=main", r.Bare)
	r.Git("init", "--quiet", "--initial-branch=main")
	r.Git("remote", "add", "origin", r.Bare)
	return r
}

// Git runs git in the working clone and returns its trimmed stdout.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	return r.run(r.Work, args...)
}

func (r *Repo) run(dir string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	date := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(r.commits) * time.Minute).Format(time.RFC3339)
	cmd.Env = append(gitEnv(), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// WriteFile writes a file (parents created) in the working clone.
func (r *Repo) WriteFile(path, content string) {
	r.t.Helper()
	p := filepath.Join(r.Work, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// Remove deletes a file or directory from the working clone.
func (r *Repo) Remove(path string) {
	r.t.Helper()
	if err := os.RemoveAll(filepath.Join(r.Work, filepath.FromSlash(path))); err != nil {
		r.t.Fatal(err)
	}
}

// Commit commits all changes (empty commits allowed), pushes the current
// branch and returns the new SHA.
func (r *Repo) Commit(msg string) string {
	r.t.Helper()
	r.commits++
	r.Git("add", "--all")
	r.Git("commit", "--quiet", "--allow-empty", "-m", msg)
	r.push()
	return r.Head()
}

// Revert reverts sha with git's standard message, pushes, and returns the
// new SHA.
func (r *Repo) Revert(sha string) string {
	r.t.Helper()
	r.commits++
	r.Git("revert", "--no-edit", sha)
	r.push()
	return r.Head()
}

// Tag creates (or moves) an annotated tag at HEAD and pushes it.
func (r *Repo) Tag(name string) {
	r.t.Helper()
	r.Git("tag", "--force", "-a", name, "-m", "release "+name)
	r.Git("push", "--quiet", "--force", "origin", "refs/tags/"+name)
}

// Branch switches the working clone to a new or existing branch; later
// commits push to it.
func (r *Repo) Branch(name string) {
	r.t.Helper()
	r.Git("checkout", "--quiet", "-B", name)
}

// ResetHard rewinds the current branch to sha and force-pushes it,
// rewriting the remote's history.
func (r *Repo) ResetHard(sha string) {
	r.t.Helper()
	r.Git("reset", "--quiet", "--hard", sha)
	r.Git("push", "--quiet", "--force", "origin", "HEAD")
}

// Head is the SHA of the working clone's HEAD.
func (r *Repo) Head() string {
	r.t.Helper()
	return r.Git("rev-parse", "HEAD")
}

// URL is the repository's URL on a server started for the same baseDir.
func (r *Repo) URL(serverURL string) string {
	return fmt.Sprintf("%s/%s", strings.TrimSuffix(serverURL, "/"), r.Name)
}

func (r *Repo) push() {
	r.t.Helper()
	r.Git("push", "--quiet", "origin", "HEAD")
}
