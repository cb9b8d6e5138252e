package secrets

// A SOPS file reader for what driftless supports (age and OpenPGP keys;
// YAML, JSON, dotenv, INI and binary files). It does what
// github.com/getsops/sops/v3 does to decrypt a file, value by value and in
// the same order, because the MAC is a hash over the values in that order:
// any difference in the walk would refuse good files or accept altered
// ones. Linking the sops library itself would bring every cloud SDK its
// key services import into the binary (issue 18). The differential tests
// (sopsdiff_test.go) hold this reader to the library.

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// comment is a comment line of a YAML, dotenv or INI file. Its fields are
// named as sops's, so a comment that ends up as a value prints the same.
type comment struct {
	Value  string
	Inline bool
}

// item is a key (a string, or a comment) and its value: a string, int,
// float64, bool, time.Time, []byte, comment, branch, []any or nil.
type item struct {
	Key   any
	Value any
	line  int // where the key is in the file as committed; 0 if unknown
}

// branch is a mapping, in the file's order: the MAC depends on it.
type branch []item

// macOnlyEncryptedInit starts the MAC of a file with mac_only_encrypted, so
// that such a MAC never equals the one over all values (sops: sha256("sops")).
var macOnlyEncryptedInit = []byte{0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0xb, 0xb, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69}

// rules decide which values of a file are encrypted, from its metadata.
type rules struct {
	unencryptedSuffix, encryptedSuffix string
	// A pattern that does not compile matches nothing, as in sops (it
	// ignores regexp.Match's error).
	unencryptedRegex, encryptedRegex               *regexp.Regexp
	unencryptedCommentRegex, encryptedCommentRegex *regexp.Regexp
	hasEncryptedRegex, hasEncryptedCommentRegex    bool
	macOnlyEncrypted                               bool
}

func compileRule(expr string) (*regexp.Regexp, bool) {
	if expr == "" {
		return nil, false
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, true
	}
	return re, true
}

func matches(re *regexp.Regexp, s string) bool { return re != nil && re.MatchString(s) }

func newRules(m *metadata) rules {
	r := rules{unencryptedSuffix: m.UnencryptedSuffix, encryptedSuffix: m.EncryptedSuffix, macOnlyEncrypted: m.MACOnlyEncrypted}
	r.unencryptedRegex, _ = compileRule(m.UnencryptedRegex)
	r.encryptedRegex, r.hasEncryptedRegex = compileRule(m.EncryptedRegex)
	r.unencryptedCommentRegex, _ = compileRule(m.UnencryptedCommentRegex)
	r.encryptedCommentRegex, r.hasEncryptedCommentRegex = compileRule(m.EncryptedCommentRegex)
	return r
}

// encrypted says whether the value at path (under the comments before it,
// one list per enclosing mapping or list) is encrypted, as sops decides it.
// The metadata allows at most one rule, so their order does not matter.
func (r *rules) encrypted(path []string, comments [][]string, isComment bool) bool {
	anyKey := func(f func(string) bool) bool {
		for _, p := range path {
			if f(p) {
				return true
			}
		}
		return false
	}
	switch {
	case r.unencryptedSuffix != "":
		return !anyKey(func(p string) bool { return strings.HasSuffix(p, r.unencryptedSuffix) })
	case r.encryptedSuffix != "":
		return anyKey(func(p string) bool { return strings.HasSuffix(p, r.encryptedSuffix) })
	case r.unencryptedRegex != nil:
		return !anyKey(func(p string) bool { return matches(r.unencryptedRegex, p) })
	case r.hasEncryptedRegex:
		return anyKey(func(p string) bool { return matches(r.encryptedRegex, p) })
	case r.unencryptedCommentRegex != nil:
		for _, cs := range comments {
			for _, c := range cs {
				if matches(r.unencryptedCommentRegex, c) {
					return false
				}
			}
		}
		return true
	case r.hasEncryptedCommentRegex:
		last := len(comments) - 1
		for i, cs := range comments {
			for j, c := range cs {
				// A comment that itself matches is left in clear; the
				// values (and comments) after it are encrypted.
				if isComment && i == last && j == len(comments[last])-1 {
					continue
				}
				if matches(r.encryptedCommentRegex, c) {
					return true
				}
			}
		}
		return false
	}
	return true
}

// decrypter walks a tree as sops's Tree.Decrypt does: it decrypts each
// value the rules say is encrypted (the AES-GCM additional data is the
// value's path, "a:b:c:"), and hashes each resulting value into the MAC.
type decrypter struct {
	rules rules
	key   []byte
	hash  hash.Hash
}

func (d *decrypter) value(in any, path []string, comments [][]string) (any, error) {
	switch v := in.(type) {
	case string, int, bool, float64, time.Time, comment:
		return d.leaf(v, path, comments)
	case []byte:
		return d.leaf(string(v), path, comments)
	case branch:
		return d.branch(v, path, comments)
	case []any:
		return d.list(v, path, comments)
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("cannot walk value, unknown type: %T", in)
}

func (d *decrypter) list(in []any, path []string, comments [][]string) ([]any, error) {
	comments = append(comments, nil)
	top := len(comments) - 1
	for i, v := range in {
		c, isComment := v.(comment)
		if isComment {
			comments[top] = append(comments[top], c.Value)
		}
		nv, err := d.value(v, path, comments)
		if err != nil {
			return nil, err
		}
		in[i] = nv
		if !isComment {
			comments[top] = nil
		}
	}
	return in, nil
}

func (d *decrypter) branch(in branch, path []string, comments [][]string) (branch, error) {
	comments = append(comments, nil)
	top := len(comments) - 1
	for i, it := range in {
		if c, ok := it.Key.(comment); ok {
			comments[top] = append(comments[top], c.Value)
			out, err := d.value(c, path, comments)
			if err != nil {
				return nil, err
			}
			switch out := out.(type) {
			case comment:
				in[i].Key = out
			case string:
				in[i].Key = comment{Value: out, Inline: c.Inline}
			default:
				return nil, fmt.Errorf("a comment decrypted to a %T", out)
			}
			continue
		}
		c, valueIsComment := it.Value.(comment)
		if valueIsComment {
			comments[top] = append(comments[top], c.Value)
		}
		key, ok := it.Key.(string)
		if !ok {
			return nil, fmt.Errorf("the tree has a non-string key (type %T): only string keys are supported", it.Key)
		}
		// A fresh slice per key: the path of a value must not be
		// overwritten by its siblings'.
		nv, err := d.value(it.Value, append(path[:len(path):len(path)], key), comments)
		if err != nil {
			return nil, err
		}
		in[i].Value = nv
		if !valueIsComment {
			comments[top] = nil
		}
	}
	return in, nil
}

func (d *decrypter) leaf(in any, path []string, comments [][]string) (any, error) {
	c, isComment := in.(comment)
	enc := d.rules.encrypted(path, comments, isComment)
	v := in
	if enc {
		ad := strings.Join(path, ":") + ":"
		switch {
		case isComment:
			var err error
			if v, err = decryptValue(c.Value, d.key, ad); err != nil {
				v = c // a comment left in clear by an older sops
			}
		default:
			s, ok := in.(string)
			if !ok {
				return nil, fmt.Errorf("expected an encrypted value as a string, got %T", in)
			}
			var err error
			if v, err = decryptValue(s, d.key, ad); err != nil {
				return nil, fmt.Errorf("could not decrypt value: %w", err)
			}
		}
	}
	if !d.rules.macOnlyEncrypted || enc {
		// A value may decrypt to a comment (comments in lists): those,
		// like comments, are not part of the MAC.
		if _, isC := v.(comment); !isC {
			b, err := macBytes(v)
			if err != nil {
				return nil, err
			}
			d.hash.Write(b)
		}
	}
	return v, nil
}

// macBytes is a value as sops hashes it into the MAC.
func macBytes(v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return []byte(v), nil
	case int:
		return []byte(strconv.Itoa(v)), nil
	case float64:
		return []byte(strconv.FormatFloat(v, 'f', -1, 64)), nil
	case bool:
		if v {
			return []byte("True"), nil
		}
		return []byte("False"), nil
	case []byte:
		return v, nil
	case time.Time:
		return v.MarshalText()
	}
	return nil, fmt.Errorf("cannot hash a value of type %T", v)
}

// encValue is sops's format of an encrypted value. The expression is
// sops's own: its greedy groups decide where a malformed value splits.
var encValue = regexp.MustCompile(`^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]`)

// decryptValue opens one "ENC[AES256_GCM,...]" value with the data key,
// additional data ad, and converts it to the type it was encrypted from.
func decryptValue(s string, key []byte, ad string) (any, error) {
	if s == "" {
		return "", nil
	}
	m := encValue.FindStringSubmatch(s)
	if m == nil {
		return nil, errors.New("the value is not in sops's ENC[AES256_GCM,...] format")
	}
	var parts [3][]byte
	for i := range parts {
		b, err := base64.StdEncoding.DecodeString(m[i+1])
		if err != nil {
			return nil, fmt.Errorf("base64: %w", err)
		}
		parts[i] = b
	}
	data, iv, tag := parts[0], parts[1], parts[2]
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, len(iv))
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, iv, append(data, tag...), []byte(ad))
	if err != nil {
		return nil, fmt.Errorf("AES-GCM: %w", err)
	}
	switch m[4] {
	case "str":
		return string(plain), nil
	case "int":
		return strconv.Atoi(string(plain))
	case "float":
		return strconv.ParseFloat(string(plain), 64)
	case "bytes":
		// sops cannot open such a value: its cipher keys a map by the
		// plaintext, and a byte slice panics there. Only an edit makes
		// one (sops writes no bytes values).
		return nil, errors.New("a value of type bytes, which sops cannot decrypt")
	case "bool":
		return strconv.ParseBool(string(plain))
	case "time":
		var t time.Time
		err := t.UnmarshalText(plain)
		return t, err
	case "comment":
		return comment{Value: string(plain)}, nil
	}
	return nil, fmt.Errorf("unknown data type %q", m[4])
}

// decryptTree decrypts every branch in place and checks the MAC: the
// hash of the values, in order, must equal the file's MAC, itself
// encrypted with the last-modified time as additional data.
func decryptTree(f *sopsFile, key []byte) error {
	h := sha512.New()
	if f.meta.MACOnlyEncrypted {
		h.Write(macOnlyEncryptedInit)
	}
	d := &decrypter{rules: newRules(&f.meta), key: key, hash: h}
	for i, b := range f.branches {
		nb, err := d.branch(b, nil, nil)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrTampered, err)
		}
		f.branches[i] = nb
	}
	got := fmt.Sprintf("%X", h.Sum(nil))
	want, err := decryptValue(f.meta.MessageAuthenticationCode, key, f.meta.LastModified.Format(time.RFC3339))
	if err != nil {
		return fmt.Errorf("%w: cannot decrypt the MAC: %v", ErrTampered, err)
	}
	if s, ok := want.(string); !ok || s != got {
		return ErrTampered
	}
	return nil
}
