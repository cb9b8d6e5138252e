package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
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
