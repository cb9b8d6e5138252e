package loop

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"testing"

	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/sources"
)

// subdirSource is a fake repository seen from one directory, as a
// gitsource.Source with a path reads it.
type subdirSource struct {
	*fakeSource
	dir string
}

func (s subdirSource) Files(ctx context.Context, sha string) (fs.FS, error) {
	fsys, err := s.fakeSource.Files(ctx, sha)
	if err != nil {
		return nil, err
	}
	return fs.Sub(fsys, s.dir)
}

// TestConfigSourceMovesAnAppAtTheSameCommit: the agent's configuration
// from Git moves an app to another directory of its own repository,
// which has no new commit. The app's next pass must parse that commit
// again from the new directory, not keep enforcing what it parsed from
// the old one.
func TestConfigSourceMovesAnAppAtTheSameCommit(t *testing.T) {
	agentRepo, services := newFakeSource(), newFakeSource()
	const svcURL = "https://git.example.com/services.git"
	entry := func(path string) map[string]string {
		return map[string]string{"driftless.yaml": "apps:\n  - name: shop\n    repo: " + svcURL + "\n    path: " + path + "\n"}
	}
	agentRepo.commit("shop", entry("svc/v1"))
	services.commit("two versions", map[string]string{
		"svc/v1/web.yaml": service("web", "nginx:1.25", 1),
		"svc/v2/web.yaml": service("web", "nginx:1.27", 1),
	})
	sc := config.SourceConfig{Name: "config", Generator: sources.Generator{Config: "driftless.yaml"}, MaxApps: config.DefaultMaxApps,
		App: config.AppConfig{Name: "config", Repo: "https://git.example.com/agent.git", Branch: "main", Interval: "1m", SelfHeal: true, MaxRemovalPercent: 50}}
	engine := &fakeEngine{}
	a, err := New(Options{DataDir: t.TempDir(), Engine: engine, Sources: []config.SourceConfig{sc},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		NewSource: func(c config.AppConfig) (Source, error) {
			if c.Repo == svcURL {
				return subdirSource{services, c.Path}, nil
			}
			return agentRepo, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	image := func() string {
		engine.mu.Lock()
		defer engine.mu.Unlock()
		if len(engine.containers) != 1 {
			return ""
		}
		return engine.containers[0].Image
	}
	if err := a.discover(ctx, "config"); err != nil {
		t.Fatal(err)
	}
	_, _ = a.reconcile(ctx, "shop", []string{TriggerSource})
	if got := image(); got != "nginx:1.25" {
		t.Fatalf("shop runs %q, want nginx:1.25 from svc/v1", got)
	}

	agentRepo.commit("shop v2", entry("svc/v2"))
	if err := a.discover(ctx, "config"); err != nil {
		t.Fatal(err)
	}
	_, _ = a.reconcile(ctx, "shop", []string{TriggerSource})
	if got := image(); got != "nginx:1.27" {
		t.Fatalf("after the move shop runs %q, want nginx:1.27 from svc/v2", got)
	}
	if st, _ := a.App("shop"); st.Source.Path != "svc/v2" || st.Source.URL != svcURL {
		t.Errorf("status source %+v, want %s path svc/v2", st.Source, svcURL)
	}
}
