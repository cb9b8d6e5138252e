package sopstest

import (
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/common"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/shamir"
	"github.com/getsops/sops/v3/version"
	"go.yaml.in/yaml/v3"
)

// Options are what `sops --encrypt` takes besides the keys: which values
// stay in clear (at most one rule), whether the MAC covers only encrypted
// values, and the key groups (age recipients) with their Shamir threshold.
type Options struct {
	UnencryptedSuffix       string
	EncryptedSuffix         string
	UnencryptedRegex        string
	EncryptedRegex          string
	UnencryptedCommentRegex string
	EncryptedCommentRegex   string
	MACOnlyEncrypted        bool
	// AgeGroups are the key groups, each a list of age recipients. Several
	// groups split the data key (Shamir), ShamirThreshold of them needed.
	AgeGroups       [][]string
	ShamirThreshold int
}

// EncryptBranches encrypts a tree, as `sops --encrypt` does after reading
// a plaintext file, and prints it in the format name chooses.
func EncryptBranches(name string, branches sops.TreeBranches, o Options) ([]byte, error) {
	if len(o.AgeGroups) == 0 {
		return nil, errors.New("no key groups")
	}
	var groups []sops.KeyGroup
	for _, rs := range o.AgeGroups {
		var g sops.KeyGroup
		for _, r := range rs {
			k, err := sopsage.MasterKeyFromRecipient(r)
			if err != nil {
				return nil, err
			}
			g = append(g, keys.MasterKey(k))
		}
		groups = append(groups, g)
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups:               groups,
		ShamirThreshold:         o.ShamirThreshold,
		UnencryptedSuffix:       o.UnencryptedSuffix,
		EncryptedSuffix:         o.EncryptedSuffix,
		UnencryptedRegex:        o.UnencryptedRegex,
		EncryptedRegex:          o.EncryptedRegex,
		UnencryptedCommentRegex: o.UnencryptedCommentRegex,
		EncryptedCommentRegex:   o.EncryptedCommentRegex,
		MACOnlyEncrypted:        o.MACOnlyEncrypted,
		Version:                 version.Version,
	}}
	if o.UnencryptedSuffix+o.EncryptedSuffix+o.UnencryptedRegex+o.EncryptedRegex+o.UnencryptedCommentRegex+o.EncryptedCommentRegex == "" {
		tree.Metadata.UnencryptedSuffix = sops.DefaultUnencryptedSuffix // as the sops command does
	}
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, err
	}
	parts := [][]byte{dataKey}
	if len(groups) > 1 {
		var err error
		if parts, err = shamir.Split(dataKey, len(groups), o.ShamirThreshold); err != nil {
			return nil, err
		}
	}
	for i, g := range groups {
		for _, k := range g {
			if err := k.Encrypt(parts[i]); err != nil {
				return nil, err
			}
		}
	}
	if err := common.EncryptTree(common.EncryptTreeOpts{Tree: &tree, Cipher: aes.NewCipher(), DataKey: dataKey}); err != nil {
		return nil, err
	}
	return store(name).EmitEncryptedFile(tree)
}

// LoadPlain reads a plaintext file as `sops --encrypt` does.
func LoadPlain(name string, plaintext []byte) (sops.TreeBranches, error) {
	return store(name).LoadPlainFile(plaintext)
}

func store(name string) common.Store {
	return common.StoreForFormat(formats.FormatForPath(name), config.NewStoresConfig())
}

// Refusal is why the library refuses a file, in the words of package
// secrets' errors.
type Refusal string

// The library's refusals.
const (
	Accepted     Refusal = ""
	NotEncrypted Refusal = "not encrypted" // no SOPS metadata, or it does not parse
	NoKey        Refusal = "no key"        // no key opens the data key
	Tampered     Refusal = "tampered"      // a value does not decrypt, or the MAC differs
	NotPrintable Refusal = "not printable" // decrypted, but the store cannot print it
	Panicked     Refusal = "panicked"      // the library panicked on the input
)

// Decrypt decrypts a file with the sops library, with the keys of the
// environment (SOPS_AGE_KEY, SOPS_AGE_KEY_FILE, GnuPG), as `sops
// --decrypt` does: the reference the reader in package secrets is held to.
func Decrypt(name string, data []byte) (plain []byte, why Refusal, err error) {
	defer func() {
		if r := recover(); r != nil {
			plain, why, err = nil, Panicked, fmt.Errorf("panic: %v", r)
		}
	}()
	st := store(name)
	tree, err := st.LoadEncryptedFile(data)
	if err != nil {
		return nil, NotEncrypted, err
	}
	key, err := tree.Metadata.GetDataKey()
	if err != nil {
		return nil, NoKey, err
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(key, cipher)
	if err != nil {
		return nil, Tampered, err
	}
	want, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, key, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, Tampered, err
	}
	if want != mac {
		return nil, Tampered, sops.MacMismatch
	}
	out, err := st.EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, NotPrintable, err
	}
	return out, Accepted, nil
}

// WithOnlyKeys rewrites an encrypted YAML file so that its metadata lists
// only keys (by type, as sops names them: "kms", "gcp_kms", ...) in place
// of the keys it was encrypted for: a file as a team using only a cloud
// KMS would commit it. Its values and MAC are unchanged.
func WithOnlyKeys(encYAML []byte, keys map[string][]map[string]string) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(encYAML, &doc); err != nil {
		return nil, err
	}
	meta, ok := doc["sops"].(map[string]any)
	if !ok {
		return nil, errors.New("no sops metadata")
	}
	for _, k := range []string{"age", "pgp", "key_groups"} {
		delete(meta, k)
	}
	for typ, ks := range keys {
		meta[typ] = ks
	}
	return yaml.Marshal(doc)
}

// Rewrite edits an encrypted file as someone without its key can: it
// reads the file as sops does (encrypted values stay ENC[...] strings),
// lets edit change the tree, and prints the file again with its metadata,
// MAC included, as it was.
func Rewrite(name string, data []byte, edit func(sops.TreeBranches) sops.TreeBranches) ([]byte, error) {
	st := store(name)
	tree, err := st.LoadEncryptedFile(data)
	if err != nil {
		return nil, err
	}
	tree.Branches = edit(tree.Branches)
	return st.EmitEncryptedFile(tree)
}
