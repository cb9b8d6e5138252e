package swarm

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"testing/fstest"
	"time"

	"github.com/moby/moby/api/types/events"
	swarmtypes "github.com/moby/moby/api/types/swarm"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/load"
)

func loadApp(t *testing.T, files map[string]string) *manifest.App {
	t.Helper()
	fsys := fstest.MapFS{}
	for k, v := range files {
		fsys[k] = &fstest.MapFile{Data: []byte(v)}
	}
	a, err := appdir.LoadWith(fsys, ".", "shop", load.Options{Target: manifest.TargetSwarm})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return a
}

// TestServiceSpecRestartDefault: a compose service that says nothing of
// restarts restarts on any exit on Swarm, as with docker stack deploy, so
// Swarm replaces its tasks when their node is drained or lost (with
// condition none it replaces nothing); an explicit restart: "no" is kept.
func TestServiceSpecRestartDefault(t *testing.T) {
	app := loadApp(t, map[string]string{"compose.yaml": `services:
  web: {image: shop/web:1}
  job: {image: shop/job:1, restart: "no"}
  worker: {image: shop/worker:1, deploy: {restart_policy: {condition: none}}}
`})
	for svc, want := range map[string]swarmtypes.RestartPolicyCondition{
		"web":    swarmtypes.RestartPolicyConditionAny,
		"job":    swarmtypes.RestartPolicyConditionNone,
		"worker": swarmtypes.RestartPolicyConditionNone,
	} {
		spec := ServiceSpec(app, app.Service(svc), "abc123")
		if got := spec.TaskTemplate.RestartPolicy; got == nil || got.Condition != want {
			t.Errorf("service %s: restart policy %+v, want condition %s", svc, got, want)
		}
	}
}

func TestServiceSpecFromCompose(t *testing.T) {
	app := loadApp(t, map[string]string{"compose.yaml": `services:
  web:
    image: shop/web:1
    command: [serve, --port, "80"]
    environment: {B: "2", A: "1"}
    ports: ["8080:80"]
    networks: {front: {aliases: [www]}}
    volumes: [data:/data]
    healthcheck: {test: [CMD, /probe], interval: 2s, retries: 3}
    restart: on-failure
    deploy:
      replicas: 3
      resources: {limits: {memory: 64m, cpus: "0.5"}, reservations: {memory: 32m}}
      placement: {constraints: [node.role==worker], preferences: [{spread: node.labels.zone}]}
      update_config: {parallelism: 2, order: start-first, failure_action: rollback, monitor: 10s}
      rollback_config: {parallelism: 0, failure_action: pause}
networks:
  front: {}
volumes:
  data: {}
`})
	web := app.Service("web")
	spec := ServiceSpec(app, web, "abc123")

	if spec.Name != "shop-web" {
		t.Errorf("name = %s", spec.Name)
	}
	wantLabels := map[string]string{drift.LabelApp: "shop", drift.LabelService: "web", drift.LabelSpecHash: web.Hash, drift.LabelRevision: "abc123"}
	for k, v := range wantLabels {
		if spec.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, spec.Labels[k], v)
		}
	}
	checkContainerSpec(t, spec.TaskTemplate.ContainerSpec)
	checkTaskTemplate(t, spec)
}

func checkContainerSpec(t *testing.T, c *swarmtypes.ContainerSpec) {
	t.Helper()
	if c.Image != "shop/web:1" || !reflect.DeepEqual(c.Args, []string{"serve", "--port", "80"}) || !reflect.DeepEqual(c.Env, []string{"A=1", "B=2"}) {
		t.Errorf("container spec: image %s, args %v, env %v", c.Image, c.Args, c.Env)
	}
	if c.Labels[LabelTaskApp] != "shop" || c.Labels[drift.LabelApp] != "" {
		t.Errorf("task container labels %v: want the swarm-app label and never the single-engine app label", c.Labels)
	}
	if c.Healthcheck == nil || c.Healthcheck.Interval != 2*time.Second || c.Healthcheck.Retries != 3 {
		t.Errorf("healthcheck = %+v", c.Healthcheck)
	}
	if len(c.Mounts) != 1 || c.Mounts[0].Source != "shop-data" || c.Mounts[0].Target != "/data" || c.Mounts[0].VolumeOptions.Labels[drift.LabelApp] != "shop" {
		t.Errorf("mounts = %+v", c.Mounts)
	}
}

func checkTaskTemplate(t *testing.T, spec swarmtypes.ServiceSpec) {
	t.Helper()
	if got := *spec.Mode.Replicated.Replicas; got != 3 {
		t.Errorf("replicas = %d", got)
	}
	res := spec.TaskTemplate.Resources
	if res.Limits.MemoryBytes != 64<<20 || res.Limits.NanoCPUs != 5e8 || res.Reservations.MemoryBytes != 32<<20 {
		t.Errorf("resources = %+v / %+v", res.Limits, res.Reservations)
	}
	if rp := spec.TaskTemplate.RestartPolicy; rp.Condition != swarmtypes.RestartPolicyConditionOnFailure {
		t.Errorf("restart = %+v", rp)
	}
	p := spec.TaskTemplate.Placement
	if !reflect.DeepEqual(p.Constraints, []string{"node.role==worker"}) || p.Preferences[0].Spread.SpreadDescriptor != "node.labels.zone" {
		t.Errorf("placement = %+v", p)
	}
	nets := spec.TaskTemplate.Networks
	if len(nets) != 1 || nets[0].Target != "shop-front" || !reflect.DeepEqual(nets[0].Aliases, []string{"web", "www"}) {
		t.Errorf("networks = %+v", nets)
	}
	want := swarmtypes.UpdateConfig{Parallelism: 2, Order: swarmtypes.UpdateOrderStartFirst, FailureAction: "rollback", Monitor: 10 * time.Second}
	if !reflect.DeepEqual(*spec.UpdateConfig, want) {
		t.Errorf("update config = %+v, want %+v", *spec.UpdateConfig, want)
	}
	if rb := spec.RollbackConfig; rb == nil || rb.FailureAction != "pause" {
		t.Errorf("rollback config = %+v", rb)
	}
	if e := spec.EndpointSpec; e == nil || e.Ports[0].PublishedPort != 8080 || e.Ports[0].TargetPort != 80 || e.Ports[0].PublishMode != swarmtypes.PortConfigPublishModeIngress {
		t.Errorf("endpoint = %+v", e)
	}
}

func TestServiceSpecFromNativeMatchesCompose(t *testing.T) {
	// One model: the same service from either front end is the same
	// Swarm spec (apart from the hash, which only labels carry).
	native := loadApp(t, map[string]string{"web.yaml": `apiVersion: driftless.dev/v1
kind: Service
metadata: {name: web}
spec:
  image: shop/web:1
  replicas: 2
  env: {A: "1"}
  update: {maxSurge: 0, maxUnavailable: 1}
`})
	compose := loadApp(t, map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    environment: {A: \"1\"}\n    restart: always\n    stop_grace_period: 10s\n    deploy: {replicas: 2}\n"})
	a, b := ServiceSpec(native, native.Service("web"), ""), ServiceSpec(compose, compose.Service("web"), "")
	delete(a.Labels, drift.LabelSpecHash)
	delete(b.Labels, drift.LabelSpecHash)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("native and compose map differently:\nnative:  %s\ncompose: %s", ja, jb)
	}
}

func TestServiceSpecGlobal(t *testing.T) {
	app := loadApp(t, map[string]string{"compose.yaml": "services:\n  agent:\n    image: shop/agent:1\n    deploy: {mode: global}\n"})
	spec := ServiceSpec(app, app.Service("agent"), "")
	if spec.Mode.Global == nil || spec.Mode.Replicated != nil {
		t.Errorf("mode = %+v, want global", spec.Mode)
	}
}

func TestTaskRows(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	svc := &drift.SwarmService{ID: "s1", Name: "shop-web", Service: "web"}
	tasks := []swarmtypes.Task{
		{ID: "t1", ServiceID: "s1", Slot: 1, NodeID: "n1", DesiredState: swarmtypes.TaskStateRunning,
			Status: swarmtypes.TaskStatus{State: swarmtypes.TaskStateRunning, Timestamp: now}},
		{ID: "t2", ServiceID: "s1", Slot: 2, NodeID: "n1", DesiredState: swarmtypes.TaskStateRunning,
			Status: swarmtypes.TaskStatus{State: swarmtypes.TaskStateStarting, Timestamp: now}},
		{ID: "t0", ServiceID: "s1", Slot: 2, NodeID: "n1", DesiredState: swarmtypes.TaskStateShutdown,
			Status: swarmtypes.TaskStatus{State: swarmtypes.TaskStateFailed, Err: "task: non-zero exit (1)", Timestamp: now.Add(-time.Minute)}},
		{ID: "old", ServiceID: "s1", Slot: 2, NodeID: "n1", DesiredState: swarmtypes.TaskStateShutdown,
			Status: swarmtypes.TaskStatus{State: swarmtypes.TaskStateFailed, Err: "long ago", Timestamp: now.Add(-time.Hour)}},
	}
	rows, errs := taskRows("shop", tasks, map[string]*drift.SwarmService{"s1": svc}, map[string]string{"n1": "node-1"}, now.Add(-10*time.Minute))
	if len(rows) != 2 || rows[0].Name != "shop-web.1" || !rows[0].Ready || rows[0].Node != "node-1" || rows[1].Ready || rows[1].State != "starting" {
		t.Errorf("rows = %+v", rows)
	}
	if want := []string{"shop-web.2 on node-1: task: non-zero exit (1)"}; !reflect.DeepEqual(errs["s1"], want) {
		t.Errorf("task errors = %q, want %q", errs["s1"], want)
	}
}

func TestServiceSpecConfigsAndSecrets(t *testing.T) {
	app := loadApp(t, map[string]string{
		"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    configs: [site]\n    secrets: [key]\nconfigs:\n  site: {file: ./site.conf}\nsecrets:\n  key: {file: ./key.txt, x-driftless: {allowPlaintext: true}}\n",
		"site.conf":    "listen 80\n",
		"key.txt":      "s3cret\n",
	})
	web := app.Service("web")
	c := ServiceSpec(app, web, "").TaskTemplate.ContainerSpec
	if len(c.Mounts) != 0 {
		t.Errorf("a Swarm secret or config must not also be a bind mount: %+v", c.Mounts)
	}
	cfgHash, keyHash := web.Spec.Binds[0].ContentHash, web.Spec.Secrets[0].Digest
	if len(c.Configs) != 1 || c.Configs[0].ConfigName != "shop_site_"+cfgHash[:8] || c.Configs[0].File.Name != "/site" {
		t.Errorf("configs = %+v", c.Configs)
	}
	if len(c.Secrets) != 1 || c.Secrets[0].SecretName != "shop_key_"+keyHash[:8] || c.Secrets[0].File.Name != "/run/secrets/key" {
		t.Errorf("secrets = %+v", c.Secrets)
	}
	if data, hash, ok := objectData(app, "shop_key_"+keyHash[:8]); !ok || string(data) != "s3cret\n" || hash != keyHash {
		t.Errorf("objectData = %q, %s, %v", data, hash, ok)
	}
}

func TestEventsOfSecretsConfigsAndTasks(t *testing.T) {
	e := newEngine(nil, Options{})
	for _, tc := range []struct {
		m    events.Message
		want string
	}{
		{events.Message{Type: events.ConfigEventType, Action: "remove", Actor: events.Actor{Attributes: map[string]string{"name": "shop_site_0123abcd"}}}, "shop remove"},
		{events.Message{Type: events.SecretEventType, Action: "create", Actor: events.Actor{Attributes: map[string]string{"name": "nounderscore"}}}, ""},
		{events.Message{Type: events.ContainerEventType, Action: "health_status: unhealthy", Actor: events.Actor{Attributes: map[string]string{LabelTaskApp: "shop"}}}, "shop health_status"},
		{events.Message{Type: events.ContainerEventType, Action: "die", Actor: events.Actor{Attributes: map[string]string{"name": "not-a-task"}}}, ""},
	} {
		got := ""
		if evs := e.eventsOf(context.Background(), tc.m); len(evs) == 1 {
			got = evs[0].App + " " + evs[0].Action
		}
		if got != tc.want {
			t.Errorf("%s %s: got %q, want %q", tc.m.Type, tc.m.Action, got, tc.want)
		}
	}
}

// nocopy reaches a task's volume mounts, declared or external, as for a
// container on one engine.
func TestServiceSpecVolumeNoCopy(t *testing.T) {
	app := loadApp(t, map[string]string{"compose.yaml": `services:
  web:
    image: shop/web:1
    volumes: ["data:/data:nocopy", "shared:/shared:nocopy", "plain:/plain"]
volumes:
  data: {}
  plain: {}
  shared: {external: true}
`})
	got := map[string]bool{}
	for _, m := range ServiceSpec(app, app.Service("web"), "abc123").TaskTemplate.ContainerSpec.Mounts {
		got[m.Target] = m.VolumeOptions != nil && m.VolumeOptions.NoCopy
	}
	if want := map[string]bool{"/data": true, "/shared": true, "/plain": false}; !reflect.DeepEqual(got, want) {
		t.Errorf("nocopy by target %v, want %v", got, want)
	}
}
