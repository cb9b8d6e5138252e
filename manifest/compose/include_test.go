package compose_test

import (
	"os"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// include: adds the services, networks and volumes of other files of the
// app; relative paths of an included file resolve against its project
// directory, and its project directory's .env interpolates it.
func TestInclude(t *testing.T) {
	files := map[string]string{
		"compose.yaml": `include:
  - services/db.yml
  - path: [services/cache.yml, services/cache.override.yml]
  - path: other/web.yml
    project_directory: web
    env_file: [web.env]
services:
  app:
    image: shop/app:1
    depends_on: [db, cache]
    networks: [back]
`,
		"services/db.yml": `services:
  db:
    image: postgres:${PG_VERSION}
    env_file: [db.env]
    volumes: ["pgdata:/var/lib/postgresql/data", "./init:/docker-entrypoint-initdb.d:ro"]
    networks: [back]
volumes:
  pgdata: {}
networks:
  back: {}
`,
		"services/.env":               "PG_VERSION=16\n",
		"services/db.env":             "POSTGRES_DB=app\n",
		"services/init/01.sql":        "select 1;\n",
		"services/cache.yml":          "services:\n  cache:\n    image: redis:7\n",
		"services/cache.override.yml": "services:\n  cache:\n    command: [redis-server, --save, \"\"]\n",
		"other/web.yml":               "services:\n  web:\n    image: shop/web:${WEB_TAG}\n    build: {context: ./src}\n",
		"web.env":                     "WEB_TAG=2\n",
		"web/src/Dockerfile":          "FROM scratch\n",
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	a := loadtest.MustLoadCompose(t, files, load.Options{})
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
	if got := strings.Join(names(a), ","); got != "app,cache,db,web" {
		t.Fatalf("services %s, want app,cache,db,web", got)
	}
	byName := map[string]int{}
	for i, s := range a.Services {
		byName[s.Name] = i
	}
	db := a.Services[byName["db"]].Spec
	if db.Image != "postgres:16" || db.Env["POSTGRES_DB"] != "app" {
		t.Errorf("db image %q env %v: want services/.env and services/db.env read", db.Image, db.Env)
	}
	if len(db.Binds) != 1 || db.Binds[0].RepoPath != "services/init" || len(db.Volumes) != 1 {
		t.Errorf("db binds %+v volumes %+v: want ./init relative to services/", db.Binds, db.Volumes)
	}
	cache := a.Services[byName["cache"]].Spec
	if strings.Join(cache.Args, " ") != "redis-server --save " {
		t.Errorf("cache args %q: want the second path merged over the first", cache.Args)
	}
	web := a.Services[byName["web"]].Spec
	if web.Build == nil || web.Build.Context != "web/src" || web.Build.Image != "shop/web:2" {
		t.Errorf("web build %+v: want the context relative to project_directory web, env_file web.env", web.Build)
	}
}
