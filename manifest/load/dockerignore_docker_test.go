package load

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// dockerCLI is the docker client, or skips the test.
func dockerCLI(t *testing.T) string {
	t.Helper()
	if os.Getenv("DOCKER_HOST") == "" {
		if _, err := os.Stat("/var/run/docker.sock"); err != nil {
			t.Skip("no Docker socket: real-engine test skipped")
		}
	}
	bin, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("no docker CLI: the comparison with docker build is skipped")
	}
	return bin
}

// ignoreContext is the tree every case's .dockerignore is tried on.
var ignoreContext = []string{
	"README.md", "a.md", "sub/a.md", "sub/keep", "b.txt", "ax", "bx", "!x", "spaced.txt", "abs", ".hidden",
	"build/out.o", "build/keep", "buildx", "node_modules/x.js", "deep/a/node_modules/y.js",
	"dir/file", "dir/sub/file", "dir/sub/deeper/file", "dir/x/file",
}

func TestDockerIgnoreMatchesDockerBuild(t *testing.T) {
	docker := dockerCLI(t)
	for _, tc := range []struct {
		name, ignore, dockerfile string
	}{
		{"a class, not a negation", "[!a]x\n", ""},
		{"** alone, one exception", "**\n!README.md\n", ""},
		{"**/ at the start", "**/node_modules\n", ""},
		{"** at the end", "dir/**\n", ""},
		{"** in the middle", "**/*.md\n", ""},
		{"! re-includes", "*.md\n!README.md\n", ""},
		{"an exception comes first", "!README.md\n*.md\n", ""},
		{"! inside an excluded directory, by its path", "build\n!build/keep\n", ""},
		{"! inside an excluded directory, by a wildcard", "build\n!**/keep\n", ""},
		{"everything but a directory", "*\n!dir\n", ""},
		{"leading /", "/dir/sub\n/abs\n", ""},
		{"trailing /", "build/\ndir/sub/\n", ""},
		{". and ..", ".\n..\n/\n../x\ndir/..\n./b.txt\n", ""},
		{"comments, spaces, an escaped !", "# comment\n  spaced.txt  \n\\!x\n#b.txt\n", ""},
		{"? and a segment wildcard", "?x\n*/a.md\ndir/*/file\n", ""},
		{"the build files excluded", "Dockerfile\n.dockerignore\nb.txt\n", ""},
		{"a Dockerfile in a directory opens it to exceptions", "*\n!**/keep\n", "sub/Dockerfile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dockerfile := cmp.Or(tc.dockerfile, "Dockerfile")
			dir := t.TempDir()
			for _, f := range append(slices.Clone(ignoreContext), dockerfile) {
				writeContextFile(t, filepath.Join(dir, f), "FROM scratch\nCOPY . /ctx\n")
			}
			if err := os.Symlink("README.md", filepath.Join(dir, "link.md")); err != nil {
				t.Fatal(err)
			}
			writeContextFile(t, filepath.Join(dir, ".dockerignore"), tc.ignore)

			tree, err := ReadBuildContext(os.DirFS(dir), ".", dockerfile)
			if err != nil {
				t.Fatal(err)
			}
			var ours []string
			for _, f := range tree.Files {
				ours = append(ours, f.Path)
			}
			theirs := dockerBuildFiles(t, docker, dir, dockerfile)
			// driftless always sends these two, as docker's client does;
			// the daemon drops them when the .dockerignore says so.
			drop := func(p string) bool { return p == dockerfile || p == ".dockerignore" }
			ours, theirs = slices.DeleteFunc(ours, drop), slices.DeleteFunc(theirs, drop)
			if !slices.Equal(ours, theirs) {
				t.Errorf(".dockerignore %q:\ndocker build: %q\ndriftless:    %q", tc.ignore, theirs, ours)
			}
		})
	}
}

func writeContextFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dockerBuildFiles builds dir with docker's legacy builder and lists the
// regular files and symlinks the image's /ctx holds, sorted.
func dockerBuildFiles(t *testing.T, docker, dir, dockerfile string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	tag := "driftless-test-dockerignore:" + hex.EncodeToString(b)
	run := func(stdout io.Writer, args ...string) {
		t.Helper()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, docker, args...)
		cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
		cmd.Stdout, cmd.Stderr = stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
	}
	run(io.Discard, "build", "-q", "-f", filepath.Join(dir, dockerfile), "-t", tag, dir)
	t.Cleanup(func() { _ = exec.Command(docker, "rmi", "-f", tag).Run() })
	var id bytes.Buffer
	run(&id, "create", tag, "/none")
	container := strings.TrimSpace(id.String())
	t.Cleanup(func() { _ = exec.Command(docker, "rm", "-f", container).Run() })
	var export bytes.Buffer
	run(&export, "export", container)
	var files []string
	tr := tar.NewReader(&export)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := strings.CutPrefix(h.Name, "ctx/"); ok && (h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeSymlink) {
			files = append(files, p)
		}
	}
	slices.Sort(files)
	return files
}
