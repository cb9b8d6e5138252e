package gitsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// VerifyConfig names the files holding the keys an app trusts to sign the
// commits it applies. Either may be empty, not both.
type VerifyConfig struct {
	// OpenPGPKeys are files of armored (or binary) OpenPGP public keys.
	OpenPGPKeys []string
	// SSHAllowedSigners is an ssh-keygen(1) allowed_signers file.
	SSHAllowedSigners string
}

// Signer says who signed a verified commit, for status and history.
type Signer struct {
	Type string `json:"type"` // "ssh" or "openpgp"
	// Key is the key's fingerprint: SHA256:... for SSH, the hex
	// fingerprint of the primary key for OpenPGP.
	Key string `json:"key"`
	// Identity is who the key belongs to: the principals of its
	// allowed_signers line, or the OpenPGP key's primary user ID.
	Identity string `json:"identity,omitempty"`
}

func (s Signer) String() string {
	kind := "SSH key"
	if s.Type == SignerOpenPGP {
		kind = "OpenPGP key"
	}
	if s.Identity == "" {
		return kind + " " + s.Key
	}
	return fmt.Sprintf("%s %s (%s)", kind, s.Key, s.Identity)
}

// Signer types.
const (
	SignerSSH     = "ssh"
	SignerOpenPGP = "openpgp"
)

// ErrUnverified: the commit is unsigned, badly signed or signed by a key
// the app does not trust. Refuse the revision and keep the last good one;
// only a new commit can fix it.
var ErrUnverified = errors.New("commit signature not verified")

// UnverifiedError says why a commit's signature was not accepted, in words
// that name the commit and the key.
type UnverifiedError struct {
	SHA    string
	Reason string // follows "commit <short sha> "
}

func (e *UnverifiedError) Error() string {
	return fmt.Sprintf("commit %s %s", shortSHA(e.SHA), e.Reason)
}

// Is makes errors.Is(err, ErrUnverified) true.
func (e *UnverifiedError) Is(target error) bool { return target == ErrUnverified }

func unverified(sha, format string, args ...any) error {
	return &UnverifiedError{SHA: sha, Reason: fmt.Sprintf(format, args...)}
}

func shortSHA(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// Verifier checks commit signatures against the keys an app trusts. It is
// read once at startup and never changes, so it is safe for concurrent use.
type Verifier struct {
	pgp     *pgpKeyring
	signers *AllowedSigners
}

// NewVerifier reads the key files. A missing or unparseable file is an
// error naming it: the app must not start half-protected.
func NewVerifier(cfg VerifyConfig) (*Verifier, error) {
	if len(cfg.OpenPGPKeys) == 0 && cfg.SSHAllowedSigners == "" {
		return nil, errors.New("no keys: name OpenPGP key files, an SSH allowed signers file, or both")
	}
	v := &Verifier{}
	if len(cfg.OpenPGPKeys) > 0 {
		kr, err := readPGPKeyring(cfg.OpenPGPKeys)
		if err != nil {
			return nil, err
		}
		v.pgp = kr
	}
	if cfg.SSHAllowedSigners != "" {
		as, err := ReadAllowedSigners(cfg.SSHAllowedSigners)
		if err != nil {
			return nil, err
		}
		v.signers = as
	}
	return v, nil
}

// Verify checks the signature of one commit, given as its raw object
// (what `git cat-file commit SHA` prints). now bounds the validity of the
// keys; an *UnverifiedError says why the commit is not trusted.
func (v *Verifier) Verify(sha string, raw []byte, now time.Time) (Signer, error) {
	payload, sig, err := SplitCommitSignature(raw)
	if err != nil {
		return Signer{}, unverified(sha, "has a malformed signature header: %v", err)
	}
	if len(sig) == 0 {
		return Signer{}, unverified(sha, "is not signed; verify is on for this app")
	}
	switch {
	case bytes.HasPrefix(sig, []byte(sshSigArmorStart)):
		if v.signers == nil {
			return Signer{}, unverified(sha, "has an SSH signature, but this app trusts only OpenPGP keys (set sshAllowedSigners to accept SSH signatures)")
		}
		return v.signers.verifyCommit(sha, payload, sig, commitTime(payload), now)
	case bytes.HasPrefix(sig, []byte(pgpSigArmorStart)):
		if v.pgp == nil {
			return Signer{}, unverified(sha, "has an OpenPGP signature, but this app trusts only SSH keys (set openpgpKeys to accept OpenPGP signatures)")
		}
		return v.pgp.verifyCommit(sha, payload, sig, now)
	}
	first, _, _ := bytes.Cut(sig, []byte("\n"))
	return Signer{}, unverified(sha, "has a signature of an unsupported kind (%q); only OpenPGP and SSH signatures are supported", truncate(string(first), 40))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// sigHeaders are the commit headers that carry signatures: gpgsig for
// SHA-1 repositories, gpgsig-sha256 for SHA-256 ones.
const (
	sigHeader       = "gpgsig"
	sigHeaderSHA256 = "gpgsig-sha256"
)

// SplitCommitSignature separates a raw commit object into what was signed
// (the object without its signature headers) and the signature, as git
// does: the gpgsig header and its continuation lines (each starting with
// one space) are the signature; every gpgsig* header is left out of the
// payload. A commit without a signature has a nil signature.
func SplitCommitSignature(raw []byte) (payload, sig []byte, err error) {
	payload = make([]byte, 0, len(raw))
	var in, seen, other bool // in the signature; saw one; in another algorithm's
	rest := raw
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		switch {
		case line[0] == '\n':
			// End of the headers: the message is signed as it is.
			payload = append(payload, line...)
			payload = append(payload, rest...)
			return payload, sig, nil
		case line[0] == ' ' && (in || other):
			if in {
				sig = append(sig, line[1:]...)
			}
			continue
		case bytes.HasPrefix(line, []byte(sigHeader+" ")):
			if seen {
				return nil, nil, errors.New("more than one gpgsig header")
			}
			seen, in, other = true, true, false
			sig = append(sig, line[len(sigHeader)+1:]...)
			continue
		case bytes.HasPrefix(line, []byte(sigHeaderSHA256+" ")):
			// A signature over the SHA-256 form of the object: not what
			// this SHA-1 clone can check, and not part of the payload.
			in, other = false, true
			continue
		}
		in, other = false, false
		payload = append(payload, line...)
	}
	return payload, sig, nil
}

// commitTime is the committer timestamp of a raw commit, or the zero time
// when it cannot be read (then only now is checked against key validity).
func commitTime(payload []byte) time.Time {
	for line := range strings.Lines(string(payload)) {
		if line == "\n" {
			break
		}
		rest, ok := strings.CutPrefix(line, "committer ")
		if !ok {
			continue
		}
		// "Name <email> 1700000000 +0100"
		_, after, ok := strings.Cut(rest, "> ")
		if !ok {
			return time.Time{}
		}
		fields := strings.Fields(after)
		if len(fields) == 0 {
			return time.Time{}
		}
		secs, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return time.Time{}
		}
		return time.Unix(secs, 0)
	}
	return time.Time{}
}

// VerifyCommit checks the signature of a commit already in the clone. An
// *UnverifiedError (errors.Is ErrUnverified) refuses the commit; any
// other error means the clone could not be read and is worth a retry.
func (s *Source) VerifyCommit(ctx context.Context, sha string, v *Verifier) (Signer, error) {
	if err := ctx.Err(); err != nil {
		return Signer{}, err
	}
	raw, full, err := s.rawCommit(sha)
	if err != nil {
		return Signer{}, err
	}
	return v.Verify(full, raw, time.Now())
}

// rawCommit reads a commit object as stored, byte for byte: re-encoding a
// parsed commit could change what was signed.
func (s *Source) rawCommit(sha string) ([]byte, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, c, err := s.commit(sha)
	if err != nil {
		return nil, "", err
	}
	obj, err := repo.Storer.EncodedObject(plumbing.CommitObject, c.Hash)
	if err != nil {
		s.suspect = true
		return nil, "", s.newError(nil, fmt.Sprintf("read commit %s", c.Hash), err)
	}
	r, err := obj.Reader()
	if err != nil {
		s.suspect = true
		return nil, "", s.newError(nil, fmt.Sprintf("read commit %s", c.Hash), err)
	}
	defer r.Close()
	raw, err := io.ReadAll(r)
	if err != nil {
		s.suspect = true
		return nil, "", s.newError(nil, fmt.Sprintf("read commit %s", c.Hash), err)
	}
	return raw, c.Hash.String(), nil
}
