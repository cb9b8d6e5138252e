package manifest

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
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
	var link *RepoFile
	for i := range tree.Files {
		if tree.Files[i].Path == "src-link" {
			link = &tree.Files[i]
		}
	}
	if link == nil || link.Link != "src/a.go" {
		t.Errorf("symlink inside the context: got %+v, want a link to src/a.go", link)
	}
}

func buildApp(t *testing.T, files map[string]string) *App {
	t.Helper()
	return mustLoadCompose(t, files, LoadOptions{})
}

// Same context, same tag; a changed file, a new tag; the old content
// back, the old tag. Files outside the context change nothing.
func TestBuildTagFollowsTheContext(t *testing.T) {
	base := map[string]string{
		"compose.yaml":   "services:\n  web:\n    build: ./web\n",
		"web/Dockerfile": dockerfileScratch,
		"web/app":        "v1",
		"README.md":      "docs",
	}
	imageOf := func(files map[string]string) string {
		return buildApp(t, files).Service("web").Spec.Image
	}
	first := imageOf(base)
	if !strings.HasPrefix(first, "driftless/shop-web:tree-") || len(first) != len("driftless/shop-web:tree-")+12 {
		t.Fatalf("image %q, want driftless/shop-web:tree-<12 hex>", first)
	}
	unrelated := maps.Clone(base)
	unrelated["README.md"] = "other docs"
	if got := imageOf(unrelated); got != first {
		t.Errorf("a file outside the context changed the image: %s -> %s", first, got)
	}
	changed := maps.Clone(base)
	changed["web/app"] = "v2"
	second := imageOf(changed)
	if second == first {
		t.Errorf("a changed file in the context kept the image %s", first)
	}
	if got := imageOf(base); got != first {
		t.Errorf("reverted content: image %s, want the earlier %s", got, first)
	}
	a1, a2 := buildApp(t, base), buildApp(t, changed)
	if a1.Service("web").Hash == a2.Service("web").Hash {
		t.Error("a changed context kept the service hash: the service would not roll")
	}
	if a1.Builds[first] == nil || a2.Builds[second] == nil {
		t.Errorf("Builds %v / %v do not hold the images the services run", slices.Collect(maps.Keys(a1.Builds)), slices.Collect(maps.Keys(a2.Builds)))
	}
}

// With the defaults the tag is the tree hash's prefix; args, target and
// the Dockerfile's name make another tag each.
func TestBuildTagOptions(t *testing.T) {
	b := Build{Context: ".", Dockerfile: DefaultDockerfile, TreeHash: "0123456789abcdef0123456789abcdef01234567"}
	if got := BuildTag(b); got != "tree-0123456789ab" {
		t.Errorf("default tag %q, want the tree hash's prefix", got)
	}
	seen := map[string]string{BuildTag(b): "default"}
	for name, mod := range map[string]func(*Build){
		"args":       func(b *Build) { b.Args = map[string]string{"V": "1"} },
		"args2":      func(b *Build) { b.Args = map[string]string{"V": "2"} },
		"target":     func(b *Build) { b.Target = "prod" },
		"dockerfile": func(b *Build) { b.Dockerfile = "Dockerfile.prod" },
	} {
		c := b
		mod(&c)
		tag := BuildTag(c)
		if prev, dup := seen[tag]; dup {
			t.Errorf("%s and %s give the same tag %s", name, prev, tag)
		}
		seen[tag] = name
		if tag != BuildTag(c) {
			t.Errorf("%s: tag not stable", name)
		}
	}
}

func TestComposeBuildMapping(t *testing.T) {
	files := map[string]string{
		"compose.yaml": `services:
  plain:
    build: ./web
  named:
    image: shop/web:1.2
    build:
      context: web
      dockerfile: Dockerfile.prod
      args: {VERSION: "1.2", EMPTY: ""}
      target: prod
`,
		"web/Dockerfile":      dockerfileScratch,
		"web/Dockerfile.prod": dockerfileScratch + "LABEL prod=1\n",
		"web/app":             "v1",
	}
	a := buildApp(t, files)
	plain, named := a.Service("plain").Spec, a.Service("named").Spec
	if !strings.HasPrefix(plain.Image, "driftless/shop-plain:tree-") {
		t.Errorf("plain image %q, want driftless/shop-plain:tree-…", plain.Image)
	}
	if plain.Build == nil || plain.Build.Context != "web" || plain.Build.Dockerfile != "Dockerfile" {
		t.Errorf("plain build %+v", plain.Build)
	}
	if !strings.HasPrefix(named.Image, "shop/web:tree-") {
		t.Errorf("named image %q, want shop/web:tree-…", named.Image)
	}
	want := Build{Context: "web", Dockerfile: "Dockerfile.prod", Args: map[string]string{"VERSION": "1.2", "EMPTY": ""}, Target: "prod", Image: "shop/web:1.2"}
	got := *named.Build
	got.TreeHash = ""
	if !equalBuild(got, want) {
		t.Errorf("named build %+v, want %+v", got, want)
	}
	bc := a.Builds[named.Image]
	if bc == nil || !slices.Equal(bc.Tags, []string{"shop/web:1.2"}) || !slices.Equal(bc.Services, []string{"named"}) {
		t.Errorf("build context of named: %+v", bc)
	}
	if plain.Build.TreeHash != named.Build.TreeHash {
		t.Error("the same directory gave two tree hashes")
	}
	if plain.Image[strings.LastIndex(plain.Image, ":"):] == named.Image[strings.LastIndex(named.Image, ":"):] {
		t.Error("different dockerfile, args and target gave the same tag")
	}
}

func equalBuild(a, b Build) bool {
	return a.Context == b.Context && a.Dockerfile == b.Dockerfile && maps.Equal(a.Args, b.Args) && a.Target == b.Target && a.Image == b.Image && a.TreeHash == b.TreeHash
}

func TestComposeBuildRefusals(t *testing.T) {
	got := composeErrors(t, map[string]string{
		"compose.yaml": `services:
  web:
    build:
      context: web
      args: [UNSET] # as in compose: not passed, the Dockerfile's ARG default applies
      no_cache: true
      dockerfile_inline: "FROM scratch"
  nodir:
    build: ./missing
  nofile:
    build: {context: web, dockerfile: Other}
  digest:
    image: shop/web@sha256:0123456789012345678901234567890123456789012345678901234567890123
    build: web
`,
		"web/Dockerfile": dockerfileScratch,
	}, LoadOptions{})
	want := []string{
		"compose.yaml:6:17: services.web.build.no_cache: is not supported: an unchanged context is never rebuilt anyway",
		"compose.yaml:7:26: services.web.build.dockerfile_inline: is not supported: commit the Dockerfile and name it with dockerfile:",
		`compose.yaml:13:12: services.digest.image: image "shop/web@sha256:0123456789012345678901234567890123456789012345678901234567890123" names a digest, which a build cannot produce: give a name or name:tag`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Read from the revision once the mapping is clean.
	got = composeErrors(t, map[string]string{
		"compose.yaml":   "services:\n  nodir:\n    build: ./missing\n  nofile:\n    build: {context: web, dockerfile: Other}\n",
		"web/Dockerfile": dockerfileScratch,
	}, LoadOptions{})
	want = []string{
		"compose.yaml:3:12: services.nodir.build: context missing does not exist in this revision: commit the directory or fix the path",
		"compose.yaml:5:5: services.nofile.build: context web: the dockerfile Other is not in the build context web",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Every build attribute compose-go knows is mapped or refused on purpose.
func TestComposeBuildRulesComplete(t *testing.T) {
	for _, name := range composeBuildFields() {
		if _, ok := composeBuildRules[name]; !ok {
			t.Errorf("build.%s is not in composeBuildRules", name)
		}
	}
}

func TestNativeBuild(t *testing.T) {
	fsys := fstest.MapFS{
		"web.yaml": {Data: []byte(`apiVersion: driftless.dev/v1
kind: Service
metadata: {name: web}
spec:
  build:
    context: src
    args: {MODE: prod}
`)},
		"src/Dockerfile": {Data: []byte(dockerfileScratch)},
		"src/app":        {Data: []byte("v1")},
	}
	a, err := Load(fsys, ".", "shop")
	if err != nil {
		t.Fatal(err)
	}
	s := a.Service("web").Spec
	if !strings.HasPrefix(s.Image, "driftless/shop-web:tree-") || s.Build == nil || s.Build.Args["MODE"] != "prod" || a.Builds[s.Image] == nil {
		t.Errorf("native build: image %q build %+v", s.Image, s.Build)
	}
	fsys["web.yaml"] = &fstest.MapFile{Data: []byte(`apiVersion: driftless.dev/v1
kind: Service
metadata: {name: web}
spec:
  build:
    context: ../up
    dockerfile: /abs
`)}
	_, err = Load(fsys, ".", "shop")
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want an ErrorList, got %v", err)
	}
	want := `web.yaml:6:14: spec.build.context: "../up" leaves the app directory: a build context must be inside the app directory
web.yaml:7:17: spec.build.dockerfile: dockerfile "/abs" must be a file inside the build context`
	if list.Error() != want {
		t.Errorf("errors:\n%s\nwant:\n%s", list.Error(), want)
	}
	fsys["web.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: web}\nspec:\n  replicas: 1\n")}
	if _, err := Load(fsys, ".", "shop"); err == nil || !strings.Contains(err.Error(), "spec.image: is required") {
		t.Errorf("neither image nor build: %v", err)
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

func TestReadBuildContextSizeBound(t *testing.T) {
	half := make([]byte, MaxBuildContextBytes/2+1)
	fsys := fstest.MapFS{
		"Dockerfile": {Data: []byte(dockerfileScratch)},
		"a.bin":      {Data: half},
		"b.bin":      {Data: half},
	}
	if _, err := ReadBuildContext(fsys, ".", "Dockerfile"); !errors.Is(err, ErrContextTooLarge) {
		t.Errorf("oversized context: %v, want ErrContextTooLarge", err)
	}
	fsys[".dockerignore"] = &fstest.MapFile{Data: []byte("b.bin\n")}
	if _, err := ReadBuildContext(fsys, ".", "Dockerfile"); err != nil {
		t.Errorf("a .dockerignore that leaves the context under the bound: %v", err)
	}
	_, err := LoadWith(fstest.MapFS{
		"compose.yaml": {Data: []byte("services:\n  web:\n    build: .\n")},
		"Dockerfile":   {Data: []byte(dockerfileScratch)},
		"a.bin":        {Data: half},
		"b.bin":        {Data: half},
	}, ".", "shop", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "compose.yaml:3:12: services.web.build: context . holds more than 64 MiB: add a .dockerignore") {
		t.Errorf("oversized context in a compose file: %v", err)
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
