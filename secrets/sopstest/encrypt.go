// Package sopstest encrypts files with the sops library itself, the code
// `sops --encrypt` runs, for tests. Only _test.go files may import it: the
// library links every cloud SDK its key services use, which the driftless
// binary must not carry (its reader is package secrets).
package sopstest

import (
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/common"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	sopspgp "github.com/getsops/sops/v3/pgp"
	"github.com/getsops/sops/v3/version"
)

// EncryptAge encrypts plaintext for the age recipients ("age1...") the
// way `sops --encrypt --age RECIPIENTS` does, in the format name chooses.
// driftless itself only decrypts; this is the same code path `sops` runs.
func EncryptAge(name string, plaintext []byte, recipients ...string) ([]byte, error) {
	if len(recipients) == 0 {
		return nil, errors.New("no age recipients")
	}
	var group sops.KeyGroup
	for _, r := range recipients {
		k, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, err
		}
		group = append(group, keys.MasterKey(k))
	}
	return encryptTree(name, plaintext, group)
}

// EncryptPGP encrypts plaintext for OpenPGP keys by fingerprint, as
// `sops --encrypt --pgp FINGERPRINTS` does, with the public keys of the
// GnuPG home gnupgHome ("" for $GNUPGHOME or ~/.gnupg).
func EncryptPGP(name string, plaintext []byte, gnupgHome string, fingerprints ...string) ([]byte, error) {
	if len(fingerprints) == 0 {
		return nil, errors.New("no OpenPGP fingerprints")
	}
	var group sops.KeyGroup
	for _, fp := range fingerprints {
		k := sopspgp.NewMasterKeyFromFingerprint(fp)
		if gnupgHome != "" {
			sopspgp.GnuPGHome(gnupgHome).ApplyToMasterKey(k)
		}
		group = append(group, keys.MasterKey(k))
	}
	return encryptTree(name, plaintext, group)
}

// encryptTree is what `sops --encrypt` does with one key group.
func encryptTree(name string, plaintext []byte, group sops.KeyGroup) ([]byte, error) {
	store := common.StoreForFormat(formats.FormatForPath(name), config.NewStoresConfig())
	branches, err := store.LoadPlainFile(plaintext)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{KeyGroups: []sops.KeyGroup{group}, UnencryptedSuffix: sops.DefaultUnencryptedSuffix, Version: version.Version}}
	// The data key is encrypted by each master key itself, not through
	// sops's key service, which rebuilds keys from their fingerprints and
	// would lose an OpenPGP key's GnuPG home.
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, err
	}
	for _, k := range group {
		if err := k.Encrypt(dataKey); err != nil {
			return nil, fmt.Errorf("encrypt the data key for %s: %w", k.ToString(), err)
		}
	}
	if err := common.EncryptTree(common.EncryptTreeOpts{Tree: &tree, Cipher: aes.NewCipher(), DataKey: dataKey}); err != nil {
		return nil, err
	}
	return store.EmitEncryptedFile(tree)
}
