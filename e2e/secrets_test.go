package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	dsync "github.com/driftless-dev/driftless/sync"
)

// secretEnvManifest is a web service whose MESSAGE is a secretEnv value;
// the workload logs its message when it starts serving.
func secretEnvManifest(image, secret string, extra string) string {
	return fmt.Sprintf(`apiVersion: driftless.dev/v1
kind: Service
metadata:
  name: web
spec:
  image: %s
  replicas: 1
  env:
    MESSAGE: %q
%s  secretEnv: [MESSAGE]
  readiness:
    httpGet: {path: /healthz, port: 8080}
    periodSeconds: 1
  stopGracePeriodSeconds: 1
`, image, secret, extra)
}

// TestSecretEnvNeverShown: a replica that prints its secretEnv value in its
// logs and then exits fails the rollout; the failure the agent keeps and
// shows carries the redaction marker in place of the value everywhere a
// user can look (status, history, the API's raw JSON, the UI's pages, the
// history database, the agent's own output), and `docker inspect` shows
// neither the value nor the plain sha256 of it that would let a guess be
// checked.
func TestSecretEnvNeverShown(t *testing.T) {
	v1 := testenv.WorkloadImage(t, "v1")
	good := "first-Secret-" + strings.ToLower(testenv.UniqueApp(t))
	r := startRig(t, func(string) string { return secretEnvManifest(v1, good, "") })
	first := r.repo.Head()
	r.waitConverged("first deploy", first, 1, v1)

	// The running replica's labels: no value, no unsalted digest.
	checkInspectHidesSecret(t, r.app, good)

	bad := "crash-Secret-" + strings.ToLower(testenv.UniqueApp(t))
	r.commit("print the secret and exit", secretEnvManifest(v1, bad, "    WORKLOAD_NEVER_READY: \"true\"\n    WORKLOAD_EXIT_AFTER: \"3s\"\n"))
	st := r.wait(90*time.Second, "the failed rollout reported with its log lines", func(st dsync.AppStatus) bool {
		return st.Health == drift.HealthDegraded && len(st.Services) == 1 &&
			strings.Contains(st.Services[0].Message, "exited with code 1")
	})
	t.Logf("degraded: %s", st.Services[0].Message)

	// Every place a user or a reader of the disk can look.
	places := map[string]string{
		"app API":      apiGet(t, r.agent.URL+"/api/v1/apps/"+r.app),
		"history API":  apiGet(t, r.agent.URL+"/api/v1/apps/"+r.app+"/history"),
		"apps API":     apiGet(t, r.agent.URL+"/api/v1/apps"),
		"app page":     apiGet(t, r.agent.URL+"/apps/"+r.app),
		"history page": apiGet(t, r.agent.URL+"/apps/"+r.app+"/history"),
		"plan API":     apiGet(t, r.agent.URL+"/api/v1/apps/"+r.app+"/plan?format=text"),
		"agent output": r.agent.Logs(),
	}
	db, err := os.ReadFile(filepath.Join(r.data, "driftless.db"))
	if err != nil {
		t.Fatal(err)
	}
	places["history database"] = string(db)
	for where, text := range places {
		for _, v := range []string{good, bad} {
			if strings.Contains(text, v) {
				t.Errorf("%s shows the secret value %q", where, v)
			}
		}
	}
	if !strings.Contains(places["history API"], "workload serving") || !strings.Contains(places["history API"], "message=(sensitive)") {
		t.Errorf("history should keep the scrubbed log line; got %s", places["history API"])
	}
	// The key that salts the digests is in the data directory, private.
	fi, err := os.Stat(filepath.Join(r.data, "secret-salt"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret key file: %v, mode %v; want 0600", err, fi)
	}
	checkInspectHidesSecret(t, r.app, bad)
	checkInspectHidesSecret(t, r.app, good)
}

// checkInspectHidesSecret fails if any label of the app's containers holds
// the value or the first 8 hex characters of its plain sha256 (what an
// attacker would compute to test a guess).
func checkInspectHidesSecret(t *testing.T, app, value string) {
	t.Helper()
	sum := sha256.Sum256([]byte(value))
	plain := hex.EncodeToString(sum[:])[:8]
	ids := strings.Fields(docker(t, "ps", "-aq", "--filter", "label="+drift.LabelApp+"="+app))
	if len(ids) == 0 {
		t.Fatal("no containers to inspect")
	}
	for _, id := range ids {
		labels := docker(t, "inspect", "--format", "{{json .Config.Labels}}", id)
		if strings.Contains(labels, value) || strings.Contains(labels, plain) {
			t.Errorf("container %s labels show the secret or its sha256 prefix %s: %s", id, plain, labels)
		}
		if strings.Contains(labels, `\"MESSAGE\"`) && !strings.Contains(labels, "(sensitive hmac:") {
			t.Errorf("container %s: the recorded spec should hold the keyed redaction: %s", id, labels)
		}
	}
}

// apiGet is the raw body of a GET, as a browser or curl would see it.
func apiGet(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}
