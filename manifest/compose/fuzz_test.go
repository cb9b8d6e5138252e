package compose_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/compose"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// FuzzLoadCompose checks that no compose file panics the front end and
// that every error is an ErrorList located in the app's files (or a plain
// fs error). `go test` runs the seed corpus; run
// `go test -fuzz FuzzLoadCompose ./manifest/compose` to explore.
func FuzzLoadCompose(f *testing.F) {
	files, _ := filepath.Glob("testdata/compose/*/*compose*.y*ml")
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data, []byte("A=1\n"))
		}
	}
	for _, seed := range []string{
		"",
		"services: {}\n",
		"services:\n  web: {image: x, ports: ['1-2:3-4'], volumes: ['./a:/b:ro,z']}\n",
		"services:\n  web: {image: x, environment: ['${A:?boom}', '${B:-${C}}', '$${D}', '${']}\n",
		"services:\n  web: &w {image: x}\n  api: *w\n  job: {<<: *w, deploy: {replicas: '${A}'}}\n",
		"x-a: &a {image: x}\nservices:\n  web:\n    <<: *a\n    x-driftless: {readiness: {<<: {tcpSocket: {port: 1}}}}\n",
		"services:\n  web: {image: x, depends_on: {api: {condition: service_healthy}}}\n  api: {image: y, depends_on: [web]}\n",
		"services:\n  web: {image: x, networks: {n: {aliases: [a]}}, secrets: [s], configs: [c]}\nnetworks: {n: {external: true}}\nsecrets: {s: {file: a}}\nconfigs: {c: {content: x}}\n",
		"services:\n  web: {image: x, env_file: [a], secrets: [{source: s, target: t, uid: '1', gid: x, mode: 0o7777}]}\nsecrets: {s: {file: a, x-driftless: {allowPlaintext: true}}}\n",
		"services:\n  web: !reset\n  api: {image: x, ports: !override ['1:1']}\n",
		"services:\n  1: {image: x}\n",
		"- a\n- b\n",
		"services:\n  web:\n    image: x\n    image: y\n",
		"\xff\xfe",
		loadtest.BillionLaughs("services: {web: {image: x}}\n"),
		"services: {web: {image: x}}\nx-deep: " + strings.Repeat("[", 30) + strings.Repeat("]", 30) + "\n",
		"services:\n  web: {image: x, depends_on: [m]}\n  m: {image: x, restart: 'no', x-driftless: {job: {type: pre-sync, timeout: '${A}', backoffLimit: 11}}}\n",
		"services:\n  b: {image: x, restart: always, ports: ['1:1'], x-driftless: {job: {schedule: '@every 0s', timeZone: ../etc, concurrency: x, catchUp: true}}}\n",
		"services:\n  web: {image: x, blkio_config: {weight: 5, weight_device: [{path: /dev/../x, weight: 0}], device_read_bps: [{path: /dev/sda, rate: 1zb}], device_write_iops: [{path: '', rate: -1}]}}\n",
		"services:\n  web: {image: x, deploy: {mode: global, replicas: 2, update_config: {failure_action: continue, max_failure_ratio: -1}}, secrets: [{source: s, target: /s}, e], configs: [{source: c, mode: 0o7777, uid: x}]}\nsecrets: {s: {environment: A}, e: {environment: ''}}\nconfigs: {c: {content: '${A}'}}\n",
		"services:\n  2fa: {image: x, container_name: v, command: [], tmpfs: ['/t:rw,nr_inodes=x'], ports: [{target: 1, protocol: UDP}], deploy: {restart_policy: {condition: unless-stopped}, update_config: {order: start-first}}}\n  b: {image: x, network_mode: 'container:v', volumes_from: ['container:v:ro']}\n  c: {image: x, network_mode: n}\n  '2048': {image: x, network_mode: default}\nnetworks: {n: {external: true}}\n",
		"services:\n  web: {image: x, build: {context: conf, dockerfile_inline: 'FROM scratch', labels: {a: b}, tags: ['x:1'], no_cache: true, pull: true}}\n  api: {build: {context: conf, dockerfile_inline: 'FROM ${A}', dockerfile: D, labels: [dev.driftless.x=y], tags: ['X@y']}}\n",
	} {
		f.Add([]byte(seed), []byte("A=${B:-x}\nB C\n"))
	}
	f.Add([]byte("services: {web: {image: x}}\n"), []byte("COMPOSE_FILE=compose.yaml:a:../b:conf\nCOMPOSE_PATH_SEPARATOR=\n"))
	f.Fuzz(func(t *testing.T, composeFile, dotenv []byte) {
		fuzzCompose(t, composeFile, dotenv, load.Options{Profiles: []string{"*"}, Decrypt: loadtest.FakeDecrypt})
	})
}

// FuzzLoadComposeSwarm is FuzzLoadCompose for an app with target swarm,
// whose front end maps the deploy: keys only Swarm carries out and
// refuses what Swarm cannot do (CheckSwarm), every error with a position.
func FuzzLoadComposeSwarm(f *testing.F) {
	for _, seed := range []string{
		"services:\n  web: {image: x, deploy: {mode: global, placement: {constraints: [a==b], preferences: [{spread: c}]}}}\n",
		"services:\n  web: {image: x, deploy: {replicas: 2, update_config: {parallelism: 0, failure_action: rollback, monitor: 5s, max_failure_ratio: 2}, rollback_config: {failure_action: rollback}}}\n",
		"services:\n  web: {image: x, ports: ['80:80'], deploy: {replicas: 3}, configs: [c], secrets: [{source: s, target: k}]}\nconfigs: {c: {file: a}}\nsecrets: {s: {file: conf}}\n",
		"services:\n  web: {image: x, build: ., privileged: true, network_mode: host, networks: [n]}\nnetworks: {n: {driver: macvlan}}\n",
		"services:\n  m: {image: x, restart: 'no', x-driftless: {job: {type: post-sync}}}\n",
	} {
		f.Add([]byte(seed), []byte("A=1\n"))
	}
	f.Fuzz(func(t *testing.T, composeFile, dotenv []byte) {
		fuzzCompose(t, composeFile, dotenv, load.Options{Profiles: []string{"*"}, Target: manifest.TargetSwarm})
	})
}

func fuzzCompose(t *testing.T, composeFile, dotenv []byte, opts load.Options) {
	fsys := fstest.MapFS{
		"compose.yaml": {Data: composeFile},
		".env":         {Data: dotenv},
		"a":            {Data: []byte("file")},
		"conf/x.conf":  {Data: []byte("conf")},
	}
	app, err := appdir.LoadWith(fsys, ".", "fuzz", opts)
	if err == nil {
		if app == nil || app.Format != manifest.FormatCompose {
			t.Fatalf("no compose app without error: %#v", app)
		}
		for _, s := range app.Services {
			if !manifest.ValidObjectName(s.Name) || s.Hash != manifest.HashService(nil, s.Labels, s.Spec) {
				t.Fatalf("service %q: invalid name or hash", s.Name)
			}
		}
		return
	}
	var list manifest.ErrorList
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return
	}
	if !errors.As(err, &list) || len(list) == 0 {
		t.Fatalf("want a non-empty ErrorList, got %T: %v", err, err)
	}
	for _, e := range list {
		if _, ok := fsys[e.Pos.File]; !ok || e.Pos.Line <= 0 {
			t.Fatalf("error without a position in the app's files: %#v (%v)", e.Pos, e)
		}
		if strings.Contains(e.Msg, compose.WorkDir) {
			t.Fatalf("error names compose-go's virtual directory: %v", e)
		}
	}
}

// BenchmarkLoadCompose50 loads a compose file of 50 services.
func BenchmarkLoadCompose50(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("services:\n")
	for i := range 50 {
		fmt.Fprintf(&sb, `  svc_%d:
    image: shop/svc%d:1.%d
    command: ["serve", "--port", "8080"]
    environment:
      ID: "%d"
      LOG_LEVEL: ${LOG_LEVEL:-info}
    env_file: [common.env]
    ports: ["%d:8080"]
    volumes: ["data%d:/data", "./conf:/etc/svc:ro"]
    networks: [front, back]
    healthcheck: {test: ["CMD", "true"], interval: 5s}
    deploy:
      resources: {limits: {cpus: "0.5", memory: 128M}}
    depends_on:
      db: {condition: service_healthy}
    labels: {team: shop, index: "%d"}
`, i, i, i, i, 20000+i, i, i)
	}
	sb.WriteString("  db:\n    image: shop/postgres:16\n    networks: [back]\n    healthcheck: {test: pg_isready}\nnetworks: {front: {}, back: {internal: true}}\nvolumes:\n")
	for i := range 50 {
		fmt.Fprintf(&sb, "  data%d: {}\n", i)
	}
	fsys := fstest.MapFS{
		"compose.yaml": {Data: []byte(sb.String())},
		"common.env":   {Data: []byte("TZ=UTC\n")},
		"conf/a.conf":  {Data: []byte("a")},
	}
	if _, err := appdir.Load(fsys, ".", "bench"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := appdir.Load(fsys, ".", "bench"); err != nil {
			b.Fatal(err)
		}
	}
}
