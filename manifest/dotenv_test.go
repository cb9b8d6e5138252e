package manifest

import (
	"bytes"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/dotenv"
)

// envFromApp is a native service that takes every key of app.env as an
// environment variable.
const envFromApp = svc + "  image: web:1\n  secrets:\n    - {name: app, file: app.env}\n  envFrom:\n    - secret: app\n"

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
			native, err := loadSecretApp(t, map[string]string{"web.yaml": envFromApp, "app.env": enc + tc.text}, LoadOptions{Decrypt: fakeDecrypt, AllowPlaintext: enc == ""})
			if err != nil {
				t.Fatalf("native %q: %v", tc.text, err)
			}
			compose, err := loadComposeFiles(t, map[string]string{"compose.yaml": envFileApp, "app.env": enc + tc.text}, LoadOptions{Decrypt: fakeDecrypt})
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

// A key set twice is refused, at the line of the second where the file
// is plaintext or sops says where (the committed file's line); a
// decrypted file's own lines are only named, at the declaration.
func TestDotenvKeySetTwice(t *testing.T) {
	keyErrorDecrypt := func(string, []byte) ([]byte, error) {
		return nil, &KeyError{Key: "DB_PASSWORD", First: 1, Line: 7}
	}
	for _, tc := range []struct {
		what    string
		files   map[string]string
		opts    LoadOptions
		want    string
		compose bool
	}{
		{"envFrom, plaintext", map[string]string{"web.yaml": envFromApp, "app.env": "DB_PASSWORD=real\nDB_PASSWORD=\n"}, LoadOptions{AllowPlaintext: true},
			`app.env:2: spec.secrets[0].file: secret "app": key "DB_PASSWORD" is set twice (lines 1 and 2): a file may set each key once; remove one`, false},
		{"envFrom, export and one line", map[string]string{"web.yaml": envFromApp, "app.env": "X=1\nA=\"x\" export_B=2\nexport A=3\n"}, LoadOptions{AllowPlaintext: true},
			`app.env:3: spec.secrets[0].file: secret "app": key "A" is set twice (lines 2 and 3)`, false},
		{"envFrom, two on one line", map[string]string{"web.yaml": envFromApp, "app.env": "A=\"x\" A=y\n"}, LoadOptions{AllowPlaintext: true},
			`app.env:1: spec.secrets[0].file: secret "app": key "A" is set twice (lines 1 and 1)`, false},
		{"envFrom, decrypted", map[string]string{"web.yaml": envFromApp, "app.env": "ENC:DB_PASSWORD=real\nDB_PASSWORD=\n"}, LoadOptions{Decrypt: fakeDecrypt},
			`web.yaml:8:25: spec.secrets[0].file: secret "app": app.env: decrypted, key "DB_PASSWORD" is set twice (lines 1 and 2)`, false},
		{"envFrom, sops says where", map[string]string{"web.yaml": envFromApp, "app.env": "x"}, LoadOptions{Decrypt: keyErrorDecrypt},
			`app.env:7: spec.secrets[0].file: secret "app": key "DB_PASSWORD" is set twice (lines 1 and 7)`, false},
		{"env_file, plaintext", map[string]string{"compose.yaml": envFileApp, "app.env": "DB_PASSWORD=real\n\nDB_PASSWORD=\n"}, LoadOptions{},
			`app.env:3: services.web.env_file[0]: key "DB_PASSWORD" is set twice (lines 1 and 3)`, true},
		{"env_file, decrypted", map[string]string{"compose.yaml": envFileApp, "app.env": "ENC:DB_PASSWORD=real\nDB_PASSWORD=\n"}, LoadOptions{Decrypt: fakeDecrypt},
			`compose.yaml:4:16: services.web.env_file[0]: env file "app.env", decrypted: key "DB_PASSWORD" is set twice (lines 1 and 2)`, true},
		{"env_file, sops says where", map[string]string{"compose.yaml": envFileApp, "app.env": "x"}, LoadOptions{Decrypt: keyErrorDecrypt},
			`app.env:7: services.web.env_file[0]: env file "app.env": key "DB_PASSWORD" is set twice (lines 1 and 7)`, true},
	} {
		var err error
		if tc.compose {
			_, err = loadComposeFiles(t, tc.files, tc.opts)
		} else {
			_, err = loadSecretApp(t, tc.files, tc.opts)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v\nwant it to contain %q", tc.what, err, tc.want)
		}
	}
}

// Lines that only look like KEY= inside a quoted value are not keys; a
// decrypted file's parse errors do not quote its text.
func TestDotenvStatementsInsideValues(t *testing.T) {
	vars, err := readDotenv([]byte("A=1\nB=\"\nA=2\n\"\nC='x\nA=3'\n"), nil)
	if err != nil || vars["A"] != "1" || vars["B"] != "\nA=2\n" {
		t.Errorf("quoted lines read as keys: %v %v", vars, err)
	}
	_, err = loadSecretApp(t, map[string]string{"web.yaml": envFromApp, "app.env": "ENC:A=\"s3cret-unterminated\n"}, LoadOptions{Decrypt: fakeDecrypt})
	if err == nil || !strings.Contains(err.Error(), ": unterminated quoted value") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a decrypted file's error: %v", err)
	}
	_, err = loadSecretApp(t, map[string]string{"web.yaml": envFromApp, "app.env": "A=1\n=x\n"}, LoadOptions{AllowPlaintext: true})
	if err == nil || !strings.Contains(err.Error(), "app.env:2: spec.secrets[0].file: secret \"app\": a variable without a name") {
		t.Errorf("a statement without a key: %v", err)
	}
}

// FuzzReadDotenv: whatever readDotenv accepts, compose-go reads the same
// way; every statement it found is one compose-go read (the walk matches
// the parser); and a KEY= appended for any key it returned is refused as
// set twice.
func FuzzReadDotenv(f *testing.F) {
	for _, s := range []string{"A=1\nB=\"x\ny\"\n", "export A='q'  # c\n", "A=\"x\" B=2", "A\nB:c\n", "\ufeffA=1\r\n", "A=\"\\\"\" B='\\''\n", "#x\n  A = ${B:-d}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		lookup := func(k string) (string, bool) { return "v-" + k, k != "UNSET" }
		vars, err := readDotenv([]byte(text), lookup)
		if err != nil {
			return
		}
		want, err := dotenv.ParseWithLookup(strings.NewReader(text), lookup)
		if err != nil || !maps.Equal(vars, want) {
			t.Fatalf("compose-go reads %q as %v (%v), readDotenv as %v", text, want, err, vars)
		}
		src := string(bytes.TrimPrefix([]byte(text), []byte("\xef\xbb\xbf")))
		stmts, err := dotenvStatements(src)
		if err != nil {
			t.Fatal(err)
		}
		if kept, err := confirmStatements(src, slicesClone(stmts)); err != nil || len(kept) != len(stmts) {
			t.Fatalf("the walk found %d statements in %q, the parser read %d (%v)", len(stmts), text, len(kept), err)
		}
		for k := range vars {
			_, err := readDotenv([]byte(text+"\n"+k+"="), lookup)
			var bad *KeyError
			if !errors.As(err, &bad) || bad.Key != k {
				t.Fatalf("%q with %s= appended: %v, want it set twice", text, k, err)
			}
		}
	})
}

func slicesClone(s []dotenvStatement) []dotenvStatement { return append([]dotenvStatement(nil), s...) }
