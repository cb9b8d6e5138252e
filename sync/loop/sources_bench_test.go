package loop

// Issue 28's discovery target: "a source with 50 app directories:
// discovery on a new revision under 100 ms beyond the fetch". The tree is
// a real Git repository (e2e/gitserver's helpers: a bare repository and a
// working clone) read through gitsource, as the agent reads it; the
// engine is the fake, so nothing here needs Docker:
//
//	go test -run '^$' -bench Discover50 -benchmem -count 6 ./sync/loop/

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/sources"
)

// discoverTarget is issue 28's bound on discovery beyond the fetch.
const discoverTarget = 100 * time.Millisecond

// fetchedSource is a source's repository already fetched: Fetch answers
// the head it holds, so a benchmark times what discovery does after it.
type fetchedSource struct {
	*gitsource.Source
	res gitsource.FetchResult
}

func (s fetchedSource) Fetch(context.Context) (gitsource.FetchResult, error) { return s.res, nil }

// repo50 is a repository shaped like a platform repository: 50 app
// directories under apps/ (25 compose files, 25 driftless manifests next
// to a README), a directory that is not an app, a README and CI files.
// It returns the source's configuration and its repository, fetched.
func repo50(b *testing.B) (config.SourceConfig, fetchedSource) {
	b.Helper()
	base := b.TempDir()
	repo := gitserver.Init(b, base, "platform")
	for i := range 50 {
		dir := fmt.Sprintf("apps/app-%02d/", i)
		if i%2 == 0 {
			repo.WriteFile(dir+"compose.yaml", fmt.Sprintf("services:\n  web:\n    image: nginx:1.25\n    ports: ['%d:80']\n    volumes: [data:/data]\nvolumes:\n  data: {}\n", 20000+i))
		} else {
			repo.WriteFile(dir+"README.md", "the app's notes\n")
			repo.WriteFile(dir+"web.yaml", service("web", "nginx:1.25", 2))
		}
	}
	repo.WriteFile("apps/docs/README.md", "not an app\n")
	repo.WriteFile("README.md", "platform\n")
	repo.WriteFile(".github/workflows/ci.yaml", "on: push\njobs: {}\n")
	repo.Commit("50 apps")
	sc := config.SourceConfig{
		Name: "platform", Generator: sources.Generator{Directories: []string{"apps/*"}}, Prune: true, MaxApps: config.DefaultMaxApps,
		App: config.AppConfig{Name: "platform", Repo: repo.Bare, Branch: "main", Interval: "1m", SelfHeal: true,
			MaxRemovalPercent: 50, AllowInsecureTransport: true},
	}
	gs, err := gitsource.New(gitsource.Config{URL: repo.Bare, Branch: "main", Dir: filepath.Join(b.TempDir(), "clone"), AllowInsecureTransport: true})
	if err != nil {
		b.Fatal(err)
	}
	res, err := gs.Fetch(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return sc, fetchedSource{Source: gs, res: res}
}

// BenchmarkDiscover50 is discovery of a new revision of a source with 50
// app directories, beyond the fetch:
//
//   - tree: read the revision's tree (gitsource.Source.Files), find the
//     apps (sources.Discover) and expand them (SourceConfig.AppsFor);
//   - pass: the agent's whole discovery pass with a fetch that answers
//     at once — the above, saving the accepted set, and applying it
//     (applyAppSet: 50 new apps added, their history written, their first
//     passes queued). Each iteration starts a new agent on a new data
//     directory, outside the timer, so every revision is new to it.
//
// cpu-ns/op is the process's CPU time (user and system) per discovery:
// on a shared machine the wall time also holds the waits for a core.
// A run slower (in wall time) than the target fails the benchmark; the
// testing package's first run of one iteration, a single cold sample, is
// not judged.
func BenchmarkDiscover50(b *testing.B) {
	b.Run("tree", func(b *testing.B) {
		sc, repo := repo50(b)
		ctx := context.Background()
		b.ReportAllocs()
		cpu0 := processCPU(b)
		for b.Loop() {
			fsys, err := repo.Files(ctx, repo.res.Revision.SHA)
			if err != nil {
				b.Fatal(err)
			}
			apps, err := sources.Discover(fsys, sc.Generator, sc.MaxApps)
			if err != nil {
				b.Fatal(err)
			}
			cfgs, err := sc.AppsFor(apps)
			if err != nil || len(cfgs) != 50 {
				b.Fatalf("%d apps, %v", len(cfgs), err)
			}
		}
		b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		checkDiscoverTarget(b)
	})
	b.Run("pass", func(b *testing.B) {
		sc, repo := repo50(b)
		ctx := context.Background()
		clones := b.TempDir()
		newSource := func(c config.AppConfig) (Source, error) {
			if c.Name == "source-"+sc.Name {
				return repo, nil
			}
			// As the agent's: no I/O until the app's first fetch.
			return gitsource.New(gitsource.Config{URL: c.Repo, Branch: c.Branch, Path: c.Path,
				Dir: filepath.Join(clones, c.Name), AllowInsecureTransport: true})
		}
		b.ReportAllocs()
		b.ResetTimer()
		var cpu time.Duration
		for range b.N {
			b.StopTimer()
			a, err := New(Options{DataDir: b.TempDir(), Engine: &fakeEngine{}, Sources: []config.SourceConfig{sc},
				NewSource: newSource, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			cpu0 := processCPU(b)
			if err := a.discover(ctx, sc.Name); err != nil {
				b.Fatal(err)
			}
			cpu += processCPU(b) - cpu0
			b.StopTimer()
			if n := len(a.appNames()); n != 50 {
				b.Fatalf("%d apps after discovery, want 50", n)
			}
			a.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		checkDiscoverTarget(b)
	})
}

func checkDiscoverTarget(b *testing.B) {
	b.Helper()
	if b.N == 1 {
		return
	}
	if per := b.Elapsed() / time.Duration(b.N); per > discoverTarget {
		b.Errorf("discovery took %v per revision; the target is under %v", per, discoverTarget)
	}
}
