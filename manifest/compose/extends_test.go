package compose_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// extends: {file: ...} reads the file from the revision; what a service
// inherits is merged as compose does, relative paths of the extended file
// resolve against its own directory, and fields are located where they
// are written.
func TestExtendsFile(t *testing.T) {
	files := map[string]string{
		"compose.yaml": `services:
  web:
    extends: {file: shared/common.yaml, service: base}
    environment: {ROLE: web}
    expose: ["80"]
  worker:
    extends:
      file: ./shared/common.yaml
      service: base
    command: [worker]
`,
		"shared/common.yaml": `services:
  base:
    image: shop/web:1
    environment: {ROLE: base, TZ: UTC}
    env_file: [base.env]
    volumes: ["./conf:/etc/app:ro"]
    build: {context: ./app}
    x-driftless: {update: {maxSurge: 1, maxUnavailable: 0}}
  unused:
    image: shop/other:1
`,
		"shared/base.env":       "FROM_FILE=shared\n",
		"base.env":              "FROM_FILE=root\n",
		"shared/conf/app.conf":  "a\n",
		"shared/app/Dockerfile": "FROM scratch\n",
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	a := loadtest.MustLoadCompose(t, files, load.Options{})
	// compose-go reads staged copies of the revision's files; none is
	// left behind.
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
	if len(a.Services) != 2 {
		t.Fatalf("services %v, want web and worker only (the base is not a service of the app)", names(a))
	}
	for _, s := range a.Services {
		checkInherited(t, s)
	}
	web, worker := a.Services[0].Spec, a.Services[1].Spec
	if web.Env["ROLE"] != "web" || worker.Env["ROLE"] != "base" {
		t.Errorf("ROLE web %q worker %q, want web's own over the base's", web.Env["ROLE"], worker.Env["ROLE"])
	}
	if len(web.Ports) != 1 || len(worker.Args) != 1 || worker.Args[0] != "worker" {
		t.Errorf("web ports %v, worker args %v: each service's own fields", web.Ports, worker.Args)
	}
}

// checkInherited checks what a service of TestExtendsFile inherits from
// shared/common.yaml.
func checkInherited(t *testing.T, s manifest.Service) {
	t.Helper()
	sp := s.Spec
	if sp.Build == nil || sp.Build.Image != "shop/web:1" || sp.Env["TZ"] != "UTC" || sp.Env["FROM_FILE"] != "shared" {
		t.Errorf("%s: build %+v env %v: want the base's image, environment and shared/base.env", s.Name, sp.Build, sp.Env)
	}
	if len(sp.Binds) != 1 || sp.Binds[0].RepoPath != "shared/conf" || !sp.Binds[0].ReadOnly {
		t.Errorf("%s: binds %+v, want shared/conf (relative to the extended file)", s.Name, sp.Binds)
	}
	if sp.Build == nil || sp.Build.Context != "shared/app" || sp.Build.TreeHash == "" {
		t.Errorf("%s: build %+v, want the context shared/app", s.Name, sp.Build)
	}
	if sp.Update.MaxSurge != 1 || sp.Update.MaxUnavailable != 0 {
		t.Errorf("%s: update %+v, want x-driftless of the base (maxSurge 1, maxUnavailable 0)", s.Name, sp.Update)
	}
	if got := s.Fields["binds[0]"].Pos.String(); got != "shared/common.yaml:6:15" {
		t.Errorf("%s: bind located at %s, want shared/common.yaml:6:15", s.Name, got)
	}
}

func names(a *manifest.App) []string {
	var out []string
	for _, s := range a.Services {
		out = append(out, s.Name)
	}
	return out
}

// A two-level chain across files: each file's paths relative to itself,
// and an app directory that is not the repository's root.
func TestExtendsChainInSubdirectory(t *testing.T) {
	fsys := loadtest.ComposeFS(map[string]string{
		"apps/shop/compose.yaml":      "services:\n  api:\n    extends: {file: stack/api.yaml, service: api}\n    environment: [LEVEL=app]\n",
		"apps/shop/stack/api.yaml":    "services:\n  api:\n    extends: {file: ../base/svc.yaml, service: svc}\n    environment: [LEVEL=stack, API=1]\n    volumes: [./api.conf:/etc/api.conf]\n",
		"apps/shop/stack/api.conf":    "api\n",
		"apps/shop/base/svc.yaml":     "services:\n  svc:\n    image: shop/api:2\n    environment: [LEVEL=base, BASE=1]\n    volumes: [./svc.conf:/etc/svc.conf]\n    cap_add: [SYS_ADMIN]\n",
		"apps/shop/base/svc.conf":     "svc\n",
		"apps/other/compose.yaml":     "services:\n  x:\n    image: y\n",
		"apps/shop/base/unrelated.md": "# notes\n",
	})
	_, err := appdir.LoadWith(fsys, "apps/shop", "shop", load.Options{})
	got := loadtest.ErrorLines(t, err)
	want := "apps/shop/base/svc.yaml:6:15: services.api.cap_add[0]: capability SYS_ADMIN is beyond Docker's defaults"
	if len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Fatalf("errors %q, want one at the base file: %q", got, want)
	}
	fsys["apps/shop/base/svc.yaml"].Data = []byte(strings.Replace(string(fsys["apps/shop/base/svc.yaml"].Data), "SYS_ADMIN", "NET_ADMIN", 1))
	a, err := appdir.LoadWith(fsys, "apps/shop", "shop", load.Options{Policy: policy.Policy{Allow: []string{"capabilities"}}})
	if err != nil {
		t.Fatal(err)
	}
	sp := a.Services[0].Spec
	if sp.Image != "shop/api:2" || sp.Env["LEVEL"] != "app" || sp.Env["API"] != "1" || sp.Env["BASE"] != "1" {
		t.Errorf("image %q env %v: want the chain merged, the app's LEVEL last", sp.Image, sp.Env)
	}
	var repo []string
	for i, b := range sp.Binds {
		repo = append(repo, b.MountPath+"="+b.RepoPath+"@"+a.Services[0].Fields[fmt.Sprintf("binds[%d]", i)].Pos.String())
	}
	if got := strings.Join(repo, " "); got != "/etc/api.conf=stack/api.conf@apps/shop/stack/api.yaml:5:15 /etc/svc.conf=base/svc.conf@apps/shop/base/svc.yaml:5:15" {
		t.Errorf("binds %v, want each relative to its own file, located there", got)
	}
}

// What is wrong with an extends is reported where it is written, in
// whichever file; every problem at once.
func TestExtendsErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"outside the app directory",
			map[string]string{"compose.yaml": "services:\n  a:\n    extends: {file: ../common.yaml, service: base}\n  b:\n    extends: {file: /etc/compose.yaml, service: base}\n  c:\n    extends: {file: ~/base.yaml, service: base}\n  d:\n    extends: {file: sub/../../x.yaml, service: base}\n"},
			[]string{
				`compose.yaml:3:21: services.a.extends.file: "../common.yaml" leaves the app directory: extends.file names a file of the app's directory in the repository`,
				`compose.yaml:5:21: services.b.extends.file: "/etc/compose.yaml" is outside the app directory: extends.file names a file of the app's directory in the repository, relative to compose.yaml`,
				`compose.yaml:7:21: services.c.extends.file: "~/base.yaml" is outside the app directory: extends.file names a file of the app's directory in the repository, relative to compose.yaml`,
				`compose.yaml:9:21: services.d.extends.file: "sub/../../x.yaml" leaves the app directory: extends.file names a file of the app's directory in the repository`,
			}},
		{"missing file and service",
			map[string]string{
				"compose.yaml": "services:\n  web:\n    extends: {file: common.yml, service: base}\n  api:\n    extends: {file: common.yaml, service: bsae}\n  job:\n    extends: {service: nope}\n  dir:\n    extends: {file: conf, service: x}\n",
				"common.yaml":  "services:\n  base:\n    image: shop/web:1\n",
				"conf/x.conf":  "x\n",
			},
			[]string{
				`compose.yaml:3:21: services.web.extends.file: "common.yml" does not exist in the repository: commit it, or correct the path (relative to compose.yaml)`,
				`compose.yaml:5:43: services.api.extends.service: service api extends "bsae", which common.yaml does not declare: name a service of common.yaml`,
				`compose.yaml:7:24: services.job.extends.service: service job extends "nope", which this file does not declare: name a service of this file`,
				`compose.yaml:9:21: services.dir.extends.file: "conf" is a directory: name a compose file`,
			}},
		{"cycle across files",
			map[string]string{
				"compose.yaml": "services:\n  web:\n    extends: {file: a.yaml, service: one}\n",
				"a.yaml":       "services:\n  one:\n    extends: {file: b/b.yaml, service: two}\n",
				"b/b.yaml":     "services:\n  two:\n    extends:\n      file: ../a.yaml\n      service: one\n",
			},
			[]string{
				"b/b.yaml:5:16: services.two.extends.service: extends cycle: web (compose.yaml) -> one (a.yaml) -> two (b/b.yaml) -> one (a.yaml): remove one of these extends",
			}},
		{"cycle in one file",
			map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n    extends: b\n  b:\n    extends: {service: a}\n"},
			[]string{
				"compose.yaml:6:24: services.b.extends.service: extends cycle: a (compose.yaml) -> b (compose.yaml) -> a (compose.yaml): remove one of these extends",
			}},
		{"the extended file is broken",
			map[string]string{
				"compose.yaml": "services:\n  web:\n    extends: {file: common.yaml, service: base}\n  api:\n    extends: {file: other.yaml, service: base}\n",
				"common.yaml":  "services:\n  base:\n    image: [x\n",
				"other.yaml":   "services:\n  base:\n    image: shop/${bad\n    image: again\n",
			},
			[]string{
				"common.yaml:3: YAML syntax error: did not find expected ',' or ']'",
				"other.yaml:3:12: services.base.image: invalid interpolation \"shop/${bad\": write a literal $ as $$",
				"other.yaml:4:5: services.base.image: duplicate key (first at line 3)",
			}},
		{"the extended file's syntax and casts",
			map[string]string{
				"compose.yaml": "services:\n  web:\n    extends: {file: common.yaml, service: base}\n    ports: [\"8080:80\"]\n",
				"common.yaml":  "services:\n  base:\n    image: shop/web:1\n    ports: [\"bad:80\"]\n  other:\n    image: x\n    deploy: {replicas: many}\n",
			},
			[]string{
				"common.yaml:4:13: services.base.ports[0]: invalid hostPort: bad",
			}},
		{"inherited fields refused where written, mapping",
			map[string]string{
				"compose.yaml": "services:\n  web:\n    extends: {file: common.yaml, service: base}\n    volumes: [\"./conf:/c\"]\n",
				"common.yaml":  "services:\n  base:\n    image: shop/web:1\n    privileged: true\n    volumes: [\"../outside:/m\"]\n",
				"conf/c":       "c\n",
			},
			[]string{
				"common.yaml:4:17: services.web.privileged: a privileged container can take over the host; allow it for this app with `allow: [privileged]` in driftless.yaml (or `--allow privileged`)",
				"common.yaml:5:15: services.web.volumes[0]: bind source \"../outside\" leaves the app directory: a relative source is a file of the app directory or, when the revision does not hold it, a directory of the app's state, and stays inside; mount other places by their absolute path (policy hostPaths)",
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

// Less common spellings compose accepts: the compose file itself as the
// extended file, an interpolated file name, extends in the override file,
// !reset of an inherited field.
func TestExtendsFileForms(t *testing.T) {
	files := map[string]string{
		".env": "BASE_FILE=bases/web.yaml\n",
		"compose.yaml": `services:
  web:
    extends: {file: "${BASE_FILE}", service: web}
    environment: {FROM: compose}
  tmpl:
    image: shop/tmpl:1
    labels: {tier: template}
  api:
    extends: {file: compose.yaml, service: tmpl}
`,
		"compose.override.yaml": `services:
  api:
    extends: {file: bases/web.yaml, service: web}
    ports: !reset []
`,
		"bases/web.yaml": "services:\n  web:\n    image: shop/web:2\n    ports: [\"8080:80\"]\n    environment: {FROM: base, KEEP: \"1\"}\n",
	}
	a := loadtest.MustLoadCompose(t, files, load.Options{})
	if got := names(a); strings.Join(got, ",") != "api,tmpl,web" {
		t.Fatalf("services %v, want api, tmpl and web", got)
	}
	api, web := a.Services[0].Spec, a.Services[2].Spec
	if web.Image != "shop/web:2" || web.Env["FROM"] != "compose" || web.Env["KEEP"] != "1" || len(web.Ports) != 1 {
		t.Errorf("web: image %q env %v ports %v", web.Image, web.Env, web.Ports)
	}
	// compose merges the override's api (itself merged with bases/web.yaml)
	// over the compose file's (merged with tmpl).
	if api.Image != "shop/web:2" || a.Services[0].Labels["tier"] != "template" || len(api.Ports) != 0 {
		t.Errorf("api: image %q labels %v ports %v, want the override's base image, tmpl's label, no ports (!reset)", api.Image, a.Services[0].Labels, api.Ports)
	}
}

// A field a service inherits from a service of the same file is located
// in the base too.
func TestExtendsSameFilePositions(t *testing.T) {
	got := loadtest.ComposeErrors(t, map[string]string{"compose.yaml": "x-base: &base\n  image: shop/web:1\nservices:\n  base:\n    <<: *base\n    cap_add: [SYS_ADMIN]\n  web:\n    extends: base\n    cap_add: [NET_ADMIN]\n"}, load.Options{})
	want := []string{
		"compose.yaml:6:15: services.base.cap_add[0]: capability SYS_ADMIN is beyond Docker's defaults; allow it for this app with `allow: [capabilities]` in driftless.yaml (or `--allow capabilities`)",
		"compose.yaml:6:15: services.web.cap_add[0]: capability SYS_ADMIN is beyond Docker's defaults; allow it for this app with `allow: [capabilities]` in driftless.yaml (or `--allow capabilities`)",
		"compose.yaml:9:15: services.web.cap_add[1]: capability NET_ADMIN is beyond Docker's defaults; allow it for this app with `allow: [capabilities]` in driftless.yaml (or `--allow capabilities`)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
