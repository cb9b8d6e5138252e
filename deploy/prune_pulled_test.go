package deploy

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/image"
)

// TestPrunePulled: of the images pulled for an app, only the one nothing
// holds goes; the reasons to keep the others are reported.
func TestPrunePulled(t *testing.T) {
	const (
		reg = "127.0.0.1:5000/shop/web"
		d1  = "@sha256:1111111111111111111111111111111111111111111111111111111111111111"
		d6  = "@sha256:6666666666666666666666666666666666666666666666666666666666666666"
	)
	f := &fakeImages{
		images: []image.Summary{
			{ID: "sha256:v1", RepoTags: []string{reg + ":v1"}, RepoDigests: []string{reg + d1}, Size: 1000},
			{ID: "sha256:v2", RepoTags: []string{reg + ":v2"}, Size: 2000},
			{ID: "sha256:v3", RepoTags: []string{reg + ":v3"}, Size: 3000},
			{ID: "sha256:shared", RepoTags: []string{reg + ":shared"}, Size: 4000},
			{ID: "sha256:retagged", RepoTags: []string{reg + ":v4", "mine:latest"}, Size: 5000},
			{ID: "sha256:pinned", RepoDigests: []string{reg + d6}, Size: 6000},
			{ID: "sha256:notours", RepoTags: []string{"nginx:latest"}, Size: 7000},
		},
		containers: []container.Summary{
			{Names: []string{"/shop-web-1"}, ImageID: "sha256:v2", State: "running"},
		},
	}
	e := newEngine(f, Options{FilesDir: filepath.Join(t.TempDir(), "files")})
	defer e.prober.Stop()
	for _, r := range [][2]string{{reg + ":v1", "sha256:v1"}, {reg + ":v2", "sha256:v2"}, {reg + ":v3", "sha256:v3"},
		{reg + ":shared", "sha256:shared"}, {reg + ":v4", "sha256:retagged"}, {reg + ":stable" + d6, "sha256:pinned"}, {reg + ":gone", "sha256:gone"}} {
		e.pulls.Pull("shop", r[0], r[1], false)
	}
	e.pulls.Pull("blog", reg+":shared", "sha256:shared", false)
	e.pulls.Desired("shop", []string{reg + ":v3"})
	e.pulls.Desired("blog", []string{"nginx:latest"})

	rep, err := e.PruneImages(context.Background(), "shop", true)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range rep.Images {
		got[p.ID] = p.Kept + strings.Join(p.InUse, ",")
		if p.Origin != OriginPulled {
			t.Errorf("%s: origin %q", p.ID, p.Origin)
		}
	}
	want := map[string]string{
		"sha256:v1":       "",
		"sha256:v2":       "shop-web-1",
		"sha256:v3":       "the app's desired state names it",
		"sha256:shared":   "pulled by app blog",
		"sha256:retagged": "also named mine:latest, which driftless did not pull for the app",
		"sha256:pinned":   "",
	}
	for id, w := range want {
		if g, ok := got[id]; !ok || g != w {
			t.Errorf("%s: kept for %q (listed %v), want %q", id, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("listed %v, want only the app's pulled images still on the engine", got)
	}
	if len(f.removed) != 0 || rep.Freed != 7000 {
		t.Errorf("dry run removed %v, freed %d, want nothing removed and 7000 offered", f.removed, rep.Freed)
	}

	if _, err := e.PruneImages(context.Background(), "shop", false); err != nil {
		t.Fatal(err)
	}
	slices.Sort(f.removed)
	if w := []string{reg + ":v1", reg + d6}; !slices.Equal(f.removed, w) {
		t.Errorf("removed %v, want v1 by its tag and the pinned image by its digest", f.removed)
	}
	pulled, _, err := e.pulls.All()
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, r := range pulled["shop"] {
		left = append(left, r.ID)
	}
	slices.Sort(left)
	if w := []string{"sha256:retagged", "sha256:shared", "sha256:v2", "sha256:v3"}; !slices.Equal(left, w) {
		t.Errorf("records left %v, want %v (v1 removed, the gone image forgotten)", left, w)
	}
}
