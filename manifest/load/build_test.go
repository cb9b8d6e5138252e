package load

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftless-dev/driftless/manifest"
)

const dockerfileScratch = "FROM scratch\nCOPY app /app\nENTRYPOINT [\"/app\"]\n"

// gitRepo makes a Git repository of files (path -> content; a value
// starting with "->" is a symlink to the rest) and returns its directory.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasPrefix(data, "->"):
			err = os.Symlink(strings.TrimPrefix(data, "->"), p)
		case strings.HasPrefix(name, "bin/") || strings.HasSuffix(name, ".sh"):
			err = os.WriteFile(p, []byte(data), 0o755)
		default:
			err = os.WriteFile(p, []byte(data), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", ".")
	git("add", "-A")
	git("commit", "-qm", "files")
	return dir
}

func gitTreeOf(t *testing.T, dir, rev string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "rev-parse", rev).Output()
	if err != nil {
		t.Fatalf("git rev-parse %s: %v", rev, err)
	}
	return strings.TrimSpace(string(out))
}

// The tag is named after the same tree hash Git gives the context, so a
// user can tell which directory of which commit an image came from.
func TestGitTreeHashIsGits(t *testing.T) {
	dir := gitRepo(t, map[string]string{
		"web/Dockerfile":      dockerfileScratch,
		"web/app":             "binary",
		"web/bin/run.sh":      "#!/bin/sh\n",
		"web/src/a.go":        "package a\n",
		"web/src/a/b.go":      "package b\n", // "a" sorts after "a.go" only as a directory
		"web/src-link":        "->src/a.go",
		"web/z/deep/er/x.txt": "x",
		"other/file":          "not in the context",
	})
	tree, err := ReadBuildContext(os.DirFS(dir), "web", "Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tree.GitTreeHash(), gitTreeOf(t, dir, "HEAD:web"); got != want {
		t.Errorf("GitTreeHash = %s, git says %s", got, want)
	}
	var link *manifest.RepoFile
	for i := range tree.Files {
		if tree.Files[i].Path == "src-link" {
			link = &tree.Files[i]
		}
	}
	if link == nil || link.Link != "src/a.go" {
		t.Errorf("symlink inside the context: got %+v, want a link to src/a.go", link)
	}
}

func TestReadBuildContextDockerignore(t *testing.T) {
	fsys := fstest.MapFS{
		"ctx/.dockerignore":     {Data: []byte("# comment\n*.md\nlogs\n!logs/keep.txt\n**/*.tmp\nDockerfile\n/secret\n")},
		"ctx/Dockerfile":        {Data: []byte(dockerfileScratch)},
		"ctx/README.md":         {Data: []byte("root md: out")},
		"ctx/docs/guide.md":     {Data: []byte("nested md: in (patterns are anchored)")},
		"ctx/logs/a.log":        {Data: []byte("out")},
		"ctx/logs/keep.txt":     {Data: []byte("in again")},
		"ctx/src/x.tmp":         {Data: []byte("out")},
		"ctx/src/main.go":       {Data: []byte("in")},
		"ctx/secret":            {Data: []byte("out")},
		"ctx/app":               {Data: []byte("in"), Mode: 0o755},
		"outside/Dockerfile.md": {Data: []byte("not in the context")},
	}
	tree, err := ReadBuildContext(fsys, "ctx", "Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range tree.Files {
		got = append(got, f.Path)
	}
	want := []string{".dockerignore", "Dockerfile", "app", "docs/guide.md", "logs/keep.txt", "src/main.go"}
	if !slices.Equal(got, want) {
		t.Errorf("context files %v, want %v", got, want)
	}
	if !tree.Files[2].Exec {
		t.Error("the executable bit was lost")
	}
}

func TestReadBuildContextRefusesEscapingLinks(t *testing.T) {
	for _, target := range []string{"../../etc/passwd", "/etc/passwd", "../outside"} {
		dir := t.TempDir()
		ctx := filepath.Join(dir, "ctx")
		if err := os.MkdirAll(ctx, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ctx, "Dockerfile"), []byte(dockerfileScratch), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(ctx, "link")); err != nil {
			t.Fatal(err)
		}
		_, err := ReadBuildContext(os.DirFS(dir), "ctx", "Dockerfile")
		if !errors.Is(err, ErrLinkEscapes) || !strings.Contains(err.Error(), "link") {
			t.Errorf("link to %s: error %v, want ErrLinkEscapes naming the link", target, err)
		}
	}
}

// excludedByWalk reports whether the context walk leaves rel out: each
// of its directories is visited first, as fs.WalkDir does.
func excludedByWalk(ign *dockerIgnore, rel string) bool {
	w := &contextWalk{ign: ign}
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		if _, skip, err := w.visit(strings.Join(parts[:i], "/"), true); err != nil || skip {
			return true
		}
	}
	out, _, err := w.visit(rel, false)
	return out || err != nil
}

func TestDockerIgnoreMatching(t *testing.T) {
	d, err := parseDockerIgnore("*.md\n!README.md\nbuild/\n!build/keep\nout\n!**/keep\n**/node_modules\n  spaced.txt  \n/abs/x\n./dot\n[!a]x\n.\n..\n/\n", "Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]bool{
		"a.md":                  true,
		"README.md":             false,
		"sub/a.md":              false, // anchored at the root, unlike .gitignore
		"build/out.o":           true,
		"build/keep":            false, // the exception starts with build/: docker enters it
		"out/keep":              true,  // no exception starts with out/: docker skips it whole
		"buildx":                false,
		"node_modules/x.js":     true,
		"a/b/node_modules/y.js": true,
		"spaced.txt":            true,
		"abs/x":                 true,
		"dot":                   true,
		"ax":                    true,
		"!x":                    true,  // [!a] is the class of '!' and 'a'
		"bx":                    false, // not a negation
		"main.go":               false, // ".", ".." and "/" match nothing
	} {
		if got := excludedByWalk(d, rel); got != want {
			t.Errorf("excluded(%q) = %v, want %v", rel, got, want)
		}
	}
	for _, bad := range []string{"[a-\n", "!\n", "a[\n"} {
		if _, err := parseDockerIgnore(bad, "Dockerfile"); err == nil || !strings.Contains(err.Error(), ".dockerignore: ") {
			t.Errorf("%q: err = %v, want the pattern docker refuses", bad, err)
		}
	}
}

func FuzzDockerIgnore(f *testing.F) {
	f.Add("*.md\n!README.md\n", "README.md")
	f.Add("**/x\n[a-\n\\", "a/b/x")
	f.Add("!\n/\n.\n..\n", "..")
	f.Add("a\n!a/**/b\n[!a]\n", "a/c/b")
	f.Fuzz(func(t *testing.T, text, rel string) {
		d, err := parseDockerIgnore(text, "Dockerfile")
		if err != nil {
			return
		}
		first := excludedByWalk(d, rel)
		if excludedByWalk(d, rel) != first {
			t.Fatal("excluded is not stable")
		}
		// Only exceptions: nothing can be excluded.
		var only strings.Builder
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimPrefix(strings.TrimSpace(l), "!"); l != "" && !strings.HasPrefix(l, "#") {
				only.WriteString("!" + l + "\n")
			}
		}
		if d, err := parseDockerIgnore(only.String(), "Dockerfile"); err == nil && excludedByWalk(d, rel) {
			t.Fatalf("a list of exceptions excluded %q", rel)
		}
	})
}
