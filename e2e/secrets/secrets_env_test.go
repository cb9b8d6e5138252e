package secrets

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestComposeSecretFromEnvironment: a compose secret whose value is a
// variable of the app's environment (secrets.NAME.environment, set in
// driftless.yaml, not in Git) reaches the container as a file at
// /run/secrets/NAME and at a long-syntax target with its mode; the value
// shows nowhere else (container labels and environment, the API). A
// commit whose secret comes only from the repository's .env, a plaintext
// file in Git, is refused with what to do, and the last good revision
// keeps running.
func TestComposeSecretFromEnvironment(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	pw, key := "env-pw-"+app, "env-key-"+app
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	path := "apps/" + app
	compose := `services:
  web:
    image: ` + v1 + `
    stop_grace_period: 1s
    secrets: [db_password, {source: api_key, target: /etc/api.key, mode: 0400}]
secrets:
  db_password: {environment: DB_PASSWORD}
  api_key: {environment: API_KEY}
`
	repo.WriteFile(path+"/compose.yaml", compose)
	first := repo.Commit("web with secrets from the environment")
	agent := testenv.StartConfigAgent(t, []testenv.ComposeAppConfig{{Name: app, Repo: repo.URL(server.URL), Branch: "main", Path: path, Interval: "1s",
		Environment: map[string]string{"DB_PASSWORD": pw, "API_KEY": key}}})
	st := testenv.WaitAppStatus(t, agent, app, 3*time.Minute, "deployed", testenv.ConvergedServices(first, map[string]int{"web": 1}))

	c := app + "-web-1"
	if f := copyOut(t, c, "/run/secrets/db_password"); f.Body != pw || f.Mode != 0o444 {
		t.Errorf("/run/secrets/db_password = %q mode %#o, want DB_PASSWORD's value, 0444", f.Body, f.Mode)
	}
	if f := copyOut(t, c, "/etc/api.key"); f.Body != key || f.Mode != 0o400 {
		t.Errorf("/etc/api.key = %q mode %#o, want API_KEY's value, 0400", f.Body, f.Mode)
	}
	inspect := testenv.Docker(t, "inspect", c)
	api, _ := json.Marshal(st)
	for _, where := range []struct{ name, text string }{{"docker inspect", inspect}, {"the app's status", string(api)}} {
		if strings.Contains(where.text, pw) || strings.Contains(where.text, key) {
			t.Errorf("%s shows a secret value", where.name)
		}
	}

	// A value only the repository's .env sets is plaintext in Git.
	repo.WriteFile(path+"/compose.yaml", strings.Replace(compose, "{environment: API_KEY}", "{environment: TOKEN}", 1))
	repo.WriteFile(path+"/.env", "TOKEN=in-the-clear\n")
	plain := repo.Commit("the token in .env")
	refused := testenv.WaitAppStatus(t, agent, app, time.Minute, "the .env secret refused", func(st status.AppStatus) bool {
		return st.Refused != nil && st.Refused.Revision.SHA == plain
	})
	if why := strings.Join(refused.Refused.Errors, "\n"); !strings.Contains(why, path+`/compose.yaml:8:26: secrets.api_key.environment: secret "api_key": variable TOKEN is set only by .env, a plaintext file of the repository`) {
		t.Errorf("refusal %q; want it at the secret's environment:, naming .env", why)
	}
	if refused.Applied == nil || refused.Applied.SHA != first {
		t.Errorf("applied %v, want the first revision to keep running", testenv.RevShort(refused.Applied))
	}
	if f := copyOut(t, c, "/etc/api.key"); f.Body != key {
		t.Errorf("after the refusal /etc/api.key = %q, want the first revision's", f.Body)
	}
}
