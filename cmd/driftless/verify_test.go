package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
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
		fs := newFlags("run", "run", "", &bytes.Buffer{})
		var f runFlags
		f.register(fs, true)
		if _, err := parseFlags(fs, tc.args); err != nil {
			t.Fatal(err)
		}
		_, err := f.toConfig()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}
