package config

import (
	"strings"
	"testing"
)

func TestConfigLinkTemplates(t *testing.T) {
	getenv := func(string) string { return "" }
	cfg, err := parseConfig([]byte(`apps:
  - name: shop
    repo: https://git.internal/ops/shop.git
    commitURLTemplate: https://git.internal/ops/shop/commit/{sha}
    treeURLTemplate: https://git.internal/ops/shop/src/commit/{sha}/{path}
`), t.TempDir(), getenv)
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Apps[0]; a.CommitURLTemplate != "https://git.internal/ops/shop/commit/{sha}" || a.TreeURLTemplate != "https://git.internal/ops/shop/src/commit/{sha}/{path}" {
		t.Errorf("templates = %q, %q", a.CommitURLTemplate, a.TreeURLTemplate)
	}
	_, err = parseConfig([]byte(`apps:
  - name: shop
    repo: https://git.internal/ops/shop.git
    treeURLTemplate: https://git.internal/ops/shop/src/{path}
`), t.TempDir(), getenv)
	if err == nil || !strings.Contains(err.Error(), "treeURLTemplate") || !strings.Contains(err.Error(), "{sha}") {
		t.Errorf("template without {sha}: err = %v", err)
	}
}
