package hostfiles

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
)

// writeSecretFile writes once (complete, with the mode asked for) and
// reuses the file after.
func TestWriteSecretFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "shop", "web", "d.-.-.0440")
	ref := manifest.SecretRef{Mode: 0o440}
	if err := writeSecretFile(p, []byte("v1"), ref); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o440 {
		t.Fatalf("mode %v, %v; want 0440", fi.Mode().Perm(), err)
	}
	if d, _ := os.Stat(filepath.Dir(p)); d.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", d.Mode().Perm())
	}
	if err := writeSecretFile(p, []byte("other"), ref); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "v1" {
		t.Errorf("content %q: a file under its final name is never rewritten (its name is its content)", b)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(p), TmpPrefix+"*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
