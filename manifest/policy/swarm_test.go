package policy_test

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

var swarmOpts = load.Options{Target: manifest.TargetSwarm}

func TestComposeSwarmDeployKeys(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": `services:
  web:
    image: shop/web:1
    healthcheck: {test: [CMD, /probe], interval: 2s, retries: 3}
    deploy:
      replicas: 3
      placement:
        constraints: [node.role==worker, node.labels.zone==a]
        preferences: [{spread: node.labels.rack}]
        max_replicas_per_node: 2
      update_config: {parallelism: 2, delay: 5s, order: start-first, failure_action: rollback, monitor: 10s, max_failure_ratio: 0.25}
      rollback_config: {parallelism: 0, failure_action: pause}
      resources: {limits: {memory: 64m, cpus: "0.5"}}
  agent:
    image: shop/agent:1
    deploy: {mode: global}
`}, swarmOpts)
	web, agent := a.Service("web"), a.Service("agent")
	want := &manifest.SwarmSpec{
		Constraints:        []string{"node.role==worker", "node.labels.zone==a"},
		Preferences:        []string{"node.labels.rack"},
		MaxReplicasPerNode: 2,
		Update:             manifest.SwarmUpdate{Parallelism: 2, Delay: 5 * time.Second, FailureAction: "rollback", Monitor: 10 * time.Second, MaxFailureRatio: 0.25, Order: "start-first"},
		Rollback:           &manifest.SwarmUpdate{FailureAction: "pause"},
	}
	if !reflect.DeepEqual(web.Spec.Swarm, want) {
		t.Errorf("web swarm spec = %+v, want %+v", web.Spec.Swarm, want)
	}
	if web.Spec.Replicas != 3 || web.Spec.Resources.MemoryBytes != 64<<20 || web.Spec.Healthcheck == nil {
		t.Errorf("web spec lost replicas, resources or healthcheck: %+v", web.Spec)
	}
	if agent.Spec.Swarm == nil || !agent.Spec.Swarm.Global {
		t.Errorf("agent: want a global service, got %+v", agent.Spec.Swarm)
	}

	// The same service for one engine runs one replica, as compose runs
	// it, with a warning that names target: swarm.
	one := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": "services:\n  agent:\n    image: shop/agent:1\n    deploy: {mode: global}\n"}, load.Options{})
	if s := one.Service("agent").Spec; s.Replicas != 1 || s.Swarm != nil {
		t.Errorf("one engine: replicas %d, swarm %+v; want 1 replica and no Swarm spec", s.Replicas, s.Swarm)
	}
	if w := one.Warnings.Error(); !strings.Contains(w, "compose.yaml:4:20: services.agent.deploy.mode: global runs one replica on one engine") || !strings.Contains(w, "set target: swarm") {
		t.Errorf("one engine: warnings %q; want one on deploy.mode naming target: swarm", w)
	}
	_, err := loadtest.LoadComposeFiles(t, map[string]string{"compose.yaml": "services:\n  agent:\n    image: shop/agent:1\n    deploy: {mode: global, replicas: 2}\n"}, load.Options{})
	if err == nil || !strings.Contains(err.Error(), "services.agent.deploy.replicas: a global service runs one task per node") {
		t.Errorf("one engine, global with replicas: got %v, want a refusal of deploy.replicas", err)
	}
}

func TestComposeSwarmConfigsAndSecrets(t *testing.T) {
	files := map[string]string{
		"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    configs: [site]\n    secrets: [{source: key, target: api.key}]\nconfigs:\n  site: {file: ./site.conf}\nsecrets:\n  key: {file: ./key.txt, x-driftless: {allowPlaintext: true}}\n",
		"site.conf":    "listen 80\n",
		"key.txt":      "s3cret\n",
	}
	a := loadtest.MustLoadCompose(t, files, swarmOpts)
	web := a.Service("web").Spec
	// The config is a repository file delivered as a Swarm config; the
	// secret goes through the one secrets model (decrypted, or plaintext
	// where allowed), as on one engine.
	if len(web.Binds) != 1 || web.Binds[0].MountPath != "/site" || web.Binds[0].Object == nil || *web.Binds[0].Object != (manifest.FileObject{Kind: manifest.FileConfig, Name: "site"}) || a.Content[web.Binds[0].ContentHash] == nil {
		t.Errorf("binds = %+v, want the config as a Swarm object with its content", web.Binds)
	}
	if len(web.Secrets) != 1 || web.Secrets[0].Name != "key" || web.Secrets[0].Target != "/run/secrets/api.key" || string(a.SecretData[web.Secrets[0].Digest]) != "s3cret\n" {
		t.Errorf("secrets = %+v", web.Secrets)
	}
	// On one engine the config stays a bind mount, hashed as before.
	one := loadtest.MustLoadCompose(t, files, load.Options{})
	for _, b := range one.Service("web").Spec.Binds {
		if b.Object != nil {
			t.Errorf("one engine: bind %+v carries a Swarm object", b)
		}
	}
}

func TestSwarmHashStableWithoutSwarmKeys(t *testing.T) {
	// An app without Swarm-only keys hashes the same on either target,
	// so switching target does not by itself count as a spec change.
	files := map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    deploy: {replicas: 2}\n"}
	one, swarm := loadtest.MustLoadCompose(t, files, load.Options{}), loadtest.MustLoadCompose(t, files, swarmOpts)
	if one.Services[0].Hash != swarm.Services[0].Hash {
		t.Errorf("hash differs by target: %s vs %s", one.Services[0].Hash, swarm.Services[0].Hash)
	}
}

func TestSwarmRefusals(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"compose",
			map[string]string{
				"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    build: .\n  cfg:\n    image: shop/cfg:1\n    volumes: [./conf:/etc/conf]\n    x-driftless: {readiness: {httpGet: {port: 80, path: /}}}\n",
				"Dockerfile":   "FROM scratch\n",
				"conf/a.conf":  "x\n",
			},
			[]string{
				"compose.yaml:7:15: services.cfg.volumes[0]: repository directory conf cannot be mounted into Swarm tasks (a task may run on another node): mount its files one by one (each becomes a Swarm config), declare them under configs:, or COPY them into an image with build: (target: swarm)",
				"compose.yaml:8:19: services.cfg.x-driftless.readiness: driftless's own readiness probes do not run against Swarm tasks: declare a healthcheck, which Swarm uses to gate its rolling update (target: swarm)",
			}},
		{"compose deploy keys",
			map[string]string{"compose.yaml": "services:\n  g:\n    image: shop/g:1\n    deploy: {mode: global, replicas: 2, update_config: {failure_action: explode}, rollback_config: {failure_action: rollback}}\n"},
			[]string{
				"compose.yaml:4:38: services.g.deploy.replicas: a global service runs one task per node: remove deploy.replicas",
				"compose.yaml:4:73: services.g.deploy.update_config.failure_action: must be pause, continue, rollback, got \"explode\"",
				"compose.yaml:4:117: services.g.deploy.rollback_config.failure_action: must be pause or continue, got \"rollback\"",
			}},
		{"native",
			map[string]string{"web.yaml": "apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: web}\nspec:\n  image: shop/web:1\n  readiness: {httpGet: {port: 80, path: /}}\n"},
			[]string{
				"web.yaml:6:3: spec.readiness: driftless's own readiness probes do not run against Swarm tasks: declare a healthcheck, which Swarm uses to gate its rolling update (target: swarm)",
			}},
		{"compose cgroup",
			map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    cgroup: host\n"},
			[]string{
				"compose.yaml:4:13: services.web.cgroup: cgroup namespace modes are not supported for Swarm services (target: swarm)",
			}},
		{"native uts",
			map[string]string{"web.yaml": "apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: web}\nspec:\n  image: shop/web:1\n  uts: host\n"},
			[]string{
				"web.yaml:6:8: spec.uts: uts namespace modes are not supported for Swarm services (target: swarm)",
			}},
		{"native minReadySeconds",
			map[string]string{"web.yaml": "apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: web}\nspec:\n  image: shop/web:1\n  minReadySeconds: 5\n"},
			[]string{
				"web.yaml:6:20: spec.minReadySeconds: driftless's own readiness does not judge Swarm tasks: Swarm's update monitor does (deploy.update_config.monitor in a compose file) (target: swarm)",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := appdir.LoadWith(loadtest.ComposeFS(tt.files), ".", "shop", swarmOpts)
			if err == nil {
				t.Fatal("loaded, want refusals")
			}
			got := err.Error()
			if got != strings.Join(tt.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", got, strings.Join(tt.want, "\n"))
			}
		})
	}
}

// An anonymous volume cannot follow a Swarm task's slot: refused, in
// either spelling, at the field.
func TestSwarmRefusesAnonymousVolumes(t *testing.T) {
	_, err := loadtest.LoadComposeFiles(t, map[string]string{"compose.yaml": "services:\n  db:\n    image: shop/db:1\n    volumes: [/var/lib/db]\n"}, swarmOpts)
	got := loadtest.ErrorLines(t, err)
	want := []string{"compose.yaml:4:15: services.db.volumes[0]: anonymous volumes are not supported on a Swarm target (Swarm makes a new one for every task, so its data does not survive an update): name the volume (NAME:/var/lib/db) and declare it under the top-level volumes:"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("compose:\n got %q\nwant %q", got, want)
	}
	native := "apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: db}\nspec:\n  image: shop/db:1\n  anonymousVolumes: [{mountPath: /var/lib/db}]\n"
	_, err = appdir.LoadWith(fstest.MapFS{"db.yaml": {Data: []byte(native)}}, ".", "shop", swarmOpts)
	got = loadtest.ErrorLines(t, err)
	if len(got) != 1 || !strings.HasPrefix(got[0], "db.yaml:6:3: spec.anonymousVolumes: anonymous volumes are not supported for Swarm services") {
		t.Errorf("native: %q", got)
	}
}
