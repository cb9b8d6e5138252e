package compose

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// swarmFileStacks are the corpus stacks written for `docker stack deploy`
// that run on one engine as docker compose runs them: a global service
// as one replica, Swarm's update settings and configs' owners and modes
// accepted with a warning that says what driftless does instead.
func swarmFileStacks() []corpusStack {
	const freePort = "host ports: a free one (the apps run at once on a shared machine)"
	return []corpusStack{{
		dir:      "swarm-monitoring",
		replicas: map[string]int{"node-exporter": 1, "prometheus": 1, "grafana": 1},
		setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
			r.app.Replace("compose.yaml", `"9090:9090"`, fmt.Sprintf(`"%d:9090"`, r.app.Port("prometheus", 1)), freePort)
			r.app.Replace("compose.yaml", `"3000:3000"`, fmt.Sprintf(`"%d:3000"`, r.app.Port("grafana", 1)), freePort)
		},
		check: func(t *testing.T, r *stackRun) {
			prom := r.c("prometheus", 1)
			// The start script is executable, as its mode asks; the file
			// config is mounted as it is, readable by every user.
			wantMode(t, prom, "/usr/local/bin/start-prometheus", 0o555)
			wantMode(t, prom, "/etc/prometheus/prometheus.yml", 0o444)
			wantFile(t, prom, "/etc/prometheus/prometheus.yml", r.app.Files["prometheus.yml"])
			wantInspect(t, r.c("node-exporter", 1), map[string]string{"HostConfig.Memory": "134217728"})
			wantProbe(t, r.c("grafana", 1), "http://prometheus:9090/healthz")
			httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("prometheus", 1)))
		},
		changes: []stackChange{{
			what:  "prometheus: a new start script",
			edits: []fileEdit{{File: "compose.yaml", Old: "exec /bin/prometheus --config.file", New: "exec /bin/prometheus --web.enable-lifecycle --config.file"}},
			rolls: []string{"prometheus"},
			check: func(t *testing.T, r *stackRun) {
				wantMode(t, r.c("prometheus", 1), "/usr/local/bin/start-prometheus", 0o555)
			},
		}},
		heal: "node-exporter",
		warnings: []string{
			"compose.yaml:13:13: services.node-exporter.deploy.mode: global runs one replica on one engine (one per node, as in compose): set target: swarm for the app to deploy it to a Swarm cluster",
			"compose.yaml:21:9: services.prometheus.configs[0]: uid, gid and mode have no effect on a config from a file (as in compose): it is mounted read-only, readable by every user, executable when Git marks it so",
			"compose.yaml:26:9: services.prometheus.configs[1]: is mounted read-only as 0444 (0555 when the mode gives execute), owned by root and readable by every user: uid, gid and other mode bits are not applied",
			"compose.yaml:33:7: services.prometheus.deploy.placement: has no effect on one engine (as in compose): set target: swarm for the app to deploy it to a Swarm cluster",
			"compose.yaml:39:25: services.prometheus.deploy.update_config.failure_action: continue is not honoured: a failing rollout stops and keeps the old replicas serving (pause or rollback)",
			"compose.yaml:40:28: services.prometheus.deploy.update_config.max_failure_ratio: is not honoured: any replica that does not become ready stops the rollout",
			"compose.yaml:56:7: services.grafana.deploy.labels: has no effect on one engine (as in compose): these are Swarm service labels; put container labels under labels:",
		},
	}}
}

// wantMode checks the permission bits of one file in a container, as
// `docker cp` reports them (the image has no shell or stat).
func wantMode(t *testing.T, container, path string, want int64) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(testenv.CopyOut(t, nil, container, path)))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Errorf("%s:%s: no file in docker cp's archive", container, path)
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if got := h.Mode & 0o7777; got != want {
				t.Errorf("%s:%s has mode %#o, want %#o", container, path, got, want)
			}
			return
		}
	}
}
