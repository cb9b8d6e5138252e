package gitsource

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// OpenPGP signatures as git makes them with gpg: an armored detached
// signature over the commit without its gpgsig header.

const (
	pgpSigArmorStart = "-----BEGIN PGP SIGNATURE-----"
	// maxKeyFileBytes bounds each key file read at startup.
	maxKeyFileBytes = 4 << 20
)

type pgpKeyring struct {
	files []string
	keys  openpgp.EntityList
}

// readPGPKeyring reads armored or binary public keys from each file.
func readPGPKeyring(files []string) (*pgpKeyring, error) {
	kr := &pgpKeyring{files: files}
	for _, file := range files {
		data, err := readLimited(file, maxKeyFileBytes)
		if err != nil {
			return nil, fmt.Errorf("OpenPGP key file: %w", err)
		}
		var keys openpgp.EntityList
		if bytes.Contains(data, []byte("-----BEGIN PGP")) {
			keys, err = openpgp.ReadArmoredKeyRing(bytes.NewReader(data))
		} else {
			keys, err = openpgp.ReadKeyRing(bytes.NewReader(data))
		}
		if err != nil {
			return nil, fmt.Errorf("OpenPGP key file %s: not a public key (export it with gpg --armor --export KEYID): %v", file, err)
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("OpenPGP key file %s holds no keys", file)
		}
		kr.keys = append(kr.keys, keys...)
	}
	return kr, nil
}

func readLimited(file string, limit int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d KiB", file, limit>>10)
	}
	return data, nil
}

// verifyCommit checks an OpenPGP commit signature against the keyring at
// now (expired and revoked keys do not verify).
func (kr *pgpKeyring) verifyCommit(sha string, payload, armored []byte, now time.Time) (Signer, error) {
	sig, raw, err := parsePGPSignature(armored)
	if err != nil {
		return Signer{}, unverified(sha, "has a malformed OpenPGP signature: %v", err)
	}
	issuer := pgpIssuer(sig)
	// A signer's clock a little ahead of ours would make the signature
	// look as if made in the future, which go-crypto calls expired; check
	// at its creation time then. That is only stricter for key expiry.
	at := now
	if sig.CreationTime.After(at) {
		at = sig.CreationTime
	}
	cfg := &packet.Config{Time: func() time.Time { return at }}
	signer, err := openpgp.CheckDetachedSignature(kr.keys, bytes.NewReader(payload), bytes.NewReader(raw), cfg)
	switch {
	case errors.Is(err, pgperrors.ErrUnknownIssuer):
		return Signer{}, unverified(sha, "is signed by OpenPGP key %s, which is not in the trusted keys (%s)", issuer, strings.Join(kr.files, ", "))
	case errors.Is(err, pgperrors.ErrKeyExpired):
		return Signer{}, unverified(sha, "is signed by OpenPGP key %s, which has expired", issuer)
	case errors.Is(err, pgperrors.ErrKeyRevoked):
		return Signer{}, unverified(sha, "is signed by OpenPGP key %s, which is revoked", issuer)
	case err != nil:
		return Signer{}, unverified(sha, "has a bad OpenPGP signature by key %s: %v", issuer, err)
	case signer == nil:
		return Signer{}, unverified(sha, "has an OpenPGP signature that names no key")
	}
	s := Signer{Type: SignerOpenPGP, Key: strings.ToUpper(fmt.Sprintf("%x", signer.PrimaryKey.Fingerprint))}
	if id := signer.PrimaryIdentity(); id != nil {
		s.Identity = id.Name
	}
	return s, nil
}

// parsePGPSignature decodes the armor and reads the one signature packet,
// to name its issuer even when the key is unknown.
func parsePGPSignature(armored []byte) (*packet.Signature, []byte, error) {
	block, err := armor.Decode(bytes.NewReader(armored))
	if err != nil {
		return nil, nil, err
	}
	if block.Type != openpgp.SignatureType {
		return nil, nil, fmt.Errorf("armor type %q, want %q", block.Type, openpgp.SignatureType)
	}
	raw, err := io.ReadAll(io.LimitReader(block.Body, 1<<20))
	if err != nil {
		return nil, nil, err
	}
	p, err := packet.Read(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, err
	}
	sig, ok := p.(*packet.Signature)
	if !ok {
		return nil, nil, fmt.Errorf("first packet is a %T, not a signature", p)
	}
	return sig, raw, nil
}

// pgpIssuer names the signing key: its fingerprint when the signature
// carries it (gpg 2.2 and later), else its 64-bit key ID.
func pgpIssuer(sig *packet.Signature) string {
	switch {
	case len(sig.IssuerFingerprint) > 0:
		return strings.ToUpper(fmt.Sprintf("%x", sig.IssuerFingerprint))
	case sig.IssuerKeyId != nil:
		return fmt.Sprintf("0x%016X", *sig.IssuerKeyId)
	}
	return "(unnamed)"
}
