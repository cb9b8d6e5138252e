package compose_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

const envSecretCompose = `services:
  web:
    image: shop/web:1
    secrets: [db_password, {source: api_key, target: /etc/api.key, mode: 0400}]
secrets:
  db_password: {environment: DB_PASSWORD}
  api_key: {environment: API_KEY%s}
`

// A secret from the environment (secrets.NAME.environment) is delivered
// like a file secret; its value comes from the app's environment, which
// is not in Git. A value only .env sets is plaintext in the repository
// and refused as a plaintext secret file is, unless allowed.
func TestComposeSecretsFromEnvironment(t *testing.T) {
	files := map[string]string{"compose.yaml": strings.Replace(envSecretCompose, "%s", "", 1)}
	a := loadtest.MustLoadCompose(t, files, load.Options{Environment: map[string]string{"DB_PASSWORD": "s3cret", "API_KEY": "k3y"}})
	got := a.Service("web").Spec.Secrets
	if len(got) != 2 {
		t.Fatalf("secrets %+v; want two", got)
	}
	for i, want := range []manifest.SecretRef{
		{Name: "db_password", Env: "DB_PASSWORD", Target: "/run/secrets/db_password", Mode: 0o444},
		{Name: "api_key", Env: "API_KEY", Target: "/etc/api.key", Mode: 0o400},
	} {
		g := got[i]
		if g.Name != want.Name || g.Env != want.Env || g.File != "" || g.Target != want.Target || g.Mode != want.Mode || g.Digest == "" {
			t.Errorf("secret %d = %+v; want %+v with a digest", i, g, want)
		}
	}
	if string(a.SecretData[got[0].Digest]) != "s3cret" || string(a.SecretData[got[1].Digest]) != "k3y" {
		t.Errorf("secret data %q %q; want the values of DB_PASSWORD and API_KEY", a.SecretData[got[0].Digest], a.SecretData[got[1].Digest])
	}
	if spec, _ := json.Marshal(a.Service("web").Spec); strings.Contains(string(spec), "s3cret") || strings.Contains(string(spec), "k3y") {
		t.Errorf("the spec holds a secret value: %s", spec)
	}

	// Set only by .env (in Git): refused; unset: refused; .env with
	// allowPlaintext on the secret: accepted.
	files[".env"] = "API_KEY=from-dotenv\n"
	errs := loadtest.ComposeErrors(t, files, load.Options{})
	want := []string{
		`compose.yaml:6:30: secrets.db_password.environment: secret "db_password": variable DB_PASSWORD is not set: set it in the app's environment (environment: in driftless.yaml; the shell's for the CLI)`,
		`compose.yaml:7:26: secrets.api_key.environment: secret "api_key": variable API_KEY is set only by .env, a plaintext file of the repository, and secrets in Git must be encrypted: set it in the app's environment (environment: in driftless.yaml) instead, or accept it with x-driftless: {allowPlaintext: true} on the top-level secret or decryption: {allowPlaintext: true} for the app`,
	}
	if strings.Join(errs, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
	}
	files["compose.yaml"] = strings.Replace(envSecretCompose, "%s", ", x-driftless: {allowPlaintext: true}", 1)
	a = loadtest.MustLoadCompose(t, files, load.Options{Environment: map[string]string{"DB_PASSWORD": "s3cret"}})
	if s := a.Service("web").Spec.Secrets; len(s) != 2 || string(a.SecretData[s[1].Digest]) != "from-dotenv" {
		t.Errorf("allowed plaintext from .env: secrets %+v, data %q", s, a.SecretData)
	}
}
