package loadcache

import (
	"path/filepath"
	"testing"
)

// A state directory (a relative bind source the directory does not hold)
// that appears in the directory makes the next load miss: the source is
// then a file of the app, mounted by its content.
func TestStateDirAppearingMisses(t *testing.T) {
	dir := newApp(t, map[string]string{"compose.yaml": "services:\n  db:\n    image: postgres:16\n    volumes: [./pgdata:/var/lib/postgresql/data]\n"})
	c := testCache(t)
	req := baseRequest(dir)
	if b := loadApp(t, c, req, Miss).Services[0].Spec.Binds[0]; b.StatePath != "pgdata" {
		t.Fatalf("bind %+v, want state directory pgdata", b)
	}
	loadApp(t, c, req, Hit)
	write(t, filepath.Join(dir, "pgdata", "PG_VERSION"), "16\n")
	if b := loadApp(t, c, req, Miss).Services[0].Spec.Binds[0]; b.RepoPath != "pgdata" || b.StatePath != "" {
		t.Fatalf("bind %+v, want the repository directory pgdata", b)
	}
}
