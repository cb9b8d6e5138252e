package compose_test

import (
	"fmt"
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
		"services/.env":               "PG_VERSION=16\nCACHE_REPLICAS=2\n",
		"services/db.env":             "POSTGRES_DB=app\n",
		"services/init/01.sql":        "select 1;\n",
		"services/cache.yml":          "services:\n  cache:\n    image: redis:7\n    deploy:\n      replicas: ${CACHE_REPLICAS}\n",
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
	if len(a.Warnings) > 0 {
		t.Errorf("warnings: %v", a.Warnings)
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
	if n := cache.Replicas; n != 2 {
		t.Errorf("cache replicas %d: want ${CACHE_REPLICAS} from services/.env, cast to a number", n)
	}
	if strings.Join(cache.Args, " ") != "redis-server --save " {
		t.Errorf("cache args %q: want the second path merged over the first", cache.Args)
	}
	web := a.Services[byName["web"]].Spec
	if web.Build == nil || web.Build.Context != "web/src" || web.Build.Image != "shop/web:2" {
		t.Errorf("web build %+v: want the context relative to project_directory web, env_file web.env", web.Build)
	}
}

func TestIncludeErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"outside the app directory",
			map[string]string{"compose.yaml": "include:\n  - ../common.yaml\n  - /etc/compose.yaml\n  - path: ~/base.yaml\n  - path: [sub/../../x.yaml]\nservices:\n  web:\n    image: x\n"},
			[]string{
				`compose.yaml:2:5: include[0]: "../common.yaml" leaves the app directory: an included file is a path of the app's directory in the repository`,
				`compose.yaml:3:5: include[1]: "/etc/compose.yaml" is outside the app directory: an included file is a path of the app's directory in the repository, relative to the app directory`,
				`compose.yaml:4:11: include[2].path: "~/base.yaml" is outside the app directory: an included file is a path of the app's directory in the repository, relative to the app directory`,
				`compose.yaml:5:12: include[3].path[0]: "sub/../../x.yaml" leaves the app directory: an included file is a path of the app's directory in the repository`,
			}},
		{"project directory and env file outside",
			map[string]string{
				"compose.yaml": "include:\n  - path: a.yaml\n    project_directory: ..\n  - path: a.yaml\n    env_file: /etc/env\n",
				"a.yaml":       "services:\n  web:\n    image: x\n",
			},
			[]string{
				`compose.yaml:3:24: include[0].project_directory: ".." leaves the app directory: project_directory is a path of the app's directory in the repository`,
				`compose.yaml:5:15: include[1].env_file: "/etc/env" is outside the app directory: env_file is a path of the app's directory in the repository, relative to the app directory`,
			}},
		{"missing file, directory, env file",
			map[string]string{
				"compose.yaml": "include:\n  - db.yml\n  - conf\n  - path: a.yaml\n    env_file: [a.env]\nservices:\n  web:\n    image: x\n",
				"a.yaml":       "services:\n  a:\n    image: x\n",
				"conf/x.conf":  "x\n",
			},
			[]string{
				`compose.yaml:2:5: include[0]: "db.yml" does not exist in the repository: commit it, or correct the path (relative to compose.yaml)`,
				`compose.yaml:3:5: include[1]: "conf" is a directory: name a compose file`,
				`compose.yaml:5:16: include[2].env_file[0]: "a.env" cannot be read: file does not exist: commit it, or correct the path (relative to the app directory)`,
			}},
		{"cycle",
			map[string]string{
				"compose.yaml": "include: [sub/a.yaml]\nservices:\n  web:\n    image: x\n",
				"sub/a.yaml":   "include: [b/b.yaml]\nservices:\n  a:\n    image: x\n",
				"sub/b/b.yaml": "include:\n  - ../a.yaml\nservices:\n  b:\n    image: x\n",
			},
			[]string{
				"sub/b/b.yaml:2:5: include[0]: include cycle: sub/a.yaml -> sub/b/b.yaml -> sub/a.yaml: remove one of these includes",
			}},
		{"the compose file itself",
			map[string]string{"compose.yaml": "include: [./compose.yaml]\nservices:\n  web:\n    image: x\n"},
			[]string{
				"compose.yaml:1:11: include[0]: include cycle: compose.yaml -> compose.yaml: remove one of these includes",
			}},
		{"malformed",
			map[string]string{
				"compose.yaml": "include: a.yaml\nservices:\n  web:\n    image: x\n",
			},
			[]string{
				"compose.yaml:1:10: include: must be a list of files (or of mappings with path:)",
			}},
		{"malformed entries",
			map[string]string{
				"compose.yaml": "include:\n  - [a.yaml]\n  - project_directory: x\n  - path: {a: b}\nservices:\n  web:\n    image: x\n",
			},
			[]string{
				"compose.yaml:2:5: include[0]: must be a file (a string) or a mapping with path:",
				"compose.yaml:3:5: include[1]: names no file: write path: with a compose file of the app",
				"compose.yaml:4:11: include[2].path: must be a path or a list of paths",
			}},
		{"the included file is broken",
			map[string]string{
				"compose.yaml": "include: [a.yaml, b.yaml]\nservices:\n  web:\n    image: x\n",
				"a.yaml":       "services:\n  a:\n    image: [x\n",
				"b.yaml":       "services:\n  b:\n    image: shop/${bad\n    imgae: x\n",
			},
			[]string{
				"a.yaml:3: YAML syntax error: did not find expected ',' or ']'",
				"b.yaml:3:12: services.b.image: invalid interpolation \"shop/${bad\": write a literal $ as $$",
			}},
		{"the included file's schema",
			map[string]string{
				"compose.yaml": "include: [a.yaml]\nservices:\n  web:\n    image: x\n",
				"a.yaml":       "services:\n  a:\n    imgae: x\n",
			},
			[]string{
				`a.yaml:3:5: services.a.imgae: unknown field: not part of the compose specification (did you mean "image"?)`,
			}},
		{"fields of included services refused where written",
			map[string]string{
				"compose.yaml":    "include: [services/db.yml]\nservices:\n  web:\n    image: x\n",
				"services/db.yml": "services:\n  db:\n    image: postgres:16\n    privileged: true\n    volumes: [\"../../outside:/m\"]\n    ports: [\"bad:80\"]\n",
			},
			[]string{
				"services/db.yml:6:13: services.db.ports[0]: invalid hostPort: bad",
			}},
		{"fields of included services refused where written, mapping",
			map[string]string{
				"compose.yaml":    "include: [services/db.yml]\nservices:\n  web:\n    image: x\n",
				"services/db.yml": "services:\n  db:\n    image: postgres:16\n    privileged: true\n    volumes: [\"../../outside:/m\"]\n",
			},
			[]string{
				"services/db.yml:4:17: services.db.privileged: a privileged container can take over the host; allow it for this app with `allow: [privileged]` in driftless.yaml (or `--allow privileged`)",
				"services/db.yml:5:15: services.db.volumes[0]: bind source \"../outside\" leaves the app directory: a relative source is a file of the app directory or, when the revision does not hold it, a directory of the app's state, and stays inside; mount other places by their absolute path (policy hostPaths)",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := loadtest.ComposeErrors(t, tt.files, load.Options{})
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// A service or network that both the included file and the including file
// declare is merged as compose-go merges it (as an override file would be,
// the including file winning), and each field is located where it is
// written.
func TestIncludeConflictMerges(t *testing.T) {
	files := map[string]string{
		"compose.yaml": "include: [db.yml]\nservices:\n  db:\n    image: postgres:17\nnetworks:\n  back: {driver: bridge}\n",
		"db.yml":       "services:\n  db:\n    image: postgres:16\n    environment: {A: b}\n    networks: [back]\nnetworks:\n  back: {internal: true}\n",
	}
	a := loadtest.MustLoadCompose(t, files, load.Options{})
	db := a.Services[0].Spec
	if db.Image != "postgres:17" || db.Env["A"] != "b" {
		t.Errorf("db image %q env %v: want the including file's image over the included environment", db.Image, db.Env)
	}
	if len(a.Networks) != 1 || !a.Networks[0].Spec.Internal || a.Networks[0].Spec.Driver != "bridge" {
		t.Errorf("networks %+v: want back merged from both files", a.Networks)
	}
	files["compose.yaml"] = strings.Replace(files["compose.yaml"], "    image: postgres:17\n", "    image: postgres:17\n    privileged: true\n", 1)
	files["db.yml"] = strings.Replace(files["db.yml"], "    environment: {A: b}\n", "    environment: {A: b}\n    pid: host\n", 1)
	got := strings.Join(loadtest.ComposeErrors(t, files, load.Options{}), "\n")
	for _, want := range []string{"compose.yaml:5:17: services.db.privileged:", "db.yml:5:10: services.db.pid:"} {
		if !strings.Contains(got, want) {
			t.Errorf("errors:\n%s\nwant one at %s", got, want)
		}
	}
}

// An included file's own includes resolve against its project directory,
// a file reached twice (a diamond) is read once, and an included service
// can extend a service of another file.
func TestIncludeNested(t *testing.T) {
	files := map[string]string{
		"compose.yaml":             "include: [stack/a.yaml, stack/b.yaml]\nservices:\n  web:\n    image: shop/web:1\n",
		"stack/a.yaml":             "include: [common/shared.yaml]\nservices:\n  a:\n    extends: {file: common/base.yaml, service: base}\n",
		"stack/b.yaml":             "include: [common/shared.yaml]\nservices:\n  b:\n    image: shop/b:1\n",
		"stack/common/shared.yaml": "services:\n  shared:\n    image: shop/shared:1\n    volumes: [\"./conf:/etc/shared:ro\"]\n",
		"stack/common/base.yaml":   "services:\n  base:\n    image: shop/a:1\n    privileged: true\n",
		"stack/common/conf/x":      "x\n",
	}
	got := strings.Join(loadtest.ComposeErrors(t, files, load.Options{}), "\n")
	if want := "stack/common/base.yaml:4:17: services.a.privileged:"; !strings.HasPrefix(got, want) {
		t.Errorf("errors:\n%s\nwant one at %s", got, want)
	}
	files["stack/common/base.yaml"] = "services:\n  base:\n    image: shop/a:1\n"
	a := loadtest.MustLoadCompose(t, files, load.Options{})
	if got := strings.Join(names(a), ","); got != "a,b,shared,web" {
		t.Fatalf("services %s, want a,b,shared,web", got)
	}
	for _, s := range a.Services {
		if s.Name == "shared" && (len(s.Spec.Binds) != 1 || s.Spec.Binds[0].RepoPath != "stack/common/conf") {
			t.Errorf("shared binds %+v: want ./conf relative to stack/common", s.Spec.Binds)
		}
	}
}

// compose ignores an unknown key of an include; driftless warns where it
// is written, and a bind source that leaves the included file's directory
// but not the app's is the app's.
func TestIncludeUnknownKeyWarns(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{
		"compose.yaml": "include:\n  - path: s/a.yaml\n    projectdir: s\n    x-note: ok\nservices:\n  web:\n    image: x\n",
		"s/a.yaml":     "services:\n  a:\n    image: x\n    volumes: ['../conf:/x']\n",
		"conf/c":       "x\n",
	}, load.Options{})
	want := "compose.yaml:3:5: include[0].projectdir: unknown field, ignored as docker compose ignores it: an include takes path, project_directory and env_file"
	if got := fmt.Sprint(a.Warnings); got != want {
		t.Errorf("warnings %s, want %s", got, want)
	}
	if b := a.Services[0].Spec.Binds; len(b) != 1 || b[0].RepoPath != "conf" {
		t.Errorf("binds %+v: want ../conf of s/a.yaml, the app's conf", b)
	}
}
