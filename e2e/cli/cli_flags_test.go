package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// runSplit runs a driftless binary and returns its exit code, stdout and
// stderr apart: the conventions below are about which stream gets what.
func runSplit(t *testing.T, ctx context.Context, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("driftless %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errb.String()
}

// The binary follows docker's, argocd's and flux's conventions: --help is
// not an error, a wrong command line exits 2 with the usage on stderr,
// long flags take two dashes, and the shells complete its commands.
func TestCLIConventions(t *testing.T) {
	t.Parallel()
	bin := testenv.DriftlessBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for _, args := range [][]string{{"--help"}, {"logs", "--help"}, {"diff", "-h"}, {"prune-images", "--help"}, {"help", "run"}} {
		code, out, errb := runSplit(t, ctx, bin, args...)
		if code != 0 || !strings.Contains(out, "Usage:") || errb != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", args, code, out, errb)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"deploy"}, `unknown command "deploy"`},
		{[]string{"logs", "-follow", "shop"}, "long flags take two dashes: --follow"},
		{[]string{"logs", "shop", "--tail", "many"}, `invalid argument "many"`},
	} {
		code, out, errb := runSplit(t, ctx, bin, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errb, tc.want) || !strings.Contains(errb, "Usage:") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, %q and the usage on stderr", tc.args, code, out, errb, tc.want)
		}
	}
	code, out, _ := runSplit(t, ctx, bin, "completion", "bash")
	if code != 0 || !strings.Contains(out, "__start_driftless") {
		t.Errorf("completion bash: exit %d, %d bytes", code, len(out))
	}
	// What the completion scripts ask the binary.
	if code, out, _ := runSplit(t, ctx, bin, "__complete", "lo"); code != 0 || !strings.HasPrefix(out, "logs\t") {
		t.Errorf("completion of lo: exit %d, %q", code, out)
	}
}

// `driftless version` names the commit the binary was built from, as go
// build records it (-buildvcs). The binary is built from a Git repository
// holding a copy of this work tree, so the revision is known whatever the
// checkout is (a worktree's .git file is not one go build reads).
func TestCLIVersionShowsTheRevision(t *testing.T) {
	t.Parallel()
	// The shared build compiles every package into the build cache first,
	// so that the build below only links instead of compiling alongside it.
	testenv.DriftlessBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	src := copyWorkTree(t, ctx, testenv.RepoRoot(t))
	git := func(args ...string) string {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.com", "GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "the work tree under test")
	rev := git("rev-parse", "HEAD")

	bin := filepath.Join(t.TempDir(), "driftless")
	build := exec.CommandContext(ctx, "go", "build", "-buildvcs=true", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/driftless")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	code, out, errb := runSplit(t, ctx, bin, "version")
	if code != 0 || !strings.HasPrefix(out, "driftless ") || !strings.Contains(out, "revision:  "+rev[:12]+"\n") {
		t.Fatalf("version: exit %d, stdout %q, stderr %q; want revision %s", code, out, errb, rev[:12])
	}
	if _, flagOut, _ := runSplit(t, ctx, bin, "--version"); flagOut != out {
		t.Errorf("--version printed %q, version %q", flagOut, out)
	}
}

// copyWorkTree copies the files of the Git work tree at root that Git
// would commit (tracked and untracked, not ignored) into a new directory.
func copyWorkTree(t *testing.T, ctx context.Context, root string) string {
	t.Helper()
	ls := exec.CommandContext(ctx, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	list, err := ls.Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v", root, err)
	}
	dst := t.TempDir()
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
