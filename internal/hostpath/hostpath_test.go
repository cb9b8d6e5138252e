package hostpath

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestResolve(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "real", "sub"), 0o755))
	must(os.Symlink("/", filepath.Join(dir, "root")))
	must(os.Symlink("real/sub", filepath.Join(dir, "rel")))
	must(os.Symlink("..", filepath.Join(dir, "real", "sub", "up")))
	must(os.Symlink("/nowhere/docker.sock", filepath.Join(dir, "dangling")))
	must(os.Symlink("loop", filepath.Join(dir, "loop")))
	must(os.WriteFile(filepath.Join(dir, "file"), nil, 0o644))
	for _, tc := range []struct{ in, want string }{
		{dir + "/real/sub", dir + "/real/sub"},
		{dir + "/root", "/"},
		{dir + "/root/run/docker.sock", "/run/docker.sock"},
		{dir + "/rel", dir + "/real/sub"},
		{dir + "/rel/up/sub", dir + "/real/sub"},
		{dir + "/missing/a/b", dir + "/missing/a/b"},
		{dir + "/rel/missing", dir + "/real/sub/missing"},
		{dir + "/dangling", "/nowhere/docker.sock"},
		{dir + "/dangling/x", "/nowhere/docker.sock/x"},
	} {
		got, err := Resolve(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"relative", dir + "/loop", dir + "/file/x"} {
		if got, err := Resolve(bad); err == nil {
			t.Errorf("Resolve(%s) = %q, want an error", bad, got)
		}
	}
}

func TestSockets(t *testing.T) {
	env := map[string]string{"DOCKER_HOST": "unix:///srv/engine//docker.sock", "XDG_RUNTIME_DIR": "/run/user/1000"}
	got := Sockets(func(k string) string { return env[k] })
	if want := []string{"/srv/engine/docker.sock", "/run/user/1000/docker.sock"}; !slices.Equal(got, want) {
		t.Errorf("Sockets = %q, want %q", got, want)
	}
	env = map[string]string{"DOCKER_HOST": "tcp://10.0.0.1:2375", "XDG_RUNTIME_DIR": "relative"}
	if got := Sockets(func(k string) string { return env[k] }); len(got) != 0 {
		t.Errorf("Sockets = %q, want none", got)
	}
}
