package compose_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// A compose file at the root of a repository sits beside YAML that is no
// manifest (langfuse's web/public/generated/.../openapi.yml, rallly's
// pnpm-lock.yaml, both over the 512Ki of manifests a revision may hold):
// it is scanned for driftless.dev/ without being counted as read, so the
// app loads. A manifest beside it is still found, past a large file.
func TestYAMLBesideComposeIsNotAManifest(t *testing.T) {
	big := "lockfileVersion: '9.0'\npackages:\n" + strings.Repeat("  /a@1.0.0: {resolution: {integrity: sha512-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx}}\n", 10000)
	files := map[string]string{
		"compose.yaml":   "services:\n  web:\n    image: shop/web:1\n",
		"pnpm-lock.yaml": big,
	}
	loadtest.MustLoadCompose(t, files, load.Options{})

	// The mark split across the scanner's 64KiB pieces is still seen.
	files["z/web.yaml"] = strings.Repeat("#", 64<<10-7) + "\napiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: web}\nspec: {image: x}\n"
	got := loadtest.ComposeErrors(t, files, load.Options{})
	if len(got) != 1 || !strings.HasPrefix(got[0], "z/web.yaml:2:13: apiVersion: a driftless manifest beside the compose file compose.yaml") {
		t.Errorf("errors %q: want the manifest z/web.yaml refused", got)
	}
}

func TestMentions(t *testing.T) {
	fsys := loadtest.ComposeFS(map[string]string{"a": strings.Repeat("x", 64<<10-3) + "driftless.dev/" + strings.Repeat("y", 70000), "b": strings.Repeat("driftless.dev", 20000)})
	fsys["c"] = fsys["a"]
	for name, want := range map[string]bool{"a": true, "b": false} {
		got, err := load.Mentions(fsys, name, []byte("driftless.dev/"), 1<<20)
		if err != nil || got != want {
			t.Errorf("Mentions(%s) = %v, %v; want %v", name, got, err, want)
		}
	}
	if got, err := load.Mentions(fsys, "c", []byte("driftless.dev/"), 1000); got || err != nil {
		t.Errorf("Mentions over max = %v, %v; want false, not read", got, err)
	}
}
