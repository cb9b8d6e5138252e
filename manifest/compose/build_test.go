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

// TestComposeBuildOptions: dockerfile_inline, labels, tags, no_cache and
// pull, as docker compose builds with them.
func TestComposeBuildOptions(t *testing.T) {
	files := map[string]string{
		"compose.yaml": `services:
  inline:
    image: shop/inline:1
    build:
      context: web
      dockerfile_inline: |
        FROM scratch
        COPY app /app
      labels: {org.opencontainers.image.title: shop}
      tags: [shop/inline:latest, "127.0.0.1:5000/shop/inline:1"]
      no_cache: true
      pull: true
  file:
    build: web
  labelled:
    build:
      context: web
      labels: [team=shop]
`,
		"web/Dockerfile": dockerfileScratch,
		"web/app":        "v1",
	}
	a := buildApp(t, files)
	inline, file, labelled := a.Service("inline").Spec, a.Service("file").Spec, a.Service("labelled").Spec
	b := inline.Build
	if b.Dockerfile != manifest.InlineDockerfile || !strings.HasPrefix(b.DockerfileInline, "FROM scratch\nCOPY app /app") || !b.NoCache || !b.Pull ||
		b.Labels["org.opencontainers.image.title"] != "shop" || !slices.Equal(b.Tags, []string{"shop/inline:latest", "127.0.0.1:5000/shop/inline:1"}) {
		t.Errorf("inline build %+v", b)
	}
	bc := a.Builds[inline.Image]
	if bc == nil || !slices.Equal(bc.Tags, []string{"shop/inline:1", "shop/inline:latest", "127.0.0.1:5000/shop/inline:1"}) {
		t.Fatalf("build context of inline: %+v", bc)
	}
	// The context as sent holds the inline Dockerfile beside the files.
	var sent []string
	for _, f := range bc.Files.Files {
		sent = append(sent, f.Path)
	}
	if !slices.Equal(sent, []string{manifest.InlineDockerfile, "Dockerfile", "app"}) {
		t.Errorf("context sent %v", sent)
	}
	if b.TreeHash == file.Build.TreeHash {
		t.Error("the inline Dockerfile is not part of the context's tree hash")
	}
	tag := func(image string) string { return image[strings.LastIndex(image, ":"):] }
	if tag(labelled.Image) == tag(file.Image) || labelled.Build.Labels["team"] != "shop" {
		t.Errorf("labels change the image built: labelled %s, file %s", labelled.Image, file.Image)
	}
	// How to build is not what runs: no_cache and pull leave the image
	// and the service's hash alone.
	files["compose.yaml"] = strings.NewReplacer("      no_cache: true\n", "", "      pull: true\n", "").Replace(files["compose.yaml"])
	again := buildApp(t, files).Service("inline")
	if again.Spec.Image != inline.Image || again.Hash != a.Service("inline").Hash {
		t.Errorf("dropping no_cache and pull changed the service: image %s -> %s, hash %s -> %s", inline.Image, again.Spec.Image, a.Service("inline").Hash, again.Hash)
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
      labels: {dev.driftless.app: other}
      no_cache_filter: [base]
  nodir:
    build: ./missing
  nofile:
    build: {context: web, dockerfile: Other}
  digest:
    image: shop/web@sha256:0123456789012345678901234567890123456789012345678901234567890123
    build: web
  both:
    build: {context: web, dockerfile: Dockerfile, dockerfile_inline: FROM scratch}
`,
		"web/Dockerfile": dockerfileScratch,
	}, load.Options{})
	want := []string{
		`compose.yaml:6:35: services.web.build.labels["dev.driftless.app"]: the label prefix "dev.driftless." is reserved for driftless`,
		"compose.yaml:7:7: services.web.build.no_cache_filter: is not supported",
		`compose.yaml:13:12: services.digest.image: image "shop/web@sha256:0123456789012345678901234567890123456789012345678901234567890123" names a digest, which a build cannot produce: give a name or name:tag`,
		"compose.yaml:16:70: services.both.build.dockerfile_inline: and build.dockerfile are mutually exclusive: give one",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Read from the revision once the mapping is clean.
	got = loadtest.ComposeErrors(t, map[string]string{
		"compose.yaml": "services:\n  nodir:\n    build: ./missing\n  nofile:\n    build: {context: web, dockerfile: Other}\n" +
			"  badtag:\n    build: {context: web, tags: [\"Shop/Web\"]}\n  digesttag:\n    build: {context: web, tags: [\"shop/web@sha256:0123456789012345678901234567890123456789012345678901234567890123\"]}\n" +
			"  taken:\n    build: {context: web, dockerfile_inline: \"FROM scratch\"}\n",
		"web/Dockerfile":                   dockerfileScratch,
		"web/.driftless-inline.Dockerfile": "FROM scratch\n",
	}, load.Options{})
	want = []string{
		"compose.yaml:3:12: services.nodir.build: context missing does not exist in this revision: commit the directory or fix the path",
		"compose.yaml:5:5: services.nofile.build: context web: the dockerfile Other is not in the build context web",
		`compose.yaml:7:5: services.badtag.build: tags: invalid image reference "Shop/Web": invalid reference format: repository name (Web) must be lowercase`,
		`compose.yaml:9:5: services.digesttag.build: tags: "shop/web@sha256:0123456789012345678901234567890123456789012345678901234567890123" names a digest, which a build cannot produce: give a name or name:tag`,
		"compose.yaml:11:5: services.taken.build: context web: the context web holds a file .driftless-inline.Dockerfile, where driftless puts the inline Dockerfile: rename the file",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
