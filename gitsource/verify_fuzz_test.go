package gitsource_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"golang.org/x/crypto/ssh"

	"github.com/driftless-dev/driftless/gitsource"
)

// A real ed25519 sshsig (ssh-keygen -Y sign -n git over "message") and
// its public key, as seeds.
const (
	seedSSHSig = `-----BEGIN SSH SIGNATURE-----
U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAgLcYyGNyXyWoR5VZELyVnRau7n+
blhcpd0KBmizs4GVcAAAADZ2l0AAAAAAAAAAZzaGE1MTIAAABTAAAAC3NzaC1lZDI1NTE5
AAAAQJu7qwFrR4yZGo6BYLv742iPZoPhKj3KVV8HLY05IpWpfOV+QsRXXg8PjR7q7DvD6P
BjsmxcWLU+Jnm4Eh0ElQo=
-----END SSH SIGNATURE-----
`
	seedMessage = "message"
	seedKey     = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC3GMhjcl8lqEeVWRC8lZ0Wru5/m5YXKXdCgZos7OBlX signer"
)

func FuzzParseAllowedSigners(f *testing.F) {
	f.Add("alice@example.com " + seedKey + "\n")
	f.Add(`"a@x,b@x" namespaces="git",valid-after="20260101",valid-before="20270101Z" ` + seedKey + "\n# c\n\n")
	f.Add("a@x cert-authority " + seedKey)
	f.Add(`"unterminated ` + seedKey)
	f.Add("a@x valid-before=\"2026\" " + seedKey)
	f.Fuzz(func(t *testing.T, data string) {
		as, err := gitsource.ParseAllowedSigners("f", []byte(data), time.UTC)
		if err != nil {
			if as != nil {
				t.Fatal("an error and a result")
			}
			return
		}
		if len(as.Entries) == 0 {
			t.Fatal("accepted a file without keys")
		}
		for _, e := range as.Entries {
			if e.Key == nil || e.Principals == "" || e.Line < 1 {
				t.Fatalf("incomplete entry %+v", e)
			}
			if !e.ValidAfter.IsZero() && !e.ValidBefore.IsZero() && !e.ValidAfter.Before(e.ValidBefore) {
				t.Fatalf("empty validity window accepted: %+v", e)
			}
		}
	})
}

func FuzzParseSSHSignature(f *testing.F) {
	sig, err := gitsource.ParseSSHSignature([]byte(seedSSHSig))
	if err != nil {
		f.Fatalf("seed: %v", err)
	}
	if sig.Namespace != "git" || sig.HashAlgorithm != "sha512" {
		f.Fatalf("seed decoded as %+v", sig)
	}
	if err := sig.Verify([]byte(seedMessage), "git"); err != nil {
		f.Fatalf("seed does not verify: %v", err)
	}
	if err := sig.Verify([]byte(seedMessage+"!"), "git"); err == nil {
		f.Fatal("seed verifies over another message")
	}
	lines := strings.Split(strings.TrimSpace(seedSSHSig), "\n")
	blob, err := base64.StdEncoding.DecodeString(strings.Join(lines[1:len(lines)-1], ""))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(blob, []byte(seedMessage))
	f.Add(blob[:40], []byte{})
	f.Add([]byte("SSHSIG\x00\x00\x00\x01\xff\xff\xff\xff"), []byte{})
	f.Fuzz(func(t *testing.T, blob, msg []byte) {
		armored := "-----BEGIN SSH SIGNATURE-----\n" + base64.StdEncoding.EncodeToString(blob) + "\n-----END SSH SIGNATURE-----\n"
		sig, err := gitsource.ParseSSHSignature([]byte(armored))
		if err != nil {
			return
		}
		if sig.PublicKey == nil || sig.Signature == nil {
			t.Fatalf("decoded without a key or signature: %+v", sig)
		}
		// Checking any decoded signature fails cleanly or succeeds; it
		// never panics.
		_ = sig.Verify(msg, "git")
	})
}

func FuzzSplitCommitSignature(f *testing.F) {
	f.Add([]byte("tree 1\ncommitter A <a> 1 +0000\ngpgsig -----BEGIN SSH SIGNATURE-----\n x\n -----END SSH SIGNATURE-----\n\nmsg\n"))
	f.Add([]byte("tree 1\ngpgsig-sha256 a\n b\nmergetag x\n y\n\nmsg"))
	f.Add([]byte("gpgsig a\ngpgsig b\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		payload, sig, err := gitsource.SplitCommitSignature(raw)
		if err != nil {
			return
		}
		if len(payload)+len(sig) > len(raw) {
			t.Fatalf("split grew the commit: %d + %d > %d", len(payload), len(sig), len(raw))
		}
		// Nothing signature-like stays in the signed headers.
		for _, line := range bytes.Split(payload, []byte("\n")) {
			if len(line) == 0 {
				break // the message: free text
			}
			if bytes.HasPrefix(line, []byte("gpgsig ")) || bytes.HasPrefix(line, []byte("gpgsig-sha256 ")) {
				t.Fatalf("payload keeps a signature header: %q", payload)
			}
		}
	})
}

// FuzzVerify feeds arbitrary commit objects to a verifier that trusts one
// SSH and one OpenPGP key: it must never panic, and whatever it accepts
// must be signed by one of those two keys.
func FuzzVerify(f *testing.F) {
	dir := f.TempDir()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		f.Fatal(err)
	}
	sshSigner, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		f.Fatal(err)
	}
	sshFile := filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(sshFile, []byte("alice@example.com "+string(ssh.MarshalAuthorizedKey(sshSigner.PublicKey()))), 0o600); err != nil {
		f.Fatal(err)
	}
	entity, err := openpgp.NewEntity("Test", "", "t@example.com", nil)
	if err != nil {
		f.Fatal(err)
	}
	var pub bytes.Buffer
	w, _ := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err := entity.Serialize(w); err != nil {
		f.Fatal(err)
	}
	w.Close()
	pgpFile := filepath.Join(dir, "key.asc")
	if err := os.WriteFile(pgpFile, pub.Bytes(), 0o600); err != nil {
		f.Fatal(err)
	}
	v, err := gitsource.NewVerifier(gitsource.VerifyConfig{OpenPGPKeys: []string{pgpFile}, SSHAllowedSigners: sshFile})
	if err != nil {
		f.Fatal(err)
	}
	trusted := map[string]bool{
		ssh.FingerprintSHA256(sshSigner.PublicKey()):                       true,
		strings.ToUpper(hex.EncodeToString(entity.PrimaryKey.Fingerprint)): true,
	}

	payload := "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@example.com> 1767268800 +0000\ncommitter A <a@example.com> 1767268800 +0000\n\ndeploy\n"
	var pgpSig bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&pgpSig, entity, strings.NewReader(payload), nil); err != nil {
		f.Fatal(err)
	}
	for _, sig := range []string{goSSHSign(f, sshSigner, payload), pgpSig.String()} {
		raw := withSignature([]byte(payload), sig)
		if _, err := v.Verify("seed", raw, time.Now()); err != nil {
			f.Fatalf("seed does not verify: %v", err)
		}
		f.Add(raw)
	}
	f.Add([]byte(payload))
	f.Fuzz(func(t *testing.T, raw []byte) {
		signer, err := v.Verify("0123456789abcdef", raw, time.Now())
		if err != nil {
			return
		}
		if !trusted[signer.Key] {
			t.Fatalf("accepted a signature by untrusted key %+v", signer)
		}
	})
}

// goSSHSign makes a git sshsig over message, as ssh-keygen -Y sign -n git.
func goSSHSign(f *testing.F, signer ssh.Signer, message string) string {
	h := sha512.Sum512([]byte(message))
	put := func(b, s []byte) []byte { return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...) }
	signed := put(put(put(put([]byte("SSHSIG"), []byte("git")), nil), []byte("sha512")), h[:])
	sig, err := signer.Sign(nil, signed)
	if err != nil {
		f.Fatal(err)
	}
	blob := binary.BigEndian.AppendUint32([]byte("SSHSIG"), 1)
	blob = put(put(put(put(put(blob, signer.PublicKey().Marshal()), []byte("git")), nil), []byte("sha512")), ssh.Marshal(sig))
	return "-----BEGIN SSH SIGNATURE-----\n" + base64.StdEncoding.EncodeToString(blob) + "\n-----END SSH SIGNATURE-----\n"
}
