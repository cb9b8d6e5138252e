package compose_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// volumes_from: the classic nginx + php-fpm file: web mounts what app's
// first replica mounts, read-only, and starts after it; worker's own
// depends_on condition is kept.
func TestComposeVolumesFrom(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": `
services:
  app:
    image: shop/php:1
    volumes: [code:/var/www]
  web:
    image: shop/nginx:1
    volumes_from: ["app:ro"]
  worker:
    image: shop/php:1
    volumes_from: [app]
    depends_on: {app: {condition: service_healthy}}
volumes:
  code:
`}, load.Options{})
	web, worker := a.Service("web").Spec, a.Service("worker").Spec
	if want := []manifest.VolumesFrom{{Service: "app", ReadOnly: true}}; !reflect.DeepEqual(web.VolumesFrom, want) {
		t.Errorf("web volumesFrom %+v, want %+v", web.VolumesFrom, want)
	}
	if !slices.Equal(web.DependsOn, []string{"app"}) || web.DependsCondition("app") != manifest.DependsStarted {
		t.Errorf("web depends on %v (%s), want app (started)", web.DependsOn, web.DependsCondition("app"))
	}
	if want := []manifest.VolumesFrom{{Service: "app"}}; !reflect.DeepEqual(worker.VolumesFrom, want) || worker.DependsCondition("app") != manifest.DependsHealthy {
		t.Errorf("worker volumesFrom %+v, condition %s; want %+v, healthy", worker.VolumesFrom, worker.DependsCondition("app"), want)
	}
}

func TestComposeVolumesFromRefusals(t *testing.T) {
	for _, c := range []struct{ entry, want string }{
		{"container:legacy", `services.web.volumes_from[0]: "container:legacy" mounts the volumes of a container driftless does not manage`},
		{"db", `services.web.volumes_from[0]: service "db" is not declared`},
		{"web", `services.web.volumes_from[0]: a service cannot mount its own volumes`},
		{"app:z", `services.web.volumes_from[0]: must be SERVICE, SERVICE:ro or SERVICE:rw, got "app:z"`},
	} {
		got := loadtest.ComposeErrors(t, map[string]string{"compose.yaml": "services:\n  app: {image: x}\n  web:\n    image: y\n    volumes_from: [\"" + c.entry + "\"]\n"}, load.Options{})
		if !slices.ContainsFunc(got, func(e string) bool { return strings.Contains(e, c.want) }) {
			t.Errorf("volumes_from: [%s]: %q, want %q", c.entry, got, c.want)
		}
	}
	got := loadtest.ComposeErrors(t, map[string]string{"compose.yaml": "services:\n  app:\n    image: x\n    volumes: [\"data:/d\"]\n  web:\n    image: y\n    volumes_from: [app]\nvolumes:\n  data:\n"},
		load.Options{Target: manifest.TargetSwarm})
	if !slices.ContainsFunc(got, func(e string) bool { return strings.Contains(e, "cannot mount another task's volumes") }) {
		t.Errorf("volumes_from on Swarm: %q", got)
	}
}
