package compose

import (
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	ev := watchEvents(t, app+"-web-1")
	if out, code := cli.run(nil, "apply"); code != 0 || !strings.Contains(out, "Apply complete") {
		t.Fatalf("apply: exit %d:\n%s", code, out)
	}
	first := testenv.Docker(t, "inspect", "-f", "{{.Id}}", app+"-web-1")
	if got := ev.of(t, first, "exec_die 0"); !strings.Contains(got, "start\nexec_create: /driftless version\nexec_start: /driftless version\nexec_die 0") {
		t.Errorf("events of the first replica:\n%s\nwant its start, then the post_start hook run to exit 0", got)
	}

	// A change replaces the replica: pre_stop runs in the old one before
	// it is stopped.
	cli.write("compose.yaml", file("2", `["/driftless", "version"]`))
	if out, code := cli.run(nil, "apply"); code != 0 {
		t.Fatalf("second apply: exit %d:\n%s", code, out)
	}
	if got := ev.of(t, first, "destroy"); !strings.Contains(got, "exec_die 0\nkill") {
		t.Errorf("events of the replaced replica:\n%s\nwant a hook run to exit 0 right before its stop (kill)", got)
	}

	cli.write("compose.yaml", file("3", `["/driftless", "workload", "probe", "tcp://127.0.0.1:1"]`))
	out, code := cli.run(nil, "apply")
	if want := "post_start hook 1 (/driftless workload probe tcp://127.0.0.1:1) exited with status 1"; code == 0 || !strings.Contains(out, want) {
		t.Errorf("apply with a failing post_start hook: exit %d, want non-zero and %q:\n%s", code, want, out)
	}
}

// eventWatch streams the engine's events of the containers of one name
// from its start: "ID action" lines (an exec's with its command, or its
// exit code). It streams rather than asks for the past: the engine keeps
// only its last 256 events, which a loaded shared engine passes in
// seconds.
type eventWatch struct {
	mu  sync.Mutex
	out strings.Builder
}

func watchEvents(t *testing.T, name string) *eventWatch {
	t.Helper()
	w := &eventWatch{}
	cmd := exec.CommandContext(t.Context(), "docker", "events", "--since", strconv.FormatInt(time.Now().Unix()-1, 10),
		"--filter", "container="+name, "--format", `{{.Actor.ID}} {{.Action}}{{if eq .Action "exec_die"}} {{index .Actor.Attributes "exitCode"}}{{end}}`)
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return w
}

func (w *eventWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(p)
}

// of waits until container id has had the event last (events arrive a
// little after the fact), then returns its events, one action a line.
func (w *eventWatch) of(t *testing.T, id, last string) string {
	t.Helper()
	var got string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		w.mu.Lock()
		var lines []string
		for _, l := range strings.Split(w.out.String(), "\n") {
			if rest, ok := strings.CutPrefix(l, id+" "); ok {
				lines = append(lines, rest)
			}
		}
		w.mu.Unlock()
		got = strings.Join(lines, "\n")
		if slices.Contains(lines, last) || time.Now().After(deadline) {
			return got
		}
	}
}
