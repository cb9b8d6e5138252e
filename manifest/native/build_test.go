package native_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
)

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
	a, err := appdir.Load(fsys, ".", "shop")
	if err != nil {
		t.Fatal(err)
	}
	s := a.Service("web").Spec
	if !strings.HasPrefix(s.Image, "driftless/shop-web:tree-") || s.Build == nil || s.Build.Args["MODE"] != "prod" || a.Builds[s.Image] == nil {
		t.Errorf("native build: image %q build %+v", s.Image, s.Build)
	}
	// The same build options as compose's.
	fsys["web.yaml"] = &fstest.MapFile{Data: []byte(`apiVersion: driftless.dev/v1
kind: Service
metadata: {name: web}
spec:
  image: shop/web:1
  build:
    context: src
    dockerfileInline: "FROM scratch\nCOPY app /app\n"
    labels: {team: shop}
    tags: [shop/web:latest]
    noCache: true
    pull: true
`)}
	a, err = appdir.Load(fsys, ".", "shop")
	if err != nil {
		t.Fatal(err)
	}
	s = a.Service("web").Spec
	if b := s.Build; b.Dockerfile != manifest.InlineDockerfile || b.Labels["team"] != "shop" || !b.NoCache || !b.Pull || a.Builds[s.Image] == nil ||
		strings.Join(a.Builds[s.Image].Tags, ",") != "shop/web:1,shop/web:latest" {
		t.Errorf("native build options: image %q build %+v", s.Image, b)
	}
	fsys["web.yaml"] = &fstest.MapFile{Data: []byte(`apiVersion: driftless.dev/v1
kind: Service
metadata: {name: web}
spec:
  build:
    context: ../up
    dockerfile: /abs
    dockerfileInline: FROM scratch
    labels: {dev.driftless.app: other}
`)}
	_, err = appdir.Load(fsys, ".", "shop")
	var list manifest.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want an ErrorList, got %v", err)
	}
	want := `web.yaml:6:14: spec.build.context: "../up" leaves the app directory: a build context must be inside the app directory
web.yaml:8:23: spec.build.dockerfileInline: and spec.build.dockerfile are mutually exclusive: give one
web.yaml:9:33: spec.build.labels["dev.driftless.app"]: the label prefix "dev.driftless." is reserved for driftless`
	if list.Error() != want {
		t.Errorf("errors:\n%s\nwant:\n%s", list.Error(), want)
	}
	fsys["web.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: web}\nspec:\n  replicas: 1\n")}
	if _, err := appdir.Load(fsys, ".", "shop"); err == nil || !strings.Contains(err.Error(), "spec.image: is required") {
		t.Errorf("neither image nor build: %v", err)
	}
}
