package compose

import (
	"fmt"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestComposeLongContainerName: a service whose container name passes 63
// characters (as Sentry self-hosted's longest do in an app named
// self-hosted) runs as docker compose runs it: created, with its
// anonymous volume, ready by its healthcheck, reached by its service name
// from another service, and no changes on the next diff.
func TestComposeLongContainerName(t *testing.T) {
	t.Parallel()
	images := testenv.NewImageSet(t)
	image := images.Ref("shop/worker:1")
	images.Ensure(image)
	app := testenv.UniqueApp(t)
	long := strings.Repeat("consumer-", 6) + "metrics"
	compose := fmt.Sprintf(`services:
  %[1]s:
    image: %[2]s
    environment: {WORKLOAD_LISTEN: ":9000"}
    volumes: [/var/lib/metrics]
    healthcheck:
      test: ["CMD", "/driftless", "workload", "probe", "tcp://localhost:9000"]
      interval: 1s
  client:
    image: %[2]s
    depends_on:
      %[1]s: {condition: service_healthy}
    healthcheck:
      test: ["CMD", "/driftless", "workload", "probe", "tcp://%[1]s:9000"]
      interval: 1s
`, long, image)
	cli := newCLIDir(t, app, map[string]string{"compose.yaml": compose})
	name := app + "-" + long + "-1"
	if len(name) <= 63 {
		t.Fatalf("container name %q is not over 63 characters", name)
	}
	out, code := cli.run(nil, "apply")
	if code != 0 || !strings.Contains(out, "Apply complete") {
		t.Fatalf("apply: exit %d:\n%s", code, out)
	}
	for _, c := range []string{name, app + "-client-1"} {
		if got := testenv.DockerStdout(t, "inspect", "--format", "{{.State.Status}} {{.State.Health.Status}}", c); got != "running healthy" {
			t.Errorf("%s: %q, want running healthy", c, got)
		}
	}
	if got := testenv.DockerStdout(t, "inspect", "--format", `{{range .Mounts}}{{if eq .Destination "/var/lib/metrics"}}{{.Type}}{{end}}{{end}}`, name); got != "volume" {
		t.Errorf("anonymous volume of %s: %q", name, got)
	}
	if out, code := cli.run(nil, "diff"); code != 0 || !strings.Contains(out, "No changes") {
		t.Errorf("diff after apply: exit %d:\n%s", code, out)
	}
}
