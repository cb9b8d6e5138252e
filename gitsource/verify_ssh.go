package gitsource

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// SSH signatures as git makes them with gpg.format=ssh: `ssh-keygen -Y
// sign -n git` over the commit without its signature header, in the
// sshsig format of OpenSSH's PROTOCOL.sshsig.

const (
	sshSigArmorStart = "-----BEGIN SSH SIGNATURE-----"
	sshSigArmorEnd   = "-----END SSH SIGNATURE-----"
	sshSigMagic      = "SSHSIG"
	sshSigVersion    = 1
	// gitNamespace is the namespace git signs commits in.
	gitNamespace = "git"
	// maxAllowedSignersBytes bounds the file read at startup; real ones
	// are a few lines per person.
	maxAllowedSignersBytes = 1 << 20
)

// SSHSignature is a decoded sshsig blob.
type SSHSignature struct {
	PublicKey     ssh.PublicKey
	Namespace     string
	Reserved      []byte
	HashAlgorithm string
	Signature     *ssh.Signature
}

// ParseSSHSignature decodes an armored SSH signature ("-----BEGIN SSH
// SIGNATURE-----"). It checks the format, not the signature.
func ParseSSHSignature(armored []byte) (*SSHSignature, error) {
	text := strings.TrimSpace(string(armored))
	body, ok := strings.CutPrefix(text, sshSigArmorStart)
	if !ok {
		return nil, errors.New("does not start with " + sshSigArmorStart)
	}
	body, ok = strings.CutSuffix(body, sshSigArmorEnd)
	if !ok {
		return nil, errors.New("does not end with " + sshSigArmorEnd)
	}
	blob, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(body), ""))
	if err != nil {
		return nil, fmt.Errorf("base64: %v", err)
	}
	return decodeSSHSig(blob)
}

// decodeSSHSig reads: byte[6] "SSHSIG", uint32 version, string publickey,
// string namespace, string reserved, string hash_algorithm, string
// signature.
func decodeSSHSig(blob []byte) (*SSHSignature, error) {
	rest, ok := bytes.CutPrefix(blob, []byte(sshSigMagic))
	if !ok {
		return nil, errors.New("no SSHSIG magic")
	}
	if len(rest) < 4 {
		return nil, errors.New("truncated before the version")
	}
	if v := binary.BigEndian.Uint32(rest); v != sshSigVersion {
		return nil, fmt.Errorf("version %d is not supported (want %d)", v, sshSigVersion)
	}
	rest = rest[4:]
	var fields [5][]byte
	names := [5]string{"public key", "namespace", "reserved", "hash algorithm", "signature"}
	for i := range fields {
		var err error
		if fields[i], rest, err = sshString(rest); err != nil {
			return nil, fmt.Errorf("%s: %v", names[i], err)
		}
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%d bytes after the signature", len(rest))
	}
	key, err := ssh.ParsePublicKey(fields[0])
	if err != nil {
		return nil, fmt.Errorf("public key: %v", err)
	}
	sig := new(ssh.Signature)
	if err := ssh.Unmarshal(fields[4], sig); err != nil {
		return nil, fmt.Errorf("signature: %v", err)
	}
	return &SSHSignature{
		PublicKey: key, Namespace: string(fields[1]), Reserved: fields[2],
		HashAlgorithm: string(fields[3]), Signature: sig,
	}, nil
}

// sshString reads one SSH wire "string": a uint32 length and the bytes.
func sshString(b []byte) (s, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, errors.New("truncated length")
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, fmt.Errorf("length %d exceeds the %d bytes left", n, len(b)-4)
	}
	return b[4 : 4+n], b[4+n:], nil
}

func appendSSHString(b, s []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// Verify checks the signature over message in the given namespace. It
// does not say whether the key is trusted.
func (s *SSHSignature) Verify(message []byte, namespace string) error {
	if s.Namespace != namespace {
		return fmt.Errorf("the signature is for namespace %q, not %q", s.Namespace, namespace)
	}
	var digest []byte
	switch s.HashAlgorithm {
	case "sha256":
		h := sha256.Sum256(message)
		digest = h[:]
	case "sha512":
		h := sha512.Sum512(message)
		digest = h[:]
	default:
		return fmt.Errorf("hash algorithm %q is not supported (sha256, sha512)", s.HashAlgorithm)
	}
	// RSA with SHA-1 is refused by OpenSSH's own sshsig verifier too.
	if s.Signature.Format == ssh.KeyAlgoRSA {
		return errors.New("RSA signatures with SHA-1 (ssh-rsa) are not accepted; sign with rsa-sha2-256 or rsa-sha2-512")
	}
	signed := []byte(sshSigMagic)
	signed = appendSSHString(signed, []byte(s.Namespace))
	signed = appendSSHString(signed, s.Reserved)
	signed = appendSSHString(signed, []byte(s.HashAlgorithm))
	signed = appendSSHString(signed, digest)
	return s.PublicKey.Verify(signed, s.Signature)
}

// AllowedSigners is a parsed allowed_signers file (ssh-keygen(1), ALLOWED
// SIGNERS).
type AllowedSigners struct {
	File    string
	Entries []AllowedSigner
}

// AllowedSigner is one line: who may sign with which key, where and when.
type AllowedSigner struct {
	Line       int
	Principals string   // as written: comma-separated, may hold patterns
	Namespaces []string // patterns; empty = any
	// ValidAfter and ValidBefore bound when the key may sign (zero =
	// unbounded).
	ValidAfter, ValidBefore time.Time
	Key                     ssh.PublicKey
}

// ReadAllowedSigners reads and parses an allowed_signers file.
func ReadAllowedSigners(file string) (*AllowedSigners, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("allowed signers file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxAllowedSignersBytes+1))
	if err != nil {
		return nil, fmt.Errorf("allowed signers file %s: %w", file, err)
	}
	if len(data) > maxAllowedSignersBytes {
		return nil, fmt.Errorf("allowed signers file %s is larger than %d KiB", file, maxAllowedSignersBytes>>10)
	}
	return ParseAllowedSigners(file, data, time.Local)
}

// ParseAllowedSigners parses the allowed_signers format: per line
// "principals [options] keytype base64-key [comment]", # comments and
// blank lines ignored. Options are namespaces="...", valid-after="..."
// and valid-before="..." (YYYYMMDD[HHMM[SS]][Z], local time in loc
// unless Z). cert-authority lines are refused: driftless checks keys
// listed one by one. Errors name file:line.
func ParseAllowedSigners(file string, data []byte, loc *time.Location) (*AllowedSigners, error) {
	as := &AllowedSigners{File: file}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxAllowedSignersBytes)
	var errs []error
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e, err := parseAllowedSigner(line, loc)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %v", file, n, err))
			continue
		}
		e.Line = n
		as.Entries = append(as.Entries, e)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %v", file, err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(as.Entries) == 0 {
		return nil, fmt.Errorf("%s: no keys: add lines of the form \"alice@example.com ssh-ed25519 AAAA...\"", file)
	}
	return as, nil
}

const allowedSignerForm = `expected "principals [options] key-type base64-key"`

func parseAllowedSigner(line string, loc *time.Location) (AllowedSigner, error) {
	var e AllowedSigner
	principals, rest, err := cutPrincipals(line)
	if err != nil {
		return e, err
	}
	if isKeyType(principals) {
		return e, fmt.Errorf("the line starts with the key type %q: put the signer's principals (e.g. an email address) first", principals)
	}
	e.Principals = principals
	key, _, options, tail, err := ssh.ParseAuthorizedKey([]byte(rest))
	if err != nil {
		return e, fmt.Errorf("%s: no valid key after the principals", allowedSignerForm)
	}
	if len(bytes.TrimSpace(tail)) != 0 {
		return e, errors.New("unexpected text after the key")
	}
	if _, isCert := key.(*ssh.Certificate); isCert {
		return e, errors.New("certificates are not supported; list the signing key itself")
	}
	e.Key = key
	for _, opt := range options {
		if err := e.setOption(opt, loc); err != nil {
			return e, err
		}
	}
	if !e.ValidAfter.IsZero() && !e.ValidBefore.IsZero() && !e.ValidAfter.Before(e.ValidBefore) {
		return e, errors.New("valid-after is not before valid-before")
	}
	return e, nil
}

// cutPrincipals splits off the first field, which may be quoted.
func cutPrincipals(line string) (principals, rest string, err error) {
	if strings.HasPrefix(line, `"`) {
		end := strings.IndexByte(line[1:], '"')
		if end < 0 {
			return "", "", errors.New("unterminated quote in the principals")
		}
		principals, rest = line[1:1+end], line[2+end:]
		if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
			return "", "", errors.New("no space after the quoted principals")
		}
	} else {
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			return "", "", errors.New(allowedSignerForm)
		}
		principals, rest = line[:i], line[i:]
	}
	if principals == "" {
		return "", "", errors.New("empty principals")
	}
	return principals, strings.TrimSpace(rest), nil
}

func isKeyType(s string) bool {
	for _, p := range []string{"ssh-", "ecdsa-", "sk-", "rsa-"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func (e *AllowedSigner) setOption(opt string, loc *time.Location) error {
	name, value, hasValue := strings.Cut(opt, "=")
	value = strings.Trim(value, `"`)
	switch strings.ToLower(name) {
	case "cert-authority":
		return errors.New("cert-authority lines are not supported; list each signer's key on its own line")
	case "namespaces":
		if !hasValue || value == "" {
			return errors.New(`namespaces needs a value, e.g. namespaces="git"`)
		}
		e.Namespaces = strings.Split(value, ",")
	case "valid-after", "valid-before":
		if !hasValue {
			return fmt.Errorf(`%s needs a value, e.g. %s="20260101"`, name, name)
		}
		t, err := parseSSHTime(value, loc)
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		if strings.EqualFold(name, "valid-after") {
			e.ValidAfter = t
		} else {
			e.ValidBefore = t
		}
	default:
		return fmt.Errorf("unknown option %q (supported: namespaces, valid-after, valid-before)", name)
	}
	return nil
}

// parseSSHTime reads YYYYMMDD[HHMM[SS]][Z] as ssh-keygen does.
func parseSSHTime(s string, loc *time.Location) (time.Time, error) {
	if rest, ok := strings.CutSuffix(s, "Z"); ok {
		s, loc = rest, time.UTC
	}
	var layout string
	switch len(s) {
	case 8:
		layout = "20060102"
	case 12:
		layout = "200601021504"
	case 14:
		layout = "20060102150405"
	default:
		return time.Time{}, fmt.Errorf("%q is not a time of the form YYYYMMDD[HHMM[SS]][Z]", s)
	}
	t, err := time.ParseInLocation(layout, s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a time of the form YYYYMMDD[HHMM[SS]][Z]", s)
	}
	return t, nil
}

// matchPatterns is OpenSSH's match_pattern_list for a single name: a
// comma-separated list of patterns with * and ?, where !pattern excludes.
func matchPatterns(name string, patterns []string) bool {
	matched := false
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		if ok, err := path.Match(p, name); err == nil && ok {
			if neg {
				return false
			}
			matched = true
		}
	}
	return matched
}

// verifyCommit checks an SSH commit signature against the file: the key
// must be listed for the git namespace at both the commit's time and now
// (a key past its valid-before cannot sign a back-dated commit).
func (as *AllowedSigners) verifyCommit(sha string, payload, armored []byte, committed, now time.Time) (Signer, error) {
	sig, err := ParseSSHSignature(armored)
	if err != nil {
		return Signer{}, unverified(sha, "has a malformed SSH signature: %v", err)
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	var lines []AllowedSigner
	for _, e := range as.Entries {
		if bytes.Equal(e.Key.Marshal(), sig.PublicKey.Marshal()) {
			lines = append(lines, e)
		}
	}
	if len(lines) == 0 {
		return Signer{}, unverified(sha, "is signed by SSH key %s (not in allowed signers %s)", fp, as.File)
	}
	if err := sig.Verify(payload, gitNamespace); err != nil {
		return Signer{}, unverified(sha, "has a bad SSH signature by key %s (%s): %v", fp, lines[0].Principals, err)
	}
	var refusals []string
	for _, e := range lines {
		why := e.refuses(committed, now)
		if why == "" {
			return Signer{Type: SignerSSH, Key: fp, Identity: e.Principals}, nil
		}
		refusals = append(refusals, fmt.Sprintf("%s:%d %s", as.File, e.Line, why))
	}
	return Signer{}, unverified(sha, "is signed by SSH key %s (%s), but %s", fp, lines[0].Principals, strings.Join(refusals, "; "))
}

// refuses says why this line does not allow a git signature made at
// committed and checked at now, or "" if it does.
func (e AllowedSigner) refuses(committed, now time.Time) string {
	if len(e.Namespaces) > 0 && !matchPatterns(gitNamespace, e.Namespaces) {
		return fmt.Sprintf("allows the key only for namespaces %q, not %q", strings.Join(e.Namespaces, ","), gitNamespace)
	}
	const layout = "2006-01-02 15:04:05 MST"
	for _, t := range []struct {
		what string
		at   time.Time
	}{{"the commit time", committed}, {"now", now}} {
		if t.at.IsZero() {
			continue
		}
		if !e.ValidAfter.IsZero() && t.at.Before(e.ValidAfter) {
			return fmt.Sprintf("allows the key only from %s (%s is %s)", e.ValidAfter.Format(layout), t.what, t.at.In(e.ValidAfter.Location()).Format(layout))
		}
		if !e.ValidBefore.IsZero() && !t.at.Before(e.ValidBefore) {
			return fmt.Sprintf("allows the key only before %s (%s is %s)", e.ValidBefore.Format(layout), t.what, t.at.In(e.ValidBefore.Location()).Format(layout))
		}
	}
	return ""
}
