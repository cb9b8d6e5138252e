package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/driftless-dev/driftless/examples"
)

// The demo's repository of apps holds apps/hello, and --clean finds every
// app any commit of it declared: the tour's hello2, added and removed
// again, too; never a hidden directory or a file beside the apps.
func TestDemoSourceApps(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "apps-repo")
	if names, err := demoSourceApps(ctx, repo); err != nil || names != nil {
		t.Fatalf("without the repository: %v, %v", names, err)
	}
	if _, err := demoRepo(ctx, repo, examples.Apps, ".", demoAppsReadme, "Add hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, "apps", "hello", "web.yaml")); err != nil {
		t.Fatalf("apps/hello/web.yaml: %v", err)
	}
	git := func(script string) {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	git(`cp -r apps/hello apps/My_App && mkdir apps/.hidden && cp apps/hello/web.yaml apps/.hidden/ && echo x > apps/notes.md && git add apps && git commit -qm add`)
	git(`git rm -rq apps/My_App && git commit -qm remove`)
	names, err := demoSourceApps(ctx, repo)
	if want := []string{"hello", "my-app"}; err != nil || !slices.Equal(names, want) {
		t.Fatalf("demoSourceApps = %v, %v; want %v", names, err, want)
	}
}
