package compose_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// What compose ignores is accepted with a warning that names it: an
// unknown short-syntax volume option (Zabbix writes :roz, which compose
// mounts read-write without a label) and build.cache_from.
func TestComposeIgnoresWhatComposeIgnores(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{
		"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    build: {context: ., cache_from: [shop/web:cache]}\n    volumes: ['data:/data:roz']\nvolumes:\n  data: {}\n",
		"Dockerfile":   "FROM scratch\n",
	}, load.Options{})
	got := a.Warnings.Error()
	for _, want := range []string{
		`compose.yaml:5:15: services.web.volumes[0]: unknown volume option "roz" is ignored, as compose ignores it (the mount is read-write, without an SELinux label)`,
		"compose.yaml:4:25: services.web.build.cache_from: only seeds the build cache",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	if m := a.Service("web").Spec.Volumes; len(m) != 1 || m[0].ReadOnly || m[0].SELinux != "" {
		t.Errorf("volumes %+v; want data read-write without a label, as compose mounts it", m)
	}
}
