package config

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func TestLoadConfigReadsVerifyKeysRelativeToTheFile(t *testing.T) {
	dir := t.TempDir()
	pub, _, _ := ed25519.GenerateKey(nil)
	key, _ := ssh.NewPublicKey(pub)
	os.MkdirAll(filepath.Join(dir, "keys"), 0o700)
	os.WriteFile(filepath.Join(dir, "keys", "allowed_signers"), []byte("alice@example.com "+string(ssh.MarshalAuthorizedKey(key))), 0o600)
	path := filepath.Join(dir, "driftless.yaml")
	os.WriteFile(path, []byte(`
apps:
  - name: shop
    repo: https://git.example.com/infra.git
    verify:
      sshAllowedSigners: keys/allowed_signers
  - name: blog
    repo: https://git.example.com/infra.git
`), 0o600)
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Apps[0].Verify == nil {
		t.Error("shop: verify is off, want on")
	}
	if cfg.Apps[1].Verify != nil {
		t.Error("blog: verify is on without a verify key")
	}
}

func TestLoadConfigVerifyErrorsNameTheKeyFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.asc"), []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nnope\n"), 0o600)
	for _, tc := range []struct {
		name, verify, want string
	}{
		{"missing signers file", "sshAllowedSigners: nope", "apps[0] (shop): verify: allowed signers file: open " + filepath.Join(dir, "nope")},
		{"unparseable key", "openpgpKeys: [bad.asc]", "verify: OpenPGP key file " + filepath.Join(dir, "bad.asc") + ": not a public key"},
		{"no keys", "{}", "verify: no keys"},
		{"unknown key", "sshAllowedSigner: x", `unknown field "sshAllowedSigner"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "driftless.yaml")
			os.WriteFile(path, []byte("apps:\n  - name: shop\n    repo: r\n    verify: "+indent(tc.verify)+"\n"), 0o600)
			_, err := LoadConfig(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// indent puts a one-key mapping on its own line under "verify:".
func indent(s string) string {
	if strings.HasPrefix(s, "{") {
		return s
	}
	return "\n      " + s
}

// allowedSignersFile is an allowed_signers file with a throwaway key, to
// turn verify on in a config.
func allowedSignersFile(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(file, []byte("alice@example.com "+string(ssh.MarshalAuthorizedKey(key))), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
