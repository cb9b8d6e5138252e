package compose

import (
	"cmp"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// fieldsStacks are the corpus stacks for SELinux labels, tmpfs options,
// the host's time zone files and the fields that moved from refused to
// mapped (links, platform, CPU weight, swap and OOM settings).
func fieldsStacks() []corpusStack {
	const freePort = "host ports: a free one (the apps run at once on a shared machine)"
	return []corpusStack{
		{
			dir:      "selinux-suite",
			replicas: map[string]int{"db": 1, "redis": 1, "app": 1, "indexer": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yaml", `"8000:8080"`, fmt.Sprintf(`"%d:8080"`, r.app.Port("app", 1)), freePort)
			},
			check: func(t *testing.T, r *stackRun) {
				// This engine has no SELinux, so nothing is relabelled: what
				// is observable is the label Docker was asked for, in each
				// mount's Mode (Docker labels every volume z by default).
				wantLabels(t, r.c("db", 1), map[string]string{"/var/lib/mysql": "Z", "/etc/mysql/conf.d": "z"})
				wantLabels(t, r.c("redis", 1), map[string]string{"/data": "Z"})
				wantLabels(t, r.c("app", 1), map[string]string{"/shared": "Z", "/shared/media": "z", "/opt/seafile/conf/seafile.conf": "z"})
				wantLabels(t, r.c("indexer", 1), map[string]string{"/media": "z"})
				wantFile(t, r.c("db", 1), "/etc/mysql/conf.d/suite.cnf", r.app.Files["conf/db/suite.cnf"])
				wantFile(t, r.c("app", 1), "/opt/seafile/conf/seafile.conf", r.app.Files["conf/app/seafile.conf"])
				if m := mountByTarget(t, r.c("indexer", 1), "/media"); m["RW"] != false {
					t.Errorf("indexer's /media is writable: %v", m)
				}
				wantProbe(t, r.c("app", 1), "http://db:3306/healthz")
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("app", 1)))
			},
			changes: []stackChange{{
				what:  "redis: its volume shared (:z)",
				edits: []fileEdit{{File: "compose.yaml", Old: "redis-data:/data:Z", New: "redis-data:/data:z"}},
				rolls: []string{"redis"},
				check: func(t *testing.T, r *stackRun) {
					wantLabels(t, r.c("redis", 1), map[string]string{"/data": "z"})
				},
			}},
			heal: "app",
			warnings: []string{
				"compose.yaml:33:9: services.app.volumes[2]: Z on a file of the repository is applied as z: driftless mounts one shared, read-only copy of it",
			},
		},
		{
			dir:      "media-server",
			replicas: map[string]int{"jellyfin": 1, "homeassistant": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yaml", `"8096:8096"`, fmt.Sprintf(`"%d:8096"`, r.app.Port("jellyfin", 1)), freePort)
				r.app.Replace("compose.yaml", `"8123:8123"`, fmt.Sprintf(`"%d:8123"`, r.app.Port("homeassistant", 1)), freePort)
			},
			check: func(t *testing.T, r *stackRun) {
				jf, ha := r.c("jellyfin", 1), r.c("homeassistant", 1)
				wantInspect(t, jf, map[string]string{
					"HostConfig.Tmpfs":            `{"/transcode":"exec,uid=1000,gid=1000,size=268435456,mode=750"}`,
					"HostConfig.CpuShares":        "512",
					"HostConfig.OomScoreAdj":      "500",
					"HostConfig.Memory":           "1073741824",
					"HostConfig.MemorySwap":       "2147483648",
					"HostConfig.MemorySwappiness": "10",
				})
				wantInspect(t, ha, map[string]string{
					"HostConfig.Tmpfs":     `{"/tmp":"exec,nosuid,size=67108864"}`,
					"HostConfig.CpuShares": "2048",
				})
				// The host's zone, read-only, without hostPaths.
				zone := testenv.ContainerFile(t, jf, "/etc/timezone")
				if want := hostFile(t, "/etc/timezone"); zone != want {
					t.Errorf("%s:/etc/timezone = %q, want the host's %q", jf, zone, want)
				}
				for _, c := range []string{jf, ha} {
					if m := mountByTarget(t, c, "/etc/localtime"); m["RW"] != false || m["Source"] != "/etc/localtime" {
						t.Errorf("%s: /etc/localtime mount %v, want the host's, read-only", c, m)
					}
				}
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("jellyfin", 1)))
				// A CPU weight changed by hand is put back on the running
				// replica, not by replacing it.
				id := testenv.FieldString(testenv.Inspect(t, "container", jf), "Id")
				testenv.Docker(t, "update", "--cpu-shares", "4096", jf)
				waitInspect(t, jf, "HostConfig.CpuShares", "512", corpusWait)
				if now := testenv.FieldString(testenv.Inspect(t, "container", jf), "Id"); now != id {
					t.Errorf("%s was replaced (%s -> %s), want its CPU weight put back in place", jf, id[:12], now[:12])
				}
			},
			changes: []stackChange{{
				what:  "jellyfin: cpu_shares 768, oom_score_adj 300",
				edits: []fileEdit{{File: "compose.yaml", Old: "cpu_shares: 512\n    oom_score_adj: 500", New: "cpu_shares: 768\n    oom_score_adj: 300"}},
				rolls: []string{"jellyfin"},
				check: func(t *testing.T, r *stackRun) {
					wantInspect(t, r.c("jellyfin", 1), map[string]string{"HostConfig.CpuShares": "768", "HostConfig.OomScoreAdj": "300"})
				},
			}},
			heal: "homeassistant",
		},
		{
			dir:      "legacy-links",
			replicas: map[string]int{"db": 1, "wordpress": 1, "phpmyadmin": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yaml", `"8000:80"`, fmt.Sprintf(`"%d:80"`, r.app.Port("wordpress", 1)), freePort)
				r.app.Replace("compose.yaml", `"8081:80"`, fmt.Sprintf(`"%d:80"`, r.app.Port("phpmyadmin", 1)), freePort)
			},
			check: func(t *testing.T, r *stackRun) {
				wp, pma := r.c("wordpress", 1), r.c("phpmyadmin", 1)
				// The link's alias reaches the database from the service
				// that declares it, and only from there.
				wantProbe(t, wp, "http://mysql:3306/healthz")
				wantProbe(t, pma, "http://db:3306/healthz")
				if err := probeFrom(pma, "http://mysql:3306/healthz"); err == nil {
					t.Errorf("phpmyadmin reaches mysql, which only wordpress's link names")
				}
				net := r.app.Name + "-default"
				if got := testenv.FieldString(testenv.Inspect(t, "container", wp), "NetworkSettings.Networks."+net+".Links"); !strings.Contains(got, r.c("db", 1)+":mysql") {
					t.Errorf("%s links on %s: %s, want %s:mysql", wp, net, got, r.c("db", 1))
				}
				wantInspect(t, wp, map[string]string{"Platform": "linux"})
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("wordpress", 1)))
			},
			changes: []stackChange{{
				what:  "db: a new root password",
				edits: []fileEdit{{File: "compose.yaml", Old: "MYSQL_ROOT_PASSWORD: example", New: "MYSQL_ROOT_PASSWORD: changed"}},
				rolls: []string{"db"},
				check: func(t *testing.T, r *stackRun) {
					// The link names the container, which the replacement
					// took over: the alias still reaches it.
					wantProbe(t, r.c("wordpress", 1), "http://mysql:3306/healthz")
				},
			}},
			heal:     "wordpress",
			warnings: []string{"compose.yaml:1:10: version: is obsolete and ignored, as in docker compose"},
		},
	}
}

// wantLabels checks the SELinux label each mount asked Docker for, by
// target: the z or Z among the options of its Mode.
func wantLabels(t *testing.T, container string, want map[string]string) {
	t.Helper()
	for target, label := range want {
		m := mountByTarget(t, container, target)
		if got := selinuxLabel(m["Mode"], ""); got != label {
			t.Errorf("%s: mount %s has Mode %v, want the label %s", container, target, m["Mode"], label)
		}
	}
}

// mountByTarget is the container's .Mounts entry (what Docker mounted,
// whichever form asked for it) at a target.
func mountByTarget(t *testing.T, container, target string) map[string]any {
	t.Helper()
	mounts, _ := testenv.Field(testenv.Inspect(t, "container", container), "Mounts").([]any)
	for _, m := range mounts {
		if mm := m.(map[string]any); mm["Destination"] == target {
			return mm
		}
	}
	t.Errorf("%s has no mount at %s", container, target)
	return map[string]any{}
}

// waitInspect waits until a field of docker inspect has a value.
func waitInspect(t *testing.T, container, path, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := testenv.FieldString(testenv.Inspect(t, "container", container), path)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: %s = %s after %s, want %s", container, path, got, within, want)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// hostFile reads a file of the machine the engine runs on, which the
// tests run on too.
func hostFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s on the host: %v", path, err)
	}
	return string(b)
}

// fieldsEquivCases are the equivalence cases for SELinux labels, tmpfs
// options, the host's time zone files and the fields that moved from
// refused to mapped: both tools must set each of them.
func fieldsEquivCases() []equivCase {
	return []equivCase{{
		dir:      "equiv-fields",
		services: []string{"web", "db"},
		networks: []string{"default"},
		volumes:  []string{"data", "logs", "dbdata"},
		allow:    "host-userns,devices,runtimes",
		env: func(t *testing.T) map[string]string {
			return map[string]string{"EQUIV_BLOCK_DEVICE": blockDevice(t)}
		},
		declared: map[string][]string{
			"container web": {
				"Mounts./var/lib/app.SELinux", "Mounts./var/log/app.SELinux", "Mounts./var/log/app.RW", "Mounts./etc/app.SELinux",
				"Mounts./etc/app.Content", "Mounts./etc/localtime.Content", "Mounts./etc/timezone.Content", "Mounts./etc/timezone.RW",
				"Mounts./config.Options.exec", "Mounts./config.Options.uid", "Mounts./config.Options.gid", "Mounts./config.Options.mode",
				"Mounts./config.Options.size", "Mounts./run/app.Options.noexec", "Mounts./run/app.Options.nosuid", "Mounts./run/app.Options.nodev",
				"Networks.default.Links",
				"HostConfig.CpuShares", "HostConfig.CpusetCpus", "HostConfig.CpuPeriod", "HostConfig.CpuQuota", "HostConfig.Memory",
				"HostConfig.MemorySwap", "HostConfig.MemorySwappiness", "HostConfig.OomScoreAdj", "HostConfig.OomKillDisable",
				"HostConfig.Runtime", "HostConfig.UsernsMode", "HostConfig.DeviceCgroupRules",
				"HostConfig.BlkioDeviceReadBps", "HostConfig.BlkioDeviceWriteIOps",
			},
			"container db": {"Mounts./var/lib/db.SELinux", "HostConfig.OomScoreAdj"},
		},
	}}
}

// blockDevice is a block device of this machine, which is the engine's
// host: a disk rather than a loop device where there is one.
func blockDevice(t *testing.T) string {
	t.Helper()
	entries, err := os.ReadDir("/dev")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		if e.Type()&fs.ModeDevice != 0 && e.Type()&fs.ModeCharDevice == 0 {
			found = append(found, "/dev/"+e.Name())
		}
	}
	isLoop := func(p string) int {
		if strings.HasPrefix(p, "/dev/loop") {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(found, func(a, b string) int { return cmp.Compare(isLoop(a), isLoop(b)) })
	if len(found) == 0 {
		t.Fatal("no block device in /dev: the block IO limits need one on the engine's host")
	}
	return found[0]
}
