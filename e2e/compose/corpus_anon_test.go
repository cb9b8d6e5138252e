package compose

import (
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/status"
)

// anonStacks are the corpus stacks for anonymous volumes: a database
// whose data is an anonymous volume, a Node.js app with node_modules in
// one over its checkout, and a wiki whose database's image declares its
// volume while two replicas keep a cache each. Every stack writes into
// the volumes and reads the files back after a change rolls the service
// and after a replica is removed by hand and recreated.
func anonStacks() []corpusStack {
	probe := func(url string) string {
		return `["CMD", "/driftless", "workload", "probe", "` + url + `"]`
	}
	const noProbeTools = "the stand-in image has no pg_isready or reader binary: the workload's own probe checks the same port"
	const freePort = "host ports: a free one (the apps run at once on a shared machine)"
	const pgData = "/var/lib/postgresql/data"
	const modules = "/usr/src/app/node_modules"
	const wikiCache = "/var/www/html/storage/framework/cache"
	return []corpusStack{
		{
			dir:      "rss-postgres",
			replicas: map[string]int{"reader": 1, "db": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yaml", `"8080:8080"`, fmt.Sprintf(`"%d:8080"`, r.app.Port("reader", 1)), freePort)
				r.app.Replace("compose.yaml", `["CMD", "/usr/bin/reader", "-healthcheck", "auto"]`, probe("http://localhost:8080/healthz"), noProbeTools)
				r.app.Replace("compose.yaml", `["CMD", "pg_isready", "-U", "reader"]`, probe("tcp://localhost:5432"), noProbeTools)
			},
			check: func(t *testing.T, r *stackRun) {
				wantAnonymousVolume(t, r, "db", 1, pgData)
				wantProbe(t, r.c("reader", 1), "tcp://db:5432")
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("reader", 1)))
				// What the database wrote on its first start.
				putInContainer(t, r.c("db", 1), pgData, "PG_VERSION", "16\n")
				st := testenv.AppStatus(t, r.agent, r.app.Name)
				if !slices.ContainsFunc(st.Volumes, func(v status.VolumeStatus) bool {
					return v.Service == "db" && v.Slot == 1 && v.Target == pgData && v.Name == manifest.AnonymousVolumeName(r.app.Name, "db", 1, pgData)
				}) {
					t.Errorf("status does not list db's anonymous volume at %s: %+v", pgData, st.Volumes)
				}
			},
			changes: []stackChange{{
				what:  "db: shm_size 256m",
				edits: []fileEdit{{File: "compose.yaml", Old: "    environment:\n      - POSTGRES_USER=reader", New: "    shm_size: 256m\n    environment:\n      - POSTGRES_USER=reader"}},
				rolls: []string{"db"},
				check: func(t *testing.T, r *stackRun) {
					wantInspect(t, r.c("db", 1), map[string]string{"HostConfig.ShmSize": "268435456"})
					wantAnonymousVolume(t, r, "db", 1, pgData)
					wantFile(t, r.c("db", 1), pgData+"/PG_VERSION", "16\n")
				},
			}},
			heal: "db",
			keeps: func(t *testing.T, r *stackRun) func(t *testing.T) {
				putInContainer(t, r.c("db", 1), pgData, "postmaster.opts", "/usr/lib/postgresql/16/bin/postgres\n")
				return func(t *testing.T) {
					wantAnonymousVolume(t, r, "db", 1, pgData)
					wantFile(t, r.c("db", 1), pgData+"/PG_VERSION", "16\n")
					wantFile(t, r.c("db", 1), pgData+"/postmaster.opts", "/usr/lib/postgresql/16/bin/postgres\n")
				}
			},
		},
		{
			dir:      "node-dev-modules",
			replicas: map[string]int{"web": 1, "worker": 1, "queue": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yaml", `"3000:3000"`, fmt.Sprintf(`"%d:3000"`, r.app.Port("web", 1)), freePort)
				r.app.Replace("compose.yaml", `      PORT: "3000"`, `      PORT: "3000"`+"\n"+`      WORKLOAD_LISTEN: ":3000"`,
					"the stand-in image is not node: its workload listens where WORKLOAD_LISTEN says")
			},
			check: func(t *testing.T, r *stackRun) {
				web := r.c("web", 1)
				// Each service's replica has its own node_modules, over the
				// read-only checkout.
				if a, b := wantAnonymousVolume(t, r, "web", 1, modules), wantAnonymousVolume(t, r, "worker", 1, modules); a == b {
					t.Errorf("web and worker share node_modules volume %s", a)
				}
				wantAnonymousVolume(t, r, "queue", 1, "/data")
				wantFile(t, web, "/usr/src/app/package.json", r.app.Files["app/package.json"])
				// The volume hides the checkout's node_modules, and starts
				// empty (the image has nothing there to copy in).
				if files := testenv.ContainerFiles(t, web, modules); len(files) != 0 {
					t.Errorf("%s:%s is not the empty volume: %v", web, modules, slices.Collect(maps.Keys(files)))
				}
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("web", 1)))
				// npm install, run in each container. docker cp cannot write
				// there (the volume is under a read-only mount, which it
				// refuses): the files go in through the volume itself.
				putInVolume(t, r.images.Base, manifest.AnonymousVolumeName(r.app.Name, "web", 1, modules), "express/package.json", `{"name": "express", "version": "4.19.2"}`)
				putInVolume(t, r.images.Base, manifest.AnonymousVolumeName(r.app.Name, "worker", 1, modules), "ioredis/package.json", `{"name": "ioredis", "version": "5.4.1"}`)
			},
			changes: []stackChange{{
				what:  "web: NODE_ENV=staging",
				edits: []fileEdit{{File: "compose.yaml", Old: "NODE_ENV: production", New: "NODE_ENV: staging"}},
				rolls: []string{"web"},
				check: func(t *testing.T, r *stackRun) {
					wantEnv(t, r.c("web", 1), map[string]string{"NODE_ENV": "staging"})
					wantFile(t, r.c("web", 1), modules+"/express/package.json", `{"name": "express", "version": "4.19.2"}`)
					wantFile(t, r.c("worker", 1), modules+"/ioredis/package.json", `{"name": "ioredis", "version": "5.4.1"}`)
				},
			}},
			heal: "web",
			keeps: func(t *testing.T, r *stackRun) func(t *testing.T) {
				putInVolume(t, r.images.Base, manifest.AnonymousVolumeName(r.app.Name, "web", 1, modules), ".bin/server", "#!/usr/bin/env node\n")
				return func(t *testing.T) {
					wantAnonymousVolume(t, r, "web", 1, modules)
					wantFile(t, r.c("web", 1), modules+"/.bin/server", "#!/usr/bin/env node\n")
					wantFile(t, r.c("web", 1), modules+"/express/package.json", `{"name": "express", "version": "4.19.2"}`)
				}
			},
		},
		{
			dir:      "wiki-mariadb",
			replicas: map[string]int{"wiki": 2, "db": 1},
			check: func(t *testing.T, r *stackRun) {
				// The volume the image declares is the slot's too.
				wantAnonymousVolume(t, r, "db", 1, "/var/lib/mysql")
				putInContainer(t, r.c("db", 1), "/var/lib/mysql", "ibdata1", "wiki tables\n")
				for slot := 1; slot <= 2; slot++ {
					wantAnonymousVolume(t, r, "wiki", slot, wikiCache)
					putInContainer(t, r.c("wiki", slot), wikiCache, "page", fmt.Sprintf("rendered by slot %d\n", slot))
				}
			},
			changes: []stackChange{{
				what:  "wiki: APP_URL wiki.example.org",
				edits: []fileEdit{{File: "compose.yaml", Old: "APP_URL: https://wiki.example.com", New: "APP_URL: https://wiki.example.org"}},
				rolls: []string{"wiki"},
				check: func(t *testing.T, r *stackRun) {
					// start-first: each new replica took its slot's
					// volume, while the old one still ran.
					for slot := 1; slot <= 2; slot++ {
						wantEnv(t, r.c("wiki", slot), map[string]string{"APP_URL": "https://wiki.example.org"})
						wantAnonymousVolume(t, r, "wiki", slot, wikiCache)
						wantFile(t, r.c("wiki", slot), wikiCache+"/page", fmt.Sprintf("rendered by slot %d\n", slot))
					}
				},
			}},
			heal: "db",
			keeps: func(t *testing.T, r *stackRun) func(t *testing.T) {
				// The revert rolled the wiki back, start-first again.
				for slot := 1; slot <= 2; slot++ {
					wantFile(t, r.c("wiki", slot), wikiCache+"/page", fmt.Sprintf("rendered by slot %d\n", slot))
				}
				return func(t *testing.T) {
					wantAnonymousVolume(t, r, "db", 1, "/var/lib/mysql")
					wantFile(t, r.c("db", 1), "/var/lib/mysql/ibdata1", "wiki tables\n")
				}
			},
		},
	}
}

// anonEquivCases are the equivalence cases for anonymous volumes.
func anonEquivCases() []equivCase {
	return []equivCase{{
		dir:      "equiv-anon",
		services: []string{"db", "web"},
		volumes:  []string{"data"},
		declared: map[string][]string{
			"container db": {
				"Mounts./var/lib/postgresql/data.Volume", "Mounts./var/lib/postgresql/data.RW",
				"Mounts./var/cache/seed.Volume", "Mounts./var/cache/seed.RW",
			},
			"container web": {
				"Config.WorkingDir", "Mounts./srv/app.Content", "Mounts./srv/app/node_modules.Volume", "Mounts./data.Volume",
			},
		},
	}}
}

// wantAnonymousVolume checks that a replica mounts its slot's anonymous
// volume at target, labelled as the slot's, and returns the volume's name.
func wantAnonymousVolume(t *testing.T, r *stackRun, service string, slot int, target string) string {
	t.Helper()
	name := manifest.AnonymousVolumeName(r.app.Name, service, slot, target)
	if m := mountOf(t, r.c(service, slot), target); m["Type"] != "volume" || m["Source"] != name {
		t.Errorf("%s mounts %v at %s, want volume %s", r.c(service, slot), m, target, name)
	}
	labels, _ := testenv.Field(testenv.Inspect(t, "volume", name), "Labels").(map[string]any)
	want := map[string]any{drift.LabelApp: r.app.Name, drift.LabelService: service, drift.LabelSlot: strconv.Itoa(slot), drift.LabelTarget: target}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("volume %s: label %s = %v, want %v", name, k, labels[k], v)
		}
	}
	return name
}

// putInContainer writes a file into a directory of a running container
// (its anonymous volume) with docker cp: the stand-in images have no
// shell.
func putInContainer(t *testing.T, container, dir, name, body string) {
	t.Helper()
	cp := exec.Command("docker", "cp", "-", container+":"+dir)
	cp.Stdin = strings.NewReader(string(testenv.TarOf(t, map[string]string{name: body})))
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("docker cp %s into %s:%s: %v\n%s", name, container, dir, err, out)
	}
}

// dockerAnonymous is the name Docker gives an anonymous volume.
var dockerAnonymous = regexp.MustCompile(`^[0-9a-f]{64}$`)

// volumeName is a mounted volume's name as the comparison sees it: an
// anonymous volume's is "<anonymous>", by design. Compose 1.29 lets
// Docker name it (64 random hex digits, a new one for each container it
// does not recreate from an old one); driftless names it after its
// replica slot and target and labels it so (docs/manifests.md,
// "Anonymous volumes"), so that a replacement mounts it again.
func volumeName(t *testing.T, name string, logical func(string) string) string {
	t.Helper()
	if dockerAnonymous.MatchString(name) {
		return "<anonymous>"
	}
	if target, _ := testenv.Field(testenv.Inspect(t, "volume", name), "Labels."+drift.LabelTarget).(string); target != "" {
		return "<anonymous>"
	}
	return logical(name)
}
