package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// homeDir is per app, what ~ in its bind sources stands for; it must be
// absolute, and has no default.
func TestConfigHomeDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driftless.yaml")
	os.WriteFile(path, []byte("apps:\n  - name: shop\n    repo: https://example.com/shop.git\n    homeDir: /home/ada\n    hostPaths: [/home/ada/shop]\n  - name: blog\n    repo: https://example.com/blog.git\n"), 0o600)
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Apps[0].Policy.HomeDir; got != "/home/ada" {
		t.Errorf("shop homeDir %q", got)
	}
	if got := cfg.Apps[1].Policy.HomeDir; got != "" {
		t.Errorf("blog homeDir %q, want none", got)
	}
	if got := cfg.Apps[0].LoadOptions().Policy.HomeDir; got != "/home/ada" {
		t.Errorf("load options homeDir %q", got)
	}
	os.WriteFile(path, []byte("apps:\n  - name: shop\n    repo: https://example.com/shop.git\n    homeDir: ada\n"), 0o600)
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), `homeDir: "ada" is not an absolute path`) {
		t.Errorf("relative homeDir: %v", err)
	}
}
