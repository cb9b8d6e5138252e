package compose_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// COMPOSE_FILE picks the compose files, as docker compose reads it from
// the environment or the project's .env: in order, later files overriding
// earlier ones, no override file added. Projects ship
// docker-compose.prod.yml beside a development file, say.
func TestComposeFileVariable(t *testing.T) {
	files := map[string]string{
		"docker-compose.yml":      "services:\n  web:\n    image: shop/web:dev\n    environment: {STAGE: dev}\n",
		"docker-compose.prod.yml": "services:\n  web:\n    image: shop/web:1\n  worker:\n    image: shop/worker:1\n",
		"docker-compose.tls.yml":  "services:\n  web:\n    environment: {TLS: on}\n",
		"compose.override.yaml":   "services:\n  web:\n    environment: {OVERRIDE: yes}\n",
	}
	with := func(env string) map[string]string {
		out := map[string]string{".env": env}
		for k, v := range files {
			out[k] = v
		}
		return out
	}

	a := loadtest.MustLoadCompose(t, with("A=1\nCOMPOSE_FILE=docker-compose.prod.yml:docker-compose.tls.yml\n"), load.Options{})
	web := a.Service("web")
	if web == nil || a.Service("worker") == nil || web.Spec.Image != "shop/web:1" || web.Spec.Env["TLS"] != "on" || web.Spec.Env["OVERRIDE"] != "" || web.Spec.Env["STAGE"] != "" {
		t.Fatalf("COMPOSE_FILE in .env: services %+v", a.Services)
	}

	// The app's environment wins over .env, and may change the separator.
	a = loadtest.MustLoadCompose(t, with("COMPOSE_FILE=docker-compose.prod.yml\n"), load.Options{Environment: map[string]string{"COMPOSE_FILE": "docker-compose.yml;docker-compose.tls.yml", "COMPOSE_PATH_SEPARATOR": ";"}})
	if web := a.Service("web"); web == nil || a.Service("worker") != nil || web.Spec.Env["STAGE"] != "dev" || web.Spec.Env["TLS"] != "on" {
		t.Fatalf("COMPOSE_FILE in the environment: services %+v", a.Services)
	}

	// Without it, compose's own discovery: docker-compose.yml and the
	// override file.
	a = loadtest.MustLoadCompose(t, with("A=1\n"), load.Options{})
	if web := a.Service("web"); web == nil || web.Spec.Env["STAGE"] != "dev" || web.Spec.Env["OVERRIDE"] != "yes" {
		t.Fatalf("default discovery: services %+v", a.Services)
	}

	got := loadtest.ComposeErrors(t, with("A=1\n# production\nexport COMPOSE_FILE=docker-compose.prod.yml:missing.yml:../up.yml\n"), load.Options{})
	want := []string{
		`.env:3: COMPOSE_FILE: names "missing.yml", which this revision does not hold in the app directory: commit it, or fix the name`,
		`.env:3: COMPOSE_FILE: names "../up.yml", which is not a compose file of the app directory: "../up.yml" leaves the app directory`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A compose file under a name compose does not look for is not read as a
// driftless manifest: the error says how to select it.
func TestComposeFileUnderAnotherName(t *testing.T) {
	_, err := loadtest.LoadComposeFiles(t, map[string]string{"docker-compose.prod.yml": "services:\n  web:\n    image: shop/web:1\n"}, load.Options{})
	want := "docker-compose.prod.yml:1:1: this reads as a compose file, under a name compose does not look for (compose.yaml, compose.yml, docker-compose.yaml, docker-compose.yml): rename it, or name it in COMPOSE_FILE (in the app's .env or environment), as docker compose -f would"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}
