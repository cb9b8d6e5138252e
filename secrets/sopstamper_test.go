package secrets

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/getsops/sops/v3"

	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/secrets/sopstest"
)

// Structural tampers: what someone with push access but without the key
// can do to an encrypted file besides flipping bytes. The MAC is a hash of
// the values in order; keys, comments and the shape of the tree are not in
// it, each encrypted value is bound to its key path (not its list index),
// and empty and null values add nothing to it. So some of these the format
// itself cannot see (TestStructuralTampers says which); the reader must
// refuse at least what the library refuses, and accept no more than it
// except where it is stricter on purpose (badKey).

// tamperKinds are the structural tampers the differential test draws.
var tamperKinds = []string{"duplicate key, empty", "duplicate key, copied", "added empty key", "added null key", "type tag swap", "moved list item", "_unencrypted rename"}

// slot is one place in a tree that holds a value.
type slot struct {
	get func() any
	set func(any)
}

// slots lists every value of the tree, the top-level branches included,
// parents before children.
func slots(branches sops.TreeBranches) []slot {
	var out []slot
	var walk func(s slot)
	walk = func(s slot) {
		out = append(out, s)
		switch v := s.get().(type) {
		case sops.TreeBranch:
			for i := range v {
				if _, isComment := v[i].Key.(sops.Comment); isComment {
					continue
				}
				walk(slot{get: func() any { return v[i].Value }, set: func(x any) { v[i].Value = x }})
			}
		case []any:
			for i := range v {
				walk(slot{get: func() any { return v[i] }, set: func(x any) { v[i] = x }})
			}
		}
	}
	for i := range branches {
		walk(slot{get: func() any { return branches[i] }, set: func(x any) { branches[i] = x.(sops.TreeBranch) }})
	}
	return out
}

// pick is a random slot whose value ok accepts, or nil.
func pick(r *rand.Rand, ss []slot, ok func(any) bool) *slot {
	var fit []slot
	for _, s := range ss {
		if ok(s.get()) {
			fit = append(fit, s)
		}
	}
	if len(fit) == 0 {
		return nil
	}
	s := fit[r.IntN(len(fit))]
	return &s
}

func isBranch(v any) bool {
	b, ok := v.(sops.TreeBranch)
	return ok && len(keyed(b)) > 0
}

// keyed are the indexes of b's items that are not comments.
func keyed(b sops.TreeBranch) []int {
	var out []int
	for i, it := range b {
		if _, isComment := it.Key.(sops.Comment); !isComment {
			out = append(out, i)
		}
	}
	return out
}

var encType = regexp.MustCompile(`,type:[a-z]+\]$`)

// structuralTamper applies tamper kind to a tree, at a place r draws, as
// sopstest.Rewrite passes it; flat says values must stay strings (dotenv,
// INI).
func structuralTamper(r *rand.Rand, kind string, flat bool) func(sops.TreeBranches) sops.TreeBranches {
	return func(tree sops.TreeBranches) sops.TreeBranches {
		ss := slots(tree)
		switch kind {
		case "duplicate key, empty", "duplicate key, copied", "added empty key", "added null key":
			s := pick(r, ss, isBranch)
			if s == nil {
				return tree
			}
			b := s.get().(sops.TreeBranch)
			it := b[keyed(b)[r.IntN(len(keyed(b)))]]
			switch kind {
			case "duplicate key, empty":
				it.Value = ""
			case "added empty key":
				it = sops.TreeItem{Key: "added", Value: ""}
			case "added null key":
				it = sops.TreeItem{Key: "added", Value: nil}
				if flat {
					it.Value = ""
				}
			}
			s.set(append(b, it))
		case "type tag swap":
			s := pick(r, ss, func(v any) bool { str, ok := v.(string); return ok && encType.MatchString(str) })
			if s != nil {
				types := []string{"str", "int", "float", "bool", "bytes", "time", "comment"}
				s.set(encType.ReplaceAllString(s.get().(string), ",type:"+types[r.IntN(len(types))]+"]"))
			}
		case "moved list item":
			s := pick(r, ss, func(v any) bool { l, ok := v.([]any); return ok && len(l) >= 2 })
			if s != nil {
				l := s.get().([]any)
				i := r.IntN(len(l))
				moved := append(append(append([]any{}, l[:i]...), l[i+1:]...), l[i])
				s.set(moved)
			}
		case "_unencrypted rename":
			s := pick(r, ss, isBranch)
			if s == nil {
				return tree
			}
			b := s.get().(sops.TreeBranch)
			i := keyed(b)[r.IntN(len(keyed(b)))]
			if k, ok := b[i].Key.(string); ok {
				if base, cut := strings.CutSuffix(k, "_unencrypted"); cut && r.IntN(2) == 0 {
					b[i].Key = base
				} else {
					b[i].Key = "renamed_unencrypted"
				}
			}
		}
		return tree
	}
}

// TestStructuralTampers pins down, tamper by tamper, what the sops
// library and the reader do with a file edited without its key. Where
// the library accepts, the format cannot see the edit; changes says the
// decrypted text differs, so the edit went through unseen. The reader
// refuses two of those on purpose (refusedKey): a key set twice, and a
// dotenv key that compose reads as KEY:VALUE. docs/secrets.md lists the
// rest.
func TestStructuralTampers(t *testing.T) {
	id := newAgeKey(t)
	diffEnv(t, id)
	const (
		env  = "DB_USER=app\nDB_PASSWORD=real\nPORT=5432\nHOST_unencrypted=db\n"
		yml  = "password: real\nport: \"5432\"\nflag: \"True\"\nword: real\nhosts: [a, b]\nnested: [[x], [y]]\npairs: [{k: x}, {j: y}]\n"
		yml2 = "a: b\n---\npassword: real\n"
		jsn  = `{"password": "real", "port": 1}`
	)
	appendText := func(s string) func([]byte) []byte {
		return func(b []byte) []byte { return append(bytes.Clone(b), s...) }
	}
	type tc struct {
		name, file, plain string
		macOnlyEncrypted  bool
		text              func([]byte) []byte                       // an edit of the file's text, or
		tree              func(sops.TreeBranches) sops.TreeBranches // an edit of its tree
		library, reader   sopstest.Refusal
		changes           bool // accepted, yet decrypts to another text
		line              int  // refusedKey: the line it names
	}
	cases := []tc{
		{name: "duplicate key, empty (KEY= appended)", file: "s.env", plain: env, text: appendText("DB_PASSWORD=\n"), library: sopstest.Accepted, reader: refusedKey, line: 11},
		{name: "duplicate key, export KEY= appended", file: "s.env", plain: env, text: appendText("export DB_PASSWORD=\n"), library: sopstest.Accepted, reader: refusedKey, line: 11},
		{name: "duplicate key, encrypted value copied", file: "s.env", plain: env, tree: appendItem(0, "DB_PASSWORD", copyOf("DB_PASSWORD")), library: sopstest.Tampered, reader: refusedKey, line: 5},
		{name: "added key that compose reads as KEY:VALUE", file: "s.env", plain: env, text: appendText("LD_PRELOAD:/tmp/x.so=\n"), library: sopstest.Accepted, reader: refusedKey, line: 11},
		{name: "added empty key", file: "s.env", plain: env, text: appendText("DEBUG=\n"), library: sopstest.Accepted, reader: sopstest.Accepted, changes: true},
		{name: "added comment", file: "s.env", plain: env, text: appendText("#anything\n"), library: sopstest.Accepted, reader: sopstest.Accepted, changes: true},
		{name: "type tag swap str→int, dotenv", file: "s.env", plain: env, tree: retype("PORT", "int"), library: sopstest.Accepted, reader: sopstest.Accepted},
		{name: "_unencrypted key renamed", file: "s.env", plain: env, tree: rename("HOST_unencrypted", "PORT_unencrypted"), library: sopstest.Accepted, reader: sopstest.Accepted, changes: true},
		{name: "_unencrypted suffix dropped", file: "s.env", plain: env, tree: rename("HOST_unencrypted", "HOST"), library: sopstest.Tampered, reader: sopstest.Tampered},
		{name: "_unencrypted suffix added to an encrypted key", file: "s.env", plain: env, tree: rename("DB_PASSWORD", "DB_PASSWORD_unencrypted"), library: sopstest.Tampered, reader: sopstest.Tampered},
		{name: "_unencrypted key added", file: "s.env", plain: env, text: appendText("EVIL_unencrypted=x\n"), library: sopstest.Tampered, reader: sopstest.Tampered},
		{name: "_unencrypted key added, mac_only_encrypted", file: "s.env", plain: env, macOnlyEncrypted: true, text: appendText("EVIL_unencrypted=x\n"), library: sopstest.Accepted, reader: sopstest.Accepted, changes: true},
		{name: "_unencrypted value changed, mac_only_encrypted", file: "s.env", plain: env, macOnlyEncrypted: true, tree: setValue("HOST_unencrypted", "evil"), library: sopstest.Accepted, reader: sopstest.Accepted, changes: true},
		{name: "encrypted key renamed", file: "s.yaml", plain: yml, tree: rename("password", "secret"), library: sopstest.Tampered, reader: sopstest.Tampered},
		{name: "keys reordered", file: "s.yaml", plain: yml, tree: swapFirstTwo, library: sopstest.Tampered, reader: sopstest.Tampered},
		{name: "duplicate key, first YAML document", file: "s.yaml", plain: yml, text: insertAfterFirstLine("password: \"\"\n"), library: sopstest.NotEncrypted, reader: sopstest.NotEncrypted},
		{name: "duplicate key, second YAML document", file: "s.yaml", plain: yml2, tree: appendItem(1, "password", ""), library: sopstest.Accepted, reader: refusedKey, line: 19},
		{name: "added null key", file: "s.yaml", plain: yml, tree: appendItem(0, "added", nil), library: sopstest.Accepted, reader: sopstest.Accepted, changes: true},
		{name: "type tag swap str→int", file: "s.yaml", plain: yml, tree: retype("port", "int"), library: sopstest.Accepted, reader: sopstest.Accepted, changes: true},
		{name: "type tag swap str→bool, \"True\"", file: "s.yaml", plain: yml, tree: retype("flag", "bool"), library: sopstest.Accepted, reader: sopstest.Accepted, changes: true},
		{name: "type tag swap str→bool, other text", file: "s.yaml", plain: yml, tree: retype("word", "bool"), library: sopstest.Tampered, reader: sopstest.Tampered},
		{name: "type tag swap to bytes", file: "s.yaml", plain: yml, tree: retype("word", "bytes"), library: sopstest.Panicked, reader: sopstest.Tampered},
		{name: "list items reordered", file: "s.yaml", plain: yml, tree: editList("hosts", func(l []any) any { return []any{l[1], l[0]} }), library: sopstest.Tampered, reader: sopstest.Tampered},
		{name: "list item moved to the next list", file: "s.yaml", plain: yml, tree: editList("nested", func(l []any) any { return []any{[]any{l[0].([]any)[0], l[1].([]any)[0]}, []any{}} }), library: sopstest.Accepted, reader: sopstest.Accepted, changes: true},
		{name: "mappings of a list merged", file: "s.yaml", plain: yml, tree: editList("pairs", func(l []any) any { return []any{append(l[0].(sops.TreeBranch), l[1].(sops.TreeBranch)...)} }), library: sopstest.Accepted, reader: sopstest.Accepted, changes: true},
		{name: "duplicate key, JSON", file: "s.json", plain: jsn, tree: appendItem(0, "password", ""), library: sopstest.Accepted, reader: refusedKey, line: 4},
		{name: "added null key, JSON", file: "s.json", plain: jsn, tree: appendItem(0, "added", nil), library: sopstest.Accepted, reader: sopstest.Accepted, changes: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			branches, err := sopstest.LoadPlain(c.file, []byte(c.plain))
			if err != nil {
				t.Fatal(err)
			}
			enc, err := sopstest.EncryptBranches(c.file, branches, sopstest.Options{AgeGroups: [][]string{{id.Recipient().String()}}, MACOnlyEncrypted: c.macOnlyEncrypted})
			if err != nil {
				t.Fatal(err)
			}
			orig, err := Decrypt(c.file, enc, Keys{})
			if err != nil {
				t.Fatal(err)
			}
			bad := enc
			if c.text != nil {
				bad = c.text(enc)
			} else if bad, err = sopstest.Rewrite(c.file, enc, c.tree); err != nil {
				t.Fatal(err)
			}
			want, why, werr := sopstest.Decrypt(c.file, bad)
			got, err := Decrypt(c.file, bytes.Clone(bad), Keys{})
			if why != c.library {
				t.Errorf("the library: %q (%v), want %q", why, werr, c.library)
			}
			var key *load.KeyError
			switch {
			case c.reader == refusedKey && errors.As(err, &key):
				if key.Line != c.line {
					t.Errorf("refused at line %d, want %d: %v", key.Line, c.line, err)
				}
				if gerr := keyRefusalGrounded(bad, key); gerr != nil {
					t.Error(gerr)
				}
			case refusal(err) != c.reader:
				t.Errorf("the reader: %q (%v), want %q", refusal(err), err, c.reader)
			}
			if why == sopstest.Accepted && err == nil {
				if !bytes.Equal(got, want) {
					t.Errorf("different plaintexts:\nlibrary: %q\nreader:  %q", want, got)
				}
				if changed := !bytes.Equal(got, orig); changed != c.changes {
					t.Errorf("decrypts to another text: %v, want %v:\n%s", changed, c.changes, got)
				}
			}
			if t.Failed() {
				t.Logf("file:\n%s", bad)
			}
		})
	}
}

// appendItem appends key: value to document doc.
func appendItem(doc int, key string, value any) func(sops.TreeBranches) sops.TreeBranches {
	return func(tree sops.TreeBranches) sops.TreeBranches {
		if f, ok := value.(func(sops.TreeBranch) any); ok {
			value = f(tree[doc])
		}
		tree[doc] = append(tree[doc], sops.TreeItem{Key: key, Value: value})
		return tree
	}
}

// copyOf is the (encrypted) value of key, for appendItem.
func copyOf(key string) func(sops.TreeBranch) any {
	return func(b sops.TreeBranch) any {
		for _, it := range b {
			if it.Key == key {
				return it.Value
			}
		}
		return nil
	}
}

// onItem edits the first top-level item named key.
func onItem(key string, edit func(*sops.TreeItem)) func(sops.TreeBranches) sops.TreeBranches {
	return func(tree sops.TreeBranches) sops.TreeBranches {
		for i := range tree[0] {
			if tree[0][i].Key == key {
				edit(&tree[0][i])
				break
			}
		}
		return tree
	}
}

func rename(from, to string) func(sops.TreeBranches) sops.TreeBranches {
	return onItem(from, func(it *sops.TreeItem) { it.Key = to })
}

func setValue(key string, v any) func(sops.TreeBranches) sops.TreeBranches {
	return onItem(key, func(it *sops.TreeItem) { it.Value = v })
}

func retype(key, typ string) func(sops.TreeBranches) sops.TreeBranches {
	return onItem(key, func(it *sops.TreeItem) { it.Value = encType.ReplaceAllString(it.Value.(string), ",type:"+typ+"]") })
}

func editList(key string, edit func([]any) any) func(sops.TreeBranches) sops.TreeBranches {
	return onItem(key, func(it *sops.TreeItem) { it.Value = edit(it.Value.([]any)) })
}

func swapFirstTwo(tree sops.TreeBranches) sops.TreeBranches {
	tree[0][0], tree[0][1] = tree[0][1], tree[0][0]
	return tree
}

// insertAfterFirstLine puts s after the file's first line.
func insertAfterFirstLine(s string) func([]byte) []byte {
	return func(b []byte) []byte {
		i := bytes.IndexByte(b, '\n') + 1
		return append(append(bytes.Clone(b[:i]), s...), b[i:]...)
	}
}
