package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// configFromFlags are run's flags with --config-from and the defaults.
func configFromFlags(arg string) runFlags {
	return runFlags{configFrom: arg, data: defaultDataDir(), listen: "127.0.0.1:8080", interval: "30s", path: ".", selfHeal: true}
}

func TestRunConfigFrom(t *testing.T) {
	f := configFromFlags("https://git.example.com/ops/agent.git")
	f.branch, f.prune, f.interval = "prod", true, "1m"
	cfg, err := f.toConfig()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Apps) != 0 || len(cfg.Sources) != 1 {
		t.Fatalf("apps %v, sources %v: want the one source config", cfg.Apps, cfg.Sources)
	}
	sc := cfg.Sources[0]
	if sc.Name != "config" || sc.Generator.Config != "driftless.yaml" || !sc.Prune || sc.App.Repo != "https://git.example.com/ops/agent.git" ||
		sc.App.Branch != "prod" || sc.App.Interval != "1m" || sc.App.Source != "config" || sc.App.Path != "" {
		t.Fatalf("source %+v", sc)
	}

	f = configFromFlags("https://git.example.com/ops/agent.git#hosts/web1/driftless.yaml")
	if cfg, err = f.toConfig(); err != nil || cfg.Sources[0].Generator.Config != "hosts/web1/driftless.yaml" || cfg.Sources[0].Describe() != "config hosts/web1/driftless.yaml" {
		t.Fatalf("#PATH: %+v, %v", cfg.Sources, err)
	}
}

func TestRunConfigFromWithLocalConfig(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "local.yaml")
	write := func(s string) {
		if err := os.WriteFile(local, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Settings only: the apps come from Git.
	write("listen: 127.0.0.1:9999\nexternalURL: https://driftless.example.com/\n")
	f := configFromFlags("https://git.example.com/ops/agent.git")
	f.config = local
	cfg, err := f.toConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:9999" || cfg.ExternalURL != "https://driftless.example.com" || len(cfg.Sources) != 1 || cfg.Sources[0].Name != "config" {
		t.Fatalf("config %+v", cfg)
	}
	// Its apps and sources still apply.
	write("apps:\n  - name: local\n    repo: https://git.example.com/local.git\nsources:\n  - name: platform\n    repo: https://git.example.com/platform.git\n    directories: ['apps/*']\n")
	if cfg, err = f.toConfig(); err != nil || len(cfg.Apps) != 1 || len(cfg.Sources) != 2 {
		t.Fatalf("apps %v sources %v: %v", cfg.Apps, cfg.Sources, err)
	}
	write("sources:\n  - name: config\n    repo: https://git.example.com/platform.git\n    directories: ['apps/*']\n")
	if _, err = f.toConfig(); err == nil || !strings.Contains(err.Error(), `a source is named "config", the name of --config-from's source: rename it`) {
		t.Fatalf("a local source named config: %v", err)
	}
}

func TestRunConfigFromRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*runFlags)
		want string
	}{
		{"bad path", func(f *runFlags) { f.configFrom = "https://h/r.git#../x.yaml" }, `--config-from "https://h/r.git#../x.yaml": the path after #: config: "../x.yaml" leaves the repository`},
		{"no URL", func(f *runFlags) { f.configFrom = "#driftless.yaml" }, "want URL#PATH"},
		{"with --repo", func(f *runFlags) { f.repo = "https://h/other.git" }, "--config-from names the repository itself: leave out --repo and --discover"},
		{"with --discover", func(f *runFlags) { f.discover = "apps/*" }, "leave out --repo and --discover"},
		{"with --path", func(f *runFlags) { f.path = "apps" }, "--config-from: leave out --path, --app and --commit"},
		{"insecure", func(f *runFlags) { f.configFrom = "git://h/r.git" }, "--config-from: repository git://h/r.git is refused"},
		{"bad interval", func(f *runFlags) { f.interval = "often" }, "--interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := configFromFlags("https://git.example.com/ops/agent.git")
			tc.set(&f)
			if _, err := f.toConfig(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	f := configFromFlags("git://127.0.0.1/agent.git")
	f.allowInsecure = true
	if cfg, err := f.toConfig(); err != nil || !cfg.Sources[0].App.AllowInsecureTransport {
		t.Fatalf("--allow-insecure-transport applies to the config repository: %v", err)
	}
}
