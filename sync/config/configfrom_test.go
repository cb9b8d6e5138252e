package config

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/sync/sources"
)

func TestConfigSourceGenerator(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, err string
	}{
		{name: "config", yaml: sourceBase + "    config: driftless.yaml\n"},
		{name: "config in a directory", yaml: sourceBase + "    config: agents/host1/driftless.yaml\n    prune: true\n"},
		{name: "config and file", yaml: sourceBase + "    config: driftless.yaml\n    file: apps.yaml\n", err: "give one of directories, file and config"},
		{name: "config and directories", yaml: sourceBase + "    config: driftless.yaml\n    directories: ['apps/*']\n", err: "give one of directories, file and config"},
		{name: "config and branches", yaml: sourceBase + "    config: driftless.yaml\n    branches: {match: 'p/*'}\n", err: "directories:, file:, config: or branches:, one of them"},
		{name: "config outside the repository", yaml: sourceBase + "    config: ../driftless.yaml\n", err: `config: "../driftless.yaml" leaves the repository`},
		{name: "no generator names config", yaml: sourceBase, err: "config: (a driftless.yaml in the repository)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig([]byte(tc.yaml), t.TempDir(), func(string) string { return "" })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sc := cfg.Sources[0]
			if sc.Generator.Config == "" || sc.Describe() != "config "+sc.Generator.Config {
				t.Fatalf("generator %+v, described as %q", sc.Generator, sc.Describe())
			}
		})
	}
}

func TestParseConfigFrom(t *testing.T) {
	for _, tc := range []struct {
		arg, repo, file, err string
	}{
		{arg: "https://git.example.com/ops/agent.git", repo: "https://git.example.com/ops/agent.git", file: "driftless.yaml"},
		{arg: "https://git.example.com/ops/agent.git#hosts/web1/driftless.yaml", repo: "https://git.example.com/ops/agent.git", file: "hosts/web1/driftless.yaml"},
		{arg: "git@git.example.com:ops/agent.git#d.yaml", repo: "git@git.example.com:ops/agent.git", file: "d.yaml"},
		{arg: "", err: `--config-from "": want URL#PATH, like https://git.example.com/ops/agent.git#driftless.yaml (#PATH defaults to driftless.yaml)`},
		{arg: "#driftless.yaml", err: `--config-from "#driftless.yaml": want URL#PATH`},
		{arg: "https://h/r.git#", err: `--config-from "https://h/r.git#": the path after # is empty: name the file, or leave out # for driftless.yaml`},
		{arg: "https://h/r.git#/etc/driftless.yaml", err: `--config-from "https://h/r.git#/etc/driftless.yaml": the path after #: config: "/etc/driftless.yaml" is absolute: write it relative to the repository root`},
		{arg: "https://h/r.git#../x.yaml", err: `--config-from "https://h/r.git#../x.yaml": the path after #: config: "../x.yaml" leaves the repository`},
	} {
		repo, file, err := ParseConfigFrom(tc.arg)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want %q", tc.arg, err, tc.err)
			}
			continue
		}
		if err != nil || repo != tc.repo || file != tc.file {
			t.Errorf("%q: %q, %q, %v; want %q, %q", tc.arg, repo, file, err, tc.repo, tc.file)
		}
	}
}

func TestSameServer(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"https://git.example.com/a.git", "https://git.example.com/b/c.git", true},
		{"https://git.example.com/a.git", "https://GIT.example.com:443/b.git", true},
		{"https://git.example.com/a.git", "https://evil.example.net/a.git", false},
		{"https://git.example.com/a.git", "https://git.example.com:8443/a.git", false},
		{"https://git.example.com/a.git", "http://git.example.com/a.git", false},
		{"https://git.example.com/a.git", "ssh://git@git.example.com/a.git", false},
		{"git@git.example.com:a.git", "ssh://git@git.example.com:22/b.git", true},
		{"git://127.0.0.1:9418/a.git", "git://127.0.0.1/b.git", true},
		{"git://127.0.0.1:9418/a.git", "git://127.0.0.1:9419/b.git", false},
		// Local repositories are on no server: a file in Git must not
		// reach the agent host's other repositories.
		{"/srv/git/config.git", "/srv/git/other.git", false},
		{"file:///srv/git/config.git", "file:///root/secret.git", false},
	} {
		if got := SameServer(tc.a, tc.b); got != tc.want {
			t.Errorf("SameServer(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestConfigSourceAppInOtherRepo: an entry of the agent's configuration
// from Git may name another repository. The template's credentials go
// with it only to the source's own server; its ref is the entry's.
func TestConfigSourceAppInOtherRepo(t *testing.T) {
	dir := t.TempDir()
	yaml := "sources:\n  - name: config\n    repo: https://git.example.com/ops/agent.git\n    branch: main\n    passwordEnv: TOKEN\n" +
		"    knownHostsFile: /etc/ssh/known_hosts\n    config: driftless.yaml\n    template: {allow: [privileged]}\n"
	cfg, err := parseConfig([]byte(yaml), dir, func(k string) string { return map[string]string{"TOKEN": "s3cret"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.Sources[0]

	own, err := sc.AppFor(sources.App{Name: "own", Path: "apps/own", At: "driftless.yaml:3"})
	if err != nil || own.Repo != sc.App.Repo || own.Branch != "main" || own.Auth.Password != "s3cret" {
		t.Fatalf("an app of the source's own repository: %+v, %v", own, err)
	}
	same, err := sc.AppFor(sources.App{Name: "shop", Repo: "https://git.example.com/acme/shop.git", Path: "deploy", At: "driftless.yaml:5"})
	if err != nil {
		t.Fatal(err)
	}
	if same.Repo != "https://git.example.com/acme/shop.git" || same.Branch != "" || same.Auth.Password != "s3cret" || len(same.Policy.Allow) != 1 {
		t.Fatalf("same server: repo %q branch %q token %q allow %v; want the entry's repo, its default branch, the token and the template",
			same.Repo, same.Branch, same.Auth.Password, same.Policy.Allow)
	}
	other, err := sc.AppFor(sources.App{Name: "elsewhere", Repo: "https://evil.example.net/x.git", Path: ".", Tag: "v1", At: "driftless.yaml:8"})
	if err != nil {
		t.Fatal(err)
	}
	if other.Auth.Password != "" || other.Auth.Username != "" || other.Auth.KnownHostsFile != "/etc/ssh/known_hosts" || other.Tag != "v1" {
		t.Fatalf("another server: auth %+v tag %q; want no credentials, the known hosts kept, the entry's tag", other.Auth, other.Tag)
	}
	_, err = sc.AppFor(sources.App{Name: "plain", Repo: "http://git.example.com/x.git", Path: ".", At: "driftless.yaml:9"})
	if err == nil || !strings.HasPrefix(err.Error(), "driftless.yaml:9: repo: ") {
		t.Fatalf("an insecure repository without allowInsecureTransport: %v", err)
	}
	moved := same
	moved.Repo = "https://git.example.com/acme/shop-v2.git"
	if same.SameGenerated(moved) || !same.SameGenerated(same) {
		t.Error("SameGenerated must tell apps of different repositories apart")
	}
}
