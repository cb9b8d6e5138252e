package config

import (
	"path/filepath"
	"testing"
)

func TestConfigWebExposureKeys(t *testing.T) {
	dir := t.TempDir()
	cfg, err := parseConfig([]byte(`
trustLoopback: false
tlsCertFile: tls/cert.pem
tlsKeyFile: /etc/driftless/key.pem
apps:
  - name: shop
    repo: https://git.example.com/team/infra.git
`), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.DistrustLoopback || cfg.TLSCertFile != filepath.Join(dir, "tls/cert.pem") || cfg.TLSKeyFile != "/etc/driftless/key.pem" {
		t.Errorf("trustLoopback false and TLS files: %+v", cfg)
	}
	for _, doc := range []string{"trustLoopback: true\n", ""} {
		cfg, err := parseConfig([]byte(doc+"apps:\n  - name: shop\n    repo: https://git.example.com/x.git\n"), dir, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		if cfg.DistrustLoopback {
			t.Errorf("%q: loopback distrusted, want trusted by default", doc)
		}
	}
}
