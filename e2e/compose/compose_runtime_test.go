package compose

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestComposeNamespaceModesAndRuntime applies uts, cgroup, runtime,
// userns_mode and device_cgroup_rules through the CLI against the real
// engine (docker-compose 1.29 knows neither uts nor cgroup, so this is
// not an equivalence case): the three that could take the host are refused
// until the app allows them; the container then runs with the host's
// hostname, its own cgroup namespace and the runtime named; a changed
// runtime replaces it.
func TestComposeNamespaceModesAndRuntime(t *testing.T) {
	t.Parallel()
	img := builtImage(t, "shop/agent:1")
	app := testenv.UniqueApp(t)
	port := testenv.FreePorts(t, 1)
	compose := fmt.Sprintf(`services:
  agent:
    image: %s
    ports: ["127.0.0.1:%d:8080"]
    uts: host
    cgroup: private
    runtime: io.containerd.runc.v2
    userns_mode: host
    device_cgroup_rules: ["c 1:3 mr"]
`, img, port)
	cli := newCLIDir(t, app, map[string]string{"compose.yaml": compose})
	run := func(args ...string) (string, int) {
		t.Helper()
		return cli.run(nil, args...)
	}

	out, code := run("validate")
	if code == 0 {
		t.Fatalf("validate without allowances: exit 0, want a refusal:\n%s", out)
	}
	for _, want := range []string{
		"compose.yaml:8:18: services.agent.userns_mode: outside the engine's user namespace remapping",
		"compose.yaml:9:27: services.agent.device_cgroup_rules[0]: device rule \"c 1:3 mr\" lets the container use host devices",
		"compose.yaml:7:14: services.agent.runtime: runtime \"io.containerd.runc.v2\" replaces the engine's default runtime",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate without allowances lacks %q:\n%s", want, out)
		}
	}

	allow := []string{"--allow", "host-userns,devices,runtimes"}
	out, code = run(append([]string{"apply"}, allow...)...)
	if code != 0 || !strings.Contains(out, "Apply complete") {
		t.Fatalf("apply: exit %d:\n%s", code, out)
	}
	c := app + "-agent-1"
	wantInspect(t, c, map[string]string{
		"HostConfig.UTSMode":           "host",
		"HostConfig.CgroupnsMode":      "private",
		"HostConfig.Runtime":           "io.containerd.runc.v2",
		"HostConfig.UsernsMode":        "host",
		"HostConfig.DeviceCgroupRules": `["c 1:3 mr"]`,
	})
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	// The workload answers / with its own hostname.
	var answer struct{ Hostname string }
	if err := json.Unmarshal([]byte(httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", port))), &answer); err != nil || answer.Hostname != host {
		t.Errorf("with uts: host the container's hostname is %q (%v), want the host's %q", answer.Hostname, err, host)
	}
	out, code = run(append([]string{"diff"}, allow...)...)
	if code != 0 || !strings.Contains(out, "No changes") {
		t.Errorf("diff after apply: exit %d:\n%s", code, out)
	}

	cli.write("compose.yaml", strings.Replace(compose, "runtime: io.containerd.runc.v2", "runtime: runc", 1))
	out, code = run(append([]string{"diff"}, allow...)...)
	if code != 1 || !strings.Contains(out, "runtime: io.containerd.runc.v2 → runc") || !strings.Contains(out, "-/+ container "+c) {
		t.Errorf("diff of a changed runtime: exit %d, want 1 with the runtime's change and a replacement:\n%s", code, out)
	}
	out, code = run(append([]string{"apply"}, allow...)...)
	if code != 0 {
		t.Fatalf("apply of runc: exit %d:\n%s", code, out)
	}
	wantInspect(t, c, map[string]string{"HostConfig.Runtime": "runc"})
}
