package hostfiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
)

// A state directory is created on first use, with the directories above
// it, and what is in it is left as it is afterwards.
func TestEnsureStateDirCreatesAndKeeps(t *testing.T) {
	root := t.TempDir()
	if err := EnsureStateDir(root, "shop", "volumes/db/data"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "shop", "volumes", "db", "data")
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("state directory: %v %v", fi, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "PG_VERSION"), []byte("16\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := EnsureStateDir(root, "shop", "volumes/db/data"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "PG_VERSION")); err != nil || string(b) != "16\n" {
		t.Errorf("the data is not kept: %q %v", b, err)
	}
	// A symlink that stays inside the app's state directory is followed.
	if err := os.Symlink("volumes/db", filepath.Join(root, "shop", "db")); err != nil {
		t.Fatal(err)
	}
	if err := EnsureStateDir(root, "shop", "db/data"); err != nil {
		t.Errorf("symlink inside: %v", err)
	}
}

// A symlink that leads out of the app's state directory is not followed,
// nor created through, and a file where a directory must be is refused.
func TestEnsureStateDirRefusesWayOut(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := EnsureStateDir(root, "shop", "data"); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "shop", "data", "etc")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	err := EnsureStateDir(root, "shop", "data/etc/sub")
	want := "state directory ./data/etc/sub (" + filepath.Join(root, "shop/data/etc/sub") + "): " + link + " is a symlink to " + outside +
		", outside the app's state directory " + filepath.Join(root, "shop") + "; driftless does not follow it: remove the symlink"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	if _, err := os.Stat(filepath.Join(outside, "sub")); !os.IsNotExist(err) {
		t.Errorf("created outside the state directory: %v", err)
	}
	// Another app's state directory is outside too.
	if err := os.Symlink("../../other", filepath.Join(root, "shop", "data", "other")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := EnsureStateDir(root, "shop", "data/other"); err == nil || !strings.Contains(err.Error(), "is a symlink to") {
		t.Errorf("link to another app: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "shop", "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := EnsureStateDir(root, "shop", "file"); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("a file: %v", err)
	}
	for _, bad := range []string{"../x", ".", "/abs"} {
		if err := EnsureStateDir(root, "shop", bad); err == nil {
			t.Errorf("state path %q accepted", bad)
		}
	}
	if _, err := StatePath(root, "../x", manifest.BindMount{StatePath: "data"}); err == nil {
		t.Error("an app name with .. accepted")
	}
}
