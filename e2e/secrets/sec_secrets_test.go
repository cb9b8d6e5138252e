package secrets

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/secrets/sopstest"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestSecretsBlankedByAppendedKeyRefused (issue 24, item 6): someone with
// push access but without the age key appends DB_PASSWORD= to an
// encrypted .env. An empty value adds nothing to the SOPS MAC, so the file
// still opens; read last, the line would blank the password. The agent
// refuses the revision, naming the file and the line, for a native app
// (envFrom) and a compose app (env_file) alike; the last good revision
// keeps running with the real password, and nothing is created on the
// engine. Both apps also read the quoted value the same way: without its
// quotes, as compose does.
func TestSecretsBlankedByAppendedKeyRefused(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	id, keyFile := newAgeKey(t)
	native, compose := testenv.UniqueApp(t), testenv.UniqueApp(t)
	password := "real-" + native
	encFile := func(name string) string {
		b, err := sopstest.EncryptAge(name, []byte("DB_USER=app\nDB_PASSWORD=\""+password+"\"\n"), id.Recipient().String())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	files := map[string]string{
		"apps/" + native + "/web.yaml": fmt.Sprintf(`apiVersion: driftless.dev/v1
kind: Service
metadata:
  name: web
spec:
  image: %s
  secrets:
    - name: db
      file: secrets/db.env
  envFrom:
    - secret: db
  readiness:
    httpGet: {path: /healthz, port: 8080}
    periodSeconds: 1
  stopGracePeriodSeconds: 1
`, v1),
		"apps/" + native + "/secrets/db.env": encFile("db.env"),
		"apps/" + compose + "/compose.yaml": fmt.Sprintf(`services:
  web:
    image: %s
    env_file: [db.env]
    stop_grace_period: 1s
    x-driftless:
      readiness: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
`, v1),
		"apps/" + compose + "/db.env": encFile("db.env"),
	}
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	for p, c := range files {
		repo.WriteFile(p, c)
	}
	good := repo.Commit("two apps with an encrypted db.env")

	agent := startKeyedAgent(t, repo.URL(server.URL), keyFile, native, compose)
	before := map[string][]testenv.DockerContainer{}
	for _, app := range []string{native, compose} {
		testenv.WaitAppStatus(t, agent, app, 90*time.Second, "deployed with the decrypted password", testenv.ConvergedServices(good, map[string]int{"web": 1}))
		checkContainerEnv(t, app, "DB_PASSWORD="+password)
		before[app] = testenv.DockerContainers(t, app)
	}

	// The attack: one line appended to each encrypted file, no key needed.
	lines := map[string]int{}
	for _, p := range []string{"apps/" + native + "/secrets/db.env", "apps/" + compose + "/db.env"} {
		repo.WriteFile(p, files[p]+"DB_PASSWORD=\n")
		lines[p] = strings.Count(files[p], "\n") + 1
	}
	bad := repo.Commit("append DB_PASSWORD=")

	for app, want := range map[string]string{
		native:  fmt.Sprintf(`secrets/db.env:%d: spec.secrets[0].file: secret "db": key "DB_PASSWORD" is set twice (lines 2 and %d)`, lines["apps/"+native+"/secrets/db.env"], lines["apps/"+native+"/secrets/db.env"]),
		compose: fmt.Sprintf(`db.env:%d: services.web.env_file[0]: env file "db.env": key "DB_PASSWORD" is set twice (lines 2 and %d)`, lines["apps/"+compose+"/db.env"], lines["apps/"+compose+"/db.env"]),
	} {
		st := testenv.WaitAppStatus(t, agent, app, 60*time.Second, "the blanked password refused", func(st status.AppStatus) bool {
			return st.Refused != nil && st.Refused.Revision.SHA == bad
		})
		if why := strings.Join(st.Refused.Errors, "\n"); !strings.Contains(why, want) {
			t.Errorf("%s: the refusal should say %q:\n%s", app, want, why)
		} else {
			t.Logf("%s refused: %s", app, why)
		}
		if st.Applied == nil || st.Applied.SHA != good {
			t.Errorf("%s: applied %v, want the last good revision to keep running", app, testenv.RevShort(st.Applied))
		}
	}
	// Another pass or two, then: the same containers, the real password.
	time.Sleep(3 * time.Second)
	for _, app := range []string{native, compose} {
		if after := testenv.DockerContainers(t, app); !slices.Equal(after, before[app]) {
			t.Errorf("%s: containers changed after the refused revision:\nbefore %v\nafter  %v", app, before[app], after)
		}
		checkContainerEnv(t, app, "DB_PASSWORD="+password)
		if st := testenv.AppStatus(t, agent, app); st.Sync == drift.SyncSynced && st.Refused == nil {
			t.Errorf("%s: status no longer shows the refusal", app)
		}
	}

	// The CLI says the same before a push: validate with the key.
	dir := filepath.Join(t.TempDir(), "shop")
	for p, c := range files {
		if p, ok := strings.CutPrefix(p, "apps/"+native+"/"); ok {
			writeRepoFile(t, filepath.Join(dir, p), c)
		}
	}
	appendLine(t, filepath.Join(dir, "secrets", "db.env"), "DB_PASSWORD=\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, code := testenv.RunDriftless(t, ctx, dir, map[string]string{"SOPS_AGE_KEY_FILE": keyFile}, "validate")
	if code != 1 || !strings.Contains(out, `secrets/db.env:`) || !strings.Contains(out, `key "DB_PASSWORD" is set twice`) {
		t.Errorf("driftless validate: exit %d, want 1 and the file and line:\n%s", code, out)
	}
}

// startKeyedAgent starts one agent for apps (each apps/<name> of the
// repository at url) whose age key is keyFile, and no other key.
func startKeyedAgent(t *testing.T, url, keyFile string, apps ...string) *testenv.Agent {
	t.Helper()
	var cfgApps []map[string]any
	for _, app := range apps {
		cfgApps = append(cfgApps, map[string]any{"name": app, "repo": url, "branch": "main", "path": "apps/" + app,
			"interval": "1s", "allowInsecureTransport": true, "decryption": map[string]any{"ageKeyFile": keyFile}})
	}
	body, err := json.Marshal(map[string]any{"apps": cfgApps})
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "driftless.yaml")
	if err := os.WriteFile(cfg, body, 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "SOPS_AGE_KEY_FILE=", "SOPS_AGE_KEY=")
	return testenv.StartAgentEnv(t, env, testenv.DataDir(t), "run", "--config", cfg)
}

func appendLine(t *testing.T, p, line string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
}

func writeRepoFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
