package load_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

func buildApp(t *testing.T, files map[string]string) *manifest.App {
	t.Helper()
	return loadtest.MustLoadCompose(t, files, load.Options{})
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
	b := manifest.Build{Context: ".", Dockerfile: manifest.DefaultDockerfile, TreeHash: "0123456789abcdef0123456789abcdef01234567"}
	if got := manifest.BuildTag(b); got != "tree-0123456789ab" {
		t.Errorf("default tag %q, want the tree hash's prefix", got)
	}
	seen := map[string]string{manifest.BuildTag(b): "default"}
	for name, mod := range map[string]func(*manifest.Build){
		"args":       func(b *manifest.Build) { b.Args = map[string]string{"V": "1"} },
		"args2":      func(b *manifest.Build) { b.Args = map[string]string{"V": "2"} },
		"target":     func(b *manifest.Build) { b.Target = "prod" },
		"dockerfile": func(b *manifest.Build) { b.Dockerfile = "Dockerfile.prod" },
	} {
		c := b
		mod(&c)
		tag := manifest.BuildTag(c)
		if prev, dup := seen[tag]; dup {
			t.Errorf("%s and %s give the same tag %s", name, prev, tag)
		}
		seen[tag] = name
		if tag != manifest.BuildTag(c) {
			t.Errorf("%s: tag not stable", name)
		}
	}
}

func TestReadBuildContextSizeBound(t *testing.T) {
	half := make([]byte, load.MaxBuildContextBytes/2+1)
	fsys := fstest.MapFS{
		"Dockerfile": {Data: []byte(dockerfileScratch)},
		"a.bin":      {Data: half},
		"b.bin":      {Data: half},
	}
	if _, err := load.ReadBuildContext(fsys, ".", "Dockerfile"); !errors.Is(err, load.ErrContextTooLarge) {
		t.Errorf("oversized context: %v, want ErrContextTooLarge", err)
	}
	fsys[".dockerignore"] = &fstest.MapFile{Data: []byte("b.bin\n")}
	if _, err := load.ReadBuildContext(fsys, ".", "Dockerfile"); err != nil {
		t.Errorf("a .dockerignore that leaves the context under the bound: %v", err)
	}
	_, err := appdir.LoadWith(fstest.MapFS{
		"compose.yaml": {Data: []byte("services:\n  web:\n    build: .\n")},
		"Dockerfile":   {Data: []byte(dockerfileScratch)},
		"a.bin":        {Data: half},
		"b.bin":        {Data: half},
	}, ".", "shop", load.Options{})
	if err == nil || !strings.Contains(err.Error(), "compose.yaml:3:12: services.web.build: context . holds more than 64 MiB: add a .dockerignore") {
		t.Errorf("oversized context in a compose file: %v", err)
	}
}
