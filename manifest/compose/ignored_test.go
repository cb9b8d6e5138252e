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

// What compose ignores on one engine in update_config, and what it ignores
// or applies of a config's uid, gid and mode, is accepted with a warning
// that says what driftless does instead.
func TestComposeUpdateAndConfigOwnershipWarn(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{
		"compose.yaml": `services:
  web:
    image: shop/web:1
    deploy: {update_config: {failure_action: continue, max_failure_ratio: 0.5}}
    configs:
      - {source: site, uid: "101", mode: 0440}
      - {source: start, target: /start.sh, mode: 0755}
      - {source: plain, target: /plain}
configs:
  site: {file: ./site.conf}
  start: {content: "#!/bin/sh\nexec web\n"}
  plain: {content: "x=1\n"}
`,
		"site.conf": "listen 80\n",
	}, load.Options{})
	got := a.Warnings.Error()
	for _, want := range []string{
		"compose.yaml:4:46: services.web.deploy.update_config.failure_action: continue is not honoured: a failing rollout stops and keeps the old replicas serving",
		"compose.yaml:4:75: services.web.deploy.update_config.max_failure_ratio: is not honoured",
		"compose.yaml:6:9: services.web.configs[0]: uid, gid and mode have no effect on a config from a file (as in compose)",
		"compose.yaml:7:9: services.web.configs[1]: is mounted read-only as 0444 (0555 when the mode gives execute), owned by root",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "configs[2]") {
		t.Errorf("a config without uid, gid or mode is warned about:\n%s", got)
	}
	binds := a.Service("web").Spec.Binds
	if len(binds) != 3 {
		t.Fatalf("binds %+v; want the three configs", binds)
	}
	wantExec := map[string]bool{"/site": false, "/start.sh": true, "/plain": false}
	for _, b := range binds {
		tree := a.Content[b.ContentHash]
		if tree == nil || len(tree.Files) != 1 || tree.Files[0].Exec != wantExec[b.MountPath] {
			t.Errorf("config at %s: content %+v; want one file, executable %v", b.MountPath, tree, wantExec[b.MountPath])
		}
	}
}
