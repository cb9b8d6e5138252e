package native_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
)

// FuzzLoad checks that no input panics the parser and that every error it
// reports is located in the file. `go test` runs only the seed corpus; run
// `go test -fuzz FuzzLoad ./manifest/native` to explore.
func FuzzLoad(f *testing.F) {
	examples, _ := filepath.Glob("../../examples/shop/*.yaml")
	for _, name := range examples {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	for _, seed := range []string{
		"",
		"---\n---\n",
		loadtest.Svc + "  image: x\n  replicas: -1\n  ports: [{containerPort: 0, hostPort: 80}]\n",
		loadtest.Svc + "  image: &a x\n  args: [*a]\n",
		loadtest.Svc + "  image: x\n  <<: {replicas: 2}\n",
		loadtest.Svc + "  image: x\n  env: {A: 1, A: 2}\n  secretEnv: [B]\n",
		loadtest.Svc + "  image: x\n  dependsOn: [web, api]\n---\n" + "apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: api}\nspec: {image: y, dependsOn: [web]}\n",
		"a: [\n",
		"- 1\n- 2\n",
		"kind: !custom Service\n",
		"\xff\xfe",
		"? [a]\n: b\n",
		fullService,
		"apiVersion: driftless.dev/v1\nkind: Job\nmetadata: {name: m}\nspec: {image: x, type: pre-sync, replicas: 2, ports: [{containerPort: 1}], timeout: 0s, backoffLimit: -1}\n",
		"apiVersion: driftless.dev/v1\nkind: Job\nmetadata: {name: b}\nspec: {image: x, schedule: '* * *', timeZone: Local/../x, concurrency: never, catchUp: yes, networks: [n]}\n",
		"apiVersion: driftless.dev/v1\nkind: Job\nmetadata: {name: web}\nspec: {image: x, type: post-sync, restart: always, secrets: [{file: s.yaml}]}\n---\n" + loadtest.Svc + "  image: x\n",
		loadtest.Svc + "  image: x\n  networkMode: host\n  networks: [a]\n  aliases: {a: [\"-\"]}\n  stopSignal: 0x10\n  tmpfs: [{mountPath: /t, mode: 0o17777}]\n",
		loadtest.Svc + "  image: x\n  healthcheck: {test: [CMD-SHELL], interval: 1ns, disable: true}\n  ulimits: [{name: nofile, soft: -1, hard: 0}]\n",
		loadtest.Svc + "  image: x\n  binds: [{repoPath: /x, hostPath: ./y, mountPath: /}, {repoPath: ., mountPath: /, selinux: Z}]\n  sysctls: {net.a: [1]}\n",
		"apiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: n}\nspec: {external: true, name: \"\", driverOpts: {\"\": x}}\n",
		loadtest.Svc + "  image: x\n  env: {\"a.b\": \"\\u2028\\t\\0 ✓\", '1': \"<&>\"}\n  replicas: 0x10\n  resources: {cpus: .5, memory: 1e9}\n",
		loadtest.BillionLaughs(""),
		loadtest.Svc + "  image: x\n  secrets: [{name: a, file: m.yaml, target: /run/secrets/a, uid: \"0\", mode: 0400, allowPlaintext: true}, {name: b, file: ../x, key: k, target: rel}]\n  envFrom: [{secret: a}, {secret: c}]\n",
		loadtest.Svc + "  image: x\n  replicas: 9223372036854775807\n  args: " + strings.Repeat("[", 30) + strings.Repeat("]", 30) + "\n",
		loadtest.Svc + "  image: x\n  resources: {blkio: {weight: 70000, weightDevice: [{path: /dev}], deviceReadBps: [{path: /dev/a, rate: -1Gi}], deviceWriteIOps: [{path: /dev/a, rate: 1.5}, {}]}}\n",
		loadtest.Svc + "  build: {context: ., dockerfileInline: \"FROM scratch\", labels: {a: b, dev.driftless.x: y}, tags: [x, 'X@y'], noCache: true, pull: true}\n  networkMode: default\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		app, err := appdir.Load(fstest.MapFS{"m.yaml": {Data: data}}, ".", "fuzz")
		if err == nil {
			if app == nil {
				t.Fatal("nil app without error")
			}
			return
		}
		var list manifest.ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("want a non-empty ErrorList, got %T: %v", err, err)
		}
		for _, e := range list {
			if e.Pos.File != "m.yaml" || e.Pos.Line <= 0 {
				t.Fatalf("error without a position: %#v (%v)", e.Pos, e)
			}
			// The node walker must catch everything the strict decode
			// would reject, with a precise position.
			if strings.HasPrefix(e.Msg, "cannot decode document") {
				t.Fatalf("strict decode failed after the walker passed: %v", e)
			}
		}
	})
}
