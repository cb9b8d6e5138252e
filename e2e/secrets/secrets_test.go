package secrets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/secrets/sopstest"
	"github.com/driftless-dev/driftless/sync/status"
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
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	good := "first-Secret-" + strings.ToLower(testenv.UniqueApp(t))
	r := testenv.StartRig(t, func(string) string { return secretEnvManifest(v1, good, "") })
	first := r.Repo.Head()
	r.WaitConverged("first deploy", first, 1, v1)

	// The running replica's labels: no value, no unsalted digest.
	checkInspectHidesSecret(t, r.App, good)

	bad := "crash-Secret-" + strings.ToLower(testenv.UniqueApp(t))
	r.Commit("print the secret and exit", secretEnvManifest(v1, bad, "    WORKLOAD_NEVER_READY: \"true\"\n    WORKLOAD_EXIT_AFTER: \"3s\"\n"))
	st := r.Wait(90*time.Second, "the failed rollout reported with its log lines", func(st status.AppStatus) bool {
		return st.Health == drift.HealthDegraded && len(st.Services) == 1 &&
			strings.Contains(st.Services[0].Message, "exited with code 1")
	})
	t.Logf("degraded: %s", st.Services[0].Message)

	// Every place a user or a reader of the disk can look.
	places := map[string]string{
		"app API":      testenv.APIGet(t, r.Agent.URL+"/api/v1/apps/"+r.App),
		"history API":  testenv.APIGet(t, r.Agent.URL+"/api/v1/apps/"+r.App+"/history"),
		"apps API":     testenv.APIGet(t, r.Agent.URL+"/api/v1/apps"),
		"app page":     testenv.APIGet(t, r.Agent.URL+"/apps/"+r.App),
		"history page": testenv.APIGet(t, r.Agent.URL+"/apps/"+r.App+"/history"),
		"plan API":     testenv.APIGet(t, r.Agent.URL+"/api/v1/apps/"+r.App+"/plan?format=text"),
		"agent output": r.Agent.Logs(),
	}
	db, err := os.ReadFile(filepath.Join(r.Data, "driftless.db"))
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
	fi, err := os.Stat(filepath.Join(r.Data, "secret-salt"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret key file: %v, mode %v; want 0600", err, fi)
	}
	checkInspectHidesSecret(t, r.App, bad)
	checkInspectHidesSecret(t, r.App, good)
}

// checkInspectHidesSecret fails if any label of the app's containers holds
// the value or the first 8 hex characters of its plain sha256 (what an
// attacker would compute to test a guess).
func checkInspectHidesSecret(t *testing.T, app, value string) {
	t.Helper()
	sum := sha256.Sum256([]byte(value))
	plain := hex.EncodeToString(sum[:])[:8]
	ids := strings.Fields(testenv.Docker(t, "ps", "-aq", "--filter", "label="+drift.LabelApp+"="+app))
	if len(ids) == 0 {
		t.Fatal("no containers to inspect")
	}
	for _, id := range ids {
		labels := testenv.Docker(t, "inspect", "--format", "{{json .Config.Labels}}", id)
		if strings.Contains(labels, value) || strings.Contains(labels, plain) {
			t.Errorf("container %s labels show the secret or its sha256 prefix %s: %s", id, plain, labels)
		}
		if strings.Contains(labels, `\"MESSAGE\"`) && !strings.Contains(labels, "(sensitive hmac:") {
			t.Errorf("container %s: the recorded spec should hold the keyed redaction: %s", id, labels)
		}
	}
}

// sopsManifest is a web service that takes APP_DB_PASSWORD from the
// SOPS-encrypted file secrets/app-db-password of the app.
func sopsManifest(image string) string {
	return fmt.Sprintf(`apiVersion: driftless.dev/v1
kind: Service
metadata:
  name: web
spec:
  image: %s
  replicas: 2
  secrets:
    - name: app-db-password
      file: secrets/app-db-password.yaml
      key: password
  envFrom:
    - secret: app-db-password
  readiness:
    httpGet: {path: /healthz, port: 8080}
    periodSeconds: 1
  update: {strategy: rolling, maxSurge: 1, maxUnavailable: 0}
  stopGracePeriodSeconds: 1
`, image)
}

// TestSOPSSecretRotation: a password in a SOPS file (age key, encrypted by
// sops's own code path) reaches the replicas; changing it in Git rolls
// them with a plan that says the secret changed and shows no value; a
// tampered file is refused and the last good revision keeps running and
// healing, also after an agent restart; the value is nowhere in labels,
// the API, the UI, the database or the agent's output.
func TestSOPSSecretRotation(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	id, keyFile := newAgeKey(t)
	enc := func(pw string) string {
		b, err := sopstest.EncryptAge("app-db-password.yaml", []byte("password: "+pw+"\n"), id.Recipient().String())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	first := "pw-one-" + strings.ToLower(testenv.UniqueApp(t))
	second := "pw-two-" + strings.ToLower(testenv.UniqueApp(t))

	app := testenv.UniqueApp(t)
	base := t.TempDir()
	r := &testenv.AgentRig{T: t, App: app, Path: "apps/" + app, Server: gitserver.RunDaemon(t, base), Data: t.TempDir()}
	r.Repo = gitserver.Init(t, base, "infra")
	r.Repo.WriteFile(r.Path+"/web.yaml", sopsManifest(v1))
	r.Repo.WriteFile(r.Path+"/secrets/app-db-password.yaml", enc(first))
	r.Repo.Commit("deploy web with an encrypted password")
	r.Args = []string{"run", "--repo", r.Repo.URL(r.Server.URL), "--branch", "main", "--path", r.Path, "--app", app, "--interval", "1s", "--allow-insecure-transport"}
	env := append(os.Environ(), "SOPS_AGE_KEY_FILE="+keyFile)
	r.Agent = testenv.StartAgentEnv(t, env, r.Data, r.Args...)
	head := r.Repo.Head()
	r.WaitConverged("deploy with the decrypted secret", head, 2, v1)
	checkContainerEnv(t, app, "APP_DB_PASSWORD="+first)

	// Rotate in Git: every replica is replaced, the plan says so without
	// the value.
	before := testenv.IDsByName(testenv.DockerContainers(t, app))
	r.Repo.WriteFile(r.Path+"/secrets/app-db-password.yaml", enc(second))
	rotated := r.Repo.Commit("rotate the db password")
	r.WaitConverged("the rotation rolled out", rotated, 2, v1)
	for name, id := range testenv.IDsByName(testenv.DockerContainers(t, app)) {
		if before[name] == id {
			t.Errorf("%s was not replaced by the rotation", name)
		}
	}
	checkContainerEnv(t, app, "APP_DB_PASSWORD="+second)
	hist := testenv.APIGet(t, r.Agent.URL+"/api/v1/apps/"+app+"/history")
	if !strings.Contains(hist, "secret app-db-password") || !strings.Contains(hist, "changed") {
		t.Errorf("history should say the secret changed; got %s", hist)
	}

	// Tamper with the ciphertext: refused, the rotated revision keeps
	// running.
	tampered := strings.Replace(enc(second), "password: ENC[AES256_GCM,data:", "password: ENC[AES256_GCM,data:AA", 1)
	r.Repo.WriteFile(r.Path+"/secrets/app-db-password.yaml", tampered)
	bad := r.Repo.Commit("tampered secret")
	st := r.Wait(30*time.Second, "the tampered revision refused", func(st status.AppStatus) bool {
		return st.Refused != nil && st.Refused.Revision.SHA == bad
	})
	if why := strings.Join(st.Refused.Errors, "\n"); !strings.Contains(why, "app-db-password.yaml") || !strings.Contains(why, "MAC") {
		t.Errorf("refusal should name the file and the MAC: %s: %s", st.Refused.Reason, why)
	} else {
		t.Logf("refused: %s", why)
	}
	if st.Applied == nil || st.Applied.SHA != rotated {
		t.Fatalf("applied %v, want the rotated revision to keep running", testenv.RevShort(st.Applied))
	}

	// Restart the agent; healing still works on the last good revision
	// (re-decrypted from Git).
	r.Agent.Stop(t)
	r.Agent = testenv.StartAgentEnv(t, env, r.Data, r.Args...)
	victim := app + "-web-1"
	testenv.Docker(t, "rm", "-f", victim)
	r.Wait(60*time.Second, "the removed replica healed after the restart", func(st status.AppStatus) bool {
		return testenv.ConvergedTo(rotated, 2, v1)(st) || (st.Applied != nil && st.Applied.SHA == rotated && len(st.Services) == 1 && st.Services[0].Ready == 2)
	})
	checkContainerEnv(t, app, "APP_DB_PASSWORD="+second)

	places := map[string]string{
		"app API":      testenv.APIGet(t, r.Agent.URL+"/api/v1/apps/"+app),
		"history API":  testenv.APIGet(t, r.Agent.URL+"/api/v1/apps/"+app+"/history"),
		"app page":     testenv.APIGet(t, r.Agent.URL+"/apps/"+app),
		"history page": testenv.APIGet(t, r.Agent.URL+"/apps/"+app+"/history"),
		"plan API":     testenv.APIGet(t, r.Agent.URL+"/api/v1/apps/"+app+"/plan?format=text"),
		"agent output": r.Agent.Logs(),
	}
	db, err := os.ReadFile(filepath.Join(r.Data, "driftless.db"))
	if err != nil {
		t.Fatal(err)
	}
	places["history database"] = string(db)
	for where, text := range places {
		for _, v := range []string{first, second} {
			if strings.Contains(text, v) {
				t.Errorf("%s shows the secret value %q", where, v)
			}
		}
	}
	checkInspectHidesSecret(t, app, second)
}

// checkContainerEnv fails unless every replica of the app has kv in its
// environment (env delivery: Docker keeps it in the container's config).
func checkContainerEnv(t *testing.T, app, kv string) {
	t.Helper()
	for _, c := range testenv.DockerContainers(t, app) {
		env := testenv.Docker(t, "inspect", "--format", "{{json .Config.Env}}", c.ID)
		if !strings.Contains(env, `"`+kv+`"`) {
			t.Errorf("%s: env %s lacks %s", c.Name, env, kv)
		}
	}
}

// TestValidateChecksSecretsDecrypt: `driftless validate` opens every
// referenced SOPS file with the keys of the environment, and says which
// file does not open and why (no key; only key types driftless does not
// use).
func TestValidateChecksSecretsDecrypt(t *testing.T) {
	t.Parallel()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "shop")
	if err := os.MkdirAll(filepath.Join(dir, "secrets"), 0o755); err != nil {
		t.Fatal(err)
	}
	enc, err := sopstest.EncryptAge("app-db-password.yaml", []byte("password: validate-me\n"), id.Recipient().String())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(sopsManifest("shop/web:1")), 0o644))
	must(os.WriteFile(filepath.Join(dir, "secrets", "app-db-password.yaml"), enc, 0o644))
	keyFile := filepath.Join(t.TempDir(), "age.txt")
	must(os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	env := append(os.Environ(), "SOPS_AGE_KEY=", "XDG_CONFIG_HOME="+t.TempDir(),
		"SOPS_AGE_KEY_FILE="+filepath.Join(t.TempDir(), "absent.txt"))
	out, code := testenv.RunEnv(t, ctx, env, dir, "validate")
	if code != 1 || !strings.Contains(out, "web.yaml:10:13: spec.secrets[0].file: secret \"app-db-password\": secrets/app-db-password.yaml: no available key can decrypt it: it is encrypted for age "+id.Recipient().String()) {
		t.Errorf("without the key: exit %d, output:\n%s", code, out)
	}
	env = append(env, "SOPS_AGE_KEY_FILE="+keyFile)
	out, code = testenv.RunEnv(t, ctx, env, dir, "validate", "--output", "json")
	if code != 0 || strings.Contains(out, "validate-me") {
		t.Errorf("with the key: exit %d (want 0, and no value in the output):\n%s", code, out)
	}
	// A file only for a cloud KMS: refused, naming the file and the key
	// type, even with an age key at hand.
	kmsOnly, err := sopstest.WithOnlyKeys(enc, map[string][]map[string]string{"kms": {{
		"arn": "arn:aws:kms:eu-west-1:111122223333:key/1234abcd", "created_at": "2024-01-02T03:04:05Z", "enc": "AQICAHh", "aws_profile": "",
	}}})
	must(err)
	must(os.WriteFile(filepath.Join(dir, "secrets", "app-db-password.yaml"), kmsOnly, 0o644))
	out, code = testenv.RunEnv(t, ctx, env, dir, "validate")
	if code != 1 || !strings.Contains(out, "secrets/app-db-password.yaml: no available key can decrypt it: it is encrypted only for keys of type kms, which driftless cannot use") {
		t.Errorf("a KMS-only file: exit %d, output:\n%s", code, out)
	}
}

// newAgeKey makes an age identity and writes it to a key file, as
// age-keygen does.
func newAgeKey(t *testing.T) (*age.X25519Identity, string) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "age.txt")
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return id, keyFile
}
