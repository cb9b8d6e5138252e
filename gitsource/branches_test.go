package gitsource_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/gitsource"
)

// TestBranchesListsTheRemote: Branches sees branches as they are pushed
// and deleted, with their heads, without a fetch.
func TestBranchesListsTheRemote(t *testing.T) {
	base := t.TempDir()
	repo := gitserver.Init(t, base, "app")
	main := repo.Commit("main")
	repo.Branch("preview/login")
	login := repo.Commit("login")
	url := repo.URL(gitserver.StartDaemon(t, base))
	s := newSource(t, gitsource.Config{URL: url})

	got, err := s.Branches(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []gitsource.Branch{{Name: "main", SHA: main}, {Name: "preview/login", SHA: login}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("branches %v, want %v", got, want)
	}
	repo.Git("push", "--quiet", "origin", "--delete", "preview/login")
	if got, err = s.Branches(context.Background()); err != nil || len(got) != 1 || got[0].Name != "main" {
		t.Fatalf("after the delete: %v, %v", got, err)
	}
}
