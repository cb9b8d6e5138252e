package secrets

import (
	"errors"
	"fmt"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/common"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/version"
)

// EncryptAge encrypts plaintext for the age recipients ("age1...") the
// way `sops --encrypt --age RECIPIENTS` does, in the format name chooses.
// driftless itself only decrypts; this is the same code path `sops` runs,
// for tests and for `driftless` users without the sops binary at hand.
func EncryptAge(name string, plaintext []byte, recipients ...string) ([]byte, error) {
	if len(recipients) == 0 {
		return nil, errors.New("no age recipients")
	}
	store := common.StoreForFormat(FormatOf(name), config.NewStoresConfig())
	branches, err := store.LoadPlainFile(plaintext)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	var group sops.KeyGroup
	for _, r := range recipients {
		k, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, err
		}
		group = append(group, keys.MasterKey(k))
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{KeyGroups: []sops.KeyGroup{group}, Version: version.Version}}
	dataKey, errs := tree.GenerateDataKey()
	if len(errs) > 0 {
		return nil, fmt.Errorf("encrypt the data key: %w", errors.Join(errs...))
	}
	if err := common.EncryptTree(common.EncryptTreeOpts{Tree: &tree, Cipher: aes.NewCipher(), DataKey: dataKey}); err != nil {
		return nil, err
	}
	return store.EmitEncryptedFile(tree)
}
