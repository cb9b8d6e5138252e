package policy_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// TestRemoteEngineRefusesHostFeatures: an app placed on an engine that
// may be on another host is refused, at the place each feature is
// declared, for a repository file or a secret file copied into a
// read-only root filesystem, and for a secret file copied under a tmpfs
// mount (which hides it once the container starts); repository files
// and secret files elsewhere, httpGet readiness (run through the
// engine's probe container), exec readiness and named volumes load. The
// same app on a local engine loads.
func TestRemoteEngineRefusesHostFeatures(t *testing.T) {
	files := map[string]string{
		"conf.txt": "x\n",
		"pw.txt":   "ENC:hunter2\nsops:\n",
		"compose.yaml": `services:
  web:
    image: shop/web:1
    volumes: [./conf.txt:/etc/conf.txt:ro]
    x-driftless: {readiness: {httpGet: {path: /healthz, port: 8080}}}
  proxy:
    image: shop/proxy:1
    read_only: true
    volumes: [./conf.txt:/etc/proxy.conf:ro]
  cache:
    image: shop/cache:1
    read_only: true
    secrets: [pw]
  worker:
    image: shop/worker:1
    tmpfs: [/run]
    secrets: [pw]
  db:
    image: shop/db:1
    x-driftless: {readiness: {exec: {command: [/probe]}}}
    volumes: [data:/var/lib/db, ./conf.txt:/etc/db.conf:ro]
    tmpfs: [/tmp]
    secrets: [pw]
volumes:
  data: {}
secrets:
  pw: {file: pw.txt}
`}
	opts := load.Options{Decrypt: loadtest.FakeDecrypt}
	if _, err := loadtest.LoadComposeFiles(t, files, opts); err != nil {
		t.Fatalf("on a local engine: %v", err)
	}
	opts.RemoteEngine = "edge"
	lines := loadtest.ComposeErrors(t, files, opts)
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"repository file conf.txt with a read-only root filesystem (the file is copied into the container's filesystem) is not supported on a remote engine yet (engine edge is not on the agent's host): drop read_only (readOnlyRootfs), or COPY the file into an image with build:",
		"secret file pw.txt with a read-only root filesystem (the secret is copied into the container's filesystem) is not supported on a remote engine yet (engine edge is not on the agent's host): drop read_only (readOnlyRootfs), or place the app on an engine on this host",
		"secret file pw.txt at /run/secrets/pw under the tmpfs /run (the secret is copied into the container's filesystem, which the tmpfs hides) is not supported on a remote engine yet (engine edge is not on the agent's host): give the secret a target outside the tmpfs, or place the app on an engine on this host",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors:\n%s\nwant one with %q", got, want)
		}
	}
	if len(lines) != 3 || strings.Contains(got, "db") || strings.Contains(got, "/etc/conf.txt") || strings.Contains(got, "hunter2") || strings.Contains(got, "readiness") {
		t.Errorf("errors:\n%s\nwant exactly three, none for web's httpGet readiness or for db (a repository file, a secret file, exec readiness and a named volume work anywhere), no secret value", got)
	}
}

// TestRemoteEngineLoadsSecretFiles: a secret file loads on a remote
// engine (its value is copied into the container), with its target,
// owner and mode as on a local engine.
func TestRemoteEngineLoadsSecretFiles(t *testing.T) {
	files := map[string]string{
		"pw.txt": "ENC:hunter2\nsops:\n",
		"compose.yaml": `services:
  web:
    image: shop/web:1
    secrets: [{source: pw, target: /etc/app/pw, uid: "999", gid: "998", mode: 0400}]
secrets:
  pw: {file: pw.txt}
`}
	a, err := loadtest.LoadComposeFiles(t, files, load.Options{Decrypt: loadtest.FakeDecrypt, RemoteEngine: "edge"})
	if err != nil {
		t.Fatalf("a secret file on a remote engine: %v", err)
	}
	if s := a.Service("web").Spec.Secrets; len(s) != 1 || s[0].Target != "/etc/app/pw" || s[0].UID != "999" || s[0].GID != "998" || s[0].Mode != 0o400 || s[0].Digest == "" {
		t.Errorf("secrets %+v", s)
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
