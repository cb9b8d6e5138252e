package secrets

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/driftless-dev/driftless/secrets/sopstest"
)

func newAgeKey(t *testing.T) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func encrypt(t *testing.T, name, plain string, ids ...*age.X25519Identity) []byte {
	t.Helper()
	var rs []string
	for _, id := range ids {
		rs = append(rs, id.Recipient().String())
	}
	b, err := sopstest.EncryptAge(name, []byte(plain), rs...)
	if err != nil {
		t.Fatalf("encrypt %s: %v", name, err)
	}
	return b
}

// Each format sops writes decrypts back to what `sops --decrypt` prints,
// with the app's age key, and the ciphertext does not hold the value.
func TestDecryptFormats(t *testing.T) {
	id := newAgeKey(t)
	keys := Keys{AgeIdentities: "# created: test\n" + id.String() + "\n"}
	for _, tc := range []struct{ name, plain, want string }{
		{"db.yaml", "password: s3cret-yaml\nuser: app\n", "password: s3cret-yaml\nuser: app\n"},
		{"db.json", `{"password": "s3cret-json"}`, "{\n\t\"password\": \"s3cret-json\"\n}"},
		{"db.env", "PASSWORD=s3cret-env\nUSER=app\n", "PASSWORD=s3cret-env\nUSER=app\n"},
		{"db-password", "s3cret-binary\n", "s3cret-binary\n"},
	} {
		enc := encrypt(t, tc.name, tc.plain, id)
		if strings.Contains(string(enc), "s3cret") {
			t.Errorf("%s: ciphertext holds the value:\n%s", tc.name, enc)
		}
		if !IsEncrypted(tc.name, enc) || IsEncrypted(tc.name, []byte(tc.plain)) {
			t.Errorf("%s: IsEncrypted wrong", tc.name)
		}
		got, err := Decrypt(tc.name, enc, keys)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if strings.TrimSpace(string(got)) != strings.TrimSpace(tc.want) {
			t.Errorf("%s: decrypted %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The agent-wide key comes from SOPS_AGE_KEY_FILE or SOPS_AGE_KEY, as for
// the sops binary.
func TestDecryptWithEnvironmentKeys(t *testing.T) {
	id := newAgeKey(t)
	enc := encrypt(t, "db-password", "from-env\n", id)
	file := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(file, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOPS_AGE_KEY", "")
	t.Setenv("SOPS_AGE_KEY_FILE", file)
	if got, err := Decrypt("db-password", enc, Keys{}); err != nil || string(got) != "from-env\n" {
		t.Errorf("SOPS_AGE_KEY_FILE: %q, %v", got, err)
	}
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	t.Setenv("SOPS_AGE_KEY", id.String())
	if got, err := Decrypt("db-password", enc, Keys{}); err != nil || string(got) != "from-env\n" {
		t.Errorf("SOPS_AGE_KEY: %q, %v", got, err)
	}
	// The app's own key file, when it is not a recipient, falls back to
	// the environment's.
	other := newAgeKey(t)
	if got, err := Decrypt("db-password", enc, Keys{AgeIdentities: other.String()}); err != nil || string(got) != "from-env\n" {
		t.Errorf("app key not a recipient, env key is: %q, %v", got, err)
	}
}

// Bad input: each a distinct, named refusal.
func TestDecryptRefusals(t *testing.T) {
	t.Setenv("SOPS_AGE_KEY", "")
	t.Setenv("SOPS_AGE_KEY_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("GNUPGHOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	id, wrong := newAgeKey(t), newAgeKey(t)
	enc := encrypt(t, "db.yaml", "password: s3cret\n", id)
	tampered := strings.Replace(string(enc), "password: ENC[AES256_GCM,data:", "password: ENC[AES256_GCM,data:AA", 1)
	if tampered == string(enc) {
		t.Fatal("test setup: nothing tampered")
	}
	for _, tc := range []struct {
		what string
		data []byte
		keys Keys
		want error
	}{
		{"no key at all", enc, Keys{}, ErrNoKey},
		{"the wrong key", enc, Keys{AgeIdentities: wrong.String()}, ErrNoKey},
		{"a tampered value", []byte(tampered), Keys{AgeIdentities: id.String()}, ErrTampered},
		{"a plaintext file", []byte("password: s3cret\n"), Keys{AgeIdentities: id.String()}, ErrNotEncrypted},
		{"garbage key file", enc, Keys{AgeIdentities: "AGE-SECRET-KEY-1NOTAKEY"}, ErrNoKey},
	} {
		got, err := Decrypt("db.yaml", tc.data, tc.keys)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.what, err, tc.want)
		}
		if len(got) != 0 {
			t.Errorf("%s: returned plaintext %q", tc.what, got)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows the value: %v", tc.what, err)
		}
	}
}

// newGnuPGHome makes a GnuPG home with one fresh OpenPGP key (no
// passphrase), with Debian's gpg as users do, and returns its fingerprint.
func newGnuPGHome(t *testing.T) (home, fingerprint string) {
	t.Helper()
	if _, err := exec.LookPath("gpg"); err != nil {
		t.Skip("gpg is not installed (Debian: apt-get install gnupg)")
	}
	// gpg-agent's socket path must be short: a home under /tmp.
	home, err := os.MkdirTemp("", "gnupg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		os.RemoveAll(home)
	})
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	gpg := func(args ...string) string {
		cmd := exec.Command("gpg", append([]string{"--homedir", home, "--batch"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("gpg %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	gpg("--passphrase", "", "--quick-gen-key", "driftless test <secrets@example.com>", "default", "default", "never")
	for _, line := range strings.Split(gpg("--with-colons", "--list-secret-keys"), "\n") {
		if f := strings.Split(line, ":"); len(f) > 9 && f[0] == "fpr" {
			return home, f[9]
		}
	}
	t.Fatal("no fingerprint in gpg's key list")
	return "", ""
}

// OpenPGP: a file encrypted by sops's code path for a key gpg made opens
// with the app's GnuPG home, and with GNUPGHOME, and not without the key.
func TestDecryptOpenPGP(t *testing.T) {
	home, fp := newGnuPGHome(t)
	enc, err := sopstest.EncryptPGP("db.yaml", []byte("password: pgp-s3cret\n"), home, fp)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(enc), "pgp-s3cret") || !strings.Contains(string(enc), fp) {
		t.Fatalf("ciphertext holds the value or lacks the fingerprint:\n%s", enc)
	}
	t.Setenv("SOPS_AGE_KEY", "")
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	t.Setenv("GNUPGHOME", t.TempDir())
	if got, err := Decrypt("db.yaml", enc, Keys{GnuPGHome: home}); err != nil || string(got) != "password: pgp-s3cret\n" {
		t.Errorf("with the app's GnuPG home: %q, %v", got, err)
	}
	if _, err := Decrypt("db.yaml", enc, Keys{}); !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), fp) {
		t.Errorf("with an empty GNUPGHOME: %v, want ErrNoKey naming the fingerprint", err)
	}
	t.Setenv("GNUPGHOME", home)
	if got, err := Decrypt("db.yaml", enc, Keys{}); err != nil || string(got) != "password: pgp-s3cret\n" {
		t.Errorf("with GNUPGHOME: %q, %v", got, err)
	}
}
