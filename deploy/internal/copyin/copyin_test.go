package copyin

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/manifest"
)

// entry is one tar entry as a user of the container sees it.
type entry struct {
	name string
	dir  bool
	mode int64
	data string
}

func (e entry) String() string {
	if e.dir {
		return fmt.Sprintf("%s %o dir", e.name, e.mode)
	}
	return fmt.Sprintf("%s %o %q", e.name, e.mode, e.data)
}

func entries(t *testing.T, archive []byte) []string {
	t.Helper()
	var out []string
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d, want root", h.Name, h.Uid, h.Gid)
		}
		out = append(out, entry{name: h.Name, dir: h.Typeflag == tar.TypeDir, mode: h.Mode, data: string(data)}.String())
	}
}

// app holds the trees and a service spec that binds them.
func app(binds []manifest.BindMount, trees ...*manifest.RepoTree) (*manifest.App, *manifest.ServiceSpec) {
	a := &manifest.App{Name: "shop", Content: map[string]*manifest.RepoTree{}}
	for i, tree := range trees {
		a.Content[tree.Hash()] = tree
		binds[i].ContentHash = tree.Hash()
	}
	return a, &manifest.ServiceSpec{Binds: binds}
}

// TestArchive: a single file lands at its mount path, read-only (0444,
// 0555 when executable); a directory tree under its mount path with its
// directories 0555; binds are written shallowest first, whatever their
// order in the spec; host binds and state directories are not copied.
func TestArchive(t *testing.T) {
	file := &manifest.RepoTree{Files: []manifest.RepoFile{{Data: []byte("listen 80\n")}}}
	script := &manifest.RepoTree{Files: []manifest.RepoFile{{Data: []byte("#!/bin/sh\n"), Exec: true}}}
	site := &manifest.RepoTree{Dir: true, Files: []manifest.RepoFile{
		{Path: "index.html", Data: []byte("<h1>hi</h1>")},
		{Path: "css/a/site.css", Data: []byte("h1{}")},
		{Path: "css/b.css", Data: []byte("p{}")},
		{Path: "bin/run", Data: []byte("x"), Exec: true},
	}}
	a, spec := app([]manifest.BindMount{
		{RepoPath: "site", MountPath: "/srv/www/site", ReadOnly: true},
		{RepoPath: "app.conf", MountPath: "/etc/x.conf", ReadOnly: true},
		{RepoPath: "run.sh", MountPath: "/usr/local/bin/run.sh"},
	}, site, file, script)
	spec.Binds = append(spec.Binds, manifest.BindMount{HostPath: "/var/log", MountPath: "/logs"}, manifest.BindMount{StatePath: "data", MountPath: "/data"})
	archive, err := Archive(a, spec)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(entries(t, archive), "\n")
	want := strings.Join([]string{
		`etc/x.conf 444 "listen 80\n"`,
		`srv/www/site/ 555 dir`,
		`srv/www/site/index.html 444 "<h1>hi</h1>"`,
		`srv/www/site/css/ 555 dir`,
		`srv/www/site/css/a/ 555 dir`,
		`srv/www/site/css/a/site.css 444 "h1{}"`,
		`srv/www/site/css/b.css 444 "p{}"`,
		`srv/www/site/bin/ 555 dir`,
		`srv/www/site/bin/run 555 "x"`,
		`usr/local/bin/run.sh 555 "#!/bin/sh\n"`,
	}, "\n")
	if got != want {
		t.Errorf("archive:\n%s\nwant:\n%s", got, want)
	}
}

// TestArchiveNested: a file mounted inside a mounted directory comes
// after the directory, so it overlays the directory's file of that name.
func TestArchiveNested(t *testing.T) {
	dir := &manifest.RepoTree{Dir: true, Files: []manifest.RepoFile{{Path: "a.conf", Data: []byte("from dir")}}}
	file := &manifest.RepoTree{Files: []manifest.RepoFile{{Data: []byte("from file")}}}
	a, spec := app([]manifest.BindMount{
		{RepoPath: "a.conf", MountPath: "/etc/app/a.conf"},
		{RepoPath: "app", MountPath: "/etc/app"},
	}, file, dir)
	archive, err := Archive(a, spec)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(entries(t, archive), "\n")
	want := "etc/app/ 555 dir\netc/app/a.conf 444 \"from dir\"\netc/app/a.conf 444 \"from file\""
	if got != want {
		t.Errorf("archive:\n%s\nwant:\n%s", got, want)
	}
}

// TestArchiveErrors: content that was not loaded, a file path that leaves
// its tree and a bind at / are refused, naming the bind.
func TestArchiveErrors(t *testing.T) {
	file := &manifest.RepoTree{Files: []manifest.RepoFile{{Data: []byte("x")}}}
	escape := &manifest.RepoTree{Dir: true, Files: []manifest.RepoFile{{Path: "../x", Data: []byte("x")}}}
	for _, c := range []struct {
		name string
		bind manifest.BindMount
		tree *manifest.RepoTree
		want string
	}{
		{"not loaded", manifest.BindMount{RepoPath: "a.conf", MountPath: "/etc/a.conf"}, nil, "the content of repoPath a.conf (mounted at /etc/a.conf) was not loaded with the app"},
		{"leaves", manifest.BindMount{RepoPath: "conf", MountPath: "/etc/conf"}, escape, `repoPath conf (mounted at /etc/conf): file path "../x" leaves the tree`},
		{"root", manifest.BindMount{RepoPath: "a.conf", MountPath: "/"}, file, "repoPath a.conf (mounted at /): repository files cannot be copied onto the container's /"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var a *manifest.App
			var spec *manifest.ServiceSpec
			if c.tree != nil {
				a, spec = app([]manifest.BindMount{c.bind}, c.tree)
			} else {
				c.bind.ContentHash = strings.Repeat("0", 64)
				a, spec = app([]manifest.BindMount{c.bind})
			}
			if _, err := Archive(a, spec); err == nil || err.Error() != c.want {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

type fakeAPI struct {
	calls []client.CopyToContainerOptions
	id    string
	err   error
}

func (f *fakeAPI) CopyToContainer(_ context.Context, id string, o client.CopyToContainerOptions) (client.CopyToContainerResult, error) {
	f.id = id
	f.calls = append(f.calls, o)
	return client.CopyToContainerResult{}, f.err
}

// TestCopy: one request at /, refusing to replace a directory of the
// image by a file; none for a spec without repository files; the
// engine's error is returned saying what failed.
func TestCopy(t *testing.T) {
	file := &manifest.RepoTree{Files: []manifest.RepoFile{{Data: []byte("x")}}}
	a, spec := app([]manifest.BindMount{{RepoPath: "a.conf", MountPath: "/etc/a.conf"}, {RepoPath: "a.conf", MountPath: "/etc/b.conf"}}, file, file)
	api := &fakeAPI{}
	if err := Copy(context.Background(), api, "c1", a, spec); err != nil {
		t.Fatal(err)
	}
	if len(api.calls) != 1 || api.id != "c1" || api.calls[0].DestinationPath != "/" || api.calls[0].AllowOverwriteDirWithFile {
		t.Fatalf("calls %+v on %s, want one at / into c1 that keeps directories", api.calls, api.id)
	}
	data, _ := io.ReadAll(api.calls[0].Content)
	if got := entries(t, data); len(got) != 2 {
		t.Errorf("copied %v, want both files", got)
	}

	none := &fakeAPI{}
	if err := Copy(context.Background(), none, "c1", a, &manifest.ServiceSpec{Binds: []manifest.BindMount{{HostPath: "/x", MountPath: "/x"}}}); err != nil || len(none.calls) != 0 {
		t.Errorf("without repository files: %v, %d calls, want none", err, len(none.calls))
	}

	failing := &fakeAPI{err: errors.New("container rootfs is marked read-only")}
	if err := Copy(context.Background(), failing, "c1", a, spec); err == nil || err.Error() != "copy repository files into the container: container rootfs is marked read-only" {
		t.Errorf("error %v", err)
	}
}

// TestArchiveSecrets: each secret file lands at its target with its
// declared owner and mode (root and 0444 where none is declared), after
// the repository files, so one inside a bound directory overlays it; a
// spec with secrets alone has an archive too.
func TestArchiveSecrets(t *testing.T) {
	site := &manifest.RepoTree{Dir: true, Files: []manifest.RepoFile{{Path: "index.html", Data: []byte("<h1>hi</h1>")}}}
	a, spec := app([]manifest.BindMount{{RepoPath: "site", MountPath: "/srv/site"}}, site)
	a.SecretData = map[string][]byte{"d1": []byte("hunter2"), "d2": []byte("tls-key")}
	spec.Secrets = []manifest.SecretRef{
		{Name: "db", Target: "/run/secrets/db", Mode: 0o400, UID: "999", GID: "998", Digest: "d1"},
		{Name: "tls", Target: "/srv/site/key.pem", Digest: "d2"},
	}
	for _, s := range []*manifest.ServiceSpec{spec, {Secrets: spec.Secrets}} {
		archive, err := Archive(a, s)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		tr := tar.NewReader(bytes.NewReader(archive))
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(tr)
			got = append(got, fmt.Sprintf("%s %d:%d %o %q", h.Name, h.Uid, h.Gid, h.Mode, data))
		}
		want := []string{`run/secrets/db 999:998 400 "hunter2"`, `srv/site/key.pem 0:0 444 "tls-key"`}
		if len(s.Binds) > 0 {
			want = append([]string{`srv/site/ 0:0 555 ""`, `srv/site/index.html 0:0 444 "<h1>hi</h1>"`}, want...)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("archive:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestArchiveSecretErrors: a secret whose value was not decrypted, a
// non-numeric owner and a target at / are refused, naming the secret and
// never its value.
func TestArchiveSecretErrors(t *testing.T) {
	a := &manifest.App{Name: "shop", SecretData: map[string][]byte{"d1": []byte("hunter2")}}
	for _, c := range []struct {
		ref  manifest.SecretRef
		want string
	}{
		{manifest.SecretRef{Name: "db", Target: "/run/secrets/db", Digest: "nope"}, "secret db (at /run/secrets/db): its value was not decrypted with the app"},
		{manifest.SecretRef{Name: "db", Target: "/run/secrets/db", Digest: "d1", UID: "app"}, `secret db (at /run/secrets/db): uid "app" is not a number`},
		{manifest.SecretRef{Name: "db", Target: "/", Digest: "d1"}, "secret db (at /): a secret cannot be copied onto the container's /"},
	} {
		_, err := Archive(a, &manifest.ServiceSpec{Secrets: []manifest.SecretRef{c.ref}})
		if err == nil || err.Error() != c.want || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

// TestCopySecrets: secrets go in the same single request as the
// repository files; the engine's refusal says secret files were part of
// it, without a value.
func TestCopySecrets(t *testing.T) {
	file := &manifest.RepoTree{Files: []manifest.RepoFile{{Data: []byte("x")}}}
	a, spec := app([]manifest.BindMount{{RepoPath: "a.conf", MountPath: "/etc/a.conf"}}, file)
	a.SecretData = map[string][]byte{"d1": []byte("hunter2")}
	spec.Secrets = []manifest.SecretRef{{Name: "db", Target: "/run/secrets/db", Mode: 0o444, Digest: "d1"}}
	api := &fakeAPI{}
	if err := Copy(context.Background(), api, "c1", a, spec); err != nil {
		t.Fatal(err)
	}
	if len(api.calls) != 1 {
		t.Fatalf("%d requests, want one", len(api.calls))
	}
	data, _ := io.ReadAll(api.calls[0].Content)
	if got := entries(t, data); len(got) != 2 || got[1] != `run/secrets/db 444 "hunter2"` {
		t.Errorf("copied %v, want the file and the secret", got)
	}
	failing := &fakeAPI{err: errors.New("container rootfs is marked read-only")}
	if err := Copy(context.Background(), failing, "c1", a, spec); err == nil || err.Error() != "copy repository and secret files into the container: container rootfs is marked read-only" {
		t.Errorf("error %v", err)
	}
}
