package loadtest

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/load"
)

// ComposeFS builds an app directory from file contents.
func ComposeFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

// LoadComposeFiles loads the files as app "shop".
func LoadComposeFiles(t *testing.T, files map[string]string, opts load.Options) (*manifest.App, error) {
	t.Helper()
	return appdir.LoadWith(ComposeFS(files), ".", "shop", opts)
}

// MustLoadCompose loads files that must be valid.
func MustLoadCompose(t *testing.T, files map[string]string, opts load.Options) *manifest.App {
	t.Helper()
	a, err := LoadComposeFiles(t, files, opts)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if a.Format != manifest.FormatCompose {
		t.Fatalf("format %q, want %q", a.Format, manifest.FormatCompose)
	}
	return a
}

// ComposeErrors returns the error lines of a load that must fail with an
// ErrorList.
func ComposeErrors(t *testing.T, files map[string]string, opts load.Options) []string {
	t.Helper()
	_, err := LoadComposeFiles(t, files, opts)
	if err == nil {
		t.Fatal("load succeeded, want errors")
	}
	return ErrorLines(t, err)
}

// Web is a compose file with one service "web"; lines are indented under it.
func Web(lines ...string) map[string]string {
	body := "services:\n  web:\n    image: shop/web:1\n"
	for _, l := range lines {
		body += "    " + l + "\n"
	}
	return map[string]string{"compose.yaml": body}
}

// BillionLaughs is nine levels of ten aliases each: 10^9 values once
// expanded, in under a kilobyte.
func BillionLaughs(prefix string) string {
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteString("x-l0: &l0 [lol]\n")
	for i := 1; i <= 9; i++ {
		prev := "*l" + strconv.Itoa(i-1)
		b.WriteString("x-l" + strconv.Itoa(i) + ": &l" + strconv.Itoa(i) + " [" + strings.Repeat(prev+", ", 9) + prev + "]\n")
	}
	return b.String()
}

// Svc is the start of a Service document; spec fields follow at line 6,
// column 3.
const Svc = "apiVersion: driftless.dev/v1\nkind: Service\nmetadata:\n  name: web\nspec:\n"

func LoadFiles(t *testing.T, files map[string]string) (*manifest.App, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return appdir.Load(fsys, ".", "shop")
}

// ErrorLines returns the errors of err one per line, failing the test if err
// is not an ErrorList.
func ErrorLines(t *testing.T, err error) []string {
	t.Helper()
	var list manifest.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want ErrorList, got %T: %v", err, err)
	}
	return strings.Split(list.Error(), "\n")
}

// FakeDecrypt stands in for SOPS: "ENC:" + plaintext opens, "LOCKED:" is
// refused the way a wrong key is, anything else is a plaintext file.
func FakeDecrypt(name string, data []byte) ([]byte, error) {
	if p, ok := strings.CutPrefix(string(data), "ENC:"); ok {
		p, _, _ = strings.Cut(p, "sops:\n") // sops drops its metadata
		return []byte(p), nil
	}
	if strings.HasPrefix(string(data), "LOCKED:") {
		return nil, errors.New("no available key can decrypt it")
	}
	return nil, load.ErrNotEncrypted
}

func LoadSecretApp(t *testing.T, files map[string]string, opts load.Options) (*manifest.App, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for p, c := range files {
		fsys[p] = &fstest.MapFile{Data: []byte(c)}
	}
	return appdir.LoadWith(fsys, ".", "shop", opts)
}
