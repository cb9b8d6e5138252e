package compose_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// Every problem of a revision is reported at once, each at its file, line
// and column, with the compose path of the field.
func TestComposeErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"cast",
			map[string]string{".env": "N=many\n", "compose.yaml": "services:\n  web:\n    image: shop/web:1\n    deploy: {replicas: '${N}'}\n"},
			[]string{
				"compose.yaml:4:24: services.web.deploy.replicas: must be a number, got \"many\"",
			}},
		{"cycle and names",
			map[string]string{"compose.yaml": "services:\n  a_b:\n    image: x\n    depends_on: [a-b]\n  a-b:\n    image: y\n  c:\n    image: z\n    depends_on: [d]\n  d:\n    image: z\n    depends_on: [c]\n  \"2048\":\n    image: z\n  2fauth:\n    image: z\n"},
			[]string{
				"compose.yaml:2:3: services.a_b: service names \"a-b\" and \"a_b\" both become \"a-b\": rename one of them",
				"compose.yaml:9:18: services.c.depends_on[0]: dependency cycle: c -> d -> c",
				"compose.yaml:13:3: services[\"2048\"]: service name \"2048\" cannot be made a DNS label (lowercase letters, digits and '-', with at least one letter, at most 63 characters): rename it",
			}},
		{"dotenv bad",
			map[string]string{".env": "A=1\nB C=2\n", "compose.yaml": "services:\n  web:\n    image: shop/web:${T}\n"},
			[]string{
				".env:2: key cannot contain a space",
			}},
		{"restart_policy condition",
			map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    deploy: {restart_policy: {condition: sometimes}}\n"},
			[]string{
				"compose.yaml:4:42: services.web.deploy.restart_policy.condition: must be none, on-failure or any (or no, always or unless-stopped, as restart: says), got \"sometimes\"",
			}},
		{"dup key",
			map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    image: shop/web:2\n"},
			[]string{
				"compose.yaml:4:5: services.web.image: duplicate key (first at line 3)",
			}},
		{"empty",
			map[string]string{"compose.yaml": "# nothing\n"},
			[]string{
				"compose.yaml:1: the compose file is empty: declare services",
			}},
		{"include",
			map[string]string{"compose.yaml": "include: [other.yaml]\nservices:\n  web:\n    extends: {file: base.yaml, service: web}\n"},
			[]string{
				`compose.yaml:1:11: include[0]: "other.yaml" does not exist in the repository: commit it, or correct the path (relative to compose.yaml)`,
			}},
		{"mixed",
			map[string]string{".github/ci.yml": "on: push\n", "compose.yaml": "services:\n  web:\n    image: shop/web:1\n", "docs/x.yaml": "a: b\n", "k8s/web.yaml": "apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: web}\nspec: {image: x}\n"},
			[]string{
				"k8s/web.yaml:1:13: apiVersion: a driftless manifest beside the compose file compose.yaml: an app directory holds either a compose file or driftless manifests, not both; move the manifests to their own app directory, or list this file in .driftlessignore",
			}},
		{"override error",
			map[string]string{"compose.override.yaml": "services:\n  web:\n    privileged: true\n    ports: ['bad:80']\n", "compose.yaml": "services:\n  web:\n    image: shop/web:1\n"},
			[]string{
				"compose.override.yaml:4:13: services.web.ports[0]: invalid hostPort: bad",
			}},
		{"port of unset variables",
			map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    ports: ['${PORT}:${PORT}']\n"},
			[]string{
				"compose.yaml:4:13: services.web.ports[0]: no port specified: :<empty> (not set: PORT; set it in .env or the app's environment)",
			}},
		{"ports collide",
			map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    ports: ['8080:80']\n    deploy: {replicas: 2}\n  api:\n    image: shop/api:1\n    ports: ['8080:80']\n  proxy:\n    image: shop/proxy:1\n    ports: ['9090:80']\n    x-driftless: {update: {maxSurge: 1, maxUnavailable: 0}}\n"},
			[]string{
				"compose.yaml:4:13: services.web.ports[0]: host port 8080 would collide across the 2 replicas: publish it from a service with one replica, or remove it",
				"compose.yaml:4:13: services.web.ports[0]: host port 8080/tcp is already published by service \"api\" at compose.yaml:8:13",
				"compose.yaml:11:13: services.proxy.ports[0]: host port 9090 would collide when a rolling update starts the new replica before stopping the old one: use deploy.update_config.order: stop-first (compose's default) or x-driftless.update: {maxSurge: 0, maxUnavailable: 1}",
			}},
		{"refusals",
			map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    build: {context: ../up}\n    links: [db]\n    privileged: true\n    cap_add: [SYS_ADMIN]\n    network_mode: \"service:db\"\n    volumes: [\"../outside:/x\", \"./missing.conf:/etc/m.conf\", \"/var/run/docker.sock:/var/run/docker.sock\", \"anon:/a\", \"/data\"]\n    ports: [\"80\"]\n    deploy: {mode: everywhere, placement: {constraints: [node.role==manager]}, update_config: {failure_action: retry, monitor: 10s}}\n    pull_policy: weekly\n    env_file: [missing.env]\n    labels: {dev.driftless.app: x}\n    depends_on: {db: {condition: service_started, restart: true}}\n    x-driftless: {readiness: {httpGet: {port: 0}}, secretEnv: [NOPE], bogus: 1}\n  db:\n    image: shop/db:1\n    container_name: db\n    deploy: {replicas: 2}\nvolumes:\n  data: {name: custom}\nnetworks:\n  n: {ipam: {config: [{subnet: 10.0.0.1/24, gateway: 10.1.0.1}]}}\nsecrets:\n  s: {environment: X}\n"},
			[]string{
				"compose.yaml:4:22: services.web.build.context: \"../up\" leaves the app directory: a build context must be inside the app directory",
				"compose.yaml:5:13: services.web.links[0]: links need the app's networks, not network_mode service:db (Docker refuses them)",
				"compose.yaml:6:17: services.web.privileged: a privileged container can take over the host; allow it for this app with `allow: [privileged]` in driftless.yaml (or `--allow privileged`)",
				"compose.yaml:7:15: services.web.cap_add[0]: capability SYS_ADMIN is beyond Docker's defaults; allow it for this app with `allow: [capabilities]` in driftless.yaml (or `--allow capabilities`)",
				"compose.yaml:8:19: services.web.network_mode: service \"db\" has 2 replicas, and a network namespace is one container's: give it one replica",
				"compose.yaml:9:15: services.web.volumes[0]: bind source \"../outside\" leaves the app directory: a relative source is a file of the app directory or, when the revision does not hold it, a directory of the app's state, and stays inside; mount other places by their absolute path (policy hostPaths)",
				"compose.yaml:9:62: services.web.volumes[2]: mounting /var/run/docker.sock gives the container the Docker socket, which is root on the host; allow it for this app with `allow: [docker-socket]` in driftless.yaml (or `--allow docker-socket`)",
				"compose.yaml:9:107: services.web.volumes[3]: volume \"anon\" is not declared: add it under the top-level volumes:",
				"compose.yaml:10:5: services.web.ports: publish them from service \"db\", whose network namespace this service shares (Docker refuses ports here)",
				"compose.yaml:11:20: services.web.deploy.mode: must be replicated or global, got \"everywhere\"",
				"compose.yaml:11:112: services.web.deploy.update_config.failure_action: must be pause, rollback or continue, got \"retry\"",
				"compose.yaml:12:18: services.web.pull_policy: \"weekly\" is not supported: use x-driftless: {imageUpdate: {interval: 24h}} to follow a tag",
				"compose.yaml:13:16: services.web.env_file[0]: env file \"missing.env\" does not exist in the repository: commit it, or mark it required: false",
				"compose.yaml:14:33: services.web.labels[\"dev.driftless.app\"]: the label prefix \"dev.driftless.\" is reserved for driftless",
				"compose.yaml:16:71: services.web.x-driftless.bogus: unknown field",
				"compose.yaml:19:21: services.db.container_name: cannot be combined with 2 replicas: a name is unique (as in compose)",
				"compose.yaml:24:32: networks.n.ipam.config[0].subnet: subnet 10.0.0.1/24 has host bits set; did you mean 10.0.0.0/24?",
				"compose.yaml:24:54: networks.n.ipam.config[0].gateway: gateway 10.1.0.1 is not a host address of subnet 10.0.0.0/24",
			}},
		{"anonymous volume on a used path",
			map[string]string{"app.conf": "x\n", "compose.yaml": "services:\n  db:\n    image: shop/db:1\n    volumes:\n      - /var/lib/db\n      - /etc/app\n      - {type: volume, target: /seed, read_only: true}\n    tmpfs: [/var/lib/db]\n    configs: [{source: app, target: /etc/app}]\n  swarmless:\n    image: shop/db:1\n    volumes: [{type: volume, target: relative}]\nconfigs:\n  app: {file: ./app.conf}\n"},
			[]string{
				"compose.yaml:7:9: services.db.volumes[2]: a read-only anonymous volume is refused by Docker (it could only ever be empty): drop :ro/read_only, or name the volume (NAME:/seed:ro) and declare it under the top-level volumes:",
				"compose.yaml:8:13: services.db.tmpfs[0]: /var/lib/db is already mounted by services.db.volumes[0]",
				"compose.yaml:9:15: services.db.configs[0]: /etc/app is already mounted by services.db.volumes[1]",
				"compose.yaml:12:15: services.swarmless.volumes[0]: the target \"relative\" must be an absolute path",
			}},
		{"required var",
			map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    environment:\n      TOKEN: ${TOKEN:?set TOKEN in the app's environment}\n      X: ${bad\n"},
			[]string{
				"compose.yaml:5:14: services.web.environment.TOKEN: required variable TOKEN is not set: set TOKEN in the app's environment",
				"compose.yaml:6:10: services.web.environment.X: invalid interpolation \"${bad\": write a literal $ as $$",
			}},
		{"scale vs replicas",
			map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    scale: 2\n    deploy: {replicas: 3}\n"},
			[]string{
				"compose.yaml:4:12: services.web.scale: scale: 2 and deploy.replicas: 3 differ: keep one of them",
			}},
		{"syntax",
			map[string]string{"compose.yaml": "services:\n  web:\n    image: [x\n"},
			[]string{
				"compose.yaml:3: YAML syntax error: did not find expected ',' or ']'",
			}},
		{"tab",
			map[string]string{"compose.yaml": "services:\n  web:\n\timage: shop/web:1\n"},
			[]string{
				"compose.yaml:3:1: YAML syntax error: a tab indents this line; YAML indentation must be spaces",
			}},
		{"null beside known fields",
			// nginx-proxy's docker-compose-separate-containers.yml: an
			// environment: holding only a comment is null, which compose
			// refuses; the fields beside it are not unknown.
			map[string]string{"compose.yaml": "services:\n  dockergen:\n    image: nginxproxy/nginx-proxy:dockergen\n    imgae: x\n    networks: [private]\n    environment:\n      # HTTP_PORT etc.\n    volumes: [conf:/etc/nginx/conf.d]\nnetworks: {private: {}}\nvolumes: {conf: {}}\n"},
			[]string{
				"compose.yaml:4:5: services.dockergen.imgae: unknown field: not part of the compose specification (did you mean \"image\"?)",
				"compose.yaml:6:5: services.dockergen.environment: must be a mapping, got null: the key has no value (only comments under it?): remove the key, or give it one",
			}},
		{"unknown fields and types",
			map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    imgae: x\n    ports: {a: 1}\n    replicas: 2\n  db:\n    image: 3\n    restart: sometimes\n    log_driver: syslog\n    net: host\n"},
			[]string{
				"compose.yaml:4:5: services.web.imgae: unknown field: not part of the compose specification (did you mean \"image\"?)",
				"compose.yaml:5:5: services.web.ports: must be a list, got a mapping",
				"compose.yaml:6:5: services.web.replicas: unknown field: not part of the compose specification (use deploy.replicas or scale)",
				"compose.yaml:8:12: services.db.image: must be a string, got a number",
				"compose.yaml:10:5: services.db.log_driver: unknown field: not part of the compose specification (a compose file format 1 attribute: use logging.driver)",
				"compose.yaml:11:5: services.db.net: unknown field: not part of the compose specification (a compose file format 1 attribute: use network_mode)",
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
