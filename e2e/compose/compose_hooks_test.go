package compose

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestComposeLifecycleHooks: post_start runs in the replica right after
// its start and pre_stop right before its stop, as docker exec runs them
// (the engine's own events say so: exec_create with the hook's command,
// exec_die with its exit code); a post_start hook that exits non-zero
// fails the apply with its command and status. The stand-in image is the
// agent's binary, so the hooks run `/driftless version` (exit 0) and
// `/driftless workload probe` of a closed port (exit 1).
func TestComposeLifecycleHooks(t *testing.T) {
	t.Parallel()
	img := builtImage(t, "shop/web:1")
	app := testenv.UniqueApp(t)
	file := func(label, postStart string) string {
		return fmt.Sprintf(`services:
  web:
    image: %s
    labels: {com.example.rev: "%s"}
    post_start:
      - command: %s
        environment: [HOOK=1]
    pre_stop:
      - command: ["/driftless", "version"]
        user: "0"
`, img, label, postStart)
	}
	cli := newCLIDir(t, app, map[string]string{"compose.yaml": file("1", `["/driftless", "version"]`)})
	since := strconv.FormatInt(time.Now().Unix()-1, 10)
	if out, code := cli.run(nil, "apply"); code != 0 || !strings.Contains(out, "Apply complete") {
		t.Fatalf("apply: exit %d:\n%s", code, out)
	}
	first := testenv.Docker(t, "inspect", "-f", "{{.Id}}", app+"-web-1")
	if got := events(t, since, first); !strings.Contains(got, "start\nexec_create: /driftless version\nexec_start: /driftless version\nexec_die 0") {
		t.Errorf("events of the first replica:\n%s\nwant its start, then the post_start hook run to exit 0", got)
	}

	// A change replaces the replica: pre_stop runs in the old one before
	// it is stopped.
	cli.write("compose.yaml", file("2", `["/driftless", "version"]`))
	if out, code := cli.run(nil, "apply"); code != 0 {
		t.Fatalf("second apply: exit %d:\n%s", code, out)
	}
	if got := events(t, since, first); !strings.Contains(got, "exec_die 0\nkill") {
		t.Errorf("events of the replaced replica:\n%s\nwant a hook run to exit 0 right before its stop (kill)", got)
	}

	cli.write("compose.yaml", file("3", `["/driftless", "workload", "probe", "tcp://127.0.0.1:1"]`))
	out, code := cli.run(nil, "apply")
	if want := "post_start hook 1 (/driftless workload probe tcp://127.0.0.1:1) exited with status 1"; code == 0 || !strings.Contains(out, want) {
		t.Errorf("apply with a failing post_start hook: exit %d, want non-zero and %q:\n%s", code, want, out)
	}
}

// events are the engine's events of container id since a Unix time, one
// "action" (with an exec's command, or its exit code) a line.
func events(t *testing.T, since, id string) string {
	t.Helper()
	out := testenv.DockerStdout(t, "events", "--since", since, "--until", strconv.FormatInt(time.Now().Unix()+1, 10),
		"--filter", "container="+id, "--format", `{{.Action}}{{if eq .Action "exec_die"}} {{index .Actor.Attributes "exitCode"}}{{end}}`)
	return out
}
