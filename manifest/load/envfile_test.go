package load_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// envFromApp is a native service that takes every key of app.env as an
// environment variable.
const envFromApp = loadtest.Svc + "  image: web:1\n  secrets:\n    - {name: app, file: app.env}\n  envFrom:\n    - secret: app\n"

const envFileApp = "services:\n  web:\n    image: shop/web:1\n    env_file: [app.env]\n"

// A dotenv secret means the same through native envFrom as through
// compose's env_file: compose-go's parser reads both (quotes and escapes
// removed, export and comments dropped, ${VAR} from the file's earlier
// variables).
func TestEnvFromReadsDotenvAsComposeEnvFile(t *testing.T) {
	for _, tc := range []struct {
		text string
		want map[string]string
	}{
		{`A="x"`, map[string]string{"A": "x"}},
		{`A='x y'`, map[string]string{"A": "x y"}},
		{"A=x # a comment\n# B=1\n", map[string]string{"A": "x"}},
		{"export A=1\n", map[string]string{"A": "1"}},
		{`A="one\ntwo"`, map[string]string{"A": "one\ntwo"}},
		{"B=b\nA=${B}-$B\n", map[string]string{"A": "b-b", "B": "b"}},
		{"A: yaml style\n", map[string]string{"A": "yaml style"}},
		{"A=\"multi\nline\"\nB='single $x'\n", map[string]string{"A": "multi\nline", "B": "single $x"}},
	} {
		for _, enc := range []string{"ENC:", ""} {
			native, err := loadtest.LoadSecretApp(t, map[string]string{"web.yaml": envFromApp, "app.env": enc + tc.text}, load.Options{Decrypt: loadtest.FakeDecrypt, AllowPlaintext: enc == ""})
			if err != nil {
				t.Fatalf("native %q: %v", tc.text, err)
			}
			compose, err := loadtest.LoadComposeFiles(t, map[string]string{"compose.yaml": envFileApp, "app.env": enc + tc.text}, load.Options{Decrypt: loadtest.FakeDecrypt})
			if err != nil {
				t.Fatalf("compose %q: %v", tc.text, err)
			}
			n, c := native.Services[0].Spec.Env, compose.Service("web").Spec.Env
			if !maps.Equal(n, c) || !maps.Equal(n, tc.want) {
				t.Errorf("%q (%q): envFrom %q, env_file %q, want %q", tc.text, enc, n, c, tc.want)
			}
		}
	}
}

// A key a secret or a decrypted env file sets twice is refused, at the
// line of the second where the file is plaintext or sops says where (the
// committed file's line); a decrypted file's own lines are only named, at
// the declaration. A plain env_file is only warned about (see
// TestPlainEnvFileKeySetTwice).
func TestDotenvKeySetTwice(t *testing.T) {
	keyErrorDecrypt := func(string, []byte) ([]byte, error) {
		return nil, &load.KeyError{Key: "DB_PASSWORD", First: 1, Line: 7}
	}
	for _, tc := range []struct {
		what    string
		files   map[string]string
		opts    load.Options
		want    string
		compose bool
	}{
		{"envFrom, plaintext", map[string]string{"web.yaml": envFromApp, "app.env": "DB_PASSWORD=real\nDB_PASSWORD=\n"}, load.Options{AllowPlaintext: true},
			`app.env:2: spec.secrets[0].file: secret "app": key "DB_PASSWORD" is set twice (lines 1 and 2): a file may set each key once; remove one`, false},
		{"envFrom, export and one line", map[string]string{"web.yaml": envFromApp, "app.env": "X=1\nA=\"x\" export_B=2\nexport A=3\n"}, load.Options{AllowPlaintext: true},
			`app.env:3: spec.secrets[0].file: secret "app": key "A" is set twice (lines 2 and 3)`, false},
		{"envFrom, two on one line", map[string]string{"web.yaml": envFromApp, "app.env": "A=\"x\" A=y\n"}, load.Options{AllowPlaintext: true},
			`app.env:1: spec.secrets[0].file: secret "app": key "A" is set twice (lines 1 and 1)`, false},
		{"envFrom, decrypted", map[string]string{"web.yaml": envFromApp, "app.env": "ENC:DB_PASSWORD=real\nDB_PASSWORD=\n"}, load.Options{Decrypt: loadtest.FakeDecrypt},
			`web.yaml:8:25: spec.secrets[0].file: secret "app": app.env: decrypted, key "DB_PASSWORD" is set twice (lines 1 and 2)`, false},
		{"envFrom, sops says where", map[string]string{"web.yaml": envFromApp, "app.env": "x"}, load.Options{Decrypt: keyErrorDecrypt},
			`app.env:7: spec.secrets[0].file: secret "app": key "DB_PASSWORD" is set twice (lines 1 and 7)`, false},
		{"env_file, decrypted", map[string]string{"compose.yaml": envFileApp, "app.env": "ENC:DB_PASSWORD=real\nDB_PASSWORD=\n"}, load.Options{Decrypt: loadtest.FakeDecrypt},
			`compose.yaml:4:16: services.web.env_file[0]: env file "app.env", decrypted: key "DB_PASSWORD" is set twice (lines 1 and 2)`, true},
		{"env_file, sops says where", map[string]string{"compose.yaml": envFileApp, "app.env": "x"}, load.Options{Decrypt: keyErrorDecrypt},
			`app.env:7: services.web.env_file[0]: env file "app.env": key "DB_PASSWORD" is set twice (lines 1 and 7)`, true},
	} {
		var err error
		if tc.compose {
			_, err = loadtest.LoadComposeFiles(t, tc.files, tc.opts)
		} else {
			_, err = loadtest.LoadSecretApp(t, tc.files, tc.opts)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v\nwant it to contain %q", tc.what, err, tc.want)
		}
	}
}

// A plain env_file that sets a key twice (Leantime's example .env does)
// is read as compose reads it, the later value counting, with a warning
// at the second line.
func TestPlainEnvFileKeySetTwice(t *testing.T) {
	a, err := loadtest.LoadComposeFiles(t, map[string]string{"compose.yaml": envFileApp, "app.env": "DB_PASSWORD=real\nPORT=80\nDB_PASSWORD=later\n"}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Service("web").Spec.Env["DB_PASSWORD"]; got != "later" {
		t.Errorf("DB_PASSWORD = %q, want the later value", got)
	}
	want := `app.env:3: services.web.env_file[0]: key "DB_PASSWORD" is set twice (lines 1 and 3): the later value counts, as in compose`
	if a.Warnings == nil || !strings.Contains(a.Warnings.Error(), want) {
		t.Errorf("warnings %v, want %q", a.Warnings, want)
	}
}

// Lines that only look like KEY= inside a quoted value are not keys; a
// decrypted file's parse errors do not quote its text.
func TestDotenvStatementsInsideValues(t *testing.T) {
	vars, setTwice, err := load.ReadDotenv([]byte("A=1\nB=\"\nA=2\n\"\nC='x\nA=3'\n"), nil)
	if err != nil || setTwice != nil || vars["A"] != "1" || vars["B"] != "\nA=2\n" {
		t.Errorf("quoted lines read as keys: %v %v", vars, err)
	}
	_, err = loadtest.LoadSecretApp(t, map[string]string{"web.yaml": envFromApp, "app.env": "ENC:A=\"s3cret-unterminated\n"}, load.Options{Decrypt: loadtest.FakeDecrypt})
	if err == nil || !strings.Contains(err.Error(), ": unterminated quoted value") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a decrypted file's error: %v", err)
	}
	_, err = loadtest.LoadSecretApp(t, map[string]string{"web.yaml": envFromApp, "app.env": "A=1\n=x\n"}, load.Options{AllowPlaintext: true})
	if err == nil || !strings.Contains(err.Error(), "app.env:2: spec.secrets[0].file: secret \"app\": a variable without a name") {
		t.Errorf("a statement without a key: %v", err)
	}
}
