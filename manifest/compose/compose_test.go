package compose_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

func with(files map[string]string, more map[string]string) map[string]string {
	for k, v := range more {
		files[k] = v
	}
	return files
}

func TestComposeMapsFields(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		opts  load.Options
		get   func(*manifest.ServiceSpec) any
		want  any
	}{
		{"defaults", loadtest.Web(), load.Options{},
			func(s *manifest.ServiceSpec) any {
				return []any{s.Replicas, s.Restart, s.Update, s.Networks, s.StopGracePeriodSeconds, s.Readiness == nil, s.Healthcheck == nil}
			},
			[]any{1, manifest.RestartNever, manifest.Update{Strategy: manifest.StrategyRolling, MaxSurge: 0, MaxUnavailable: 1}, []string{manifest.DefaultNetwork}, 10, true, true}},
		{"command string is split, entrypoint list", loadtest.Web(`command: nginx -g "daemon off;"`, "entrypoint: [/docker-entrypoint.sh]"), load.Options{},
			func(s *manifest.ServiceSpec) any { return [][]string{s.Command, s.Args} },
			[][]string{{"/docker-entrypoint.sh"}, {"nginx", "-g", "daemon off;"}}},
		{"environment list, from interpolation environment", loadtest.Web("environment: [A=1, B, 'C=x=y']"), load.Options{Environment: map[string]string{"B": "from-env"}},
			func(s *manifest.ServiceSpec) any { return s.Env }, map[string]string{"A": "1", "B": "from-env", "C": "x=y"}},
		{"environment map, numbers and booleans become strings", loadtest.Web("environment: {PORT: 8080, DEBUG: true, EMPTY: ''}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Env }, map[string]string{"PORT": "8080", "DEBUG": "true", "EMPTY": ""}},
		{"env_file forms and precedence",
			with(loadtest.Web("env_file: [a.env, {path: b.env}, {path: missing.env, required: false}]", "environment: {A: explicit}"),
				map[string]string{"a.env": "A=from-a\nB=from-a\nC=${TOKEN}\n", "b.env": "B=from-b\n"}),
			load.Options{Environment: map[string]string{"TOKEN": "t"}},
			func(s *manifest.ServiceSpec) any { return s.Env }, map[string]string{"A": "explicit", "B": "from-b", "C": "t"}},
		{"env_file string", with(loadtest.Web("env_file: ./conf/web.env"), map[string]string{"conf/web.env": "# comment\nexport X=1\n"}), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Env }, map[string]string{"X": "1"}},
		{"ports short, long, ranges, udp, host_ip",
			loadtest.Web(`ports: ["8080:80", "127.0.0.1:5353:53/udp", "9000-9001:7000-7001", {target: 443, published: "8443", host_ip: "::1"}]`), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Ports },
			[]manifest.Port{
				{ContainerPort: 53, HostPort: 5353, Protocol: "udp", HostIP: "127.0.0.1"},
				{ContainerPort: 80, HostPort: 8080, Protocol: "tcp"},
				{ContainerPort: 443, HostPort: 8443, Protocol: "tcp", HostIP: "::1"},
				{ContainerPort: 7000, HostPort: 9000, Protocol: "tcp"},
				{ContainerPort: 7001, HostPort: 9001, Protocol: "tcp"},
			}},
		{"expose, a range, and a port already published", loadtest.Web(`ports: ["8080:80"]`, `expose: ["80", 9000, "9100-9101/udp"]`), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Ports },
			[]manifest.Port{{ContainerPort: 80, HostPort: 8080, Protocol: "tcp"}, {ContainerPort: 9000, Protocol: "tcp"},
				{ContainerPort: 9100, Protocol: "udp"}, {ContainerPort: 9101, Protocol: "udp"}}},
		{"labels list and map", loadtest.Web("labels: [a=1, b]"), load.Options{},
			func(s *manifest.ServiceSpec) any { return nil }, nil},
		{"named volume, read-only short and long", with(loadtest.Web("volumes: [data:/data, 'cache:/cache:ro', {type: volume, source: data, target: /also, read_only: true}]"),
			map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    volumes: [data:/data, 'cache:/cache:ro', {type: volume, source: data, target: /also, read_only: true}]\nvolumes: {data: {}, cache: {}}\n"}),
			load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Volumes },
			[]manifest.VolumeMount{{Name: "data", MountPath: "/also", ReadOnly: true}, {Name: "cache", MountPath: "/cache", ReadOnly: true}, {Name: "data", MountPath: "/data"}}},
		{"binds: repository file, absolute host path, long syntax options",
			with(loadtest.Web("volumes: ['./nginx.conf:/etc/nginx/nginx.conf:ro', '/srv/logs:/logs:z', {type: bind, source: /srv/x, target: /x, bind: {create_host_path: false, propagation: rshared}}]"),
				map[string]string{"nginx.conf": "events {}\n"}),
			load.Options{Policy: policy.Policy{HostPaths: []string{"/srv"}}},
			func(s *manifest.ServiceSpec) any { return s.Binds },
			[]manifest.BindMount{
				{RepoPath: "nginx.conf", ContentHash: (&manifest.RepoTree{Files: []manifest.RepoFile{{Data: []byte("events {}\n")}}}).Hash(), MountPath: "/etc/nginx/nginx.conf", ReadOnly: true},
				{HostPath: "/srv/logs", MountPath: "/logs", CreateHostPath: true, SELinux: "z"},
				{HostPath: "/srv/x", MountPath: "/x", Propagation: "rshared"},
			}},
		{"tmpfs: volume type and service list", loadtest.Web("volumes: [{type: tmpfs, target: /cache, tmpfs: {size: 64m, mode: 0o1777}}]", "tmpfs: ['/run:size=1m,mode=755', /tmp]"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Tmpfs },
			[]manifest.TmpfsMount{{MountPath: "/cache", SizeBytes: 64 << 20, Mode: 0o1777}, {MountPath: "/run", SizeBytes: 1 << 20, Mode: 0o755}, {MountPath: "/tmp"}}},
		{"network_mode host", loadtest.Web("network_mode: host"), load.Options{Policy: policy.Policy{Allow: []string{policy.AllowHostNetwork}}},
			func(s *manifest.ServiceSpec) any { return []any{s.NetworkMode, s.Networks} }, []any{manifest.NetworkHost, []string(nil)}},
		{"network_mode none", loadtest.Web("network_mode: none"), load.Options{},
			func(s *manifest.ServiceSpec) any { return []any{s.NetworkMode, s.Networks} }, []any{manifest.NetworkNone, []string(nil)}},
		{"healthcheck string and exact durations", loadtest.Web("healthcheck: {test: curl -f localhost, interval: 1m30s, timeout: 1500ms, retries: 4, start_period: 2s, start_interval: 250ms}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return *s.Healthcheck },
			manifest.Healthcheck{Test: []string{"CMD-SHELL", "curl -f localhost"}, Interval: 90 * time.Second, Timeout: 1500 * time.Millisecond, Retries: 4, StartPeriod: 2 * time.Second, StartInterval: 250 * time.Millisecond}},
		{"healthcheck list", loadtest.Web("healthcheck: {test: [CMD, pg_isready, -U, app]}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Healthcheck.Test }, []string{"CMD", "pg_isready", "-U", "app"}},
		{"healthcheck disable", loadtest.Web("healthcheck: {disable: true}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return *s.Healthcheck }, manifest.Healthcheck{Test: []string{"NONE"}}},
		{"restart unless-stopped is always", loadtest.Web("restart: unless-stopped"), load.Options{},
			func(s *manifest.ServiceSpec) any { return []any{s.Restart, s.RestartMaxRetries} }, []any{manifest.RestartAlways, 0}},
		{"restart on-failure:5", loadtest.Web(`restart: "on-failure:5"`), load.Options{},
			func(s *manifest.ServiceSpec) any { return []any{s.Restart, s.RestartMaxRetries} }, []any{manifest.RestartOnFailure, 5}},
		{"restart no", loadtest.Web(`restart: "no"`), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Restart }, manifest.RestartNever},
		{"deploy.restart_policy", loadtest.Web("deploy: {restart_policy: {condition: on-failure, max_attempts: 3}}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return []any{s.Restart, s.RestartMaxRetries} }, []any{manifest.RestartOnFailure, 3}},
		{"a protocol in capitals", loadtest.Web("ports: [{target: 51413, published: '51413', protocol: UDP}]", "expose: [53/UDP]"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Ports },
			[]manifest.Port{{ContainerPort: 53, Protocol: "udp"}, {ContainerPort: 51413, HostPort: 51413, Protocol: "udp"}}},
		{"an empty entrypoint clears the image's", loadtest.Web("entrypoint: []", "command: [python, -m, app]"), load.Options{},
			func(s *manifest.ServiceSpec) any { return []any{s.ClearEntrypoint, s.Command, s.Args} },
			[]any{true, []string(nil), []string{"python", "-m", "app"}}},
		{"an empty command is the image's", loadtest.Web("command: []"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Args }, []string(nil)},
		{"a command from an empty variable is the image's", loadtest.Web("command: ${UNSET_COMMAND}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Args }, []string(nil)},
		{"deploy.restart_policy in restart's words", loadtest.Web("deploy: {restart_policy: {condition: unless-stopped}}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return []any{s.Restart, s.RestartNeverDeclared} }, []any{manifest.RestartAlways, false}},
		{"deploy.restart_policy always", loadtest.Web("deploy: {restart_policy: {condition: always}}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Restart }, manifest.RestartAlways},
		{"deploy.restart_policy no", loadtest.Web(`deploy: {restart_policy: {condition: "no"}}`), load.Options{},
			func(s *manifest.ServiceSpec) any { return []any{s.Restart, s.RestartNeverDeclared} }, []any{manifest.RestartNever, true}},
		{"replicas and start-first update", loadtest.Web("deploy: {replicas: 3, update_config: {parallelism: 2, order: start-first, delay: 10s, failure_action: rollback}}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return []any{s.Replicas, s.Update} },
			[]any{3, manifest.Update{Strategy: manifest.StrategyRolling, MaxSurge: 2, MaxUnavailable: 0, Delay: 10 * time.Second}}},
		{"scale and stop-first", loadtest.Web("scale: 2", "deploy: {update_config: {order: stop-first}}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return []any{s.Replicas, s.Update} },
			[]any{2, manifest.Update{Strategy: manifest.StrategyRolling, MaxSurge: 0, MaxUnavailable: 1}}},
		{"resources", loadtest.Web("deploy: {resources: {limits: {cpus: '0.1', memory: 512M, pids: 100}, reservations: {memory: 128m}}}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Resources },
			manifest.Resources{NanoCPUs: 100_000_000, MemoryBytes: 512 << 20, PidsLimit: 100, MemoryReservationBytes: 128 << 20}},
		{"legacy resources", loadtest.Web("cpus: 1.5", "mem_limit: 1g", "pids_limit: 50", "mem_reservation: 64m"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Resources },
			manifest.Resources{NanoCPUs: 1_500_000_000, MemoryBytes: 1 << 30, PidsLimit: 50, MemoryReservationBytes: 64 << 20}},
		{"stop_grace_period rounds up", loadtest.Web("stop_grace_period: 1500ms", "stop_signal: SIGQUIT"), load.Options{},
			func(s *manifest.ServiceSpec) any { return []any{s.StopGracePeriodSeconds, s.StopSignal} }, []any{2, "SIGQUIT"}},
		{"process settings", loadtest.Web("user: '1000:1000'", "working_dir: /app", "hostname: web", "domainname: example.org", "init: true", "tty: true", "stdin_open: true", "mac_address: 02:42:ac:11:00:02", "read_only: true", "group_add: [audio, '1001']", "shm_size: 64m"), load.Options{},
			func(s *manifest.ServiceSpec) any {
				return []any{s.User, s.WorkingDir, s.Hostname, s.Domainname, s.Init, s.TTY, s.StdinOpen, s.MacAddress, s.ReadOnlyRootfs, s.GroupAdd, s.ShmSizeBytes}
			},
			[]any{"1000:1000", "/app", "web", "example.org", true, true, true, "02:42:ac:11:00:02", true, []string{"1001", "audio"}, int64(64 << 20)}},
		{"extra_hosts list and map", loadtest.Web("extra_hosts: ['db.local:10.0.0.2', 'host.docker.internal=host-gateway']"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.ExtraHosts }, []string{"db.local:10.0.0.2", "host.docker.internal:host-gateway"}},
		{"extra_hosts map", loadtest.Web("extra_hosts: {db.local: 10.0.0.2}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.ExtraHosts }, []string{"db.local:10.0.0.2"}},
		{"dns settings keep their order", loadtest.Web("dns: 9.9.9.9", "dns_search: [b.example, a.example]", "dns_opt: [ndots:2]"), load.Options{},
			func(s *manifest.ServiceSpec) any { return [][]string{s.DNS, s.DNSSearch, s.DNSOptions} },
			[][]string{{"9.9.9.9"}, {"b.example", "a.example"}, {"ndots:2"}}},
		{"capabilities are normalized", loadtest.Web("cap_add: [net_bind_service, CAP_CHOWN]", "cap_drop: [all]"), load.Options{},
			func(s *manifest.ServiceSpec) any { return [][]string{s.CapAdd, s.CapDrop} }, [][]string{{"CHOWN", "NET_BIND_SERVICE"}, {"ALL"}}},
		{"sysctls list and map", loadtest.Web("sysctls: [net.core.somaxconn=1024]"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Sysctls }, map[string]string{"net.core.somaxconn": "1024"}},
		{"sysctls map", loadtest.Web("sysctls: {net.ipv4.tcp_syncookies: 0}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Sysctls }, map[string]string{"net.ipv4.tcp_syncookies": "0"}},
		{"ulimits", loadtest.Web("ulimits: {nproc: 65535, nofile: {soft: 1024, hard: 4096}}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Ulimits },
			[]manifest.Ulimit{{Name: "nofile", Soft: 1024, Hard: 4096}, {Name: "nproc", Soft: 65535, Hard: 65535}}},
		{"logging", loadtest.Web("logging: {driver: json-file, options: {max-size: 10m}}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return *s.Logging }, manifest.Logging{Driver: "json-file", Options: map[string]string{"max-size": "10m"}}},
		{"devices, pid, ipc, security_opt", loadtest.Web("devices: ['/dev/fuse:/dev/fuse:rwm']", "pid: host", "ipc: shareable", "security_opt: [no-new-privileges:true]"),
			load.Options{Policy: policy.Policy{Allow: []string{policy.AllowDevices, policy.AllowHostPID}}},
			func(s *manifest.ServiceSpec) any { return []any{s.Devices, s.PID, s.IPC, s.SecurityOpt} },
			[]any{[]manifest.Device{{HostPath: "/dev/fuse", ContainerPath: "/dev/fuse", Permissions: "rwm"}}, "host", "shareable", []string{"no-new-privileges:true"}}},
		{"x-driftless readiness, update and secretEnv", loadtest.Web("environment: {TOKEN: s3cret}", "x-driftless: {readiness: {httpGet: {path: /healthz, port: 8080}}, update: {maxSurge: 1, maxUnavailable: 0}, secretEnv: [TOKEN]}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return []any{*s.Readiness, s.Update, s.SecretEnv} },
			[]any{manifest.Readiness{HTTPGet: &manifest.HTTPGetProbe{Path: "/healthz", Port: 8080}, PeriodSeconds: 2, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
				manifest.Update{Strategy: manifest.StrategyRolling, MaxSurge: 1, MaxUnavailable: 0}, []string{"TOKEN"}}},
		{"x-driftless tcpSocket", loadtest.Web("x-driftless: {readiness: {tcpSocket: {port: 5432}, periodSeconds: 5}}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return *s.Readiness },
			manifest.Readiness{TCPSocket: &manifest.TCPSocketProbe{Port: 5432}, PeriodSeconds: 5, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}},
		{"other extensions are ignored", loadtest.Web("x-team: shop", "labels: {x: y}"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Env }, map[string]string(nil)},
		{"interpolation: defaults, .env, environment wins",
			with(loadtest.Web("environment:", "  - A=${A}", "  - B=${B:-fallback}", "  - C=${C}", "  - D=$${LITERAL}"), map[string]string{".env": "A=from-dotenv\nC=from-dotenv\n"}),
			load.Options{Environment: map[string]string{"C": "from-options"}},
			func(s *manifest.ServiceSpec) any { return s.Env }, map[string]string{"A": "from-dotenv", "B": "fallback", "C": "from-options", "D": "${LITERAL}"}},
		{"pull_policy missing is accepted", loadtest.Web("pull_policy: if_not_present"), load.Options{},
			func(s *manifest.ServiceSpec) any { return s.Image }, "shop/web:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := loadtest.MustLoadCompose(t, tt.files, tt.opts)
			s := a.Service("web")
			if s == nil {
				t.Fatalf("no service web in %v", a.Services)
			}
			if got := tt.get(&s.Spec); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
			if s.Hash != manifest.HashService(nil, s.Labels, s.Spec) {
				t.Errorf("hash %s is not HashService of the spec", s.Hash)
			}
		})
	}
}

func TestComposeLabels(t *testing.T) {
	a := loadtest.MustLoadCompose(t, loadtest.Web("labels: [team=shop, tier]"), load.Options{})
	if got, want := a.Service("web").Labels, map[string]string{"team": "shop", "tier": ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("list labels: got %v, want %v", got, want)
	}
	a = loadtest.MustLoadCompose(t, loadtest.Web("labels: {team: shop}"), load.Options{})
	if got, want := a.Service("web").Labels, map[string]string{"team": "shop"}; !reflect.DeepEqual(got, want) {
		t.Errorf("map labels: got %v, want %v", got, want)
	}
}

func TestComposeNetworksAndVolumes(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": `
services:
  web:
    image: shop/web:1
    networks:
      front: {aliases: [www]}
      back_end:
  db:
    image: shop/db:1
    networks: [back_end]
    volumes: [db_data:/var/lib/db, shared:/shared]
networks:
  front: {driver: bridge, attachable: true, enable_ipv6: true, labels: {tier: front}, driver_opts: {com.docker.network.bridge.name: br-front}}
  back_end: {internal: true}
  outside: {external: true, name: corp-net}
volumes:
  db_data: {driver: local, driver_opts: {type: none, o: bind, device: /srv/db}, labels: {backup: daily}}
  shared: {external: true}
`}, load.Options{Policy: policy.Policy{HostPaths: []string{"/srv"}}})
	want := []manifest.Network{
		{Name: "back-end", Spec: manifest.NetworkSpec{Driver: "bridge", Internal: true}},
		{Name: "front", Labels: map[string]string{"tier": "front"}, Spec: manifest.NetworkSpec{Driver: "bridge", Attachable: true, EnableIPv6: true, DriverOpts: map[string]string{"com.docker.network.bridge.name": "br-front"}}},
		{Name: "outside", Spec: manifest.NetworkSpec{Driver: "bridge", External: true, ExternalName: "corp-net"}},
	}
	for i := range a.Networks {
		a.Networks[i].Hash, a.Networks[i].Source = "", manifest.Position{}
	}
	if !reflect.DeepEqual(a.Networks, want) {
		t.Errorf("networks:\n got %+v\nwant %+v", a.Networks, want)
	}
	wantVol := []manifest.Volume{
		{Name: "db-data", ComposeName: "db_data", Labels: map[string]string{"backup": "daily"}, Spec: manifest.VolumeSpec{Driver: "local", DriverOpts: map[string]string{"type": "none", "o": "bind", "device": "/srv/db"}}},
		{Name: "shared", ComposeName: "shared", Spec: manifest.VolumeSpec{Driver: "local", External: true, ExternalName: "shared"}},
	}
	for i := range a.Volumes {
		a.Volumes[i].Hash, a.Volumes[i].Source, a.Volumes[i].Fields = "", manifest.Position{}, nil
	}
	if !reflect.DeepEqual(a.Volumes, wantVol) {
		t.Errorf("volumes:\n got %+v\nwant %+v", a.Volumes, wantVol)
	}
	w := a.Service("web").Spec
	if !reflect.DeepEqual(w.Networks, []string{"back-end", "front"}) || !reflect.DeepEqual(w.Aliases, map[string][]string{"front": {"www"}}) {
		t.Errorf("web networks %v aliases %v", w.Networks, w.Aliases)
	}
	d := a.Service("db").Spec
	if !reflect.DeepEqual(d.Volumes, []manifest.VolumeMount{{Name: "shared", MountPath: "/shared"}, {Name: "db-data", MountPath: "/var/lib/db"}}) {
		t.Errorf("db volumes %v", d.Volumes)
	}
	if a.VolumeDockerName("shared") != "shared" || a.NetworkDockerName("outside") != "corp-net" || a.NetworkDockerName("front") != "shop-front" {
		t.Errorf("docker names: %s %s %s", a.VolumeDockerName("shared"), a.NetworkDockerName("outside"), a.NetworkDockerName("front"))
	}
}

func TestComposeNamesAreMapped(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": `
services:
  my_service:
    image: shop/api:1
    container_name: legacy-api
  Web:
    image: shop/web:1
    depends_on: [my_service]
    networks: [front, default]
networks:
  front: {}
`}, load.Options{})
	var names []string
	for _, s := range a.Services {
		names = append(names, s.Name)
	}
	if !reflect.DeepEqual(names, []string{"my-service", "web"}) {
		t.Fatalf("service names %v", names)
	}
	if got := a.Service("my-service").Spec.Aliases; !reflect.DeepEqual(got, map[string][]string{"default": {"legacy-api", "my_service"}}) {
		t.Errorf("my-service aliases %v", got)
	}
	if got := a.Service("web").Spec.Aliases; !reflect.DeepEqual(got, map[string][]string{"default": {"Web"}, "front": {"Web"}}) {
		t.Errorf("web aliases %v", got)
	}
	if got := a.Service("web").Spec.DependsOn; !reflect.DeepEqual(got, []string{"my-service"}) {
		t.Errorf("web dependsOn %v", got)
	}
}

func TestComposeDependsOn(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": `
services:
  web:
    image: shop/web:1
    depends_on:
      db: {condition: service_healthy, restart: true}
      migrate: {condition: service_completed_successfully}
      cache: {condition: service_started, restart: true}
      debug: {condition: service_started, required: false}
  db: {image: shop/db:1}
  migrate: {image: shop/migrate:1}
  cache: {image: shop/cache:1}
  debug: {image: shop/debug:1, profiles: [debug]}
`}, load.Options{})
	s := a.Service("web").Spec
	if !reflect.DeepEqual(s.DependsOn, []string{"cache", "db", "migrate"}) {
		t.Errorf("dependsOn %v", s.DependsOn)
	}
	want := map[string]string{"cache": manifest.DependsStarted, "db": manifest.DependsHealthy, "migrate": manifest.DependsCompleted}
	if !reflect.DeepEqual(s.DependsOnCondition, want) {
		t.Errorf("conditions %v", s.DependsOnCondition)
	}
	// restart: true replaces web when db or cache is recreated (drift),
	// and is not hashed: adding it leaves web's containers be.
	if !reflect.DeepEqual(s.DependsOnRestart, []string{"cache", "db"}) {
		t.Errorf("dependsOnRestart %v", s.DependsOnRestart)
	}
	if h := manifest.HashService(nil, nil, s); h != manifest.HashService(nil, nil, withoutRestart(s)) {
		t.Error("restart: true changed the hash")
	}
	if a.Service("debug") != nil {
		t.Error("a service of an inactive profile is part of the app")
	}
	a = loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": "services:\n  web: {image: shop/web:1, depends_on: [db]}\n  db: {image: shop/db:1}\n"}, load.Options{})
	if got := a.Service("web").Spec.DependsOnCondition; !reflect.DeepEqual(got, map[string]string{"db": manifest.DependsStarted}) {
		t.Errorf("list form conditions %v", got)
	}
}

func withoutRestart(s manifest.ServiceSpec) manifest.ServiceSpec {
	s.DependsOnRestart = nil
	return s
}

func TestComposeProfiles(t *testing.T) {
	files := map[string]string{"compose.yaml": `
services:
  web: {image: shop/web:1}
  admin: {image: shop/admin:1, profiles: [ops]}
  debug: {image: shop/debug:1, profiles: [debug, ops]}
`}
	names := func(a *manifest.App) (out []string) {
		for _, s := range a.Services {
			out = append(out, s.Name)
		}
		return out
	}
	if got := names(loadtest.MustLoadCompose(t, files, load.Options{})); !reflect.DeepEqual(got, []string{"web"}) {
		t.Errorf("no profile: %v", got)
	}
	if got := names(loadtest.MustLoadCompose(t, files, load.Options{Profiles: []string{"debug"}})); !reflect.DeepEqual(got, []string{"debug", "web"}) {
		t.Errorf("debug: %v", got)
	}
	if got := names(loadtest.MustLoadCompose(t, files, load.Options{Profiles: []string{"ops"}})); !reflect.DeepEqual(got, []string{"admin", "debug", "web"}) {
		t.Errorf("ops: %v", got)
	}
	// Without profiles given, COMPOSE_PROFILES of .env (Dify's .env.example:
	// ${VECTOR_STORE:-weaviate},${DB_TYPE:-postgresql}; Sentry's
	// feature-complete) or of the environment selects them, as in docker
	// compose; given profiles win.
	files[".env"] = "DB=admin\nCOMPOSE_PROFILES=${VECTOR:-debug}, ${DB:-db}\n"
	if got := names(loadtest.MustLoadCompose(t, files, load.Options{})); !reflect.DeepEqual(got, []string{"debug", "web"}) {
		t.Errorf("COMPOSE_PROFILES=debug, admin in .env: %v", got)
	}
	if got := names(loadtest.MustLoadCompose(t, files, load.Options{Environment: map[string]string{"VECTOR": "ops"}})); !reflect.DeepEqual(got, []string{"admin", "debug", "web"}) {
		t.Errorf("COMPOSE_PROFILES=ops, admin: %v", got)
	}
	if got := names(loadtest.MustLoadCompose(t, files, load.Options{Profiles: []string{"none"}})); !reflect.DeepEqual(got, []string{"web"}) {
		t.Errorf("profile none given: %v", got)
	}
}

func TestComposeSecretsAndConfigs(t *testing.T) {
	key := manifest.SecretKey("k")
	a := loadtest.MustLoadCompose(t, map[string]string{
		"compose.yaml": `
services:
  web:
    image: shop/web:1
    secrets: [db_password, {source: api_key, target: api.key, uid: "999", gid: "998", mode: 0400}]
    configs: [nginx_conf, {source: site, target: /etc/site.conf}]
secrets:
  db_password: {file: ./secrets/db_password.txt}
  api_key: {file: api.key}
configs:
  nginx_conf: {file: ./nginx.conf}
  site: {file: conf/site.conf}
`,
		"secrets/db_password.txt": "ENC:pw",
		"api.key":                 "ENC:key",
		"nginx.conf":              "events {}",
		"conf/site.conf":          "site",
	}, load.Options{Decrypt: loadtest.FakeDecrypt, SecretKey: key})
	var got []string
	for _, b := range a.Service("web").Spec.Binds {
		if b.ContentHash == "" || a.Content[b.ContentHash] == nil || !b.ReadOnly {
			t.Errorf("bind %+v: no content or not read-only", b)
		}
		got = append(got, b.RepoPath+" -> "+b.MountPath+" = "+string(a.Content[b.ContentHash].Files[0].Data))
	}
	want := []string{"conf/site.conf -> /etc/site.conf = site", "nginx.conf -> /nginx_conf = events {}"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("config binds:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantSecrets := []manifest.SecretRef{
		{Name: "db_password", File: "secrets/db_password.txt", Target: "/run/secrets/db_password", Mode: 0o444, Digest: key.Digest("pw")},
		{Name: "api_key", File: "api.key", Target: "/run/secrets/api.key", UID: "999", GID: "998", Mode: 0o400, Digest: key.Digest("key")},
	}
	if s := a.Service("web").Spec.Secrets; !reflect.DeepEqual(s, wantSecrets) {
		t.Errorf("secrets:\n%+v\nwant\n%+v", s, wantSecrets)
	}
	if string(a.SecretData[key.Digest("pw")]) != "pw" || string(a.SecretData[key.Digest("key")]) != "key" {
		t.Errorf("secret data %q", a.SecretData)
	}
}

// A compose secret's file must be SOPS-encrypted unless the secret says
// x-driftless: {allowPlaintext: true}; the refusal points at its file:.
func TestComposeSecretPlaintext(t *testing.T) {
	files := map[string]string{"compose.yaml": "services:\n  web: {image: shop/web:1, secrets: [pw]}\nsecrets:\n  pw: {file: pw.txt}\n", "pw.txt": "plain"}
	_, err := loadtest.LoadComposeFiles(t, files, load.Options{Decrypt: loadtest.FakeDecrypt})
	if err == nil || !strings.Contains(err.Error(), `compose.yaml:4:14: secrets.pw.file: secret "pw": pw.txt is not SOPS-encrypted`) {
		t.Fatalf("plaintext: %v", err)
	}
	files["compose.yaml"] = strings.Replace(files["compose.yaml"], "{file: pw.txt}", "{file: pw.txt, x-driftless: {allowPlaintext: true}}", 1)
	if _, err := loadtest.LoadComposeFiles(t, files, load.Options{Decrypt: loadtest.FakeDecrypt}); err != nil {
		t.Fatalf("allowed: %v", err)
	}
	files["compose.yaml"] = strings.Replace(files["compose.yaml"], "allowPlaintext: true", "allowPlaintext: yes-please", 1)
	if _, err := loadtest.LoadComposeFiles(t, files, load.Options{Decrypt: loadtest.FakeDecrypt}); err == nil || !strings.Contains(err.Error(), "secrets.pw.x-driftless: the only setting here is allowPlaintext: true") {
		t.Fatalf("bad extension: %v", err)
	}
}

// A changed repository file changes the hash of exactly the services that
// mount it.
func TestComposeRepoFileRollsOnlyItsServices(t *testing.T) {
	files := func(conf string) map[string]string {
		return map[string]string{
			"compose.yaml": "services:\n  proxy: {image: shop/proxy:1, volumes: ['./conf:/etc/proxy:ro']}\n  web: {image: shop/web:1}\n",
			"conf/a.conf":  conf,
		}
	}
	a := loadtest.MustLoadCompose(t, files("one"), load.Options{})
	b := loadtest.MustLoadCompose(t, files("two"), load.Options{})
	if a.Service("proxy").Hash == b.Service("proxy").Hash {
		t.Error("changing a mounted file did not change the proxy's hash")
	}
	if a.Service("web").Hash != b.Service("web").Hash {
		t.Error("changing a mounted file changed the hash of a service that does not mount it")
	}
	tree := b.Content[b.Service("proxy").Spec.Binds[0].ContentHash]
	if tree == nil || !tree.Dir || len(tree.Files) != 1 || tree.Files[0].Path != "a.conf" {
		t.Errorf("content %+v", tree)
	}
}

func TestComposeOverrideFile(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{
		"compose.yaml":          "services:\n  web:\n    image: shop/web:1\n    ports: ['8080:80']\n    environment: {A: base, B: base}\n",
		"compose.override.yaml": "services:\n  web:\n    image: shop/web:2\n    environment: {B: override}\n",
	}, load.Options{})
	s := a.Service("web").Spec
	if s.Image != "shop/web:2" || !reflect.DeepEqual(s.Env, map[string]string{"A": "base", "B": "override"}) || len(s.Ports) != 1 {
		t.Errorf("merged spec: image %s env %v ports %v", s.Image, s.Env, s.Ports)
	}
}

func TestComposeFilePrecedence(t *testing.T) {
	a, err := loadtest.LoadComposeFiles(t, map[string]string{
		"compose.yaml":       "services:\n  web: {image: shop/web:1}\n",
		"docker-compose.yml": "services:\n  old: {image: shop/old:1}\n",
	}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Service("old") != nil || a.Service("web") == nil {
		t.Errorf("compose.yaml must win over docker-compose.yml: %v", a.Services)
	}
	if got := a.Warnings.Error(); got != "docker-compose.yml: ignored: compose.yaml takes precedence, as in docker compose" {
		t.Errorf("warnings: %s", got)
	}
	a = loadtest.MustLoadCompose(t, map[string]string{"docker-compose.yml": "services:\n  web: {image: shop/web:1}\n"}, load.Options{})
	if a.Service("web") == nil {
		t.Error("docker-compose.yml alone is a compose app")
	}
}

func TestComposeWarnings(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{"compose.yaml": `name: storefront
services:
  web:
    image: shop/web:1
    environment: [UNSET_KEY, 'LEVEL=${LOG_LEVEL}']
    cpu_count: 2
    cpu_percent: 50
`}, load.Options{})
	want := []string{
		`compose.yaml:1:7: name: the compose project name "storefront" is ignored: this app is "shop" (containers are named shop-<service>-<slot>)`,
		`compose.yaml:5:19: services.web.environment[0]: variable UNSET_KEY has no value and is not set in the interpolation environment: the container does not get it (as in compose)`,
		`compose.yaml:5:30: services.web.environment[1]: variable LOG_LEVEL is not set: it interpolates to an empty string (set it in .env or the app's environment, or write ${LOG_LEVEL:-default})`,
		`compose.yaml:6:16: services.web.cpu_count: has no effect in driftless: cpu_count: is Windows-only, and a Linux engine ignores it; limit CPUs with deploy.resources.limits.cpus`,
		`compose.yaml:7:18: services.web.cpu_percent: has no effect in driftless: cpu_percent: is Windows-only, and a Linux engine ignores it; limit CPUs with deploy.resources.limits.cpus`,
	}
	if got := strings.Split(a.Warnings.Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n%s", strings.Join(got, "\n"))
	}
	if got := a.Service("web").Spec.Env; !reflect.DeepEqual(got, map[string]string{"LEVEL": ""}) {
		t.Errorf("env %v", got)
	}
}

// An encrypted env file is decrypted and its variables are secret env; a
// plaintext one stays plain configuration, as in compose.
func TestComposeEncryptedEnvFile(t *testing.T) {
	a := loadtest.MustLoadCompose(t, map[string]string{
		"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    env_file: [secrets.env, plain.env]\n    environment: {OPEN: from-compose}\n",
		"secrets.env":  "ENC:DB_PASSWORD=pw\nOPEN=hidden\n",
		"plain.env":    "LOG_LEVEL=info\n",
	}, load.Options{Decrypt: loadtest.FakeDecrypt})
	s := a.Service("web").Spec
	if want := map[string]string{"DB_PASSWORD": "pw", "OPEN": "from-compose", "LOG_LEVEL": "info"}; !reflect.DeepEqual(s.Env, want) {
		t.Errorf("env %v, want %v", s.Env, want)
	}
	if !reflect.DeepEqual(s.SecretEnv, []string{"DB_PASSWORD"}) {
		t.Errorf("secretEnv %v, want the encrypted file's variable only", s.SecretEnv)
	}
	_, err := loadtest.LoadComposeFiles(t, map[string]string{
		"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    env_file: [secrets.env]\n",
		"secrets.env":  "LOCKED:x\n",
	}, load.Options{Decrypt: loadtest.FakeDecrypt})
	if err == nil || !strings.Contains(err.Error(), `compose.yaml:4:16: services.web.env_file[0]: env file "secrets.env": no available key can decrypt it`) {
		t.Errorf("locked env file: %v", err)
	}
}
