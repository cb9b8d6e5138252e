package gitserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Signing keys for commits, made by the real tools (ssh-keygen, gpg) so
// tests sign exactly as users do with `git commit -S`.

// SSHSigner is an SSH key pair that signs commits (git gpg.format=ssh).
type SSHSigner struct {
	KeyFile   string // private key, no passphrase
	PublicKey string // "ssh-ed25519 AAAA... comment"
}

// NewSSHSigner makes a key of keyType ("ed25519", "rsa", "ecdsa").
func NewSSHSigner(t testing.TB, keyType string) SSHSigner {
	t.Helper()
	tool(t, "ssh-keygen", "openssh-client")
	key := filepath.Join(t.TempDir(), "id_"+keyType)
	run(t, nil, "ssh-keygen", "-q", "-t", keyType, "-N", "", "-C", "signer-"+keyType, "-f", key)
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return SSHSigner{KeyFile: key, PublicKey: strings.TrimSpace(string(pub))}
}

// AllowedSigner is the key's allowed_signers line for principal, with
// options ("" or e.g. `namespaces="git"`).
func (s SSHSigner) AllowedSigner(principal, options string) string {
	if options != "" {
		options += " "
	}
	return principal + " " + options + s.PublicKey + "\n"
}

// GitConfig is the git configuration that signs with this key.
func (s SSHSigner) GitConfig() map[string]string {
	return map[string]string{"gpg.format": "ssh", "user.signingkey": s.KeyFile}
}

// GPGSigner is an OpenPGP key in its own GNUPGHOME.
type GPGSigner struct {
	Home        string
	Fingerprint string
	PublicKey   string // armored export
	program     string // gpg with GNUPGHOME set, for git's gpg.program
}

// NewGPGSigner makes an ed25519 signing key for "name <email>" in a new
// GNUPGHOME; its gpg-agent is stopped when the test ends.
func NewGPGSigner(t testing.TB, name, email string) GPGSigner {
	t.Helper()
	gpg := tool(t, "gpg", "gnupg")
	// A short path: gpg-agent's socket path must fit in 108 bytes.
	home, err := os.MkdirTemp("", "gpg")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"GNUPGHOME=" + home}
	t.Cleanup(func() {
		if gpgconf, err := exec.LookPath("gpgconf"); err == nil {
			cmd := exec.Command(gpgconf, "--kill", "all")
			cmd.Env = append(os.Environ(), env...)
			_ = cmd.Run()
		}
		os.RemoveAll(home)
	})
	run(t, env, gpg, "--batch", "--quiet", "--passphrase", "", "--quick-gen-key", name+" <"+email+">", "ed25519", "sign", "never")
	var fpr string
	for line := range strings.Lines(run(t, env, gpg, "--batch", "--with-colons", "--list-keys", email)) {
		if f := strings.Split(line, ":"); len(f) > 9 && f[0] == "fpr" {
			fpr = f[9]
			break
		}
	}
	if fpr == "" {
		t.Fatal("gpg: no fingerprint for the new key")
	}
	pub := run(t, env, gpg, "--batch", "--armor", "--export", fpr)
	program := filepath.Join(home, "gpg.sh")
	script := "#!/bin/sh\nGNUPGHOME='" + home + "' exec '" + gpg + "' \"$@\"\n"
	if err := os.WriteFile(program, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return GPGSigner{Home: home, Fingerprint: fpr, PublicKey: pub, program: program}
}

// GitConfig is the git configuration that signs with this key.
func (g GPGSigner) GitConfig() map[string]string {
	return map[string]string{"gpg.format": "openpgp", "gpg.program": g.program, "user.signingkey": g.Fingerprint}
}

// SignWith makes later commits of the working clone signed with cfg (a
// signer's GitConfig), or unsigned when cfg is nil.
func (r *Repo) SignWith(cfg map[string]string) {
	r.t.Helper()
	if cfg == nil {
		r.Git("config", "commit.gpgsign", "false")
		return
	}
	r.Git("config", "commit.gpgsign", "true")
	for k, v := range cfg {
		r.Git("config", k, v)
	}
}

// RawCommit is the commit object as git stores it.
func (r *Repo) RawCommit(sha string) []byte {
	r.t.Helper()
	return []byte(run(r.t, nil, "git", "-C", r.Work, "cat-file", "commit", sha))
}

// tool finds a binary or fails the test naming the Debian package.
func tool(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: install the %s package (.ci/run does)", name, pkg)
	}
	return p
}

func run(t testing.TB, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
	}
	return string(out)
}
