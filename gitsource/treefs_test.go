package gitsource

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/e2e/gitserver"
)

// A large file is listed with its size but read only when opened, so the
// loader can refuse it by size without it ever being in memory.
func TestFilesReadsLargeBlobsOnDemand(t *testing.T) {
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "large")
	big := strings.Repeat("x", lazyBlobBytes+1)
	repo.WriteFile("apps/web.yaml", "kind: Service\n")
	repo.WriteFile("apps/big.bin", big)
	sha := repo.Commit("large file")
	s, err := New(Config{URL: repo.URL(server.URL), Branch: "main", Path: "apps", Dir: t.TempDir(), AllowInsecureTransport: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	fsys, err := s.Files(context.Background(), sha)
	if err != nil {
		t.Fatal(err)
	}
	tfs := fsys.(*treeFS)
	if _, ok := tfs.large["big.bin"]; !ok || tfs.MapFS["big.bin"].Data != nil {
		t.Fatal("a large blob was read eagerly")
	}
	info, err := fs.Stat(fsys, "big.bin")
	if err != nil || info.Size() != int64(len(big)) {
		t.Fatalf("stat: %v %v", info, err)
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil || len(entries) != 2 {
		t.Fatalf("listing: %v %v", entries, err)
	}
	data, err := fs.ReadFile(fsys, "big.bin")
	if err != nil || string(data) != big {
		t.Fatalf("read: %d bytes, %v", len(data), err)
	}
	f, err := fsys.Open("big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if st, _ := f.Stat(); st.Size() != int64(len(big)) {
		t.Fatalf("opened file's size %d", st.Size())
	}
}
