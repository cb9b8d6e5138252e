package policy_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// TestRemoteEngineRefusesHostFeatures: an app placed on an engine that
// may be on another host is refused, at the place it is declared, for a
// repository file copied into a read-only root filesystem; repository
// files elsewhere, httpGet readiness (run through the engine's probe
// container), exec readiness and named volumes load. The same app on a
// local engine loads.
func TestRemoteEngineRefusesHostFeatures(t *testing.T) {
	files := map[string]string{
		"conf.txt": "x\n",
		"compose.yaml": `services:
  web:
    image: shop/web:1
    volumes: [./conf.txt:/etc/conf.txt:ro]
    x-driftless: {readiness: {httpGet: {path: /healthz, port: 8080}}}
  proxy:
    image: shop/proxy:1
    read_only: true
    volumes: [./conf.txt:/etc/proxy.conf:ro]
  db:
    image: shop/db:1
    x-driftless: {readiness: {exec: {command: [/probe]}}}
    volumes: [data:/var/lib/db, ./conf.txt:/etc/db.conf:ro]
volumes:
  data: {}
`}
	if _, err := loadtest.LoadComposeFiles(t, files, load.Options{}); err != nil {
		t.Fatalf("on a local engine: %v", err)
	}
	lines := loadtest.ComposeErrors(t, files, load.Options{RemoteEngine: "edge"})
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"repository file conf.txt with a read-only root filesystem (the file is copied into the container's filesystem) is not supported on a remote engine yet (engine edge is not on the agent's host): drop read_only (readOnlyRootfs), or COPY the file into an image with build:",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors:\n%s\nwant one with %q", got, want)
		}
	}
	if len(lines) != 1 || strings.Contains(got, "db") || strings.Contains(got, "/etc/conf.txt") || strings.Contains(got, "readiness") {
		t.Errorf("errors:\n%s\nwant exactly one, none for web's httpGet readiness or for db (a repository file, exec readiness and a named volume work anywhere)", got)
	}
}

// TestRemoteEngineLoadsRepositoryFilesAndStateDirectories: repository
// files, a file and a directory, load on a remote engine (they are copied
// into the container), and so does a state directory (a volume on that
// engine).
func TestRemoteEngineLoadsRepositoryFilesAndStateDirectories(t *testing.T) {
	files := map[string]string{
		"conf/app.conf":   "x\n",
		"site/index.html": "<h1>hi</h1>\n",
		"compose.yaml": `services:
  web:
    image: shop/web:1
    volumes: [./conf/app.conf:/etc/app.conf:ro, ./site:/srv/site, ./data:/var/lib/web]
`}
	if _, err := loadtest.LoadComposeFiles(t, files, load.Options{RemoteEngine: "edge"}); err != nil {
		t.Fatalf("repository files and a state directory on a remote engine: %v", err)
	}
}
