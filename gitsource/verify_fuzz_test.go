package gitsource_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

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
