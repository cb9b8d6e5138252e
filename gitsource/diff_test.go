package gitsource_test

import (
	"context"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/gitsource"
)

// The diff covers the app's path only, shows each changed line once with
// its sign, and is cut with TooLarge set at the bound.
func TestDiffRestrictedToPath(t *testing.T) {
	repo := gitserver.Init(t, t.TempDir(), "app")
	repo.WriteFile("deploy/web.yaml", "name: web\nimage: nginx:1.26\nreplicas: 2\n")
	repo.WriteFile("docs/README.md", "old docs\n")
	v1 := repo.Commit("v1")
	repo.WriteFile("deploy/web.yaml", "name: web\nimage: nginx:1.27\nreplicas: 2\n")
	repo.WriteFile("deploy/worker.yaml", "name: worker\n")
	repo.WriteFile("docs/README.md", "new docs\n")
	v2 := repo.Commit("v2")

	s := newSource(t, gitsource.Config{URL: "file://" + repo.Bare, Path: "./deploy/"})
	fetch(t, s)
	ctx := context.Background()
	d, err := s.Diff(ctx, v1, v2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.From != v1 || d.To != v2 || d.Path != "deploy" || d.Files != 2 || d.TooLarge {
		t.Errorf("Diff = %+v", d)
	}
	for _, want := range []string{
		"--- a/deploy/web.yaml\n+++ b/deploy/web.yaml\n",
		"-image: nginx:1.26\n+image: nginx:1.27\n",
		" replicas: 2\n",
		"+++ b/deploy/worker.yaml\n", "+name: worker\n",
	} {
		if !strings.Contains(d.Text, want) {
			t.Errorf("diff lacks %q:\n%s", want, d.Text)
		}
	}
	if strings.Contains(d.Text, "docs") {
		t.Errorf("diff shows a file outside the app's path:\n%s", d.Text)
	}

	// The first revision: everything is added.
	first, err := s.Diff(ctx, "", v1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if first.Files != 1 || !strings.Contains(first.Text, "+image: nginx:1.26\n") {
		t.Errorf("first revision diff = %+v", first)
	}

	// Same revision: nothing.
	if same, err := s.Diff(ctx, v2, v2, 0); err != nil || same.Files != 0 || same.Text != "" {
		t.Errorf("Diff(v2, v2) = %+v, %v", same, err)
	}

	// The bound cuts at a line end and says so.
	small, err := s.Diff(ctx, v1, v2, 60)
	if err != nil {
		t.Fatal(err)
	}
	if !small.TooLarge || len(small.Text) > 60 || (small.Text != "" && !strings.HasSuffix(small.Text, "\n")) {
		t.Errorf("bounded diff = %+v (len %d)", small, len(small.Text))
	}

	if _, err := s.Diff(ctx, v1, strings.Repeat("e", 40), 0); err == nil {
		t.Error("diff to an unknown commit succeeded")
	}
}
