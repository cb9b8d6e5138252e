package main

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"golang.org/x/crypto/ssh"

	"github.com/driftless-dev/driftless/sync/config"
)

func TestVerifyFlagsReadTheKeysAtStartup(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "allowed_signers")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--repo", "https://h/x.git", "--verify-ssh-allowed-signers", missing}, "allowed signers file: open " + missing},
		{[]string{"--repo", "https://h/x.git", "--verify-openpgp-keys", missing + ",  "}, "OpenPGP key file: open " + missing},
		{[]string{"--config", "driftless.yaml", "--verify-openpgp-keys", missing}, "with --config, set verify: per app"},
	} {
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		var f runFlags
		f.register(fs, true)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		_, err := f.toConfig()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}

// TestOnForcePushFlagDefaultsWithVerify: --on-force-push left out stays
// unset, so the app's default applies (refuse with --verify-*, follow
// without); given, it is kept; with --config it is an error.
func TestOnForcePushFlagDefaultsWithVerify(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	signers := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(signers, []byte("alice@example.com "+string(ssh.MarshalAuthorizedKey(key))), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) (config.AppConfig, error) {
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		var f runFlags
		f.register(fs, true)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.toConfig()
		if err != nil {
			return config.AppConfig{}, err
		}
		return cfg.Apps[0], nil
	}
	app, err := parse("--repo", "https://h/x.git", "--verify-ssh-allowed-signers", signers)
	if err != nil || app.Verify == nil || app.OnForcePush != "" {
		t.Errorf("--verify-* alone: %v, verify %v, onForcePush %q; want verify on and onForcePush left to its default", err, app.Verify != nil, app.OnForcePush)
	}
	app, err = parse("--repo", "https://h/x.git", "--verify-ssh-allowed-signers", signers, "--on-force-push", "follow")
	if err != nil || app.OnForcePush != config.ForcePushFollow {
		t.Errorf("--on-force-push follow: %v, onForcePush %q", err, app.OnForcePush)
	}
	if _, err := parse("--config", "driftless.yaml", "--on-force-push", "follow"); err == nil || !strings.Contains(err.Error(), "set allowInsecureTransport and onForcePush on each app") {
		t.Errorf("--config with --on-force-push follow: %v, want it refused", err)
	}
}
