package loop

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/sources"
)

// TestLeftGitDuringPass: the source stops declaring an app (without
// prune) while the app's own pass is under way; the pass's status write
// must not hide "no longer in Git" — the app is never passed again, so
// nothing else would show it.
func TestLeftGitDuringPass(t *testing.T) {
	repo, shop := newFakeSource(), newFakeSource()
	repo.commit("shop", map[string]string{"apps/shop/web.yaml": service("web", "nginx:1.25", 1)})
	shop.commit("shop", map[string]string{"web.yaml": service("web", "nginx:1.25", 1)})
	sc := config.SourceConfig{Name: "platform", Generator: sources.Generator{Directories: []string{"apps/*"}}, MaxApps: config.DefaultMaxApps,
		App: config.AppConfig{Name: "platform", Repo: "https://git.example.com/platform.git", Branch: "main", Interval: "1m", SelfHeal: true, MaxRemovalPercent: 50}}
	engine := &fakeEngine{}
	a, err := New(Options{DataDir: t.TempDir(), Engine: engine, Sources: []config.SourceConfig{sc},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		NewSource: func(c config.AppConfig) (Source, error) {
			if c.Name == "shop" {
				return shop, nil
			}
			return repo, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	if err := a.discover(ctx, "platform"); err != nil {
		t.Fatal(err)
	}
	dropped := repo.commit("drop the shop", map[string]string{"README.md": "no apps\n"})
	engine.duringApply = func() {
		engine.duringApply = nil
		if err := a.discover(ctx, "platform"); err != nil {
			t.Error(err)
		}
	}
	_, _ = a.reconcile(ctx, "shop", []string{TriggerSource})
	st, ok := a.App("shop")
	if !ok || st.LeftGit == nil || st.LeftGit.Revision != dropped || !strings.Contains(st.Message, "no longer in Git") {
		t.Fatalf("after its source dropped it during its pass, shop shows LeftGit %+v, message %q", st.LeftGit, st.Message)
	}
}
