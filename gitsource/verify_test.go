package gitsource_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/gitsource"
)

// signingRig is a repository and the keys the verifier tests sign with,
// all made by the real git, ssh-keygen and gpg.
type signingRig struct {
	repo                          *gitserver.Repo
	ed, rsa, ecdsa, stranger, old gitserver.SSHSigner
	scoped                        gitserver.SSHSigner
	gpg, gpgStranger              gitserver.GPGSigner
	signersFile, keysFile         string
	verifier                      *gitsource.Verifier
}

func newSigningRig(t *testing.T) *signingRig {
	t.Helper()
	r := &signingRig{
		repo:     gitserver.Init(t, t.TempDir(), "signed"),
		ed:       gitserver.NewSSHSigner(t, "ed25519"),
		rsa:      gitserver.NewSSHSigner(t, "rsa"),
		ecdsa:    gitserver.NewSSHSigner(t, "ecdsa"),
		stranger: gitserver.NewSSHSigner(t, "ed25519"),
		old:      gitserver.NewSSHSigner(t, "ed25519"),
		scoped:   gitserver.NewSSHSigner(t, "ed25519"),
		gpg:      gitserver.NewGPGSigner(t, "Test", "t@example.com"),
	}
	r.gpgStranger = gitserver.NewGPGSigner(t, "Mallory", "m@example.com")
	dir := t.TempDir()
	r.signersFile = filepath.Join(dir, "allowed_signers")
	signers := "# who may sign deployments\n" +
		r.ed.AllowedSigner("alice@example.com", "") +
		r.rsa.AllowedSigner("bob@example.com", `namespaces="git"`) +
		r.old.AllowedSigner("carol@example.com", `valid-before="20200101Z"`) +
		r.scoped.AllowedSigner("dave@example.com", `namespaces="file"`) +
		r.ecdsa.AllowedSigner("erin@example.com", `namespaces="*,!file"`)
	writeFile(t, r.signersFile, signers)
	r.keysFile = filepath.Join(dir, "trusted.asc")
	writeFile(t, r.keysFile, r.gpg.PublicKey)
	v, err := gitsource.NewVerifier(gitsource.VerifyConfig{OpenPGPKeys: []string{r.keysFile}, SSHAllowedSigners: r.signersFile})
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	r.verifier = v
	return r
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// commit makes a commit signed with cfg (nil: unsigned) and returns its
// SHA and raw object.
func (r *signingRig) commit(msg string, cfg map[string]string) (string, []byte) {
	r.repo.SignWith(cfg)
	r.repo.WriteFile("web.yaml", msg+"\n")
	sha := r.repo.Commit(msg)
	return sha, r.repo.RawCommit(sha)
}

func fingerprint(t *testing.T, s gitserver.SSHSigner) string {
	t.Helper()
	k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(s.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return ssh.FingerprintSHA256(k)
}

// withSignature puts an armored signature into an unsigned commit the
// way git does: a gpgsig header after the others, continuation lines
// indented by one space.
func withSignature(raw []byte, sig string) []byte {
	headers, msg, _ := bytes.Cut(raw, []byte("\n\n"))
	hdr := "gpgsig " + strings.ReplaceAll(strings.TrimSuffix(sig, "\n"), "\n", "\n ")
	return []byte(string(headers) + "\n" + hdr + "\n\n" + string(msg))
}

// sshSign signs data with ssh-keygen in namespace ns.
func sshSign(t *testing.T, key, ns string, data []byte) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "payload")
	writeFile(t, f, string(data))
	if out, err := exec.Command("ssh-keygen", "-q", "-Y", "sign", "-f", key, "-n", ns, f).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
	}
	sig, err := os.ReadFile(f + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	return string(sig)
}

func TestVerifierAcceptsOnlyTrustedSignatures(t *testing.T) {
	r := newSigningRig(t)
	// now is before the commits are signed, as when the signer's clock is
	// a little ahead of the agent's: that must not refuse them.
	now := time.Now()

	edSHA, edRaw := r.commit("signed by alice", r.ed.GitConfig())
	rsaSHA, rsaRaw := r.commit("signed by bob", r.rsa.GitConfig())
	ecdsaSHA, ecdsaRaw := r.commit("signed by erin", r.ecdsa.GitConfig())
	gpgSHA, gpgRaw := r.commit("signed with gpg", r.gpg.GitConfig())
	plainSHA, plainRaw := r.commit("not signed", nil)
	strangerSHA, strangerRaw := r.commit("signed by a stranger", r.stranger.GitConfig())
	gpgStrangerSHA, gpgStrangerRaw := r.commit("signed by mallory", r.gpgStranger.GitConfig())
	oldSHA, oldRaw := r.commit("signed by carol, whose key expired", r.old.GitConfig())
	scopedSHA, scopedRaw := r.commit("signed by dave, allowed for files only", r.scoped.GitConfig())
	wrongNS := withSignature(plainRaw, sshSign(t, r.ed.KeyFile, "file", plainRaw))
	goodAgain := withSignature(plainRaw, sshSign(t, r.ed.KeyFile, "git", plainRaw))
	tampered := bytes.Replace(edRaw, []byte("signed by alice"), []byte("signed by alicf"), 1)
	tamperedGPG := bytes.Replace(gpgRaw, []byte("signed with gpg"), []byte("signed with gpf"), 1)
	// Flip one base64 character inside the signature blob.
	malformed := bytes.Replace(edRaw, []byte("U1NIU0lH"), []byte("U1NIU0lI"), 1)
	if bytes.Equal(malformed, edRaw) {
		t.Fatal("the SSH signature does not start with the base64 of SSHSIG")
	}

	gpgFpr := r.gpg.Fingerprint
	for _, tc := range []struct {
		name string
		sha  string
		raw  []byte
		want gitsource.Signer
		err  string // substring of the refusal; "" = accepted
	}{
		{"ssh ed25519", edSHA, edRaw, gitsource.Signer{Type: "ssh", Key: fingerprint(t, r.ed), Identity: "alice@example.com"}, ""},
		{"ssh rsa", rsaSHA, rsaRaw, gitsource.Signer{Type: "ssh", Key: fingerprint(t, r.rsa), Identity: "bob@example.com"}, ""},
		{"ssh ecdsa", ecdsaSHA, ecdsaRaw, gitsource.Signer{Type: "ssh", Key: fingerprint(t, r.ecdsa), Identity: "erin@example.com"}, ""},
		{"openpgp", gpgSHA, gpgRaw, gitsource.Signer{Type: "openpgp", Key: gpgFpr, Identity: "Test <t@example.com>"}, ""},
		{"spliced like git", plainSHA, goodAgain, gitsource.Signer{Type: "ssh", Key: fingerprint(t, r.ed), Identity: "alice@example.com"}, ""},
		{"unsigned", plainSHA, plainRaw, gitsource.Signer{}, "commit " + plainSHA[:7] + " is not signed; verify is on for this app"},
		{"ssh key not listed", strangerSHA, strangerRaw, gitsource.Signer{},
			"commit " + strangerSHA[:7] + " is signed by SSH key " + fingerprint(t, r.stranger) + " (not in allowed signers " + r.signersFile + ")"},
		{"openpgp key not trusted", gpgStrangerSHA, gpgStrangerRaw, gitsource.Signer{},
			"commit " + gpgStrangerSHA[:7] + " is signed by OpenPGP key " + r.gpgStranger.Fingerprint + ", which is not in the trusted keys (" + r.keysFile + ")"},
		{"tampered message, ssh", edSHA, tampered, gitsource.Signer{}, "has a bad SSH signature by key " + fingerprint(t, r.ed) + " (alice@example.com)"},
		{"tampered message, openpgp", gpgSHA, tamperedGPG, gitsource.Signer{}, "has a bad OpenPGP signature by key " + gpgFpr},
		{"signature for another namespace", plainSHA, wrongNS, gitsource.Signer{}, `the signature is for namespace "file", not "git"`},
		{"line limited to other namespaces", scopedSHA, scopedRaw, gitsource.Signer{}, `allows the key only for namespaces "file", not "git"`},
		{"key past valid-before", oldSHA, oldRaw, gitsource.Signer{}, r.signersFile + ":4 allows the key only before 2020-01-01 00:00:00 UTC"},
		{"malformed signature", edSHA, malformed, gitsource.Signer{}, "has a malformed SSH signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.verifier.Verify(tc.sha, tc.raw, now)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got != tc.want {
					t.Fatalf("signer = %+v, want %+v", got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted (signer %+v), want a refusal containing %q", got, tc.err)
			}
			if !errors.Is(err, gitsource.ErrUnverified) {
				t.Errorf("error %v is not ErrUnverified", err)
			}
			if !strings.Contains(err.Error(), tc.err) {
				t.Errorf("refusal\n  %s\ndoes not contain\n  %s", err, tc.err)
			}
		})
	}
}

// TestVerifierChecksTheKindItTrusts: a verifier with only SSH signers
// refuses an OpenPGP signature (and the other way round), saying which
// setting would accept it.
func TestVerifierChecksTheKindItTrusts(t *testing.T) {
	r := newSigningRig(t)
	sshOnly, err := gitsource.NewVerifier(gitsource.VerifyConfig{SSHAllowedSigners: r.signersFile})
	if err != nil {
		t.Fatal(err)
	}
	pgpOnly, err := gitsource.NewVerifier(gitsource.VerifyConfig{OpenPGPKeys: []string{r.keysFile}})
	if err != nil {
		t.Fatal(err)
	}
	gpgSHA, gpgRaw := r.commit("gpg", r.gpg.GitConfig())
	edSHA, edRaw := r.commit("ssh", r.ed.GitConfig())
	if _, err := sshOnly.Verify(gpgSHA, gpgRaw, time.Now()); err == nil || !strings.Contains(err.Error(), "set openpgpKeys") {
		t.Errorf("ssh-only verifier on an OpenPGP signature: %v", err)
	}
	if _, err := pgpOnly.Verify(edSHA, edRaw, time.Now()); err == nil || !strings.Contains(err.Error(), "set sshAllowedSigners") {
		t.Errorf("OpenPGP-only verifier on an SSH signature: %v", err)
	}
}

// TestVerifyCommitReadsTheFetchedObject: the Source verifies the commit as
// stored in its clone, byte for byte.
func TestVerifyCommitReadsTheFetchedObject(t *testing.T) {
	r := newSigningRig(t)
	good, _ := r.commit("signed", r.ed.GitConfig())
	s := newSource(t, gitsource.Config{URL: r.repo.Bare})
	if res := fetch(t, s); res.Revision.SHA != good {
		t.Fatalf("fetched %s, want %s", res.Revision.SHA, good)
	}
	signer, err := s.VerifyCommit(context.Background(), good, r.verifier)
	if err != nil || signer.Identity != "alice@example.com" {
		t.Fatalf("VerifyCommit(signed) = %+v, %v", signer, err)
	}
	plain, _ := r.commit("plain", nil)
	fetch(t, s)
	if _, err := s.VerifyCommit(context.Background(), plain, r.verifier); !errors.Is(err, gitsource.ErrUnverified) {
		t.Fatalf("VerifyCommit(unsigned) = %v, want ErrUnverified", err)
	}
	if _, err := s.VerifyCommit(context.Background(), strings.Repeat("ab", 20), r.verifier); !errors.Is(err, gitsource.ErrCommitNotFound) {
		t.Fatalf("VerifyCommit(unknown) = %v, want ErrCommitNotFound (retry, not refuse)", err)
	}
}

func TestNewVerifierRejectsBadKeyFiles(t *testing.T) {
	dir := t.TempDir()
	key := gitserver.NewSSHSigner(t, "ed25519")
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, content)
		return p
	}
	garbage := file("garbage.asc", "not a key\n")
	for _, tc := range []struct {
		name string
		cfg  gitsource.VerifyConfig
		want string
	}{
		{"nothing", gitsource.VerifyConfig{}, "no keys"},
		{"missing allowed signers", gitsource.VerifyConfig{SSHAllowedSigners: filepath.Join(dir, "nope")}, filepath.Join(dir, "nope")},
		{"missing key file", gitsource.VerifyConfig{OpenPGPKeys: []string{filepath.Join(dir, "nope.asc")}}, filepath.Join(dir, "nope.asc")},
		{"garbage key file", gitsource.VerifyConfig{OpenPGPKeys: []string{garbage}}, garbage + ": not a public key"},
		{"empty allowed signers", gitsource.VerifyConfig{SSHAllowedSigners: file("empty", "# nobody\n")}, "no keys"},
		{"cert-authority", gitsource.VerifyConfig{SSHAllowedSigners: file("ca", key.AllowedSigner("*@example.com", "cert-authority"))},
			filepath.Join(dir, "ca") + ":1: cert-authority lines are not supported"},
		{"unknown option", gitsource.VerifyConfig{SSHAllowedSigners: file("opt", "\n"+key.AllowedSigner("a@example.com", "no-touch-required"))},
			filepath.Join(dir, "opt") + `:2: unknown option "no-touch-required"`},
		{"no principals", gitsource.VerifyConfig{SSHAllowedSigners: file("noprin", key.PublicKey+"\n")}, "put the signer's principals"},
		{"bad time", gitsource.VerifyConfig{SSHAllowedSigners: file("time", key.AllowedSigner("a@example.com", `valid-after="2026-01-01"`))}, "valid-after"},
		{"broken key", gitsource.VerifyConfig{SSHAllowedSigners: file("broken", "a@example.com ssh-ed25519 AAAAnotbase64\n")}, ":1: expected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gitsource.NewVerifier(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewVerifier = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseAllowedSignersOptions(t *testing.T) {
	key := gitserver.NewSSHSigner(t, "ed25519")
	data := `# comment
"alice@example.com,bob@example.com" namespaces="git,file",valid-after="202601021504",valid-before="20270101Z" ` + key.PublicKey + `

  carol@example.com ` + key.PublicKey + `
`
	as, err := gitsource.ParseAllowedSigners("signers", []byte(data), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(as.Entries) != 2 {
		t.Fatalf("%d entries, want 2", len(as.Entries))
	}
	a := as.Entries[0]
	if a.Line != 2 || a.Principals != "alice@example.com,bob@example.com" || strings.Join(a.Namespaces, "|") != "git|file" ||
		!a.ValidAfter.Equal(time.Date(2026, 1, 2, 15, 4, 0, 0, time.UTC)) || !a.ValidBefore.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("first entry = %+v", a)
	}
	if c := as.Entries[1]; c.Line != 4 || c.Principals != "carol@example.com" || len(c.Namespaces) != 0 {
		t.Errorf("second entry = %+v", c)
	}
}

func TestSplitCommitSignature(t *testing.T) {
	raw := "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n" +
		"author A <a@example.com> 1700000000 +0000\n" +
		"committer A <a@example.com> 1700000000 +0000\n" +
		"gpgsig -----BEGIN SSH SIGNATURE-----\n abc\n -----END SSH SIGNATURE-----\n" +
		"gpgsig-sha256 -----BEGIN SSH SIGNATURE-----\n def\n -----END SSH SIGNATURE-----\n" +
		"mergetag object 1234\n type commit\n" +
		"\n" +
		"msg\n gpgsig in the message is text\n"
	payload, sig, err := gitsource.SplitCommitSignature([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	wantPayload := "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n" +
		"author A <a@example.com> 1700000000 +0000\n" +
		"committer A <a@example.com> 1700000000 +0000\n" +
		"mergetag object 1234\n type commit\n" +
		"\n" +
		"msg\n gpgsig in the message is text\n"
	if string(payload) != wantPayload {
		t.Errorf("payload\n%q\nwant\n%q", payload, wantPayload)
	}
	if want := "-----BEGIN SSH SIGNATURE-----\nabc\n-----END SSH SIGNATURE-----\n"; string(sig) != want {
		t.Errorf("signature %q, want %q", sig, want)
	}
	if _, _, err := gitsource.SplitCommitSignature([]byte("gpgsig a\ngpgsig b\n\n")); err == nil {
		t.Error("two gpgsig headers were accepted")
	}
}

// TestSSHKeyWindowCoversCommitTimeAndNow: a key's valid-after/valid-before
// window must hold both the commit's time (as git checks) and now (so a
// retired key cannot deploy a back-dated commit).
func TestSSHKeyWindowCoversCommitTimeAndNow(t *testing.T) {
	key := gitserver.NewSSHSigner(t, "ed25519")
	repo := gitserver.Init(t, t.TempDir(), "window")
	repo.SignWith(key.GitConfig())
	sha := repo.Commit("committed 2026-01-01") // gitserver dates commits from 2026-01-01 12:00 UTC
	raw := repo.RawCommit(sha)
	verifier := func(options string) *gitsource.Verifier {
		file := filepath.Join(t.TempDir(), "allowed_signers")
		writeFile(t, file, key.AllowedSigner("alice@example.com", options))
		v, err := gitsource.NewVerifier(gitsource.VerifyConfig{SSHAllowedSigners: file})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	march, july := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	until := verifier(`valid-before="20260601Z"`)
	if _, err := until.Verify(sha, raw, march); err != nil {
		t.Errorf("inside the window: %v", err)
	}
	if _, err := until.Verify(sha, raw, july); err == nil || !strings.Contains(err.Error(), "only before 2026-06-01 00:00:00 UTC (now is 2026-07-01 00:00:00 UTC)") {
		t.Errorf("after valid-before: %v", err)
	}
	from := verifier(`valid-after="20260201Z"`)
	if _, err := from.Verify(sha, raw, march); err == nil || !strings.Contains(err.Error(), "only from 2026-02-01 00:00:00 UTC (the commit time is 2026-01-01 12:") {
		t.Errorf("commit before valid-after: %v", err)
	}
}
