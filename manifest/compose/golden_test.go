package compose_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/load"
)

var update = flag.Bool("update", false, "rewrite testdata/compose/*/want.txt")

// TestComposeCorpus loads each realistic compose app of testdata/compose
// and compares a text rendering of the App with its want.txt. Run
// `go test ./manifest/compose -run TestComposeCorpus -update` to rewrite them
// (and review the diff).
func TestComposeCorpus(t *testing.T) {
	dirs, err := filepath.Glob("testdata/compose/*")
	if err != nil || len(dirs) < 15 {
		t.Fatalf("want at least 15 corpus apps, found %d (%v)", len(dirs), err)
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			a, err := appdir.LoadDirWith(dir, name, corpusOptions(t, dir))
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if a.Format != manifest.FormatCompose {
				t.Fatalf("format %q", a.Format)
			}
			got := renderApp(a)
			golden := filepath.Join(dir, "want.txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("rendering differs from %s (run with -update and review the diff):\n%s", golden, lineDiff(string(want), got))
			}
		})
	}
}

// corpusOptions reads the profiles an app's golden file activates
// (profiles.txt) and the host powers it is allowed (allow.txt).
func corpusOptions(t *testing.T, dir string) load.Options {
	var opts load.Options
	if data, err := os.ReadFile(filepath.Join(dir, "profiles.txt")); err == nil {
		opts.Profiles = strings.Fields(string(data))
	}
	if data, err := os.ReadFile(filepath.Join(dir, "allow.txt")); err == nil {
		opts.Policy.Allow = strings.Fields(string(data))
	}
	return opts
}

// lineDiff lists the lines that differ, for a readable failure.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("- " + wl + "\n+ " + gl + "\n")
		}
	}
	return b.String()
}
