package compose

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// extendsProbe is a healthcheck test the stand-in image can run: it has
// no shell, curl or redis-cli, and its workload probe checks the same
// port.
func extendsProbe(url string) string {
	return `["CMD", "/driftless", "workload", "probe", "` + url + `"]`
}

const (
	extendsNoProbeTools = "the stand-in image has no shell, curl or redis-cli: the workload's own probe checks the same port"
	extendsFreePort     = "host ports: a free one (the apps run at once on a shared machine)"
)

// extendsStacks are the corpus stacks for extends across files: each
// extended file is part of the revision, so editing it rolls exactly the
// services that extend it.
func extendsStacks() []corpusStack {
	return []corpusStack{
		{
			// Immich-like: hardware acceleration picked from hwaccel.*.yml;
			// the other backends there (devices, GPUs) are never used.
			dir:      "extends-hwaccel",
			replicas: map[string]int{"photos-server": 1, "photos-machine-learning": 1, "redis": 1, "database": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yaml", `"2283:2283"`, fmt.Sprintf(`"%d:2283"`, r.app.Port("photos", 1)), extendsFreePort)
				r.app.Replace(".env", "PHOTOS_VERSION=v1\n", "PHOTOS_VERSION=v1\nWORKLOAD_LISTEN=:2283\n",
					"the stand-in image listens where WORKLOAD_LISTEN says; the services read .env as their env_file, so both listen on the server's port 2283")
				r.app.Replace("compose.yaml", "test: redis-cli ping || exit 1", "test: "+extendsProbe("tcp://localhost:6379"), extendsNoProbeTools)
				r.stack.warnings = []string{fmt.Sprintf(`compose.yaml:5:7: name: the compose project name "photos" is ignored: this app is %q (containers are named %s-<service>-<slot>)`, r.app.Name, r.app.Name)}
			},
			check: func(t *testing.T, r *stackRun) {
				srv, ml := r.c("photos-server", 1), r.c("photos-machine-learning", 1)
				wantEnv(t, srv, map[string]string{"PHOTOS_TRANSCODE_ACCEL": "cpu", "PHOTOS_TRANSCODE_THREADS": "0", "DB_DATABASE_NAME": "photos"})
				wantEnv(t, ml, map[string]string{"MACHINE_LEARNING_WORKERS": "1", "MACHINE_LEARNING_MODEL_TTL": "300"})
				if env := containerEnv(t, srv); env["MACHINE_LEARNING_WORKERS"] != "" || env["LIBVA_DRIVER_NAME"] != "" {
					t.Errorf("%s took variables of another base: %v", srv, env)
				}
				wantInspect(t, srv, map[string]string{"HostConfig.Devices": "null", "HostConfig.RestartPolicy.Name": "unless-stopped"})
				wantInspect(t, ml, map[string]string{"HostConfig.Devices": "null"})
				// container_name stays a name the others reach.
				wantProbe(t, srv, "http://photos_machine_learning:2283/healthz")
				wantProbe(t, srv, "tcp://photos_redis:6379")
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("photos", 1)))
			},
			changes: []stackChange{{
				what:  "hwaccel.ml.yml: two workers",
				edits: []fileEdit{{File: "hwaccel.ml.yml", Old: `MACHINE_LEARNING_WORKERS: "1"`, New: `MACHINE_LEARNING_WORKERS: "2"`}},
				rolls: []string{"photos-machine-learning"},
				check: func(t *testing.T, r *stackRun) {
					wantEnv(t, r.c("photos-machine-learning", 1), map[string]string{"MACHINE_LEARNING_WORKERS": "2"})
				},
			}, {
				what:  "hwaccel.transcoding.yml: four threads",
				edits: []fileEdit{{File: "hwaccel.transcoding.yml", Old: `PHOTOS_TRANSCODE_THREADS: "0"`, New: `PHOTOS_TRANSCODE_THREADS: "4"`}},
				rolls: []string{"photos-server"},
				check: func(t *testing.T, r *stackRun) {
					wantEnv(t, r.c("photos-server", 1), map[string]string{"PHOTOS_TRANSCODE_THREADS": "4"})
				},
			}},
			heal: "photos-machine-learning",
		},
		{
			// cookiecutter-django-like: web, Celery worker and beat share
			// compose/base.yml, whose paths are relative to compose/.
			dir:      "extends-django",
			replicas: map[string]int{"django": 1, "celeryworker": 1, "celerybeat": 1, "postgres": 1, "redis": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yaml", `"8000:8000"`, fmt.Sprintf(`"%d:8000"`, r.app.Port("django", 1)), extendsFreePort)
				r.app.Replace("compose.yaml", `["CMD-SHELL", "curl -fsS http://localhost:8000/healthz || exit 1"]`, extendsProbe("http://localhost:8000/healthz"), extendsNoProbeTools)
			},
			check: func(t *testing.T, r *stackRun) {
				conf := r.app.Files["compose/django/gunicorn.conf.py"]
				for svc, cmd := range map[string]string{"django": "/start", "celeryworker": "/start-celeryworker", "celerybeat": "/start-celerybeat"} {
					c := r.c(svc, 1)
					wantEnv(t, c, map[string]string{
						"DJANGO_SETTINGS_MODULE": "config.settings.production", "DJANGO_ALLOWED_HOSTS": ".example.com",
						"POSTGRES_HOST": "postgres", "REDIS_URL": "redis://redis:6379/0",
					})
					wantInspect(t, c, map[string]string{"Config.Cmd": `["` + cmd + `"]`, "Config.StopTimeout": "30", "Config.Image": r.images.Ref("shop/api:4")})
					wantFile(t, c, "/app/gunicorn.conf.py", conf)
					wantProbe(t, c, "tcp://postgres:5432")
				}
				wantEnv(t, r.c("celeryworker", 1), map[string]string{"CELERY_WORKER_CONCURRENCY": "2"})
				if env := containerEnv(t, r.c("postgres", 1)); env["DJANGO_SETTINGS_MODULE"] != "" || env["POSTGRES_DB"] != "app" {
					t.Errorf("postgres env %v: want only its own env file", env)
				}
				wantInspect(t, r.c("django", 1), map[string]string{"State.Health.Status": "healthy"})
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("django", 1)))
			},
			changes: []stackChange{{
				what:  ".envs/.production/.django: allowed hosts",
				edits: []fileEdit{{File: ".envs/.production/.django", Old: "DJANGO_ALLOWED_HOSTS=.example.com", New: "DJANGO_ALLOWED_HOSTS=.example.org"}},
				rolls: []string{"django", "celeryworker", "celerybeat"},
				check: func(t *testing.T, r *stackRun) {
					for _, svc := range []string{"django", "celeryworker", "celerybeat"} {
						wantEnv(t, r.c(svc, 1), map[string]string{"DJANGO_ALLOWED_HOSTS": ".example.org"})
					}
				},
			}, {
				what:  "compose/django/gunicorn.conf.py: five workers",
				edits: []fileEdit{{File: "compose/django/gunicorn.conf.py", Old: "workers = 3", New: "workers = 5"}},
				rolls: []string{"django", "celeryworker", "celerybeat"},
				check: func(t *testing.T, r *stackRun) {
					body, _ := readRepoFile(r.repo, "compose/django/gunicorn.conf.py")
					wantFile(t, r.c("django", 1), "/app/gunicorn.conf.py", body)
				},
			}, {
				what:  "compose/base.yml: DJANGO_LOG_LEVEL=DEBUG",
				edits: []fileEdit{{File: "compose/base.yml", Old: "DJANGO_LOG_LEVEL: INFO", New: "DJANGO_LOG_LEVEL: DEBUG"}},
				rolls: []string{"django", "celeryworker", "celerybeat"},
				check: func(t *testing.T, r *stackRun) {
					for _, svc := range []string{"django", "celeryworker", "celerybeat"} {
						wantEnv(t, r.c(svc, 1), map[string]string{"DJANGO_LOG_LEVEL": "DEBUG"})
					}
				},
			}},
			heal: "celeryworker",
		},
		{
			// A two-level chain across two files: api -> services/api.yml
			// -> defaults.yml; the gateway extends defaults.yml directly.
			dir:      "extends-chain",
			replicas: map[string]int{"gateway": 1, "api": 2},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yaml", `"8443:80"`, fmt.Sprintf(`"%d:80"`, r.app.Port("gateway", 1)), extendsFreePort)
				r.app.Replace("services/api.yml", `["CMD", "/usr/local/bin/api", "healthcheck"]`, extendsProbe("http://localhost:8000/healthz"),
					"the stand-in image has no /usr/local/bin/api: the workload's own probe checks the API's port")
			},
			check: func(t *testing.T, r *stackRun) {
				hardened := map[string]string{
					"HostConfig.ReadonlyRootfs":     "true",
					"HostConfig.SecurityOpt":        `["no-new-privileges:true"]`,
					"HostConfig.LogConfig":          `{"Config":{"max-file":"3","max-size":"10m"},"Type":"json-file"}`,
					"HostConfig.RestartPolicy.Name": "unless-stopped",
					"Config.StopTimeout":            "20",
				}
				for _, c := range []string{r.c("gateway", 1), r.c("api", 1), r.c("api", 2)} {
					wantInspect(t, c, hardened)
					if got := testenv.FieldString(testenv.Inspect(t, "container", c), "HostConfig.CapDrop"); got != `["ALL"]` && got != `["CAP_ALL"]` {
						t.Errorf("%s: CapDrop %s, want ALL (defaults.yml)", c, got)
					}
					if m := mountOf(t, c, "/tmp"); m["Type"] != "tmpfs" {
						t.Errorf("%s: /tmp mount %v, want the tmpfs of defaults.yml", c, m)
					}
				}
				api := r.c("api", 1)
				wantInspect(t, api, map[string]string{"Config.User": "10001:10001", "State.Health.Status": "healthy"})
				wantEnv(t, api, map[string]string{"API_LOG_FORMAT": "json", "API_WORKERS": "4", "API_PUBLIC_URL": "https://api.example.com"})
				wantFile(t, api, "/etc/api/settings.toml", r.app.Files["services/api/settings.toml"])
				gw := r.c("gateway", 1)
				wantFile(t, gw, "/etc/nginx/nginx.conf", r.app.Files["gateway/nginx.conf"])
				if m := mountOf(t, gw, "/var/cache/nginx"); m["Type"] != "tmpfs" {
					t.Errorf("%s: /var/cache/nginx mount %v, want a tmpfs", gw, m)
				}
				wantProbe(t, gw, "http://api:8000/healthz")
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("gateway", 1)))
			},
			changes: []stackChange{{
				what:  "defaults.yml: logs up to 20m",
				edits: []fileEdit{{File: "defaults.yml", Old: "max-size: 10m", New: "max-size: 20m"}},
				rolls: []string{"gateway", "api"},
				check: func(t *testing.T, r *stackRun) {
					for _, c := range []string{r.c("gateway", 1), r.c("api", 1), r.c("api", 2)} {
						wantInspect(t, c, map[string]string{"HostConfig.LogConfig.Config.max-size": "20m"})
					}
				},
			}, {
				what:  "services/api.yml: API_WORKERS=8",
				edits: []fileEdit{{File: "services/api.yml", Old: `API_WORKERS: "4"`, New: `API_WORKERS: "8"`}},
				rolls: []string{"api"},
				check: func(t *testing.T, r *stackRun) {
					wantEnv(t, r.c("api", 1), map[string]string{"API_WORKERS": "8"})
					wantEnv(t, r.c("api", 2), map[string]string{"API_WORKERS": "8"})
				},
			}},
			heal: "api",
		},
		{
			// wger-like: the database and the cache are in files of their
			// own under services/, included; their settings are in
			// services/.env and their relative paths are services/'s.
			dir:      "include-wger",
			replicas: map[string]int{"web": 1, "celery-worker": 1, "nginx": 1, "db": 1, "cache": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yml", `"80:80"`, fmt.Sprintf(`"%d:80"`, r.app.Port("nginx", 1)), extendsFreePort)
				r.app.Replace("config/prod.env", "TIME_ZONE=Europe/Berlin\n", "TIME_ZONE=Europe/Berlin\nWORKLOAD_LISTEN=:8000\n",
					"the stand-in image listens where WORKLOAD_LISTEN says: the web application's port 8000")
				r.app.Replace("compose.yml", `["CMD", "wget", "--no-verbose", "--tries=1", "--spider", "http://localhost:8000"]`,
					extendsProbe("http://localhost:8000/healthz"), "the stand-in image has no wget: the workload's own probe checks the same port")
				r.app.Replace("services/db.yml", `["CMD-SHELL", "pg_isready -U ${POSTGRES_USER}"]`, extendsProbe("tcp://localhost:5432"),
					"the stand-in image has no pg_isready: the workload's own probe checks its port")
				r.app.Replace("services/cache.yml", `["CMD", "redis-cli", "ping"]`, extendsProbe("tcp://localhost:6379"), extendsNoProbeTools)
			},
			check: func(t *testing.T, r *stackRun) {
				db, cache, web := r.c("db", 1), r.c("cache", 1), r.c("web", 1)
				wantEnv(t, db, map[string]string{"POSTGRES_USER": "wger", "POSTGRES_PASSWORD": "wger", "POSTGRES_DB": "wger"})
				wantFile(t, db, "/docker-entrypoint-initdb.d/01-extensions.sql", r.app.Files["services/initdb/01-extensions.sql"])
				wantFile(t, cache, "/usr/local/etc/redis/redis.conf", r.app.Files["services/redis.conf"])
				for _, c := range []string{db, cache} {
					wantInspect(t, c, map[string]string{"State.Health.Status": "healthy", "HostConfig.RestartPolicy.Name": "unless-stopped"})
				}
				if m := mountOf(t, db, "/var/lib/postgresql/data"); m["Type"] != "volume" {
					t.Errorf("%s: data mount %v, want the volume postgres-data of services/db.yml", db, m)
				}
				wantEnv(t, web, map[string]string{"DJANGO_DB_HOST": "db", "CELERY_BROKER": "redis://cache:6379/2"})
				if env := containerEnv(t, web); env["POSTGRES_PASSWORD"] != "" {
					t.Errorf("%s took services/.env as its environment: %v", web, env)
				}
				// The included services are on the app's network, under
				// their names.
				wantProbe(t, web, "tcp://db:5432")
				wantProbe(t, web, "tcp://cache:6379")
				wantFile(t, r.c("nginx", 1), "/etc/nginx/conf.d/default.conf", r.app.Files["config/nginx.conf"])
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("nginx", 1)))
			},
			changes: []stackChange{{
				what:  "services/.env: a new database password",
				edits: []fileEdit{{File: "services/.env", Old: "POSTGRES_PASSWORD=wger", New: "POSTGRES_PASSWORD=s3cret"}},
				rolls: []string{"db"},
				check: func(t *testing.T, r *stackRun) {
					wantEnv(t, r.c("db", 1), map[string]string{"POSTGRES_PASSWORD": "s3cret"})
				},
			}, {
				what:  "services/redis.conf: 512mb",
				edits: []fileEdit{{File: "services/redis.conf", Old: "maxmemory 256mb", New: "maxmemory 512mb"}},
				rolls: []string{"cache"},
				check: func(t *testing.T, r *stackRun) {
					body, _ := readRepoFile(r.repo, "services/redis.conf")
					wantFile(t, r.c("cache", 1), "/usr/local/etc/redis/redis.conf", body)
				},
			}, {
				what:  "services/cache.yml: a stop grace period",
				edits: []fileEdit{{File: "services/cache.yml", Old: "    restart: unless-stopped\n", New: "    restart: unless-stopped\n    stop_grace_period: 30s\n"}},
				rolls: []string{"cache"},
				check: func(t *testing.T, r *stackRun) {
					wantInspect(t, r.c("cache", 1), map[string]string{"Config.StopTimeout": "30"})
				},
			}},
			heal: "db",
		},
	}
}

// extendsEquivCases are the equivalence cases for extends across files.
func extendsEquivCases() []equivCase {
	inherited := []string{
		"Config.Entrypoint", "Config.Env", "Config.Labels.com.example.team", "Config.Labels.com.example.role",
		"Config.Healthcheck.Test", "Config.Healthcheck.Interval", "Config.StopTimeout",
		"HostConfig.CapDrop", "HostConfig.Ulimits", "HostConfig.Init", "HostConfig.DnsSearch", "HostConfig.RestartPolicy.Name",
		"Mounts./etc/app.Content", "Mounts./etc/app.conf.Content", "Mounts./tmp.Options.size",
	}
	return []equivCase{{
		dir:      "equiv-extends",
		services: []string{"web", "worker"},
		networks: []string{"default"},
		declared: map[string][]string{
			"container web":    append([]string{"HostConfig.PortBindings.8080/tcp"}, inherited...),
			"container worker": append([]string{"Config.Cmd", "HostConfig.ExtraHosts"}, inherited...),
		},
		healthy: "web",
		env: func(t *testing.T) map[string]string {
			return map[string]string{"EQUIV_EXT_PORT": strconv.Itoa(testenv.FreePorts(t, 1))}
		},
	}}
}
