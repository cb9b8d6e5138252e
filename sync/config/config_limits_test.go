package config

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest/policy"
)

func TestConfigLimits(t *testing.T) {
	cfg, err := parseConfig([]byte(`
apps:
  - name: shop
    repo: https://git.example.com/infra.git
    limits: {replicas: 500, services: 30, manifestBytes: 1Mi, contentBytes: 33554432}
  - name: blog
    repo: https://git.example.com/blog.git
`), ".", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	want := policy.Limits{Replicas: 500, Services: 30, ManifestBytes: 1 << 20, ContentBytes: 32 << 20}
	if got := cfg.Apps[0].LoadOptions().Limits; got != want {
		t.Errorf("shop limits = %+v, want %+v", got, want)
	}
	if got := cfg.Apps[1].LoadOptions().Limits.WithDefaults(); got != policy.DefaultLimits() {
		t.Errorf("blog limits = %+v, want the defaults %+v", got, policy.DefaultLimits())
	}

	_, err = parseConfig([]byte(`
apps:
  - name: shop
    repo: https://git.example.com/infra.git
    limits: {replica: 5, services: -1, manifestBytes: lots}
`), ".", func(string) string { return "" })
	for _, want := range []string{
		`apps[0] (shop): limits.manifestBytes: invalid memory quantity "lots"`,
		`apps[0] (shop): limits.replica: unknown limit: must be one of replicas, services`,
		`apps[0] (shop): limits.services: "-1" is not a count`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant it to contain %q", err, want)
		}
	}
}
