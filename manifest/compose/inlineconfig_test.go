package compose_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// A config given inline (content:, interpolated) or by a variable of the
// project environment (environment:, here from .env) is mounted like a
// repository file: one read-only file at /NAME or the target, with its
// content; a changed content changes the service's hash.
func TestComposeInlineConfigs(t *testing.T) {
	files := map[string]string{
		"compose.yaml": `
services:
  web:
    image: shop/web:1
    configs: [motd, {source: site, target: /etc/site.conf}]
  worker:
    image: shop/worker:1
configs:
  motd:
    content: |
      hello from ${GREETING}
  site:
    environment: SITE_CONF
`,
		".env": "GREETING=driftless\nSITE_CONF=listen 80;\n",
	}
	a, err := loadtest.LoadComposeFiles(t, files, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range a.Service("web").Spec.Binds {
		if b.ContentHash == "" || a.Content[b.ContentHash] == nil || !b.ReadOnly {
			t.Fatalf("bind %+v: no content or not read-only", b)
		}
		got = append(got, b.RepoPath+" -> "+b.MountPath+" = "+string(a.Content[b.ContentHash].Files[0].Data))
	}
	want := []string{".compose-configs/site -> /etc/site.conf = listen 80;", ".compose-configs/motd -> /motd = hello from driftless\n"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("config binds:\n%q\nwant\n%q", got, want)
	}

	web, worker := a.Service("web").Hash, a.Service("worker").Hash
	files[".env"] = "GREETING=world\nSITE_CONF=listen 80;\n"
	b, err := loadtest.LoadComposeFiles(t, files, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Service("web").Hash == web || b.Service("worker").Hash != worker {
		t.Errorf("a changed inline config: web's hash changed %v (want true), worker's %v (want false)",
			b.Service("web").Hash != web, b.Service("worker").Hash != worker)
	}
}

func TestComposeConfigFromUnsetVariable(t *testing.T) {
	_, err := loadtest.LoadComposeFiles(t, map[string]string{
		"compose.yaml": "services:\n  web: {image: shop/web:1, configs: [site]}\n  api: {image: shop/api:1, configs: [site]}\nconfigs:\n  site:\n    environment: SITE_CONF\n",
	}, load.Options{})
	want := "compose.yaml:6:18: configs.site.environment: variable SITE_CONF is not set in the project environment"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "SITE_CONF is not set") != 1 {
		t.Fatalf("config from an unset variable: %v\nwant once: %s", err, want)
	}
}
