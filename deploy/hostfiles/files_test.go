package hostfiles

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
)

// confTree is a directory tree with a nested, executable file.
func confTree() *manifest.RepoTree {
	return &manifest.RepoTree{Dir: true, Files: []manifest.RepoFile{
		{Path: "a.conf", Data: []byte("a=1\n")},
		{Path: "bin/run", Exec: true, Data: []byte("#!/bin/sh\n")},
	}}
}

// writable makes a materialized (read-only) tree writable, as someone with
// the agent's rights on the host could.
func writable(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(p, 0o755)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMaterializeRewritesTamperedTree: a directory under a content hash is
// reused only while it holds exactly that content; any change made on the
// host is detected and the tree written again under the same name.
func TestMaterializeRewritesTamperedTree(t *testing.T) {
	tampers := map[string]func(t *testing.T, dir string){
		"changed content": func(t *testing.T, dir string) {
			must(t, os.Chmod(filepath.Join(dir, "a.conf"), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "a.conf"), []byte("a=2\n"), 0o644))
		},
		"longer content": func(t *testing.T, dir string) {
			must(t, os.Chmod(filepath.Join(dir, "a.conf"), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "a.conf"), []byte("a=1\nb=evil\n"), 0o644))
		},
		"added file": func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "evil.conf"), []byte("x"), 0o444))
		},
		"added directory": func(t *testing.T, dir string) {
			must(t, os.Mkdir(filepath.Join(dir, "conf.d"), 0o755))
		},
		"removed file": func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "bin", "run")))
		},
		"executable bit": func(t *testing.T, dir string) {
			must(t, os.Chmod(filepath.Join(dir, "a.conf"), 0o555))
		},
		"file swapped for a symlink": func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "a.conf")))
			must(t, os.Symlink("/etc/hostname", filepath.Join(dir, "a.conf")))
		},
		"directory swapped for a file": func(t *testing.T, dir string) {
			must(t, RemoveTree(dir))
			must(t, os.WriteFile(dir, []byte("x"), 0o444))
		},
		"directory swapped for a symlink": func(t *testing.T, dir string) {
			must(t, RemoveTree(dir))
			must(t, os.Symlink("/etc", dir))
		},
	}
	for name, tamper := range tampers {
		t.Run(name, func(t *testing.T) {
			files := filepath.Join(t.TempDir(), "files")
			t.Cleanup(func() { _ = RemoveTree(files) })
			e := &Store{FilesDir: files, Log: slog.New(slog.DiscardHandler)}
			tree := confTree()
			hash := tree.Hash()
			must(t, e.materialize(hash, tree))
			dir := filepath.Join(files, hash)
			if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
				writable(t, dir)
			}
			tamper(t, dir)
			if why := treeDiffers(dir, tree); why == "" {
				t.Fatal("the tampered tree reads as matching")
			}

			must(t, e.materialize(hash, tree))
			if why := treeDiffers(dir, tree); why != "" {
				t.Errorf("after materialize: %s", why)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "a.conf")); string(b) != "a=1\n" {
				t.Errorf("a.conf = %q", b)
			}
			if fi, err := os.Lstat(filepath.Join(dir, "a.conf")); err != nil || fi.Mode() != 0o444 {
				t.Errorf("a.conf: %v %v, want a read-only regular file", fi.Mode(), err)
			}
			ents, err := os.ReadDir(files)
			if err != nil || len(ents) != 1 || ents[0].Name() != hash {
				t.Errorf("files directory holds %v (%v), want only %s", ents, err, hash)
			}
		})
	}
}

// TestMaterializeFullHashNotOldPrefix: a directory named by the first 16
// characters of the content hash (an older version's name, or content
// made to collide with this one at that length) is never what a mount
// gets: the tree lands under the full hash.
func TestMaterializeFullHashNotOldPrefix(t *testing.T) {
	files := filepath.Join(t.TempDir(), "files")
	t.Cleanup(func() { _ = RemoveTree(files) })
	e := &Store{FilesDir: files, Log: slog.New(slog.DiscardHandler)}
	tree := &manifest.RepoTree{Files: []manifest.RepoFile{{Data: []byte("listen 80;\n")}}}
	hash := tree.Hash()
	if len(hash) != 64 {
		t.Fatalf("content hash %q: want all 64 hex characters of the SHA-256", hash)
	}
	other := &manifest.RepoTree{Files: []manifest.RepoFile{{Data: []byte("evil\n")}}}
	prefix := filepath.Join(files, hash[:manifest.LegacyContentIDLen])
	must(t, os.MkdirAll(prefix, 0o755))
	must(t, writeTree(prefix, other))

	app := &manifest.App{Content: map[string]*manifest.RepoTree{hash: tree}}
	bind := manifest.BindMount{RepoPath: "nginx.conf", ContentHash: hash, MountPath: "/etc/nginx/nginx.conf", ReadOnly: true}
	svc := &manifest.Service{Name: "web", Spec: manifest.ServiceSpec{Binds: []manifest.BindMount{bind}}}
	must(t, e.MaterializeService(app, svc))
	src, err := MaterializedPath(app, files, bind)
	must(t, err)
	if want := filepath.Join(files, hash, singleFileName); src != want {
		t.Errorf("bind source %s, want %s", src, want)
	}
	if b, err := os.ReadFile(src); err != nil || string(b) != "listen 80;\n" {
		t.Errorf("mounted content %q (%v), want the repository's", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(prefix, singleFileName)); string(b) != "evil\n" {
		t.Errorf("the old-prefix directory was changed: %q", b)
	}
}

// TestMaterializeRefusesForeignHashes: the name must be a full hash, and
// the hash of the content written under it.
func TestMaterializeRefusesForeignHashes(t *testing.T) {
	files := filepath.Join(t.TempDir(), "files")
	e := &Store{FilesDir: files, Log: slog.New(slog.DiscardHandler)}
	tree := confTree()
	for _, h := range []string{tree.Hash()[:16], "../" + tree.Hash()[3:], strings.ToUpper(tree.Hash()), (&manifest.RepoTree{Dir: true}).Hash()} {
		if err := e.materialize(h, tree); err == nil {
			t.Errorf("materialize under %q: want an error", h)
		}
	}
	if _, err := os.Stat(files); err == nil {
		if ents, _ := os.ReadDir(files); len(ents) > 0 {
			t.Errorf("files written: %v", ents)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestNoRepoFilesWritesNothing: for an engine that may be on another host
// neither the repository files nor the secret files are written on the
// agent's disk (they are copied into the container), while the same
// service on a local engine's store gets its tree.
func TestNoRepoFilesWritesNothing(t *testing.T) {
	tree := confTree()
	app := &manifest.App{Name: "shop", Content: map[string]*manifest.RepoTree{tree.Hash(): tree}, SecretData: map[string][]byte{"d1": []byte("hunter2")}}
	svc := &manifest.Service{Name: "web", Spec: manifest.ServiceSpec{Binds: []manifest.BindMount{{RepoPath: "conf", ContentHash: tree.Hash(), MountPath: "/etc/app", ReadOnly: true}}}}
	remote := filepath.Join(t.TempDir(), "files")
	secrets := filepath.Join(t.TempDir(), "secrets")
	withSecret := *svc
	withSecret.Spec.Secrets = []manifest.SecretRef{{Name: "db", Target: "/run/secrets/db", Mode: 0o444, Digest: "d1"}}
	must(t, (&Store{FilesDir: remote, SecretsDir: secrets, Log: slog.New(slog.DiscardHandler), Remote: true}).MaterializeService(app, &withSecret))
	for _, dir := range []string{remote, secrets} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			ents, _ := os.ReadDir(dir)
			t.Errorf("remote engine's %s: %v (%v), want none", dir, ents, err)
		}
	}
	local := filepath.Join(t.TempDir(), "files")
	t.Cleanup(func() { _ = RemoveTree(local) })
	must(t, (&Store{FilesDir: local, Log: slog.New(slog.DiscardHandler)}).MaterializeService(app, svc))
	if b, err := os.ReadFile(filepath.Join(local, tree.Hash(), "a.conf")); err != nil || string(b) != "a=1\n" {
		t.Errorf("local engine's copy %q (%v)", b, err)
	}
}
