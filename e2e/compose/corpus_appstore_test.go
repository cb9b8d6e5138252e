package compose

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// appStoreStacks are the corpus stacks written as app stores publish
// compose files, in forms docker compose runs and driftless refused
// before: see testdata/compose/app-store/compose.yaml.
func appStoreStacks() []corpusStack {
	return []corpusStack{{
		dir:      "app-store",
		replicas: map[string]int{"2fauth": 1, "gluetun": 1, "qbittorrent": 1, "vllm": 1, "ddns": 1},
		setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
			ports := "free ports: the apps run at once on a shared machine"
			r.app.Replace("compose.yaml", `"8000:8080"`, fmt.Sprintf(`"127.0.0.1:%d:8080"`, r.app.Port("web", 1)), ports)
			r.app.Replace("compose.yaml", `"8090:8090"`, fmt.Sprintf(`"127.0.0.1:%d:8090"`, r.app.Port("ui", 1)), ports)
			r.app.Replace("compose.yaml", `published: "51413"`, fmt.Sprintf(`published: "%d"`, r.app.Port("peers", 1)), ports)
			net := "corp-net-" + r.app.Name
			why := "the external network is created by the test, with a name unique to the run on a shared engine"
			r.app.Replace("compose.yaml", "network_mode: corp-net", "network_mode: "+net, why)
			r.app.Replace("compose.yaml", "name: corp-net", "name: "+net, why)
			externals(t, r.app.Name, []string{net}, nil)
			// The host port a warning names is the one the test picked.
			for svc, key := range map[string]string{"2fauth": "web", "gluetun": "ui"} {
				r.stack.warnings = append(r.stack.warnings, fmt.Sprintf("compose.yaml:15:12: %s.deploy.update_config.order: start-first is not honoured: host port %d is one container's, so a new replica replaces the old one stop-first (compose ignores the order on one engine)", composeServiceField(svc), r.app.Port(key, 1)))
			}
		},
		check: func(t *testing.T, r *stackRun) {
			app := r.c("2fauth", 1)
			// The later of the two APP_KEY lines counts, as in compose.
			wantEnv(t, app, map[string]string{"APP_KEY": "SomeRandomStringOf32CharsExactly", "APP_NAME": "2FAuth"})
			wantInspect(t, app, map[string]string{
				"HostConfig.Tmpfs./tmp":         "rw,noexec,nosuid,size=67108864",
				"HostConfig.RestartPolicy.Name": "unless-stopped",
				"HostConfig.PortBindings":       fmt.Sprintf(`{"8080/tcp":[{"HostIp":"127.0.0.1","HostPort":"%d"}]}`, r.app.Port("web", 1)),
			})
			httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", r.app.Port("web", 1)))
			vpn := r.c("gluetun", 1)
			if got := testenv.FieldString(testenv.Inspect(t, "container", vpn), "HostConfig.PortBindings.51413/udp"); got != fmt.Sprintf(`[{"HostIp":"","HostPort":"%d"}]`, r.app.Port("peers", 1)) {
				t.Errorf("%s publishes 51413/udp as %s, want host port %d", vpn, got, r.app.Port("peers", 1))
			}
			vpnClientInNamespace(t, r)
			// command: [] is the image's command.
			qbt := testenv.Inspect(t, "container", r.c("qbittorrent", 1))
			img := testenv.Inspect(t, "image", testenv.FieldString(qbt, "Image"))
			for _, f := range []string{"Config.Cmd", "Config.Entrypoint"} {
				if got, want := testenv.FieldString(qbt, f), testenv.FieldString(img, f); got != want {
					t.Errorf("qbittorrent's %s = %s, want the image's %s", f, got, want)
				}
			}
			wantInspect(t, r.c("qbittorrent", 1), map[string]string{"HostConfig.RestartPolicy.Name": "unless-stopped"})
			// entrypoint: [] runs the command alone, not after the
			// image's entrypoint (/driftless workload).
			vllm := testenv.Inspect(t, "container", r.c("vllm", 1))
			if path, args := testenv.FieldString(vllm, "Path"), testenv.FieldString(vllm, "Args"); path != "/driftless" || args != `["workload","--message","served without the image's entrypoint"]` {
				t.Errorf("vllm runs %s %s, want /driftless with the command's arguments only", path, args)
			}
			ddns := r.c("ddns", 1)
			wantInspect(t, ddns, map[string]string{"HostConfig.RestartPolicy.Name": "no"})
			nets := testenv.Field(testenv.Inspect(t, "container", ddns), "NetworkSettings.Networks").(map[string]any)
			if got := slices.Sorted(maps.Keys(nets)); !slices.Equal(got, []string{"corp-net-" + r.app.Name}) {
				t.Errorf("%s joins %v, want the external network corp-net-%s only", ddns, got, r.app.Name)
			}
		},
		changes: []stackChange{{
			// start-first is not honoured: the replica is replaced
			// stop-first, and its fixed host port is free for the new one.
			what:  "2fauth: another name",
			edits: []fileEdit{{File: ".env", Old: "APP_NAME=2FAuth", New: "APP_NAME=Codes"}},
			rolls: []string{"2fauth"},
			check: func(t *testing.T, r *stackRun) {
				wantEnv(t, r.c("2fauth", 1), map[string]string{"APP_NAME": "Codes"})
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", r.app.Port("web", 1)))
			},
		}},
		heal: "2fauth",
		warnings: []string{
			`.env:4: services["2fauth"].env_file[0]: key "APP_KEY" is set twice (lines 2 and 4): the later value counts, as in compose`,
		},
	}}
}

// composeServiceField is how messages name a compose service: quoted when
// the name does not start with a letter.
func composeServiceField(name string) string {
	if name[0] >= 'a' && name[0] <= 'z' {
		return "services." + name
	}
	return fmt.Sprintf("services[%q]", name)
}

// composeFileStacks: an app whose .env selects its compose files with
// COMPOSE_FILE, as docker compose reads it there; a commit to .env that
// adds an overlay file rolls what the overlay changes.
func composeFileStacks() []corpusStack {
	return []corpusStack{{
		dir:      "compose-file-var",
		replicas: map[string]int{"web": 1, "worker": 1},
		setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
			r.app.Replace("docker-compose.prod.yml", `"8080:8080"`, fmt.Sprintf(`"127.0.0.1:%d:8080"`, r.app.Port("web", 1)), "a free port: the apps run at once on a shared machine")
		},
		check: func(t *testing.T, r *stackRun) {
			// The production file, not the development one beside it.
			wantEnv(t, r.c("web", 1), map[string]string{"STAGE": "production"})
			wantEnv(t, r.c("worker", 1), map[string]string{"QUEUE": "default"})
			httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", r.app.Port("web", 1)))
		},
		changes: []stackChange{{
			what:  "COMPOSE_FILE adds the TLS overlay",
			edits: []fileEdit{{File: ".env", Old: "COMPOSE_FILE=docker-compose.prod.yml", New: "COMPOSE_FILE=docker-compose.prod.yml:docker-compose.tls.yml"}},
			rolls: []string{"web"},
			check: func(t *testing.T, r *stackRun) {
				wantEnv(t, r.c("web", 1), map[string]string{"STAGE": "production", "TLS": "on"})
			},
		}},
		heal: "worker",
	}}
}
