package compose_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

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
	want := manifest.Build{Context: "web", Dockerfile: "Dockerfile.prod", Args: map[string]string{"VERSION": "1.2", "EMPTY": ""}, Target: "prod", Image: "shop/web:1.2"}
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

func equalBuild(a, b manifest.Build) bool {
	return a.Context == b.Context && a.Dockerfile == b.Dockerfile && maps.Equal(a.Args, b.Args) && a.Target == b.Target && a.Image == b.Image && a.TreeHash == b.TreeHash
}

func TestComposeBuildRefusals(t *testing.T) {
	got := loadtest.ComposeErrors(t, map[string]string{
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
	}, load.Options{})
	want := []string{
		"compose.yaml:6:17: services.web.build.no_cache: is not supported: an unchanged context is never rebuilt anyway",
		"compose.yaml:7:26: services.web.build.dockerfile_inline: is not supported: commit the Dockerfile and name it with dockerfile:",
		`compose.yaml:13:12: services.digest.image: image "shop/web@sha256:0123456789012345678901234567890123456789012345678901234567890123" names a digest, which a build cannot produce: give a name or name:tag`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Read from the revision once the mapping is clean.
	got = loadtest.ComposeErrors(t, map[string]string{
		"compose.yaml":   "services:\n  nodir:\n    build: ./missing\n  nofile:\n    build: {context: web, dockerfile: Other}\n",
		"web/Dockerfile": dockerfileScratch,
	}, load.Options{})
	want = []string{
		"compose.yaml:3:12: services.nodir.build: context missing does not exist in this revision: commit the directory or fix the path",
		"compose.yaml:5:5: services.nofile.build: context web: the dockerfile Other is not in the build context web",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
