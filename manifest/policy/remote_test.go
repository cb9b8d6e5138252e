package policy_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// TestRemoteEngineRefusesHostFeatures: an app placed on an engine that
// may be on another host is refused, at the place each feature is
// declared, for what the agent's own host carries out; the same app on a
// local engine loads.
func TestRemoteEngineRefusesHostFeatures(t *testing.T) {
	files := map[string]string{
		"conf.txt": "x\n",
		"compose.yaml": `services:
  web:
    image: shop/web:1
    volumes: [./conf.txt:/etc/conf.txt:ro]
    x-driftless: {readiness: {httpGet: {path: /healthz, port: 8080}}}
  db:
    image: shop/db:1
    x-driftless: {readiness: {exec: {command: [/probe]}}}
    volumes: [data:/var/lib/db]
volumes:
  data: {}
`}
	if _, err := loadtest.LoadComposeFiles(t, files, load.Options{}); err != nil {
		t.Fatalf("on a local engine: %v", err)
	}
	lines := loadtest.ComposeErrors(t, files, load.Options{RemoteEngine: "edge"})
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"repository file conf.txt (written on the agent's host) is not supported on a remote engine yet (engine edge is not on the agent's host): COPY it into an image with build:, or put it in a volume",
		"an httpGet or tcpSocket readiness probe (run from the agent's host, which cannot reach the engine's container addresses) is not supported on a remote engine yet (engine edge is not on the agent's host): use an exec probe or a healthcheck",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors:\n%s\nwant one with %q", got, want)
		}
	}
	if len(lines) != 2 || strings.Contains(got, "db") {
		t.Errorf("errors:\n%s\nwant exactly two, none for db (exec readiness and a named volume work anywhere)", got)
	}
}
