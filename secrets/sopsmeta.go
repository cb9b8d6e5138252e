package secrets

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
)

// sopsFile is a loaded SOPS file: its data (one branch per YAML document)
// and its metadata.
type sopsFile struct {
	format   Format
	branches []branch
	meta     metadata
}

// metadata is the part of a file's "sops" entry a decryption needs.
type metadata struct {
	LastModified              time.Time
	UnencryptedSuffix         string
	EncryptedSuffix           string
	UnencryptedRegex          string
	EncryptedRegex            string
	UnencryptedCommentRegex   string
	EncryptedCommentRegex     string
	MessageAuthenticationCode string
	MACOnlyEncrypted          bool
	ShamirThreshold           int
	KeyGroups                 [][]masterKey
}

// masterKey is one key a file's data key (or, with several key groups,
// its group's Shamir share) is encrypted for.
type masterKey struct {
	Type string // sops's identifier: age, pgp, kms, gcp_kms, azure_kv, hc_vault, hckms
	// ID names the key for people: an age recipient, an OpenPGP
	// fingerprint, a KMS ARN, a key URL.
	ID  string
	Enc string // the encrypted data key
}

// Key types driftless can open.
const (
	keyTypeAge = "age"
	keyTypePGP = "pgp"
)

// errNoMetadata: the file has no "sops" entry at all.
var errNoMetadata = errors.New("sops metadata not found")

// storedMetadata is the "sops" entry as files hold it, decoded the way sops
// decodes it (mapstructure, weakly typed: "true" is a bool, 2 a string).
type storedMetadata struct {
	ShamirThreshold           int              `mapstructure:"shamir_threshold,omitempty"`
	KeyGroups                 []storedKeyGroup `mapstructure:"key_groups,omitempty,deep"`
	storedKeyGroup            `mapstructure:",squash"`
	LastModified              string `mapstructure:"lastmodified"`
	MessageAuthenticationCode string `mapstructure:"mac"`
	UnencryptedSuffix         string `mapstructure:"unencrypted_suffix,omitempty"`
	EncryptedSuffix           string `mapstructure:"encrypted_suffix,omitempty"`
	UnencryptedRegex          string `mapstructure:"unencrypted_regex,omitempty"`
	EncryptedRegex            string `mapstructure:"encrypted_regex,omitempty"`
	UnencryptedCommentRegex   string `mapstructure:"unencrypted_comment_regex,omitempty"`
	EncryptedCommentRegex     string `mapstructure:"encrypted_comment_regex,omitempty"`
	MACOnlyEncrypted          bool   `mapstructure:"mac_only_encrypted,omitempty"`
	Version                   string `mapstructure:"version"`
}

type storedKeyGroup struct {
	PGP     []storedKey `mapstructure:"pgp,omitempty,deep"`
	KMS     []storedKey `mapstructure:"kms,omitempty,deep"`
	GCPKMS  []storedKey `mapstructure:"gcp_kms,omitempty,deep"`
	HCKMS   []storedKey `mapstructure:"hckms,omitempty,deep"`
	AzureKV []storedKey `mapstructure:"azure_kv,omitempty,deep"`
	Vault   []storedKey `mapstructure:"hc_vault,deep"`
	Age     []storedKey `mapstructure:"age,deep"`
}

// storedKey holds the fields of every key type; each uses its own.
type storedKey struct {
	CreatedAt   string `mapstructure:"created_at"`
	Enc         string `mapstructure:"enc"`
	Fingerprint string `mapstructure:"fp"`
	Recipient   string `mapstructure:"recipient"`
	Arn         string `mapstructure:"arn"`
	Role        string `mapstructure:"role,omitempty"`
	ResourceID  string `mapstructure:"resource_id"`
	KeyID       string `mapstructure:"key_id"`
	VaultURL    string `mapstructure:"vault_url"`
	Name        string `mapstructure:"name"`
	KeyVersion  string `mapstructure:"version"`
	VaultAddr   string `mapstructure:"vault_address"`
	EnginePath  string `mapstructure:"engine_path"`
	KeyName     string `mapstructure:"key_name"`
}

// flattening is how a format stores the metadata: nested under "sops"
// (YAML, JSON), flattened under an INI section "sops", or flattened into
// top-level "sops_..." keys (dotenv).
type flattening int

const (
	flattenNone flattening = iota
	flattenBelowTop
	flattenFull
)

// extractMetadata takes the metadata out of branches, as sops does.
func extractMetadata(branches []branch, flat flattening, escapeNewlines bool) ([]branch, metadata, error) {
	var tree branch
	found := false
	if flat != flattenFull {
		for bi, b := range branches {
			kept := b[:0]
			for _, it := range b {
				if it.Key != "sops" {
					kept = append(kept, it)
					continue
				}
				if bi == 0 {
					if found {
						return nil, metadata{}, errors.New("found duplicate sops entry")
					}
					found = true
					t, ok := it.Value.(branch)
					if !ok {
						return nil, metadata{}, errors.New("found sops entry that is not a mapping")
					}
					tree = t
				}
			}
			branches[bi] = kept
		}
	} else if len(branches) > 0 {
		kept := branches[0][:0]
		for _, it := range branches[0] {
			if k, ok := it.Key.(string); ok && strings.HasPrefix(k, "sops_") {
				found = true
				tree = append(tree, item{Key: k[len("sops_"):], Value: it.Value})
				continue
			}
			kept = append(kept, it)
		}
		branches[0] = kept
	}
	if !found || (flat == flattenFull && tree == nil) {
		return nil, metadata{}, errNoMetadata
	}
	var m map[string]any
	var err error
	if flat == flattenNone {
		m, err = goMap(tree)
	} else {
		m, err = unflatten(tree, escapeNewlines)
	}
	if err != nil {
		return nil, metadata{}, err
	}
	var sm storedMetadata
	d, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{Result: &sm, WeaklyTypedInput: true})
	if err != nil {
		return nil, metadata{}, err
	}
	if err := d.Decode(m); err != nil {
		return nil, metadata{}, err
	}
	md, err := sm.internal()
	return branches, md, err
}

// goMap is a branch as plain Go values, comments left out.
func goMap(b branch) (map[string]any, error) {
	out := map[string]any{}
	for _, it := range b {
		if _, ok := it.Key.(comment); ok {
			continue
		}
		k, ok := it.Key.(string)
		if !ok {
			return nil, fmt.Errorf("unexpected key type %T", it.Key)
		}
		v, err := goValue(it.Value)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func goValue(v any) (any, error) {
	switch v := v.(type) {
	case branch:
		return goMap(v)
	case []any:
		out := make([]any, 0, len(v))
		for _, e := range v {
			if _, ok := e.(comment); ok {
				continue
			}
			g, err := goValue(e)
			if err != nil {
				return nil, err
			}
			out = append(out, g)
		}
		return out, nil
	}
	return v, nil
}

// unflatten rebuilds the nested metadata from flattened keys
// ("key_groups__list_0__map_age__list_0__map_enc"), as sops does.
func unflatten(b branch, escapeNewlines bool) (map[string]any, error) {
	root := &flatNode{}
	for _, it := range b {
		if _, ok := it.Key.(comment); ok {
			continue
		}
		k, ok := it.Key.(string)
		if !ok {
			return nil, fmt.Errorf("found non-string key %v when unflattening", it.Key)
		}
		v := it.Value
		if s, ok := v.(string); ok && escapeNewlines {
			v = strings.ReplaceAll(s, "\\n", "\n")
		}
		if err := root.place(flatTokens(k), v); err != nil {
			return nil, fmt.Errorf("unflattening %q: %w", k, err)
		}
	}
	out, err := root.convert()
	if err != nil {
		return nil, err
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, errors.New("the flattened metadata is not a mapping")
	}
	return m, nil
}

type flatNode struct {
	set     bool
	value   any
	subkeys map[string]*flatNode
	indices map[int]*flatNode
}

// flatToken is a map key, or a list index when isIndex.
type flatToken struct {
	key     string
	index   int
	isIndex bool
}

const (
	mapSeparator  = "__map_"
	listSeparator = "__list_"
)

func flatTokens(path string) []flatToken {
	var out []flatToken
	start, inList := 0, false
	finish := func(end int) {
		s := path[start:end]
		if inList {
			n, _ := strconv.Atoi(s)
			out = append(out, flatToken{index: n, isIndex: true})
		} else {
			out = append(out, flatToken{key: s})
		}
	}
	for i := 0; i < len(path); {
		switch {
		case strings.HasPrefix(path[i:], mapSeparator):
			finish(i)
			i += len(mapSeparator)
			start, inList = i, false
		case strings.HasPrefix(path[i:], listSeparator):
			finish(i)
			i += len(listSeparator)
			start, inList = i, true
		default:
			i++
		}
	}
	finish(len(path))
	return out
}

func (n *flatNode) place(path []flatToken, v any) error {
	for _, t := range path {
		var next *flatNode
		if t.isIndex {
			if n.indices == nil {
				n.indices = map[int]*flatNode{}
			}
			if next = n.indices[t.index]; next == nil {
				next = &flatNode{}
				n.indices[t.index] = next
			}
		} else {
			if n.subkeys == nil {
				n.subkeys = map[string]*flatNode{}
			}
			if next = n.subkeys[t.key]; next == nil {
				next = &flatNode{}
				n.subkeys[t.key] = next
			}
		}
		n = next
	}
	if n.set {
		return errors.New("duplicate value")
	}
	n.set, n.value = true, v
	return nil
}

func (n *flatNode) convert() (any, error) {
	kinds := 0
	for _, has := range []bool{n.set, len(n.subkeys) > 0, len(n.indices) > 0} {
		if has {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		return nil, errors.New("type mismatch")
	case n.set:
		return n.value, nil
	case len(n.indices) > 0:
		lo, hi := math.MaxInt, math.MinInt
		for k := range n.indices {
			lo, hi = min(lo, k), max(hi, k)
		}
		if lo != 0 || hi+1 != len(n.indices) {
			return nil, errors.New("incomplete list")
		}
		out := make([]any, hi+1)
		for k, c := range n.indices {
			v, err := c.convert()
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	}
	out := map[string]any{}
	keys := make([]string, 0, len(n.subkeys))
	for k := range n.subkeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := n.subkeys[k].convert()
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// internal checks the stored metadata as sops does and keeps what a
// decryption needs.
func (sm *storedMetadata) internal() (metadata, error) {
	lm, err := time.Parse(time.RFC3339, sm.LastModified)
	if err != nil {
		return metadata{}, err
	}
	var groups [][]masterKey
	switch {
	case sm.storedKeyGroup.any():
		g, err := sm.storedKeyGroup.internal()
		if err != nil {
			return metadata{}, err
		}
		groups = append(groups, g)
	case len(sm.KeyGroups) > 0:
		for _, sg := range sm.KeyGroups {
			g, err := sg.internal()
			if err != nil {
				return metadata{}, err
			}
			groups = append(groups, g)
		}
	default:
		return metadata{}, errors.New("no keys found in file")
	}
	rules := 0
	for _, r := range []string{sm.UnencryptedSuffix, sm.EncryptedSuffix, sm.UnencryptedRegex, sm.EncryptedRegex, sm.UnencryptedCommentRegex, sm.EncryptedCommentRegex} {
		if r != "" {
			rules++
		}
	}
	if rules > 1 {
		return metadata{}, errors.New("cannot use more than one of encrypted_suffix, unencrypted_suffix, encrypted_regex, unencrypted_regex, encrypted_comment_regex, or unencrypted_comment_regex in the same file")
	}
	m := metadata{
		LastModified:              lm,
		UnencryptedSuffix:         sm.UnencryptedSuffix,
		EncryptedSuffix:           sm.EncryptedSuffix,
		UnencryptedRegex:          sm.UnencryptedRegex,
		EncryptedRegex:            sm.EncryptedRegex,
		UnencryptedCommentRegex:   sm.UnencryptedCommentRegex,
		EncryptedCommentRegex:     sm.EncryptedCommentRegex,
		MessageAuthenticationCode: sm.MessageAuthenticationCode,
		MACOnlyEncrypted:          sm.MACOnlyEncrypted,
		ShamirThreshold:           sm.ShamirThreshold,
		KeyGroups:                 groups,
	}
	if rules == 0 {
		m.UnencryptedSuffix = "_unencrypted"
	}
	return m, nil
}

func (g *storedKeyGroup) any() bool {
	return len(g.PGP) > 0 || len(g.KMS) > 0 || len(g.GCPKMS) > 0 || len(g.HCKMS) > 0 || len(g.AzureKV) > 0 || len(g.Vault) > 0 || len(g.Age) > 0
}

// internal is the group's keys in sops's order (cloud keys, OpenPGP,
// age); a creation date that does not parse refuses the file, as in sops.
func (g *storedKeyGroup) internal() ([]masterKey, error) {
	var out []masterKey
	add := func(typ string, keys []storedKey, dated bool, id func(k storedKey) string) error {
		for _, k := range keys {
			if dated {
				if _, err := time.Parse(time.RFC3339, k.CreatedAt); err != nil {
					return err
				}
			}
			out = append(out, masterKey{Type: typ, ID: id(k), Enc: k.Enc})
		}
		return nil
	}
	for _, step := range []struct {
		typ   string
		keys  []storedKey
		dated bool
		id    func(k storedKey) string
	}{
		{"kms", g.KMS, true, func(k storedKey) string {
			if k.Role != "" {
				return k.Arn + "+" + k.Role
			}
			return k.Arn
		}},
		{"gcp_kms", g.GCPKMS, true, func(k storedKey) string { return k.ResourceID }},
		{"hckms", g.HCKMS, true, func(k storedKey) string { return k.KeyID }},
		{"azure_kv", g.AzureKV, true, func(k storedKey) string { return k.VaultURL + "/keys/" + k.Name + "/" + k.KeyVersion }},
		{"hc_vault", g.Vault, true, func(k storedKey) string { return k.VaultAddr + "/v1/" + k.EnginePath + "/keys/" + k.KeyName }},
		{keyTypePGP, g.PGP, true, func(k storedKey) string { return k.Fingerprint }},
		{keyTypeAge, g.Age, false, func(k storedKey) string { return k.Recipient }},
	} {
		if err := add(step.typ, step.keys, step.dated, step.id); err != nil {
			return nil, err
		}
	}
	return out, nil
}
