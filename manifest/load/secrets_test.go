package load_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

const secretSvc = loadtest.Svc + "  image: web:1\n  secrets:\n    - name: db-password\n      file: secrets/db-password\n  envFrom:\n    - secret: db-password\n"

func TestSecretsFromEncryptedFiles(t *testing.T) {
	opts := load.Options{SecretKey: manifest.SecretKey("k"), Decrypt: loadtest.FakeDecrypt}
	a, err := loadtest.LoadSecretApp(t, map[string]string{"web.yaml": secretSvc, "secrets/db-password": "ENC:hunter2"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := a.Services[0].Spec
	if s.Env["DB_PASSWORD"] != "hunter2" || !s.IsSecretEnv("DB_PASSWORD") {
		t.Fatalf("env %v secretEnv %v: want DB_PASSWORD from the secret, secret", s.Env, s.SecretEnv)
	}
	if s.Secrets[0].Digest != manifest.SecretKey("k").Digest("hunter2") {
		t.Errorf("digest %q is not the keyed digest of the plaintext", s.Secrets[0].Digest)
	}
	// Rotation: a changed secret changes the hash; the same one does not.
	same, _ := loadtest.LoadSecretApp(t, map[string]string{"web.yaml": secretSvc, "secrets/db-password": "ENC:hunter2"}, opts)
	rotated, err := loadtest.LoadSecretApp(t, map[string]string{"web.yaml": secretSvc, "secrets/db-password": "ENC:correct-horse"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if same.Services[0].Hash != a.Services[0].Hash || rotated.Services[0].Hash == a.Services[0].Hash {
		t.Errorf("hash: same secret %s/%s, rotated %s: a rotation must roll the service, nothing else", a.Services[0].Hash, same.Services[0].Hash, rotated.Services[0].Hash)
	}
	red := s.Redacted(manifest.SecretKey("k"))
	if strings.Contains(red.Env["DB_PASSWORD"], "hunter2") {
		t.Error("redacted spec shows the value")
	}
}

// A secret is a file by default: at /run/secrets/NAME, mode 0444, its
// decrypted value kept in memory by its keyed digest, not in the
// environment unless envFrom asks.
func TestSecretFileDelivery(t *testing.T) {
	m := loadtest.Svc + "  image: web:1\n  secrets:\n    - {name: tls-key, file: tls.key}\n    - {name: db, file: db.yaml, key: password, target: /etc/db/pw, uid: \"999\", gid: \"999\", mode: 0400}\n"
	key := manifest.SecretKey("k")
	a, err := loadtest.LoadSecretApp(t, map[string]string{"web.yaml": m, "tls.key": "ENC:-----KEY-----\n", "db.yaml": "ENC:password: pw\nuser: u\nsops:\n    mac: ENC[x]\n"},
		load.Options{Decrypt: loadtest.FakeDecrypt, SecretKey: key})
	if err != nil {
		t.Fatal(err)
	}
	spec := a.Services[0].Spec
	if len(spec.Env) != 0 {
		t.Errorf("file-only secrets reached the environment: %v", spec.Env)
	}
	want := []manifest.SecretRef{
		{Name: "tls-key", File: "tls.key", Target: "/run/secrets/tls-key", Mode: 0o444, Digest: key.Digest("-----KEY-----\n")},
		{Name: "db", File: "db.yaml", Key: "password", Target: "/etc/db/pw", UID: "999", GID: "999", Mode: 0o400, Digest: key.Digest("pw")},
	}
	if !reflect.DeepEqual(spec.Secrets, want) {
		t.Errorf("secrets = %+v\nwant %+v", spec.Secrets, want)
	}
	for _, r := range want {
		if _, ok := a.SecretData[r.Digest]; !ok {
			t.Errorf("no data for %s", r.Name)
		}
	}
	if string(a.SecretData[key.Digest("pw")]) != "pw" || string(a.SecretData[key.Digest("-----KEY-----\n")]) != "-----KEY-----\n" {
		t.Errorf("secret data = %q", a.SecretData)
	}
	b, _ := json.Marshal(a)
	if strings.Contains(string(b), "KEY-----") || strings.Contains(string(b), `"pw"`) {
		t.Errorf("the app's JSON holds a value: %s", b)
	}
}

// A plaintext file is refused unless the secret or the app allows it;
// allowed, it is delivered as it is.
func TestSecretPlaintextAllowed(t *testing.T) {
	files := map[string]string{"web.yaml": loadtest.Svc + "  image: web:1\n  secrets: [{name: a, file: a.txt}]\n", "a.txt": "plain\n"}
	if _, err := loadtest.LoadSecretApp(t, files, load.Options{Decrypt: loadtest.FakeDecrypt}); err == nil || !strings.Contains(err.Error(), "not SOPS-encrypted") {
		t.Fatalf("plaintext: %v", err)
	}
	a, err := loadtest.LoadSecretApp(t, files, load.Options{Decrypt: loadtest.FakeDecrypt, AllowPlaintext: true})
	if err != nil || string(a.SecretData[a.Services[0].Spec.Secrets[0].Digest]) != "plain\n" {
		t.Fatalf("app allows plaintext: %v", err)
	}
	files["web.yaml"] = loadtest.Svc + "  image: web:1\n  secrets: [{name: a, file: a.txt, allowPlaintext: true}]\n"
	if _, err := loadtest.LoadSecretApp(t, files, load.Options{Decrypt: loadtest.FakeDecrypt}); err != nil {
		t.Fatalf("secret allows plaintext: %v", err)
	}
	// Allowed plaintext is no reason to accept a file that does not open.
	files["a.txt"] = "LOCKED:x"
	if _, err := loadtest.LoadSecretApp(t, files, load.Options{Decrypt: loadtest.FakeDecrypt}); err == nil || !strings.Contains(err.Error(), "no available key") {
		t.Fatalf("locked with allowPlaintext: %v", err)
	}
}

func TestSecretKeysOfStructuredFiles(t *testing.T) {
	m := loadtest.Svc + "  image: web:1\n  secrets:\n    - {name: db, file: db.env}\n    - {name: api-token, file: api.yaml, key: token}\n  envFrom:\n    - secret: db\n    - secret: api-token\n"
	a, err := loadtest.LoadSecretApp(t, map[string]string{"web.yaml": m, "db.env": "ENC:PGUSER=app\nPGPASSWORD=pw\n", "api.yaml": "ENC:token: t0k\nother: x\nsops:\n    mac: ENC[x]\n"},
		load.Options{Decrypt: loadtest.FakeDecrypt})
	if err != nil {
		t.Fatal(err)
	}
	env := a.Services[0].Spec.Env
	if env["PGUSER"] != "app" || env["PGPASSWORD"] != "pw" || env["API_TOKEN"] != "t0k" || env["OTHER"] != "" {
		t.Errorf("env = %v", env)
	}
}

// Every failure names the manifest position, the file and what to do.
func TestSecretRefusals(t *testing.T) {
	for _, tc := range []struct {
		what  string
		files map[string]string
		opts  load.Options
		want  string
	}{
		{"wrong key", map[string]string{"web.yaml": secretSvc, "secrets/db-password": "LOCKED:x"}, load.Options{Decrypt: loadtest.FakeDecrypt},
			`web.yaml:9:13: spec.secrets[0].file: secret "db-password": secrets/db-password: no available key can decrypt it; fix the file or the app's keys`},
		{"file absent", map[string]string{"web.yaml": secretSvc}, load.Options{Decrypt: loadtest.FakeDecrypt},
			`secret "db-password": cannot read secrets/db-password: file does not exist`},
		{"no decryption", map[string]string{"web.yaml": secretSvc, "secrets/db-password": "ENC:x"}, load.Options{},
			"no decryption is configured"},
		{"leaves the app", map[string]string{"web.yaml": strings.Replace(secretSvc, "file: secrets/db-password", "file: ../x", 1)}, load.Options{Decrypt: loadtest.FakeDecrypt},
			"leaves the app directory"},
		{"undeclared envFrom", map[string]string{"web.yaml": loadtest.Svc + "  image: web:1\n  envFrom: [{secret: nope}]\n"}, load.Options{Decrypt: loadtest.FakeDecrypt},
			`secret "nope" is not declared in spec.secrets`},
		{"plaintext", map[string]string{"web.yaml": secretSvc, "secrets/db-password": "hunter2"}, load.Options{Decrypt: loadtest.FakeDecrypt},
			`secret "db-password": secrets/db-password is not SOPS-encrypted, and secrets in Git must be: encrypt it (sops --encrypt --in-place FILE), or accept it as it is with allowPlaintext: true`},
		{"relative target", map[string]string{"web.yaml": loadtest.Svc + "  image: web:1\n  secrets: [{name: a, file: a, target: run/a}]\n", "a": "ENC:x"}, load.Options{Decrypt: loadtest.FakeDecrypt},
			`web.yaml:7:40: spec.secrets[0].target: "run/a" must be a clean absolute path in the container`},
		{"owner by name", map[string]string{"web.yaml": loadtest.Svc + "  image: web:1\n  secrets: [{name: a, file: a, uid: postgres}]\n", "a": "ENC:x"}, load.Options{Decrypt: loadtest.FakeDecrypt},
			`spec.secrets[0].uid: "postgres" must be a number`},
		{"mode too wide", map[string]string{"web.yaml": loadtest.Svc + "  image: web:1\n  secrets: [{name: a, file: a, mode: 04755}]\n", "a": "ENC:x"}, load.Options{Decrypt: loadtest.FakeDecrypt},
			`spec.secrets[0].mode: 04755 has bits beyond 0777`},
		{"one target twice", map[string]string{"web.yaml": loadtest.Svc + "  image: web:1\n  secrets: [{name: a, file: a, target: /run/secrets/b}, {name: b, file: a}]\n", "a": "ENC:x"}, load.Options{Decrypt: loadtest.FakeDecrypt},
			`spec.secrets[1].target: /run/secrets/b is already the target of spec.secrets[0]`},
		{"missing key", map[string]string{"web.yaml": strings.Replace(secretSvc, "file: secrets/db-password", "file: s.yaml\n      key: nope", 1), "s.yaml": "ENC:a: b\nsops:\n    mac: ENC[x]\n"}, load.Options{Decrypt: loadtest.FakeDecrypt},
			`key "nope" is not in the file (it has: a)`},
		{"clash with env", map[string]string{"web.yaml": strings.Replace(secretSvc, "image: web:1\n", "image: web:1\n  env: {DB_PASSWORD: x}\n", 1), "secrets/db-password": "ENC:y"}, load.Options{Decrypt: loadtest.FakeDecrypt},
			"sets DB_PASSWORD, which spec.env (or another secret) sets too"},
	} {
		_, err := loadtest.LoadSecretApp(t, tc.files, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v\nwant it to contain %q", tc.what, err, tc.want)
		}
	}
}

// A plaintext YAML secret in the app directory is judged as a secret, not
// parsed as a manifest (which would bury the real problem under
// "apiVersion: is required").
func TestPlaintextYAMLSecretIsNotAManifest(t *testing.T) {
	files := map[string]string{"web.yaml": loadtest.Svc + "  image: web:1\n  secrets: [{name: db, file: secrets/db.yaml, key: password}]\n", "secrets/db.yaml": "password: pw\n"}
	_, err := loadtest.LoadSecretApp(t, files, load.Options{Decrypt: loadtest.FakeDecrypt})
	if err == nil || strings.Contains(err.Error(), "apiVersion") || !strings.Contains(err.Error(), "secrets/db.yaml is not SOPS-encrypted") {
		t.Fatalf("err = %v", err)
	}
	a, err := loadtest.LoadSecretApp(t, files, load.Options{Decrypt: loadtest.FakeDecrypt, AllowPlaintext: true})
	if err != nil || len(a.Services) != 1 || string(a.SecretData[a.Services[0].Spec.Secrets[0].Digest]) != "pw" {
		t.Fatalf("allowed: %v", err)
	}
}
