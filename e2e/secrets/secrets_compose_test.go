package secrets

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/secrets/sopstest"
	"github.com/driftless-dev/driftless/sync/status"
)

// newGPGEncryptionKey makes an OpenPGP key that can encrypt, with Debian's
// gpg as a user would (`gpg --quick-gen-key`, no passphrase), in its own
// GnuPG home; it returns the home and the key's fingerprint. gpg-agent is
// stopped when the test ends.
func newGPGEncryptionKey(t *testing.T) (home, fingerprint string) {
	t.Helper()
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		t.Skip("gpg is not installed (Debian: apt-get install gnupg; .ci/run installs it)")
	}
	// A short path: gpg-agent's socket path must fit in 108 bytes.
	home, err = os.MkdirTemp("", "gpg")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		os.RemoveAll(home)
	})
	run := func(args ...string) string {
		out, err := exec.Command(gpg, append([]string{"--homedir", home, "--batch", "--quiet"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("gpg %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("--passphrase", "", "--quick-gen-key", "driftless e2e <secrets@example.com>", "default", "default", "never")
	for line := range strings.Lines(run("--with-colons", "--list-secret-keys")) {
		if f := strings.Split(line, ":"); len(f) > 9 && f[0] == "fpr" {
			return home, f[9]
		}
	}
	t.Fatal("gpg: no fingerprint for the new key")
	return "", ""
}

// TestComposeSecretsOpenPGP: a compose file's top-level secrets and an
// env_file encrypted by sops's code path for an OpenPGP key that gpg made
// are decrypted by the agent with the app's decryption.gnupgHome; the
// secrets are files at /run/secrets/NAME (short syntax) and at a target
// with a mode (long syntax), a plaintext secret is accepted only where
// x-driftless says allowPlaintext, and the env file's variables reach the
// environment, as compose's env_file does, and nothing else.
func TestComposeSecretsOpenPGP(t *testing.T) {
	t.Parallel()
	home, fpr := newGPGEncryptionKey(t)
	v1 := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	pw, apiKey, envPw := "pgp-db-"+app, "plain-api-"+app, "pgp-env-"+app
	enc := func(name, plain string) string {
		b, err := sopstest.EncryptPGP(name, []byte(plain), home, fpr)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	compose := fmt.Sprintf(`services:
  web:
    image: %s
    env_file: [secrets.env]
    secrets:
      - db_password
      - source: api_key
        target: /etc/api/key
        mode: 0440
    x-driftless:
      readiness: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
secrets:
  db_password:
    file: ./db_password.txt
  api_key:
    file: ./api_key.txt
    x-driftless: {allowPlaintext: true}
`, v1)
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	path := "apps/" + app
	repo.WriteFile(path+"/compose.yaml", compose)
	repo.WriteFile(path+"/db_password.txt", enc("db_password.txt", pw))
	repo.WriteFile(path+"/api_key.txt", apiKey)
	repo.WriteFile(path+"/secrets.env", enc("secrets.env", "APP_DB_PASSWORD="+envPw+"\n"))
	first := repo.Commit("compose app with OpenPGP-encrypted secrets")

	cfg := map[string]any{"apps": []map[string]any{{
		"name": app, "repo": repo.URL(server.URL), "branch": "main", "path": path, "interval": "1s",
		"allowInsecureTransport": true, "decryption": map[string]any{"gnupgHome": home},
	}}}
	body, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "driftless.yaml")
	if err := os.WriteFile(cfgFile, body, 0o644); err != nil {
		t.Fatal(err)
	}
	// The agent's own GNUPGHOME is empty: only the app's home holds the key.
	env := append(os.Environ(), "GNUPGHOME="+t.TempDir(), "SOPS_AGE_KEY_FILE=", "SOPS_AGE_KEY=")
	data := testenv.DataDir(t)
	agent := testenv.StartAgentEnv(t, env, data, "run", "--config", cfgFile)
	testenv.WaitAppStatus(t, agent, app, 90*time.Second, "deployed with decrypted secrets", testenv.ConvergedServices(first, map[string]int{"web": 1}))

	c := app + "-web-1"
	if f := copyOut(t, c, "/run/secrets/db_password"); f.Body != pw || f.Mode != 0o444 {
		t.Errorf("/run/secrets/db_password = %q mode %#o, want the decrypted value, 0444", f.Body, f.Mode)
	}
	if f := copyOut(t, c, "/etc/api/key"); f.Body != apiKey || f.Mode != 0o440 {
		t.Errorf("/etc/api/key = %q mode %#o, want the plaintext file as allowed, 0440", f.Body, f.Mode)
	}
	if len(secretMounts(t, c, testenv.SecretsDir(t, data))) != 2 {
		t.Errorf("want both secrets mounted from the agent's secrets directory")
	}
	envs := testenv.Docker(t, "inspect", "--format", "{{json .Config.Env}}", c)
	if !strings.Contains(envs, `"APP_DB_PASSWORD=`+envPw+`"`) {
		t.Errorf("the encrypted env_file's variable is not in the environment: %s", envs)
	}
	if strings.Contains(envs, pw) {
		t.Errorf("a file secret is in the environment: %s", envs)
	}
	// Remove allowPlaintext: the plaintext secret refuses the revision.
	repo.WriteFile(path+"/compose.yaml", strings.Replace(compose, "    x-driftless: {allowPlaintext: true}\n", "", 1))
	bad := repo.Commit("api_key without allowPlaintext")
	st := testenv.WaitAppStatus(t, agent, app, 30*time.Second, "the plaintext secret refused", func(st status.AppStatus) bool {
		return st.Refused != nil && st.Refused.Revision.SHA == bad
	})
	if why := strings.Join(st.Refused.Errors, "\n"); !strings.Contains(why, "secrets.api_key.file") || !strings.Contains(why, "api_key.txt is not SOPS-encrypted") {
		t.Errorf("refusal: %s", why)
	}
	places := map[string]string{
		"app API":      testenv.APIGet(t, agent.URL+"/api/v1/apps/"+app),
		"history API":  testenv.APIGet(t, agent.URL+"/api/v1/apps/"+app+"/history"),
		"app page":     testenv.APIGet(t, agent.URL+"/apps/"+app),
		"agent output": agent.Logs(),
		"labels":       testenv.Docker(t, "inspect", "--format", "{{json .Config.Labels}}", c),
	}
	for where, text := range places {
		for _, v := range []string{pw, envPw} {
			if strings.Contains(text, v) {
				t.Errorf("%s shows the secret value %q", where, v)
			}
		}
	}
}
