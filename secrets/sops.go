package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift/manifest"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/common"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	sopspgp "github.com/getsops/sops/v3/pgp"
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
	ErrNotEncrypted = manifest.ErrNotEncrypted
	// ErrNoKey: none of the available keys opens the file's data key.
	ErrNoKey = errors.New("no available key can decrypt it")
	// ErrTampered: the content does not match the file's MAC.
	ErrTampered = errors.New("its content does not match its MAC (tampered with, or edited without sops)")
)

// FormatOf is the SOPS format of a file by its name, as `sops` chooses
// it: .yaml/.yml, .json, .env, .ini, anything else binary.
func FormatOf(name string) formats.Format {
	return formats.FormatForPath(name)
}

// Decrypt returns the plaintext of a SOPS-encrypted file, in the form
// `sops --decrypt` prints it. name only chooses the format. The age
// identities of keys are tried first; then what SOPS finds in the agent's
// environment (SOPS_AGE_KEY_FILE, SOPS_AGE_KEY, GnuPG). The MAC is always
// checked. The error says which of ErrNotEncrypted, ErrNoKey or
// ErrTampered applies, with SOPS's own reason.
func Decrypt(name string, data []byte, keys Keys) ([]byte, error) {
	store := common.StoreForFormat(FormatOf(name), config.NewStoresConfig())
	tree, err := store.LoadEncryptedFile(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotEncrypted, err)
	}
	key, err := dataKey(&tree, keys)
	if err != nil {
		// SOPS's own message is a multi-line colored report; the
		// recipients say what to do.
		return nil, fmt.Errorf("%w: it is encrypted for %s; give the agent one of their private keys", ErrNoKey, recipients(&tree))
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(key, cipher)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTampered, err)
	}
	want, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, key, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, fmt.Errorf("%w: cannot decrypt the MAC: %v", ErrTampered, err)
	}
	if want != mac {
		return nil, ErrTampered
	}
	return store.EmitPlainFile(tree.Branches)
}

// dataKey opens the file's data key with the app's own keys (age
// identities, GnuPG home) — each master key decrypting directly, since
// sops's key service would rebuild the keys without them — else with what
// SOPS finds in the environment.
func dataKey(tree *sops.Tree, keys Keys) ([]byte, error) {
	own := strings.TrimSpace(keys.AgeIdentities) != "" || keys.GnuPGHome != ""
	var ids sopsage.ParsedIdentities
	if strings.TrimSpace(keys.AgeIdentities) != "" {
		if err := ids.Import(keys.AgeIdentities); err != nil {
			return nil, fmt.Errorf("the app's age key file: %w", err)
		}
	}
	for _, group := range tree.Metadata.KeyGroups {
		for _, k := range group {
			switch mk := k.(type) {
			case *sopsage.MasterKey:
				if len(ids) == 0 {
					continue
				}
				ids.ApplyToMasterKey(mk)
				if dk, err := mk.Decrypt(); err == nil {
					return dk, nil
				}
			case *sopspgp.MasterKey:
				if keys.GnuPGHome == "" {
					continue
				}
				sopspgp.GnuPGHome(keys.GnuPGHome).ApplyToMasterKey(mk)
				if dk, err := mk.Decrypt(); err == nil {
					return dk, nil
				}
			}
		}
	}
	// Not for the app's keys: the file may be for a key the environment
	// holds (an OpenPGP key in $GNUPGHOME, the agent-wide age key).
	dk, err := tree.Metadata.GetDataKey()
	if err != nil && own {
		return nil, fmt.Errorf("neither the app's keys nor the agent's: %w", err)
	}
	return dk, err
}

// recipients names the public keys a file is encrypted for.
func recipients(tree *sops.Tree) string {
	var rs []string
	for _, g := range tree.Metadata.KeyGroups {
		for _, k := range g {
			rs = append(rs, k.TypeToIdentifier()+" "+k.ToString())
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
	store := common.StoreForFormat(FormatOf(name), config.NewStoresConfig())
	_, err := store.LoadEncryptedFile(bytes.Clone(data))
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
