package deploy

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

func TestContextTar(t *testing.T) {
	tree := &manifest.RepoTree{Dir: true, Files: []manifest.RepoFile{
		{Path: "Dockerfile", Data: []byte("FROM scratch\n")},
		{Path: "bin/app", Exec: true, Data: []byte("ELF")},
		{Path: "bin/current", Link: "app", Data: []byte("app")},
		{Path: "src/a/b/c.go", Data: []byte("package c")},
	}}
	data, err := ContextTar(tree)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := ContextTar(tree)
	if !bytes.Equal(data, again) {
		t.Error("the same tree gave two different tars")
	}
	var got []string
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		got = append(got, fmt.Sprintf("%c %s %o %q %s", h.Typeflag, h.Name, h.Mode, body, h.Linkname))
	}
	want := []string{
		`0 Dockerfile 644 "FROM scratch\n" `,
		`5 bin/ 755 "" `,
		`0 bin/app 755 "ELF" `,
		`2 bin/current 777 "" app`,
		`5 src/ 755 "" `,
		`5 src/a/ 755 "" `,
		`5 src/a/b/ 755 "" `,
		`0 src/a/b/c.go 644 "package c" `,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tar:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A failed build's stream: lines arrive in pieces, the failing step is
// the last "Step" line, the tail keeps the last 20 lines.
func TestBuildOutputFailure(t *testing.T) {
	var stream strings.Builder
	stream.WriteString(`{"stream":"Step 1/2 : FROM scratch\n"}` + "\n")
	for i := range 25 {
		fmt.Fprintf(&stream, `{"stream":"noise %d\n"}`+"\n", i)
	}
	stream.WriteString(`{"stream":"Step 2/2 : COPY missing "}` + "\n")
	stream.WriteString(`{"stream":"/x\n"}` + "\n")
	stream.WriteString(`{"errorDetail":{"message":"COPY failed: file not found in build context"},"error":"COPY failed: file not found in build context"}` + "\n")
	var lines []string
	o := &buildOutput{emit: func(l string) { lines = append(lines, l) }}
	err := o.read(strings.NewReader(stream.String()))
	var se *engineerr.StreamError
	if !errors.As(err, &se) || se.Msg != "COPY failed: file not found in build context" {
		t.Fatalf("error %v, want the builder's message", err)
	}
	if o.step != "Step 2/2 : COPY missing /x" {
		t.Errorf("step %q", o.step)
	}
	if len(o.tail) != buildTailLines || o.tail[len(o.tail)-1] != "Step 2/2 : COPY missing /x" || o.tail[0] != "noise 6" {
		t.Errorf("tail %q", o.tail)
	}
	if len(lines) != 27 || lines[0] != "Step 1/2 : FROM scratch" {
		t.Errorf("emitted %d lines, first %q", len(lines), lines[0])
	}
	be := &drift.BuildError{Image: "driftless/shop-web:tree-abc", Services: []string{"web"}, Step: o.step, Err: errors.New(se.Msg)}
	if got, want := be.Error(), `building driftless/shop-web:tree-abc for web failed at "Step 2/2 : COPY missing /x": COPY failed: file not found in build context`; got != want {
		t.Errorf("error text %q, want %q", got, want)
	}
}

func TestBuildOptions(t *testing.T) {
	bc := &manifest.BuildContext{
		Ref:   "shop/web:tree-0123456789ab",
		Tags:  []string{"shop/web:1"},
		Build: manifest.Build{Dockerfile: "Dockerfile.prod", Args: map[string]string{"A": "1", "B": ""}, Target: "prod", TreeHash: "0123456789abcdef"},
	}
	o := buildOptions("shop", bc)
	if strings.Join(o.Tags, ",") != "shop/web:tree-0123456789ab,shop/web:1" || o.Dockerfile != "Dockerfile.prod" || o.Target != "prod" {
		t.Errorf("options %+v", o)
	}
	if o.BuildArgs["A"] == nil || *o.BuildArgs["A"] != "1" || o.BuildArgs["B"] == nil || *o.BuildArgs["B"] != "" {
		t.Errorf("args %v", o.BuildArgs)
	}
	if !o.Remove || !o.ForceRemove {
		t.Error("intermediate containers would be left on a shared engine")
	}
	if o.Labels[drift.LabelApp] != "shop" || o.Labels[drift.LabelBuilt] != "true" || o.Labels[drift.LabelBuildTree] != "0123456789abcdef" {
		t.Errorf("labels %v", o.Labels)
	}
	if o.NoCache || o.PullParent {
		t.Errorf("a plain build asks for no cache %v, pull %v", o.NoCache, o.PullParent)
	}

	// The manifest's labels beside driftless's, no_cache and pull.
	bc.Build.Labels = map[string]string{"team": "shop"}
	bc.Build.NoCache, bc.Build.Pull = true, true
	o = buildOptions("shop", bc)
	if o.Labels["team"] != "shop" || o.Labels[drift.LabelApp] != "shop" || len(o.Labels) != 4 || !o.NoCache || !o.PullParent {
		t.Errorf("options with labels, no cache and pull: labels %v, no cache %v, pull %v", o.Labels, o.NoCache, o.PullParent)
	}
	if len(bc.Build.Labels) != 1 {
		t.Errorf("buildOptions changed the manifest's labels: %v", bc.Build.Labels)
	}
}

// fakeBuilder is an engine that builds: it has the images in images and
// answers a build with stream (or by blocking until the build is
// cancelled when stream is "").
type fakeBuilder struct {
	dockerAPI
	images   map[string]bool
	stream   string
	buildErr error
	builds   []client.ImageBuildOptions
	tags     []string
}

func (f *fakeBuilder) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	if f.images[ref] {
		return client.ImageInspectResult{}, nil
	}
	return client.ImageInspectResult{}, cerrdefs.ErrNotFound
}

func (f *fakeBuilder) ImageBuild(ctx context.Context, body io.Reader, o client.ImageBuildOptions) (client.ImageBuildResult, error) {
	f.builds = append(f.builds, o)
	if f.buildErr != nil {
		return client.ImageBuildResult{}, f.buildErr
	}
	if _, err := io.ReadAll(body); err != nil {
		return client.ImageBuildResult{}, err
	}
	if f.stream == "" {
		pr, pw := io.Pipe()
		go func() { <-ctx.Done(); pw.CloseWithError(ctx.Err()) }()
		return client.ImageBuildResult{Body: pr}, nil
	}
	if !strings.Contains(f.stream, `"error"`) {
		for _, t := range o.Tags {
			f.images[t] = true
		}
	}
	return client.ImageBuildResult{Body: io.NopCloser(strings.NewReader(f.stream))}, nil
}

func (f *fakeBuilder) ImageTag(_ context.Context, o client.ImageTagOptions) (client.ImageTagResult, error) {
	f.tags = append(f.tags, o.Source+" -> "+o.Target)
	return client.ImageTagResult{}, nil
}

func buildTestApp() *manifest.App {
	ref := "shop/web:tree-0123456789ab"
	return &manifest.App{Name: "shop", Builds: map[string]*manifest.BuildContext{ref: {
		Ref: ref, Tags: []string{"shop/web:1"}, Services: []string{"web"},
		Build: manifest.Build{Context: "web", Dockerfile: "Dockerfile"},
		Files: &manifest.RepoTree{Dir: true, Files: []manifest.RepoFile{{Path: "Dockerfile", Data: []byte("FROM scratch\n")}}},
	}}}
}

func TestEnsureImages(t *testing.T) {
	ctx := context.Background()
	var phases []drift.BuildPhase
	record := func(ev drift.BuildEvent) { phases = append(phases, ev.Phase) }

	// Missing: built, with its names, and then there.
	f := &fakeBuilder{images: map[string]bool{}, stream: `{"stream":"Step 1/1 : FROM scratch\n"}` + "\n" + `{"stream":"Successfully built 1234\n"}` + "\n"}
	e := newEngine(f, Options{})
	defer e.prober.Stop()
	if err := e.EnsureImages(ctx, buildTestApp(), record); err != nil {
		t.Fatal(err)
	}
	if len(f.builds) != 1 || !f.images["shop/web:tree-0123456789ab"] || !f.images["shop/web:1"] {
		t.Fatalf("builds %d, images %v", len(f.builds), f.images)
	}
	want := []drift.BuildPhase{drift.BuildStart, drift.BuildLog, drift.BuildLog, drift.BuildDone}
	if !slices.Equal(phases, want) {
		t.Errorf("events %v, want %v", phases, want)
	}

	// There: nothing built, its user tag moved to it (a revert).
	phases = nil
	if err := e.EnsureImages(ctx, buildTestApp(), record); err != nil {
		t.Fatal(err)
	}
	if len(f.builds) != 1 || !slices.Equal(f.tags, []string{"shop/web:tree-0123456789ab -> shop/web:1"}) || !slices.Equal(phases, []drift.BuildPhase{drift.BuildCached}) {
		t.Errorf("an existing image: builds %d, tags %v, events %v", len(f.builds), f.tags, phases)
	}
}

func TestEnsureImagesFailures(t *testing.T) {
	ctx := context.Background()

	// A failing step: a BuildError with the step.
	f := &fakeBuilder{images: map[string]bool{}, stream: `{"stream":"Step 1/2 : FROM scratch\n"}` + "\n" + `{"stream":"Step 2/2 : COPY missing /x\n"}` + "\n" + `{"error":"COPY failed: no such file"}` + "\n"}
	e := newEngine(f, Options{})
	defer e.prober.Stop()
	err := e.EnsureImages(ctx, buildTestApp(), nil)
	var be *drift.BuildError
	if !errors.As(err, &be) || be.Step != "Step 2/2 : COPY missing /x" || be.Err.Error() != "COPY failed: no such file" || len(be.Tail) != 2 {
		t.Errorf("failing step: %#v", err)
	}

	// A build that never ends: a BuildError that says how long it had.
	f = &fakeBuilder{images: map[string]bool{}}
	e2 := newEngine(f, Options{BuildTimeout: 50 * time.Millisecond})
	defer e2.prober.Stop()
	err = e2.EnsureImages(ctx, buildTestApp(), nil)
	if !errors.As(err, &be) || be.Timeout != 50*time.Millisecond || !strings.Contains(be.Error(), "took longer than 50ms") {
		t.Errorf("endless build: %v", err)
	}

	// The engine failing is not the revision's fault.
	f = &fakeBuilder{images: map[string]bool{}, buildErr: errors.New("connection refused")}
	e3 := newEngine(f, Options{})
	defer e3.prober.Stop()
	err = e3.EnsureImages(ctx, buildTestApp(), nil)
	if errors.As(err, &be) || !errors.Is(err, drift.ErrEngineUnreachable) {
		t.Errorf("engine failure: %v, want ErrEngineUnreachable and no BuildError", err)
	}
}

// fakeImages is an engine with images and containers, for pruning.
type fakeImages struct {
	dockerAPI
	images     []image.Summary
	containers []container.Summary
	filters    client.Filters
	removed    []string
}

func (f *fakeImages) ImageList(_ context.Context, o client.ImageListOptions) (client.ImageListResult, error) {
	f.filters = o.Filters
	var out []image.Summary
	for _, img := range f.images {
		match := true
		for l := range o.Filters["label"] {
			k, v, _ := strings.Cut(l, "=")
			if img.Labels[k] != v {
				match = false
			}
		}
		if match {
			out = append(out, img)
		}
	}
	return client.ImageListResult{Items: out}, nil
}

func (f *fakeImages) ContainerList(_ context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	if !o.All {
		return client.ContainerListResult{}, errors.New("stopped containers must count")
	}
	return client.ContainerListResult{Items: f.containers}, nil
}

func (f *fakeImages) ImageRemove(_ context.Context, ref string, o client.ImageRemoveOptions) (client.ImageRemoveResult, error) {
	if o.Force {
		return client.ImageRemoveResult{}, errors.New("never forced")
	}
	f.removed = append(f.removed, ref)
	for i, img := range f.images {
		img.RepoTags = slices.DeleteFunc(slices.Clone(img.RepoTags), func(t string) bool { return t == ref })
		f.images[i] = img
	}
	return client.ImageRemoveResult{}, nil
}

func (f *fakeImages) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	for _, img := range f.images {
		if img.ID == ref && len(img.RepoTags) > 0 {
			return client.ImageInspectResult{}, nil
		}
	}
	return client.ImageInspectResult{}, cerrdefs.ErrNotFound
}

func TestPruneImages(t *testing.T) {
	built := map[string]string{drift.LabelBuilt: "true", drift.LabelApp: "shop"}
	f := &fakeImages{
		images: []image.Summary{
			{ID: "sha256:old", RepoTags: []string{"driftless/shop-web:tree-aaaaaaaaaaaa", "shop/web:1"}, Size: 3000, Labels: built},
			{ID: "sha256:used", RepoTags: []string{"driftless/shop-web:tree-bbbbbbbbbbbb"}, Size: 5000, Labels: built},
			{ID: "sha256:stopped", RepoTags: []string{"driftless/shop-api:tree-cccccccccccc"}, Size: 7000, Labels: built},
			{ID: "sha256:pulled", RepoTags: []string{"shop/web:2"}, Size: 9000},
		},
		containers: []container.Summary{
			{Names: []string{"/shop-web-1"}, ImageID: "sha256:used", State: "running"},
			{Names: []string{"/someone-else"}, ImageID: "sha256:stopped", State: "exited"},
		},
	}
	e := newEngine(f, Options{FilesDir: filepath.Join(t.TempDir(), "files")})
	defer e.prober.Stop()
	rep, err := e.PruneImages(context.Background(), "shop", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.removed) != 0 || rep.Freed != 3000 || !rep.DryRun {
		t.Fatalf("dry run removed %v, freed %d", f.removed, rep.Freed)
	}
	if got := f.filters["label"]; !got[drift.LabelBuilt+"=true"] || !got[drift.LabelApp+"=shop"] {
		t.Errorf("listed images with filters %v, want only the app's built ones", f.filters)
	}
	rep, err = e.PruneImages(context.Background(), "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.removed, []string{"driftless/shop-web:tree-aaaaaaaaaaaa", "shop/web:1"}) || rep.Freed != 3000 {
		t.Errorf("removed %v (freed %d), want only the unused image, by its names", f.removed, rep.Freed)
	}
	var kept []string
	for _, p := range rep.Images {
		if !p.Removed {
			kept = append(kept, strings.Join(p.InUse, ","))
		}
	}
	if !slices.Equal(kept, []string{"someone-else", "shop-web-1"}) {
		t.Errorf("kept images used by %v, want the running and the stopped container's", kept)
	}
}
