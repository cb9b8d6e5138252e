package policy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/internal/hostpath"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// A state directory that a symlink on the host leads out of the app's
// state directory is refused where the bind is written; one inside, or
// one that does not exist yet, is not. The check runs on every pass
// (CheckHostPaths), since a container can make the link.
func TestStateDirSymlinkOut(t *testing.T) {
	stateDir := t.TempDir()
	outside := t.TempDir()
	app := filepath.Join(stateDir, "shop")
	for _, d := range []string{"data", "inner"} {
		if err := os.MkdirAll(filepath.Join(app, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(app, "data", "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../inner", filepath.Join(app, "data", "alias")); err != nil {
		t.Fatal(err)
	}
	host := policy.Host{Resolve: hostpath.Resolve, StateDir: stateDir}
	files := loadtest.Web("volumes:", "  - ./data:/data", "  - ./data/alias:/alias", "  - ./new/dir:/new", "  - ./data/escape/sub:/escape")
	got := loadtest.ComposeErrors(t, files, load.Options{Host: host})
	want := "compose.yaml:8:9: services.web.volumes[3]: state directory ./data/escape/sub (" + filepath.Join(app, "data/escape/sub") +
		") leads to " + filepath.Join(outside, "sub") + " on the host (symlinks followed), outside the app's state directory " + app +
		"; remove the symlink from the state directory (a container that mounts a directory above it can have made it)"
	if strings.Join(got, "\n") != want {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}

	// The zero Host, and a Host without a state root, judge none.
	for _, h := range []policy.Host{{}, {Resolve: hostpath.Resolve}} {
		if _, err := loadtest.LoadComposeFiles(t, files, load.Options{Host: h}); err != nil {
			t.Errorf("host %+v: %v", h, err)
		}
	}
}

// homeDir must be absolute, like hostPaths.
func TestHomeDirValidate(t *testing.T) {
	if err := (policy.Policy{HomeDir: "home/ada"}).Validate(); err == nil || err.Error() != `homeDir: "home/ada" is not an absolute path` {
		t.Errorf("relative homeDir: %v", err)
	}
	if err := (policy.Policy{HomeDir: "/home/ada"}).Validate(); err != nil {
		t.Error(err)
	}
}
