package compose_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/compose"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// A refused attribute is refused, not dropped, whatever its value.
func TestComposeRefusedFieldsAreRefused(t *testing.T) {
	for _, tc := range []struct{ line, field string }{
		{"cgroup_parent: custom", "cgroup_parent"},
		{"userns_mode: host", "userns_mode"}, // by the policy: host-userns
		{"storage_opt: {size: 1G}", "storage_opt"},
		{"use_api_socket: true", "use_api_socket"},
		{"pre_start: [{command: echo hi}]", "pre_start"},
		{"gpus: all", "gpus"},
		{"annotations: {a: b}", "annotations"},
	} {
		got := strings.Join(loadtest.ComposeErrors(t, loadtest.Web(tc.line), load.Options{}), "\n")
		want := "compose.yaml:4:5: services.web." + tc.field + ": "
		if !strings.HasPrefix(got, "compose.yaml:4:") || !strings.Contains(got, "services.web."+tc.field+": ") {
			t.Errorf("%s: got %q, want a refusal like %q...", tc.line, got, want)
		}
		if r, ok := compose.ServiceRules[tc.field].(compose.Refused); ok && !strings.Contains(got, string(r)) {
			t.Errorf("%s: got %q, want the reason %q", tc.line, got, r)
		}
	}
}

func TestComposeNoEffectFieldsWarn(t *testing.T) {
	a := loadtest.MustLoadCompose(t, loadtest.Web("attach: false", "develop: {watch: [{path: ./src, action: sync, target: /app}]}"), load.Options{})
	got := a.Warnings.Error()
	for _, want := range []string{"compose.yaml:4:13: services.web.attach: has no effect in driftless", "compose.yaml:5:5: services.web.develop: has no effect in driftless"} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings %q lack %q", got, want)
		}
	}
}

// Host powers are refused where the compose file declares them, in every
// format the policy knows.
func TestComposePolicyPositions(t *testing.T) {
	files := loadtest.Web(
		"privileged: true",
		"cap_add: [CHOWN, sys_admin]",
		"devices: ['/dev/kvm:/dev/kvm']",
		"security_opt: ['seccomp:unconfined']",
		"pid: host",
		"ipc: host",
		"volumes: ['/etc/ssl:/etc/ssl:ro']",
	)
	want := []string{
		"compose.yaml:4:17: services.web.privileged: a privileged container can take over the host; allow it for this app with `allow: [privileged]` in driftless.yaml (or `--allow privileged`)",
		"compose.yaml:5:22: services.web.cap_add[1]: capability SYS_ADMIN is beyond Docker's defaults; allow it for this app with `allow: [capabilities]` in driftless.yaml (or `--allow capabilities`)",
		"compose.yaml:6:15: services.web.devices[0]: host device /dev/kvm gives the container direct hardware access; allow it for this app with `allow: [devices]` in driftless.yaml (or `--allow devices`)",
		"compose.yaml:7:20: services.web.security_opt[0]: \"seccomp:unconfined\" turns off the kernel's confinement of the container; allow it for this app with `allow: [unconfined]` in driftless.yaml (or `--allow unconfined`)",
		"compose.yaml:8:10: services.web.pid: the host's PID namespace lets the container see and signal every host process; allow it for this app with `allow: [host-pid]` in driftless.yaml (or `--allow host-pid`)",
		"compose.yaml:9:10: services.web.ipc: the host's IPC namespace is shared with every host process; allow it for this app with `allow: [host-ipc]` in driftless.yaml (or `--allow host-ipc`)",
		"compose.yaml:10:15: services.web.volumes[0]: host path /etc/ssl is outside the paths this app may mount; allow it with `hostPaths: [/etc/ssl]` in driftless.yaml (or `--allow-host-path /etc/ssl`), or mount a file from the repository with a relative path",
	}
	got := loadtest.ComposeErrors(t, files, load.Options{})
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := loadtest.LoadComposeFiles(t, files, load.Options{Policy: policy.Policy{Allow: policy.AllowNames, HostPaths: []string{"/etc/ssl"}}}); err != nil {
		t.Errorf("with everything allowed: %v", err)
	}
	got = loadtest.ComposeErrors(t, loadtest.Web("network_mode: host"), load.Options{})
	if want := "compose.yaml:4:19: services.web.network_mode: the host's network namespace"; len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Errorf("network_mode: got %q", got)
	}
}

func TestComposeExtensionErrors(t *testing.T) {
	got := loadtest.ComposeErrors(t, loadtest.Web(
		"environment: {A: x}",
		"x-driftless:",
		"  readiness: {httpGet: {port: 0, path: healthz}}",
		"  update: {maxSurge: 0, maxUnavailable: 0}",
		"  secretEnv: [A, NOPE]",
	), load.Options{})
	want := []string{
		"compose.yaml:6:35: services.web.x-driftless.readiness.httpGet.port: must be between 1 and 65535, got 0",
		"compose.yaml:6:44: services.web.x-driftless.readiness.httpGet.path: must start with /, got \"healthz\"",
		"compose.yaml:7:7: services.web.x-driftless.update: maxSurge and maxUnavailable must not both be 0: a rolling update could never replace a replica",
		"compose.yaml:8:22: services.web.x-driftless.secretEnv[1]: \"NOPE\" is not in the service's environment",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got = loadtest.ComposeErrors(t, loadtest.Web("x-driftless: {readiness: {httpGet: {port: '80'}}, replicas: 2}"), load.Options{})
	want = []string{
		"compose.yaml:4:47: services.web.x-driftless.readiness.httpGet.port: must be an integer, got a string",
		"compose.yaml:4:55: services.web.x-driftless.replicas: unknown field",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestComposeCanary(t *testing.T) {
	got := loadtest.ComposeErrors(t, loadtest.Web("deploy: {replicas: 3}", "x-driftless: {update: {canary: 3}}"), load.Options{})
	if want := "services.web.x-driftless.update.canary: must be between 0 and replicas-1 (2)"; len(got) != 1 || !strings.Contains(got[0], want) {
		t.Errorf("canary of every replica: got %q", got)
	}
	app := loadtest.MustLoadCompose(t, loadtest.Web("deploy: {replicas: 3}", "x-driftless: {update: {canary: 1, canaryWatch: 2m}}"), load.Options{})
	if u := app.Services[0].Spec.Update; u.Canary != 1 || u.CanaryWatch != 2*time.Minute {
		t.Errorf("update %+v, want canary 1 watched 2m", u)
	}
	plain := loadtest.MustLoadCompose(t, loadtest.Web("deploy: {replicas: 3}"), load.Options{})
	if app.Services[0].Hash != plain.Services[0].Hash {
		t.Error("a canary setting changed the spec hash: adding one would replace every replica")
	}
}

// LoadDir prints positions as the directory joined with the file.
func TestComposeLoadDirPositions(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte("services:\n  web:\n    image: shop/web:1\n    privileged: yes-please\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := appdir.LoadDir(dir, "shop")
	var list manifest.ErrorList
	if !errors.As(err, &list) || len(list) != 1 {
		t.Fatalf("want one error, got %v", err)
	}
	if want := dir + "/compose.yaml:4:17: services.web.privileged: invalid boolean: yes-please"; list[0].Error() != want {
		t.Errorf("got  %s\nwant %s", list[0].Error(), want)
	}
}

// The front end reads only through the fs.FS and the options: these paths
// do not exist on disk, and the agent's own environment is not consulted.
func TestComposeIsPure(t *testing.T) {
	t.Setenv("FROM_OS", "leaked")
	fsys := fstest.MapFS{
		"nowhere/on/disk/compose.yaml": {Data: []byte(`services:
  web:
    image: shop/web:1
    env_file: [web.env]
    environment: [FROM_OS, 'SEEN=${FROM_OS}', 'DOTENV=${DOTENV}']
    volumes: ['./conf:/etc/web:ro']
    secrets: [token]
secrets:
  token: {file: ./token.txt, x-driftless: {allowPlaintext: true}}
`)},
		"nowhere/on/disk/.env":          {Data: []byte("DOTENV=from-dotenv\n")},
		"nowhere/on/disk/web.env":       {Data: []byte("FILE=from-env-file\n")},
		"nowhere/on/disk/conf/web.conf": {Data: []byte("conf")},
		"nowhere/on/disk/token.txt":     {Data: []byte("t0ken")},
	}
	if _, err := os.Stat("nowhere"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the test needs ./nowhere not to exist: %v", err)
	}
	a, err := appdir.Load(fsys, "nowhere/on/disk", "shop")
	if err != nil {
		t.Fatal(err)
	}
	s := a.Service("web").Spec
	if want := map[string]string{"SEEN": "", "DOTENV": "from-dotenv", "FILE": "from-env-file"}; !reflect.DeepEqual(s.Env, want) {
		t.Errorf("env %v, want %v (nothing from the OS environment)", s.Env, want)
	}
	if len(s.Binds) != 1 || a.Content[s.Binds[0].ContentHash] == nil {
		t.Errorf("binds %+v content %v", s.Binds, a.Content)
	}
	if len(s.Secrets) != 1 || string(a.SecretData[s.Secrets[0].Digest]) != "t0ken" {
		t.Errorf("secrets %+v", s.Secrets)
	}
	if !strings.Contains(a.Warnings.Error(), "nowhere/on/disk/compose.yaml:5:28: services.web.environment[1]: variable FROM_OS is not set") {
		t.Errorf("warnings: %v", a.Warnings)
	}
}

// A compose app ignores YAML that is neither format; .driftlessignore also
// hides a native manifest from the both-formats check.
func TestComposeIgnoresOtherYAML(t *testing.T) {
	files := map[string]string{
		"compose.yaml":     "services:\n  web: {image: shop/web:1}\n",
		"ci.yml":           "stages: [build]\n",
		"broken.yaml":      "a: [\n",
		"old/web.yaml":     "apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: web}\nspec: {image: x}\n",
		".driftlessignore": "old/\n",
	}
	if _, err := loadtest.LoadComposeFiles(t, files, load.Options{}); err != nil {
		t.Fatal(err)
	}
}

// The same service written natively and as compose is the same model: the
// hash (which leaves out dependsOn) is equal, so switching an app's format
// replaces no container. This is the example of docs/manifests.md.
func TestComposeAndNativeAgree(t *testing.T) {
	native, err := loadtest.LoadFiles(t, map[string]string{
		"web.yaml": `apiVersion: driftless.dev/v1
kind: Service
metadata:
  name: web
  labels: {team: shop}
spec:
  image: shop/web:v7
  replicas: 3
  env: {LOG_LEVEL: info, API_TOKEN: s3cret}
  secretEnv: [API_TOKEN]
  ports: [{containerPort: 8080}]
  networks: [backend]
  volumes: [{name: data, mountPath: /data}]
  resources: {memory: 512Mi, cpus: "0.5"}
  readiness:
    httpGet: {path: /healthz, port: 8080}
  restart: always
  update: {maxSurge: 1, maxUnavailable: 0}
  dependsOn: [db]
`,
		"db.yaml":  "apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: db}\nspec: {image: shop/db:1, networks: [backend]}\n",
		"net.yaml": "apiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: backend}\n---\napiVersion: driftless.dev/v1\nkind: Volume\nmetadata: {name: data}\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	compose := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": `services:
  web:
    image: shop/web:v7
    labels: {team: shop}
    environment:
      LOG_LEVEL: info
      API_TOKEN: s3cret
    deploy:
      replicas: 3
      resources:
        limits: {memory: 512M, cpus: "0.5"}
      update_config: {order: start-first}
    restart: unless-stopped
    expose: ["8080"]
    networks: [backend]
    volumes: [data:/data]
    depends_on:
      db: {condition: service_healthy}
    x-driftless:
      readiness:
        httpGet: {path: /healthz, port: 8080}
      secretEnv: [API_TOKEN]
  db: {image: shop/db:1, networks: [backend]}
networks: {backend: {}}
volumes: {data: {}}
`}, load.Options{})
	n, c := native.Service("web"), compose.Service("web")
	c.Spec.DependsOnCondition = nil // native: healthy by default
	if !reflect.DeepEqual(n.Spec, c.Spec) || !reflect.DeepEqual(n.Labels, c.Labels) {
		t.Errorf("specs differ:\nnative  %+v\ncompose %+v", n.Spec, c.Spec)
	}
	if n.Hash != c.Hash {
		t.Errorf("hash native %s, compose %s", n.Hash, c.Hash)
	}
	if native.Network("backend").Hash != compose.Network("backend").Hash || native.Volume("data").Hash != compose.Volume("data").Hash {
		t.Error("network or volume hashes differ")
	}
}

// A port without a host port is published on one Docker picks, as compose
// does; such ports never collide, so replicas may have them.
func TestComposePortOnAnyHostPort(t *testing.T) {
	a := loadtest.MustLoadCompose(t, loadtest.Web(`ports: ["80", "127.0.0.1::81/udp", "8080:8080"]`, "deploy: {replicas: 1}"), load.Options{})
	got := make([]string, 0, 3)
	for _, p := range a.Services[0].Spec.Ports {
		got = append(got, p.String())
	}
	if want := []string{"0:80/tcp", "127.0.0.1:0:81/udp", "8080:8080/tcp"}; !slices.Equal(got, want) {
		t.Errorf("ports %q, want %q", got, want)
	}
	a = loadtest.MustLoadCompose(t, loadtest.Web(`ports: ["80"]`, "deploy: {replicas: 3, update_config: {order: start-first}}"), load.Options{})
	if p := a.Services[0].Spec.Ports; len(p) != 1 || !p[0].AnyHostPort || a.Services[0].Spec.Replicas != 3 {
		t.Errorf("ports %+v with 3 replicas, want one on any host port", p)
	}
}

// container_name names nothing without the app's networks: compose's
// name for the container is driftless's <app>-<service>-<slot>.
func TestComposeContainerNameWithNetworkMode(t *testing.T) {
	a := loadtest.MustLoadCompose(t, loadtest.Web("container_name: searx", "network_mode: host"), load.Options{Policy: policy.Policy{Allow: []string{"host-network"}}})
	if got := a.Warnings.Error(); !strings.Contains(got, "services.web.container_name: has no effect with network_mode host: the container is named") {
		t.Errorf("warnings %q, want one about container_name", got)
	}
}

// A build from a Git or HTTP URL is not built: beside image: the image is
// run (with a warning), alone it is refused.
func TestComposeRemoteBuildContext(t *testing.T) {
	a := loadtest.MustLoadCompose(t, loadtest.Web("build: {context: 'https://github.com/shop/web.git#main', dockerfile: Docker/Dockerfile}"), load.Options{})
	if s := a.Services[0].Spec; s.Build != nil || s.Image != "shop/web:1" {
		t.Errorf("build %+v image %q, want no build and image shop/web:1", s.Build, s.Image)
	}
	if got := a.Warnings.Error(); !strings.Contains(got, `services.web.build.context: "https://github.com/shop/web.git#main" is a remote context, which driftless does not build: it runs image "shop/web:1"`) {
		t.Errorf("warnings %q", got)
	}
	got := loadtest.ComposeErrors(t, map[string]string{"compose.yaml": "services:\n  web:\n    build: git@github.com:shop/web.git\n"}, load.Options{})
	if len(got) != 1 || !strings.Contains(got[0], `compose.yaml:3:12: services.web.build.context: "git@github.com:shop/web.git" is a remote context (a Git or HTTP URL), which driftless does not build`) {
		t.Errorf("errors %q, want one refusal of the remote context", got)
	}
}

func TestComposeReleaseSettings(t *testing.T) {
	files := loadtest.Web()
	files["compose.yaml"] += "x-driftless:\n  release: {watch: 2m, unreadyFor: 20s, maxRestarts: 1}\n"
	app := loadtest.MustLoadCompose(t, files, load.Options{})
	r := app.Release
	if r == nil || r.Watch != 2*time.Minute || r.UnreadyFor != 20*time.Second || r.MaxRestarts == nil || *r.MaxRestarts != 1 || r.Source.Line == 0 {
		t.Fatalf("release %+v, want watch 2m, unreadyFor 20s, maxRestarts 1 with its position", r)
	}
	files = loadtest.Web()
	files["compose.yaml"] += "x-driftless:\n  release: {watch: 0.5s, maxRestarts: -1, check: {url: 'http://169.254.169.254/'}}\n"
	got := strings.Join(loadtest.ComposeErrors(t, files, load.Options{}), "\n")
	files = loadtest.Web()
	files["compose.yaml"] += "x-driftless:\n  canary: 1\n"
	got += "\n" + strings.Join(loadtest.ComposeErrors(t, files, load.Options{}), "\n")
	for _, want := range []string{"compose.yaml:5:20: x-driftless.release.watch: must be 0 or at least 1s", "x-driftless.release.maxRestarts:", "x-driftless.release.check: stays in the agent's driftless.yaml", "compose.yaml:5:3: x-driftless.canary: unknown field"} {
		if !strings.Contains(got, want) {
			t.Errorf("errors:\n%s\nwant one with %q", got, want)
		}
	}
}

// A long service name in an app makes a container name over 63
// characters (Sentry's snuba-subscription-consumer-generic-metrics-counters
// in an app named self-hosted): Docker and compose take it, so driftless
// does; a Swarm service name cannot be that long, so a Swarm target
// refuses it.
func TestComposeLongContainerNames(t *testing.T) {
	long := strings.Repeat("consumer-", 6) + "metrics" // 61 characters
	files := map[string]string{"compose.yaml": "services:\n  " + long + ":\n    image: shop/worker:1\n    deploy: {replicas: 2}\n"}
	a := loadtest.MustLoadCompose(t, files, load.Options{})
	if got := manifest.ContainerName(a.Name, a.Services[0].Name, 2); len(got) <= manifest.MaxDNSLabel {
		t.Fatalf("the test's container name %q is not over %d characters", got, manifest.MaxDNSLabel)
	}
	got := loadtest.ComposeErrors(t, files, load.Options{Target: manifest.TargetSwarm})
	want := "compose.yaml:2:3: the Swarm service name shop-" + long + " is longer than 63 characters, which Swarm refuses: shorten the app or service name (target: swarm)"
	if len(got) != 1 || got[0] != want {
		t.Errorf("on Swarm:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
}

// ${COMPOSE_PROJECT_NAME} is the project's name in compose, whatever the
// environment or .env says (mailcow writes it in a command); the app is
// the project. It was interpolated so already, with a warning that it
// was not set.
func TestComposeProjectNameVariable(t *testing.T) {
	files := map[string]string{
		"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    labels: {project: \"${COMPOSE_PROJECT_NAME}\"}\n    command: [run, \"${COMPOSE_PROJECT_NAME:-none}-web\"]\n",
		".env":         "COMPOSE_PROJECT_NAME=other\n",
	}
	a := loadtest.MustLoadCompose(t, files, load.Options{Environment: map[string]string{"COMPOSE_PROJECT_NAME": "shell"}})
	web := a.Service("web")
	if web.Labels["project"] != "shop" || strings.Join(web.Spec.Args, " ") != "run shop-web" {
		t.Errorf("label %q, command %v; want the app's name, shop", web.Labels["project"], web.Spec.Args)
	}
	// Unset in the environment, it is set all the same: no warning.
	delete(files, ".env")
	a = loadtest.MustLoadCompose(t, files, load.Options{})
	if web := a.Service("web"); web.Labels["project"] != "shop" || len(a.Warnings) != 0 {
		t.Errorf("without the variable in the environment: label %q, warnings %v", web.Labels["project"], a.Warnings)
	}
}
