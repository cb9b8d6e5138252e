package deploy_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// TestBenchUnchangedBuildContext measures what a new revision costs for a
// service whose build context did not change: reading the context from
// the revision and hashing it (manifest.ResolveBuilds, done once per
// revision), then EnsureImages, which finds the image by its tree-hash tag
// with one inspect and builds nothing. The context is 200 files of 16 KiB
// (3.2 MiB). DRIFTLESS_BENCH=1 runs it; it needs the engine.
func TestBenchUnchangedBuildContext(t *testing.T) {
	if os.Getenv("DRIFTLESS_BENCH") != "1" {
		t.Skip("benchmark: set DRIFTLESS_BENCH=1 to run")
	}
	dockerAvailable(t)
	fsys := fstest.MapFS{"web/Dockerfile": {Data: []byte("FROM scratch\nCOPY . /\n")}}
	for i := range 200 {
		data := make([]byte, 16<<10)
		_, _ = rand.Read(data)
		fsys[fmt.Sprintf("web/f%03d", i)] = &fstest.MapFile{Data: data}
	}
	app := fmt.Sprintf("bench%d", time.Now().UnixNano()%1_000_000)
	load := func() *manifest.App {
		a := &manifest.App{Name: app, Services: []manifest.Service{{Name: "web", Spec: manifest.ServiceSpec{Build: &manifest.Build{Context: "web"}}}}}
		if err := load.ResolveBuilds(fsys, ".", a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	e, err := deploy.New(context.Background(), deploy.Options{FilesDir: filepath.Join(t.TempDir(), "files")})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	a := load()
	ref := a.Services[0].Spec.Image
	t.Cleanup(func() { _, _ = e.RemoveImage(context.Background(), ref) })
	built := 0
	count := func(ev drift.BuildEvent) {
		if ev.Phase != drift.BuildCached {
			built++
		}
	}
	if err := e.EnsureImages(ctx, a, count); err != nil { // the first build
		t.Fatal(err)
	}
	built = 0
	const n = 50
	var hash, ensure []time.Duration
	for range n {
		t0 := time.Now()
		a := load()
		t1 := time.Now()
		if err := e.EnsureImages(ctx, a, count); err != nil {
			t.Fatal(err)
		}
		hash, ensure = append(hash, t1.Sub(t0)), append(ensure, time.Since(t1))
		if a.Services[0].Spec.Image != ref {
			t.Fatalf("the unchanged context named %s, want %s", a.Services[0].Spec.Image, ref)
		}
	}
	if built != 0 {
		t.Fatalf("%d builds for an unchanged context, want none", built)
	}
	med := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	t.Logf("unchanged build context (200 files, 3.2 MiB), median of %d revisions: read + tree hash %v, EnsureImages (one inspect, no build) %v; builds: %d",
		n, med(hash).Round(10*time.Microsecond), med(ensure).Round(10*time.Microsecond), built)
}
