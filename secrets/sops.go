package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/driftless-dev/driftless/manifest/load"
	sopsage "github.com/getsops/sops/v3/age"
	sopspgp "github.com/getsops/sops/v3/pgp"
	"github.com/getsops/sops/v3/shamir"
)

// Keys are the decryption keys of one app beyond what the agent's
// environment gives SOPS (SOPS_AGE_KEY_FILE, SOPS_AGE_KEY, the GnuPG
// keyring): the age identities of the app's decryption.ageKeyFile.
type Keys struct {
	// AgeIdentities is the content of an age identity file
	// ("AGE-SECRET-KEY-1..." lines; comments allowed).
	AgeIdentities string
	// GnuPGHome is the GnuPG home whose private keys open OpenPGP-encrypted
	// files; "" is sops's default ($GNUPGHOME, else ~/.gnupg).
	GnuPGHome string
}

// Errors a decryption can end in, for callers that must tell them apart.
var (
	// ErrNotEncrypted: the file carries no SOPS metadata. It is the
	// loader's sentinel, so the loader can tell a plaintext file apart.
	ErrNotEncrypted = load.ErrNotEncrypted
	// ErrNoKey: none of the available keys opens the file's data key.
	ErrNoKey = errors.New("no available key can decrypt it")
	// ErrTampered: the content does not match the file's MAC.
	ErrTampered = errors.New("its content does not match its MAC (tampered with, or edited without sops)")
)

// Decrypt returns the plaintext of a SOPS-encrypted file, in the form
// `sops --decrypt` prints it. name only chooses the format. The age
// identities of keys are tried first; then what SOPS finds in the agent's
// environment (SOPS_AGE_KEY_FILE, SOPS_AGE_KEY, GnuPG). The MAC is always
// checked. The error says which of ErrNotEncrypted, ErrNoKey or
// ErrTampered applies, with the reason; a key driftless refuses (set
// twice, say) is a *manifest.KeyError (see badKey).
func Decrypt(name string, data []byte, keys Keys) ([]byte, error) {
	f, err := loadEncrypted(FormatOf(name), data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotEncrypted, err)
	}
	if bad := badKey(f); bad != nil {
		return nil, bad
	}
	if unsupported := unsupportedOnly(f.meta.KeyGroups); unsupported != "" {
		return nil, fmt.Errorf("%w: it is encrypted only for %s, which driftless cannot use: driftless opens age and OpenPGP keys; add an age or OpenPGP recipient to the file (sops updatekeys, or sops --rotate --add-age age1...) and give the agent its private key", ErrNoKey, unsupported)
	}
	key, err := dataKey(f.meta, keys)
	if err != nil {
		// The recipients say what to do.
		return nil, fmt.Errorf("%w: it is encrypted for %s; give the agent one of their private keys", ErrNoKey, recipients(f.meta.KeyGroups))
	}
	if err := decryptTree(f, key); err != nil {
		return nil, err
	}
	out, err := emitPlain(f.format, f.branches)
	if err != nil {
		// As sops: the file opened, but its values cannot be printed in
		// its format (a NaN in JSON, a list in a dotenv file).
		return nil, fmt.Errorf("it decrypts, but cannot be printed as %s: %v", f.format, err)
	}
	return out, nil
}

// unsupportedOnly names the key types of a file none of whose keys
// driftless can use (an AWS KMS-only file, say), or "".
func unsupportedOnly(groups [][]masterKey) string {
	var types []string
	for _, g := range groups {
		for _, k := range g {
			if k.Type == keyTypeAge || k.Type == keyTypePGP {
				return ""
			}
			if !slices.Contains(types, k.Type) {
				types = append(types, k.Type)
			}
		}
	}
	if len(types) == 0 {
		return ""
	}
	return "keys of type " + strings.Join(types, ", ")
}

// dataKey recovers the file's data key: from each key group, one share
// (the whole key when there is one group), opened by the first of its age
// or OpenPGP keys that the app's keys (age identities, GnuPG home) or else
// the environment's open; with several groups, the shares are combined
// (Shamir), as sops does.
func dataKey(meta metadata, keys Keys) ([]byte, error) {
	var ids sopsage.ParsedIdentities
	if strings.TrimSpace(keys.AgeIdentities) != "" {
		if err := ids.Import(keys.AgeIdentities); err != nil {
			return nil, fmt.Errorf("the app's age key file: %w", err)
		}
	}
	var parts [][]byte
	var errs []error
	for _, g := range meta.KeyGroups {
		part, err := groupKey(g, ids, keys.GnuPGHome)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		parts = append(parts, part)
	}
	if len(meta.KeyGroups) <= 1 {
		if len(parts) != 1 {
			return nil, errors.Join(errs...)
		}
		return parts[0], nil
	}
	if len(parts) < meta.ShamirThreshold {
		return nil, fmt.Errorf("%d of %d key groups opened, %d needed: %w", len(parts), len(meta.KeyGroups), meta.ShamirThreshold, errors.Join(errs...))
	}
	return shamir.Combine(parts)
}

// groupKey opens one key group's share: age keys first (cheap), then
// OpenPGP (gpg); each with the app's keys, then the environment's.
func groupKey(g []masterKey, ids sopsage.ParsedIdentities, gnupgHome string) ([]byte, error) {
	var errs []error
	for _, typ := range []string{keyTypeAge, keyTypePGP} {
		for _, k := range g {
			if k.Type != typ {
				continue
			}
			for _, open := range openers(k, ids, gnupgHome) {
				dk, err := open()
				if err == nil {
					return dk, nil
				}
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		return nil, errors.New("the group has no age or OpenPGP key")
	}
	return nil, errors.Join(errs...)
}

// openers are the ways to open k's data key, in order: with the app's own
// keys (when it has some of k's type), then as sops does with the
// environment's (SOPS_AGE_KEY_FILE, SOPS_AGE_KEY, ~/.config/sops/age;
// $GNUPGHOME or ~/.gnupg).
func openers(k masterKey, ids sopsage.ParsedIdentities, gnupgHome string) []func() ([]byte, error) {
	var out []func() ([]byte, error)
	switch k.Type {
	case keyTypeAge:
		if len(ids) > 0 {
			out = append(out, func() ([]byte, error) {
				mk := &sopsage.MasterKey{Recipient: k.ID, EncryptedKey: k.Enc}
				ids.ApplyToMasterKey(mk)
				return mk.Decrypt()
			})
		}
		out = append(out, func() ([]byte, error) {
			return (&sopsage.MasterKey{Recipient: k.ID, EncryptedKey: k.Enc}).Decrypt()
		})
	case keyTypePGP:
		pgpKey := func() *sopspgp.MasterKey {
			mk := sopspgp.NewMasterKeyFromFingerprint(k.ID)
			mk.EncryptedKey = k.Enc
			return mk
		}
		if gnupgHome != "" {
			out = append(out, func() ([]byte, error) {
				mk := pgpKey()
				sopspgp.GnuPGHome(gnupgHome).ApplyToMasterKey(mk)
				return mk.Decrypt()
			})
		}
		out = append(out, func() ([]byte, error) { return pgpKey().Decrypt() })
	}
	return out
}

// recipients names the public keys a file is encrypted for.
func recipients(groups [][]masterKey) string {
	var rs []string
	for _, g := range groups {
		for _, k := range g {
			rs = append(rs, k.Type+" "+k.ID)
		}
	}
	if len(rs) == 0 {
		return "no key at all"
	}
	return strings.Join(rs, ", ")
}

// IsEncrypted reports whether data looks like a SOPS file of name's
// format (it has SOPS metadata), without decrypting anything.
func IsEncrypted(name string, data []byte) bool {
	_, err := loadEncrypted(FormatOf(name), bytes.Clone(data))
	return err == nil
}

// KeyFiles are where an app's own keys are, from driftless.yaml.
type KeyFiles struct {
	AgeKeyFile string // an age identity file; "" for none
	GnuPGHome  string // a GnuPG home; "" for the environment's
}

// DecryptWith is the decryption a loader uses for an app: the age
// identities of files.AgeKeyFile, read at each call so a rotated file is
// picked up, and files.GnuPGHome's OpenPGP keys, then the environment's
// keys.
func DecryptWith(files KeyFiles) func(name string, data []byte) ([]byte, error) {
	return func(name string, data []byte) ([]byte, error) {
		keys := Keys{GnuPGHome: files.GnuPGHome}
		if files.AgeKeyFile != "" {
			b, err := os.ReadFile(files.AgeKeyFile)
			if err != nil {
				return nil, fmt.Errorf("%w: the app's age key file: %v", ErrNoKey, err)
			}
			keys.AgeIdentities = string(b)
		}
		return Decrypt(name, data, keys)
	}
}

// CheckGnuPGHome says why dir cannot be a GnuPG home for sops (it must be
// an absolute path to a directory of mode 0700), or nil.
func CheckGnuPGHome(dir string) error {
	return sopspgp.GnuPGHome(dir).Validate()
}
