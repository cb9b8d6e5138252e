package native_test

import (
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
)

// A native app's .driftlessignore keeps YAML that is not a manifest out.
func TestDriftlessIgnoreNative(t *testing.T) {
	files := map[string]string{
		"web.yaml":              loadtest.Svc + "  image: x\n",
		"ci/pipeline.yaml":      "stages: [test]\n",
		"docs/example.yml":      "foo: bar\n",
		"docs/keep/real.yaml":   "apiVersion: driftless.dev/v1\nkind: Volume\nmetadata: {name: data}\n",
		"mkdocs.yml":            "site_name: x\n",
		"sub/mkdocs.yml":        "site_name: y\n",
		".driftlessignore":      "# not manifests\nci/\n/docs/**\n!docs/keep/\nmkdocs.yml\n",
		"nested/ci/x.yaml":      "not: a manifest\n",
		"nested/docs/real.yaml": "apiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: net}\n",
	}
	a, err := loadtest.LoadFiles(t, files)
	if err != nil {
		t.Fatal(err)
	}
	// docs/keep cannot come back: its parent directory is excluded (as in
	// git); nested/ci is excluded by the unanchored "ci/"; nested/docs is
	// not, "/docs/**" is anchored.
	if len(a.Services) != 1 || a.Network("net") == nil || a.Volume("data") != nil {
		t.Errorf("services %v networks %v volumes %v", a.Services, a.Networks, a.Volumes)
	}
	delete(files, ".driftlessignore")
	if _, err := loadtest.LoadFiles(t, files); err == nil || !strings.Contains(err.Error(), "ci/pipeline.yaml:1:1: apiVersion: is required") {
		t.Errorf("without .driftlessignore: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name:  "yaml syntax error",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  replicas: [1\n"},
			want:  []string{"a.yaml:7: YAML syntax error: did not find expected ',' or ']'"},
		},
		{
			name:  "yaml syntax error on first line",
			files: map[string]string{"a.yaml": "kind: Service: x\n"},
			want:  []string{"a.yaml:1: YAML syntax error: mapping values are not allowed in this context"},
		},
		{
			name:  "tab in the indentation",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n \tports: []\n"},
			want:  []string{"a.yaml:7:2: YAML syntax error: a tab indents this line; YAML indentation must be spaces"},
		},
		{
			name:  "unknown field with suggestion",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  imgae: y\n"},
			want:  []string{`a.yaml:7:3: spec.imgae: unknown field (did you mean "image"?)`},
		},
		{
			name:  "unknown field nested in a list",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  ports:\n    - containerPort: 80\n      hostport: 8080\n"},
			want:  []string{`a.yaml:9:7: spec.ports[0].hostport: unknown field (did you mean "hostPort"?)`},
		},
		{
			name:  "unknown top-level field",
			files: map[string]string{"a.yaml": "status: {}\n" + loadtest.Svc + "  image: x\n"},
			want:  []string{"a.yaml:1:1: status: unknown field"},
		},
		{
			name:  "duplicate key",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  image: y\n"},
			want:  []string{"a.yaml:7:3: spec.image: duplicate key (first at line 6)"},
		},
		{
			name:  "string where integer expected",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  replicas: three\n"},
			want:  []string{"a.yaml:7:13: spec.replicas: must be an integer, got a string"},
		},
		{
			name:  "env value not a string",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  env: {PORT: 8080, DEBUG: true}\n"},
			want: []string{
				"a.yaml:7:15: spec.env.PORT: must be a string, got an integer: quote the value",
				"a.yaml:7:28: spec.env.DEBUG: must be a string, got a boolean: quote the value",
			},
		},
		{
			name:  "env value null",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  env:\n    EMPTY:\n"},
			want:  []string{`a.yaml:8:5: spec.env.EMPTY: must be a string, got null: write "" for an empty value`},
		},
		{
			name:  "list where mapping expected",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  resources: [1]\n"},
			want:  []string{"a.yaml:7:14: spec.resources: must be a mapping, got a list"},
		},
		{
			name:  "string where list expected",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  networks: backend\n"},
			want:  []string{"a.yaml:7:13: spec.networks: must be a list, got a string"},
		},
		{
			name:  "document not a mapping",
			files: map[string]string{"a.yaml": "- a\n- b\n"},
			want:  []string{"a.yaml:1:1: a document must be a mapping with apiVersion, kind, metadata and spec, got a list"},
		},
		{
			name:  "aliases rejected",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: &img x\n  command: [*img]\n"},
			want:  []string{"a.yaml:7:13: spec.command[0]: YAML aliases are not supported: write the value out"},
		},
		{
			name:  "missing apiVersion, kind and name",
			files: map[string]string{"a.yaml": "metadata: {}\nspec: {}\n"},
			want: []string{
				"a.yaml:1:1: apiVersion: is required: driftless.dev/v1",
				"a.yaml:1:1: kind: is required",
				"a.yaml:1:1: metadata.name: is required",
			},
		},
		{
			name:  "missing image",
			files: map[string]string{"a.yaml": loadtest.Svc + "  replicas: 2\n"},
			want:  []string{"a.yaml:5:1: spec.image: is required"},
		},
		{
			name:  "missing spec",
			files: map[string]string{"a.yaml": strings.TrimSuffix(loadtest.Svc, "spec:\n")},
			want:  []string{"a.yaml:1:1: spec: is required"},
		},
		{
			name:  "wrong apiVersion",
			files: map[string]string{"a.yaml": strings.Replace(loadtest.Svc, "driftless.dev/v1", "v1", 1) + "  image: x\n"},
			want:  []string{`a.yaml:1:13: apiVersion: must be "driftless.dev/v1", got "v1"`},
		},
		{
			name:  "unknown kind",
			files: map[string]string{"a.yaml": strings.Replace(loadtest.Svc, "Service", "Deployment", 1) + "  image: x\n"},
			want:  []string{`a.yaml:2:7: kind: unknown kind "Deployment": must be Service, Network, Volume, Job or App`},
		},
		{
			name:  "kind with wrong case",
			files: map[string]string{"a.yaml": strings.Replace(loadtest.Svc, "Service", "service", 1) + "  image: x\n"},
			want:  []string{`a.yaml:2:7: kind: unknown kind "service": must be Service, Network, Volume, Job or App (did you mean "Service"?)`},
		},
		{
			name:  "kind not a string",
			files: map[string]string{"a.yaml": strings.Replace(loadtest.Svc, "Service", "[Service]", 1) + "  image: x\n"},
			want:  []string{"a.yaml:2:7: kind: must be a string, got a list"},
		},
		{
			name:  "invalid name",
			files: map[string]string{"a.yaml": strings.Replace(loadtest.Svc, "web", "Web_1", 1) + "  image: x\n"},
			want:  []string{`a.yaml:4:9: metadata.name: invalid name "Web_1": ` + manifest.ObjectNameRule},
		},
		{
			name:  "clearEntrypoint with a command",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  command: [/bin/app]\n  clearEntrypoint: true\n"},
			want:  []string{`a.yaml:8:20: spec.clearEntrypoint: clears the image's entrypoint, and command gives one: keep one of them`},
		},
		{
			name:  "invalid image",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: Shop/Web\n"},
			want:  []string{`a.yaml:6:10: spec.image: invalid image reference "Shop/Web": invalid reference format: repository name (Web) must be lowercase`},
		},
		{
			name:  "bad quantities",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  resources: {memory: 512Mo, cpus: -1}\n"},
			want: []string{
				`a.yaml:7:23: spec.resources.memory: invalid memory quantity "512Mo": use bytes or a number with Ki, Mi, Gi, Ti, K, M, G or T (e.g. 512Mi)`,
				`a.yaml:7:36: spec.resources.cpus: invalid cpus "-1": must not be negative`,
			},
		},
		{
			name:  "memory below Docker minimum",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  resources: {memory: 1Mi}\n"},
			want:  []string{"a.yaml:7:23: spec.resources.memory: must be at least 6Mi (Docker's minimum), or 0 for no limit"},
		},
		{
			name:  "negative replicas",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  replicas: -1\n"},
			want:  []string{"a.yaml:7:13: spec.replicas: must be >= 0"},
		},
		{
			name:  "port out of range and bad protocol",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  ports:\n    - {containerPort: 70000, protocol: sctp}\n    - {hostPort: 65536}\n"},
			want: []string{
				"a.yaml:8:23: spec.ports[0].containerPort: must be between 1 and 65535, got 70000",
				`a.yaml:8:40: spec.ports[0].protocol: must be tcp or udp, got "sctp"`,
				"a.yaml:9:7: spec.ports[1].containerPort: is required",
				"a.yaml:9:18: spec.ports[1].hostPort: must be between 1 and 65535, got 65536",
			},
		},
		{
			name:  "duplicate container port",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  ports: [{containerPort: 80}, {containerPort: 80, protocol: tcp}]\n"},
			want:  []string{"a.yaml:7:48: spec.ports[1].containerPort: port 80/tcp is already listed at spec.ports[0]"},
		},
		{
			name: "duplicate names per kind",
			files: map[string]string{
				"a.yaml": loadtest.Svc + "  image: x\n",
				"b.yaml": loadtest.Svc + "  image: y\n---\napiVersion: driftless.dev/v1\nkind: Volume\nmetadata: {name: web}\n",
			},
			want: []string{`b.yaml:4:9: metadata.name: duplicate Service name "web": first declared at a.yaml:4:9`},
		},
		{
			name:  "undeclared network and volume",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  networks: [default, backend]\n  volumes: [{name: data, mountPath: /data}]\n"},
			want: []string{
				`a.yaml:7:23: spec.networks[1]: network "backend" is not declared: add a Network named "backend" to the app or remove it here`,
				`a.yaml:8:20: spec.volumes[0].name: volume "data" is not declared: add a Volume named "data" to the app`,
			},
		},
		{
			name:  "duplicate network entry",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  networks: [default, default]\n"},
			want:  []string{`a.yaml:7:23: spec.networks[1]: network "default" is already listed at spec.networks[0]`},
		},
		{
			name:  "dependsOn undeclared and self",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  dependsOn: [db, web]\n"},
			want: []string{
				`a.yaml:7:15: spec.dependsOn[0]: service "db" is not declared`,
				"a.yaml:7:19: spec.dependsOn[1]: a service cannot depend on itself",
			},
		},
		{
			name: "dependsOn cycle",
			files: map[string]string{
				"a.yaml": loadtest.Svc + "  image: x\n  dependsOn: [api]\n",
				"b.yaml": strings.Replace(loadtest.Svc, "web", "api", 1) + "  image: x\n  dependsOn: [web]\n",
			},
			want: []string{"b.yaml:7:15: spec.dependsOn[0]: dependency cycle: api -> web -> api"},
		},
		{
			name:  "hostPort with several replicas",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  replicas: 3\n  ports: [{containerPort: 80, hostPort: 8080}]\n"},
			want:  []string{"a.yaml:8:41: spec.ports[0].hostPort: hostPort 8080 would collide across the 3 replicas: remove hostPort or set replicas: 1"},
		},
		{
			name:  "hostPort with a surging rolling update",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  ports: [{containerPort: 80, hostPort: 8080}]\n"},
			want:  []string{"a.yaml:7:41: spec.ports[0].hostPort: hostPort 8080 would collide when a rolling update starts the new replica before stopping the old one: set update: {maxSurge: 0, maxUnavailable: 1} or update: {strategy: recreate}"},
		},
		{
			name: "hostPort used twice in the app",
			files: map[string]string{
				"a.yaml": loadtest.Svc + "  image: x\n  ports: [{containerPort: 80, hostPort: 8080}]\n  update: {strategy: recreate}\n",
				"b.yaml": strings.Replace(loadtest.Svc, "web", "api", 1) + "  image: x\n  ports: [{containerPort: 81, hostPort: 8080}, {containerPort: 82, hostPort: 8080, protocol: udp}]\n  update: {strategy: recreate}\n",
			},
			want: []string{`b.yaml:7:41: spec.ports[0].hostPort: hostPort 8080/tcp is already used by service "web" at a.yaml:7:41`},
		},
		{
			name:  "secretEnv not in env",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  env: {A: b}\n  secretEnv: [A, TOKEN, A]\n"},
			want: []string{
				`a.yaml:8:18: spec.secretEnv[1]: "TOKEN" is not set in spec.env: add its value there`,
				`a.yaml:8:25: spec.secretEnv[2]: "A" is already listed at spec.secretEnv[0]`,
			},
		},
		{
			name:  "readiness without probe",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  readiness: {periodSeconds: 0}\n"},
			want: []string{
				"a.yaml:7:3: spec.readiness: needs exactly one of httpGet, tcpSocket or exec",
				"a.yaml:7:30: spec.readiness.periodSeconds: must be >= 1",
			},
		},
		{
			name:  "readiness with several probes and missing port",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  readiness:\n    httpGet: {path: healthz}\n    exec: {command: []}\n"},
			want: []string{
				"a.yaml:7:3: spec.readiness: has httpGet and exec: use exactly one",
				"a.yaml:8:5: spec.readiness.httpGet.port: is required",
				`a.yaml:8:21: spec.readiness.httpGet.path: must start with /, got "healthz"`,
				"a.yaml:9:12: spec.readiness.exec.command: is required",
			},
		},
		{
			name:  "restart and strategy values",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  restart: sometimes\n  update: {strategy: bluegreen}\n"},
			want: []string{
				`a.yaml:7:12: spec.restart: must be always, on-failure or never, got "sometimes"`,
				`a.yaml:8:22: spec.update.strategy: must be rolling or recreate, got "bluegreen"`,
			},
		},
		{
			name:  "rolling update that cannot progress",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  update: {maxSurge: 0}\n"},
			want:  []string{"a.yaml:7:22: spec.update.maxSurge: maxSurge and maxUnavailable must not both be 0: a rolling update could never replace a replica"},
		},
		{
			name:  "a canary of every replica",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  replicas: 2\n  update: {canary: 2, canaryWatch: 5ms}\n"},
			want: []string{
				"a.yaml:8:20: spec.update.canary: must be between 0 and replicas-1 (1): a canary of every replica is no canary",
				"a.yaml:8:36: spec.update.canaryWatch: must be 0 or at least 1s",
			},
		},
		{
			name:  "surge settings with recreate",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  update: {strategy: recreate, maxUnavailable: 1}\n"},
			want:  []string{"a.yaml:7:48: spec.update.maxUnavailable: only applies to strategy rolling"},
		},
		{
			name:  "negative numbers",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  stopGracePeriodSeconds: -5\n  update: {maxUnavailable: -1}\n"},
			want: []string{
				"a.yaml:7:27: spec.stopGracePeriodSeconds: must be >= 0",
				"a.yaml:8:28: spec.update.maxUnavailable: must be >= 0",
			},
		},
		{
			name: "mountPath relative, missing and repeated",
			files: map[string]string{
				"a.yaml": loadtest.Svc + "  image: x\n  volumes:\n    - {name: data, mountPath: data}\n    - {name: data}\n    - {name: data, mountPath: /d}\n    - {name: data, mountPath: /d/}\n",
				"v.yaml": "apiVersion: driftless.dev/v1\nkind: Volume\nmetadata: {name: data}\n",
			},
			want: []string{
				`a.yaml:8:31: spec.volumes[0].mountPath: must be an absolute path, got "data"`,
				"a.yaml:9:7: spec.volumes[1].mountPath: is required",
				`a.yaml:11:31: spec.volumes[3].mountPath: "/d/" is already mounted by spec.volumes[2]`,
			},
		},
		{
			name:  "reserved label",
			files: map[string]string{"a.yaml": strings.Replace(loadtest.Svc, "  name: web\n", "  name: web\n  labels: {dev.driftless.app: x}\n", 1) + "  image: x\n"},
			want:  []string{`a.yaml:5:31: metadata.labels["dev.driftless.app"]: the label prefix "dev.driftless." is reserved for driftless`},
		},
		{
			name:  "invalid UTF-8",
			files: map[string]string{"a.yaml": loadtest.Svc + "  image: \xff\n"},
			want:  []string{"a.yaml:6:10: file is not valid UTF-8"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app, err := loadtest.LoadFiles(t, tt.files)
			if err == nil {
				t.Fatalf("want errors, got app %+v", app)
			}
			got := loadtest.ErrorLines(t, err)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n got: %q\nwant: %q", got, tt.want)
			}
		})
	}
}

// A revision with problems in several files reports all of them, sorted,
// and a broken document does not cause follow-up errors in others.
func TestLoadReportsAllErrors(t *testing.T) {
	_, err := loadtest.LoadFiles(t, map[string]string{
		"b/web.yaml": loadtest.Svc + "  image: x\n  replicas: -2\n  networks: [backend]\n---\n" +
			"apiVersion: driftless.dev/v1\nkind: Volume\nmetadata: {name: data}\nspec: {drivr: local}\n",
		"a.yaml": "apiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: backend}\nspec: {internal: maybe}\n",
		"c.yml":  "kind: Service\nmetadata: {name: api}\nspec: {image: x, dependsOn: [nope]}\n",
		"d.yaml": "a: [\n",
	})
	want := []string{
		"a.yaml:4:18: spec.internal: must be true or false, got a string",
		"b/web.yaml:7:13: spec.replicas: must be >= 0",
		`b/web.yaml:13:8: spec.drivr: unknown field (did you mean "driver"?)`,
		"c.yml:1:1: apiVersion: is required: driftless.dev/v1",
		`c.yml:3:30: spec.dependsOn[0]: service "nope" is not declared`,
		"d.yaml:2: YAML syntax error: did not find expected node content",
	}
	got := loadtest.ErrorLines(t, err)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n got: %q\nwant: %q", got, want)
	}
}

func TestLoadDefaults(t *testing.T) {
	app, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  readiness: {httpGet: {port: 80}}\n  ports: [{containerPort: 80}]\n"})
	if err != nil {
		t.Fatal(err)
	}
	want := manifest.ServiceSpec{
		Image:    "x",
		Replicas: 1,
		Ports:    []manifest.Port{{ContainerPort: 80, Protocol: "tcp"}},
		Networks: []string{"default"},
		Readiness: &manifest.Readiness{
			HTTPGet:          &manifest.HTTPGetProbe{Path: "/", Port: 80},
			PeriodSeconds:    2,
			TimeoutSeconds:   1,
			SuccessThreshold: 1,
			FailureThreshold: 3,
		},
		Restart:                "always",
		Update:                 manifest.Update{Strategy: "rolling", MaxSurge: 1, MaxUnavailable: 0},
		StopGracePeriodSeconds: 10,
	}
	if got := app.Services[0].Spec; !reflect.DeepEqual(got, want) {
		t.Errorf("spec:\n got %+v\nwant %+v", got, want)
	}
	if s := app.Services[0].Source; s != (manifest.Position{File: "a.yaml", Line: 4, Column: 9}) {
		t.Errorf("source = %v", s)
	}
	wantNet := manifest.Network{Name: "default", Spec: manifest.NetworkSpec{Driver: "bridge"}, Implicit: true, Hash: manifest.HashNetwork(nil, manifest.NetworkSpec{Driver: "bridge"})}
	if len(app.Networks) != 1 || !reflect.DeepEqual(app.Networks[0], wantNet) {
		t.Errorf("networks = %+v, want the implicit default network", app.Networks)
	}
}

func TestLoadNormalizesOrderAndSorts(t *testing.T) {
	files := map[string]string{
		"a.yaml": "apiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: zeta}\n---\n" +
			"apiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: alpha}\nspec: {internal: true}\n---\n---\n" +
			"apiVersion: driftless.dev/v1\nkind: Volume\nmetadata: {name: v}\n---\n" +
			strings.Replace(loadtest.Svc, "web", "zz", 1) + "  image: x\n  networks: [zeta, alpha]\n" +
			"  volumes: [{name: v, mountPath: /z}, {name: v, mountPath: /a}]\n" +
			"  ports: [{containerPort: 90}, {containerPort: 80}]\n  env: {}\n  secretEnv: []\n",
		"b.yaml":      loadtest.Svc + "  image: x\n  replicas: 0\n  networks: [alpha]\n",
		"notes.txt":   "not a manifest",
		".git/x.yaml": "broken: [",
	}
	app, err := loadtest.LoadFiles(t, files)
	if err != nil {
		t.Fatal(err)
	}
	names := func(n int, name func(int) string) []string {
		var out []string
		for i := range n {
			out = append(out, name(i))
		}
		return out
	}
	if got := names(len(app.Services), func(i int) string { return app.Services[i].Name }); !reflect.DeepEqual(got, []string{"web", "zz"}) {
		t.Errorf("services = %v", got)
	}
	// No service uses the default network: no implicit one.
	if got := names(len(app.Networks), func(i int) string { return app.Networks[i].Name }); !reflect.DeepEqual(got, []string{"alpha", "zeta"}) {
		t.Errorf("networks = %v", got)
	}
	zz := app.Service("zz").Spec
	if !reflect.DeepEqual(zz.Networks, []string{"alpha", "zeta"}) {
		t.Errorf("networks not sorted: %v", zz.Networks)
	}
	if zz.Volumes[0].MountPath != "/a" || zz.Ports[0].ContainerPort != 80 {
		t.Errorf("volumes/ports not sorted: %v %v", zz.Volumes, zz.Ports)
	}
	if zz.Env != nil || zz.SecretEnv != nil {
		t.Errorf("empty env not nil: %#v %#v", zz.Env, zz.SecretEnv)
	}
	if app.Service("web").Spec.Replicas != 0 {
		t.Error("replicas 0 must be kept")
	}
	if !app.Networks[0].Spec.Internal || app.Networks[0].Source != (manifest.Position{File: "a.yaml", Line: 7, Column: 18}) {
		t.Errorf("alpha = %+v", app.Networks[0])
	}
}

func TestLoadExplicitDefaultNetworkReplacesImplicit(t *testing.T) {
	app, err := loadtest.LoadFiles(t, map[string]string{
		"a.yaml": loadtest.Svc + "  image: x\n---\napiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: default}\nspec: {internal: true}\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(app.Networks) != 1 || app.Networks[0].Implicit || !app.Networks[0].Spec.Internal {
		t.Errorf("networks = %+v", app.Networks)
	}
}

func TestLoadEmptyAndMissing(t *testing.T) {
	app, err := appdir.Load(fstest.MapFS{"apps/readme.md": {Data: []byte("x")}, "apps/empty.yaml": {Data: []byte("---\n# nothing\n---\n")}}, "apps", "shop")
	if err != nil {
		t.Fatalf("empty path: %v", err)
	}
	if app.Name != "shop" || len(app.Services)+len(app.Networks)+len(app.Volumes) != 0 {
		t.Errorf("want empty app, got %+v", app)
	}
	_, err = appdir.Load(fstest.MapFS{}, "nope", "shop")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: want fs.ErrNotExist, got %v", err)
	}
	if _, err := appdir.Load(fstest.MapFS{}, ".", "Shop"); err == nil || !strings.Contains(err.Error(), `invalid app name "Shop"`) {
		t.Errorf("invalid app name: got %v", err)
	}
}

func TestLoadPositionsNameFSPath(t *testing.T) {
	_, err := appdir.Load(fstest.MapFS{"apps/web.yaml": {Data: []byte(loadtest.Svc + "  replicas: -1\n  image: x\n")}}, "apps", "shop")
	want := []string{"apps/web.yaml:6:13: spec.replicas: must be >= 0"}
	if got := loadtest.ErrorLines(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLoadDirPrefixesDir(t *testing.T) {
	dir := t.TempDir()
	if err := writeFile(dir+"/web.yaml", loadtest.Svc+"  image: x\n  replicas: -1\n"); err != nil {
		t.Fatal(err)
	}
	_, err := appdir.LoadDir(dir, "shop")
	want := []string{dir + "/web.yaml:7:13: spec.replicas: must be >= 0"}
	if got := loadtest.ErrorLines(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestExampleShopIsValid(t *testing.T) {
	app, err := appdir.LoadDir("../../examples/shop", "shop")
	if err != nil {
		t.Fatalf("examples/shop must validate:\n%v", err)
	}
	if len(app.Services) != 2 || app.Service("web") == nil || app.Service("cache") == nil {
		t.Fatalf("services = %+v", app.Services)
	}
	if len(app.Networks) != 1 || app.Networks[0].Name != "backend" || len(app.Volumes) != 1 || app.Volumes[0].Name != "data" {
		t.Errorf("networks %+v volumes %+v", app.Networks, app.Volumes)
	}
	if web := app.Service("web"); web.Spec.Replicas != 3 || web.Spec.Readiness.HTTPGet.Path != "/healthz" {
		t.Errorf("web = %+v", web.Spec)
	}
	if !strings.HasPrefix(app.Service("web").Source.File, "../../examples/shop/") {
		t.Errorf("source = %v", app.Service("web").Source)
	}
}

// Structural errors do not hide the other errors of the same document, and
// validation does not echo them.
func TestLoadStructuralAndSemanticErrorsInOneDocument(t *testing.T) {
	_, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc +
		"  image: x\n  replicas: -3\n  imgae: x\n  env: {A: 5}\n  secretEnv: [7, NOPE]\n  readiness: {httpGet: /healthz}\n"})
	want := []string{
		"a.yaml:7:13: spec.replicas: must be >= 0",
		`a.yaml:8:3: spec.imgae: unknown field (did you mean "image"?)`,
		"a.yaml:9:12: spec.env.A: must be a string, got an integer: quote the value",
		"a.yaml:10:15: spec.secretEnv[0]: must be a string, got an integer: quote the value",
		`a.yaml:10:18: spec.secretEnv[1]: "NOPE" is not set in spec.env: add its value there`,
		"a.yaml:11:24: spec.readiness.httpGet: must be a mapping, got a string",
	}
	if got := loadtest.ErrorLines(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n got: %q\nwant: %q", got, want)
	}
}

func TestLoadAppDocument(t *testing.T) {
	app, err := loadtest.LoadFiles(t, map[string]string{
		"web.yaml": loadtest.Svc + "  image: x\n",
		"app.yaml": "apiVersion: driftless.dev/v1\nkind: App\nmetadata:\n  name: shop\nspec:\n  release: {watch: 3m, maxRestarts: 2}\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := app.Release; r == nil || r.Watch != 3*time.Minute || r.MaxRestarts == nil || *r.MaxRestarts != 2 || r.Source.File != "app.yaml" {
		t.Fatalf("release %+v, want watch 3m and maxRestarts 2 from app.yaml", r)
	}
	_, err = loadtest.LoadFiles(t, map[string]string{
		"web.yaml": loadtest.Svc + "  image: x\n",
		"app.yaml": "apiVersion: driftless.dev/v1\nkind: App\nmetadata:\n  name: shop\nspec:\n  release: {watch: 3m, check: {url: 'http://10.0.0.1/'}}\n" +
			"---\napiVersion: driftless.dev/v1\nkind: App\nmetadata:\n  name: other\nspec: {}\n",
	})
	got := strings.Join(loadtest.ErrorLines(t, err), "\n")
	for _, want := range []string{"app.yaml:6:24: spec.release.check: stays in the agent's driftless.yaml", "app.yaml:11:9: kind: only one App document per app: the first is at app.yaml:4:9"} {
		if !strings.Contains(got, want) {
			t.Errorf("errors:\n%s\nwant %q", got, want)
		}
	}
}

// clearEntrypoint is the model's, as compose's entrypoint: [] is.
func TestLoadClearEntrypoint(t *testing.T) {
	a, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  clearEntrypoint: true\n  args: [python, -m, app]\n"})
	if err != nil {
		t.Fatal(err)
	}
	if s := a.Services[0].Spec; !s.ClearEntrypoint || s.Command != nil || len(s.Args) != 3 {
		t.Errorf("spec %+v: want the entrypoint cleared and the args kept", s)
	}
}
