package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/logging"
	"github.com/sirupsen/logrus"

	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/secrets/sopstest"
)

// The reader is held to the sops library: random trees of every format,
// encrypted by the library, must decrypt to the same bytes with both, and
// every alteration must be refused by both, for the same reason.

// diffEnv makes the environment's age key id the only key either side
// finds (no GnuPG, no key file).
type setenver interface {
	Setenv(key, value string)
	TempDir() string
}

func diffEnv(t setenver, id *age.X25519Identity) {
	// The library warns of every comment that does not decrypt.
	logging.SetLevel(logrus.ErrorLevel)
	t.Setenv("SOPS_AGE_KEY", id.String())
	t.Setenv("SOPS_AGE_KEY_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("SOPS_AGE_SSH_PRIVATE_KEY_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("GNUPGHOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
}

// gen draws random trees.
type gen struct {
	r      *rand.Rand
	format Format
}

var (
	// Keys that the encryption rules below select, beside random ones.
	ruleKeys = []string{"password", "pub_host", "host_unencrypted", "token_enc", "sec_api", "pw", "a:b", "ключ", "日本語", "😀key", "x y", "0", "true", "null", "-", "ENC[x]"}
	runePool = []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.:,;/=+#!?'\"\\\t\nÄöüßéèçñøπλжя中文日本語한국어😀🎉\u00a0\u200b")
	// INI and dotenv lines have no escapes for these; a clear value
	// holding them would not read back as written.
	lineUnsafe = "\n\t\\\"'#;=`"
)

func (g *gen) str(max int, safe bool) string {
	n := g.r.IntN(max + 1)
	var b strings.Builder
	for b.Len() < n {
		c := runePool[g.r.IntN(len(runePool))]
		if safe && strings.ContainsRune(lineUnsafe, c) {
			continue
		}
		b.WriteRune(c)
	}
	s := b.String()
	if safe {
		s = strings.TrimSpace(strings.Trim(s, "\u00a0\u200b"))
	}
	return s
}

func (g *gen) key(safe bool) string {
	if g.r.IntN(3) == 0 {
		return ruleKeys[g.r.IntN(len(ruleKeys))]
	}
	for {
		k := g.str(12, safe)
		if safe {
			k = strings.Map(func(r rune) rune {
				if strings.ContainsRune(" =:[]", r) {
					return '_'
				}
				return r
			}, k)
		}
		if k != "" && k != "sops" && !strings.HasPrefix(k, "sops_") {
			return k
		}
	}
}

func (g *gen) comment() sops.Comment {
	texts := []string{" a comment", " sops:enc below", " sops:plain below", "", " ключ: значение", " #"}
	if g.r.IntN(2) == 0 {
		return sops.Comment{Value: texts[g.r.IntN(len(texts))]}
	}
	return sops.Comment{Value: " " + strings.ReplaceAll(g.str(20, false), "\n", " ")}
}

func (g *gen) scalar() any {
	switch g.r.IntN(9) {
	case 0, 1, 2:
		return g.str(24, false)
	case 3:
		return g.r.IntN(2000) - 1000
	case 4:
		return int(g.r.Int64()) * (1 - 2*g.r.IntN(2))
	case 5:
		fs := []float64{0.5, 3.0, -2.25, 1e300, 1e-300, math.MaxFloat64, math.SmallestNonzeroFloat64, g.r.NormFloat64() * math.Pow(10, float64(g.r.IntN(40)-20))}
		if g.format == FormatYAML && g.r.IntN(4) == 0 {
			fs = append(fs, math.Inf(1), math.Inf(-1), math.NaN())
		}
		return fs[g.r.IntN(len(fs))]
	case 6:
		return g.r.IntN(2) == 0
	case 7:
		return time.Unix(g.r.Int64N(4e9), int64(g.r.IntN(3))*5e8).UTC()
	}
	if g.format == FormatJSON || g.format == FormatYAML {
		return nil
	}
	return ""
}

func (g *gen) value(depth int) any {
	if depth < 3 {
		switch g.r.IntN(5) {
		case 0:
			return g.branch(depth + 1)
		case 1:
			return g.list(depth + 1)
		}
	}
	return g.scalar()
}

func (g *gen) list(depth int) []any {
	var l []any
	for range g.r.IntN(5) {
		if g.format == FormatYAML && g.r.IntN(4) == 0 {
			l = append(l, g.comment())
		}
		l = append(l, g.value(depth))
	}
	return l
}

func (g *gen) branch(depth int) sops.TreeBranch {
	b := sops.TreeBranch{}
	seen := map[string]bool{}
	for range g.r.IntN(6) {
		if g.format == FormatYAML && g.r.IntN(4) == 0 {
			b = append(b, sops.TreeItem{Key: g.comment()})
		}
		k := g.key(false)
		if seen[k] { // YAML refuses duplicate keys
			continue
		}
		seen[k] = true
		b = append(b, sops.TreeItem{Key: k, Value: g.value(depth)})
	}
	return b
}

// flat is a dotenv file, or an INI section: string values, comments.
func (g *gen) flat() sops.TreeBranch {
	b := sops.TreeBranch{}
	seen := map[string]bool{}
	for range g.r.IntN(7) {
		if g.r.IntN(4) == 0 {
			c := g.comment()
			if g.format == FormatINI {
				c.Value = strings.TrimSpace(strings.Trim(strings.TrimSpace(c.Value), "#;"))
				if c.Value == "" || len(b) == 0 {
					continue
				}
			}
			b = append(b, sops.TreeItem{Key: c})
		}
		k := g.key(true)
		if seen[k] || strings.HasPrefix(k, "#") || strings.HasPrefix(k, ";") {
			continue
		}
		seen[k] = true
		v := g.str(20, g.format == FormatINI)
		if g.format == FormatDotenv {
			v = strings.ReplaceAll(v, "\\", "/") // "\n" is dotenv's only escape
		}
		b = append(b, sops.TreeItem{Key: k, Value: v})
	}
	return b
}

func (g *gen) tree() sops.TreeBranches {
	switch g.format {
	case FormatDotenv:
		return sops.TreeBranches{g.flat()}
	case FormatINI:
		b := sops.TreeBranch{}
		seen := map[string]bool{}
		for range g.r.IntN(4) {
			name := g.key(true)
			if seen[name] || name == "DEFAULT" {
				continue
			}
			seen[name] = true
			b = append(b, sops.TreeItem{Key: name, Value: g.flat()})
		}
		return sops.TreeBranches{b}
	case FormatBinary:
		raw := make([]byte, g.r.IntN(64))
		for i := range raw {
			raw[i] = byte(g.r.IntN(256))
		}
		if g.r.IntN(2) == 0 {
			raw = []byte(g.str(64, false))
		}
		return sops.TreeBranches{{sops.TreeItem{Key: "data", Value: string(raw)}}}
	case FormatYAML:
		docs := sops.TreeBranches{g.branch(0)}
		if g.r.IntN(5) == 0 { // a second YAML document
			docs = append(docs, g.branch(0))
		}
		return docs
	}
	return sops.TreeBranches{g.branch(0)}
}

// options draws the encryption rules: at most one, as sops allows.
func (g *gen) options(recipient string) sopstest.Options {
	o := sopstest.Options{MACOnlyEncrypted: g.r.IntN(3) == 0, AgeGroups: [][]string{{recipient}}}
	switch g.r.IntN(8) {
	case 1:
		o.UnencryptedSuffix = "_unencrypted"
	case 2:
		o.EncryptedSuffix = "_enc"
	case 3:
		o.UnencryptedRegex = "^pub"
	case 4:
		o.EncryptedRegex = "^(sec|pass|pw)"
	case 5:
		o.UnencryptedCommentRegex = "sops:plain"
	case 6:
		o.EncryptedCommentRegex = "sops:enc"
	}
	if g.r.IntN(6) == 0 { // three key groups, any two of which open the file
		o.AgeGroups = [][]string{{recipient}, {recipient}, {recipient}}
		o.ShamirThreshold = 2
	}
	return o
}

var diffFormats = []struct {
	format Format
	name   string
}{{FormatYAML, "s.yaml"}, {FormatJSON, "s.json"}, {FormatDotenv, "s.env"}, {FormatINI, "s.ini"}, {FormatBinary, "s.bin"}}

// refusal is how package secrets refused, in sopstest's words.
func refusal(err error) sopstest.Refusal {
	switch {
	case err == nil:
		return sopstest.Accepted
	case errors.Is(err, ErrNotEncrypted):
		return sopstest.NotEncrypted
	case errors.Is(err, ErrNoKey):
		return sopstest.NoKey
	case errors.Is(err, ErrTampered):
		return sopstest.Tampered
	}
	return sopstest.NotPrintable
}

// refusedKey is the reader's own refusal (badKey): a key set twice, or a
// dotenv key compose would read as a key and a value. sops accepts such
// files, or refuses them for another reason.
const refusedKey sopstest.Refusal = "refused key"

// compare decrypts data with both and reports any difference.
func compare(name string, data []byte) (sopstest.Refusal, error) {
	want, why, werr := sopstest.Decrypt(name, data)
	got, err := Decrypt(name, bytes.Clone(data), Keys{})
	var bad *load.KeyError
	if errors.As(err, &bad) {
		return why, keyRefusalGrounded(data, bad)
	}
	if why == sopstest.Panicked {
		if err == nil {
			return why, fmt.Errorf("the library panics (%v), the reader accepts", werr)
		}
		return why, nil
	}
	if refusal(err) != why {
		return why, fmt.Errorf("the library: %q (%v); the reader: %q (%v)", why, werr, refusal(err), err)
	}
	if why == sopstest.Accepted && !bytes.Equal(got, want) {
		return why, fmt.Errorf("different plaintexts:\nlibrary: %q\nreader:  %q", want, got)
	}
	return why, nil
}

// keyRefusalGrounded checks that a key the reader refused is in the file
// where the refusal says: at both lines when it is set twice.
func keyRefusalGrounded(data []byte, bad *load.KeyError) error {
	lines := strings.Split(string(data), "\n")
	quoted, _ := json.Marshal(bad.Key)
	at := func(n int) bool {
		return n >= 1 && n <= len(lines) && (strings.Contains(lines[n-1], bad.Key) || strings.Contains(lines[n-1], string(quoted)))
	}
	switch {
	case bad.Msg != "" && !strings.Contains(bad.Key, ":"):
		return fmt.Errorf("the reader refused key %q, which holds no ':': %v", bad.Key, bad)
	case !at(bad.Line), bad.Msg == "" && !at(bad.First):
		return fmt.Errorf("the reader refused a key the file does not hold there: %v", bad)
	}
	return nil
}

var encSpan = regexp.MustCompile(`ENC\[AES256_GCM,[^\]]*\]`)

// tamper changes one byte of one encrypted value (or of the MAC, which is
// one too) when pick > 0 selects one, else any byte of the file.
func tamper(data []byte, pick, pos uint32, to byte) []byte {
	out := bytes.Clone(data)
	if len(out) == 0 {
		return out
	}
	spans := encSpan.FindAllIndex(out, -1)
	i := int(pos) % len(out)
	if pick > 0 && len(spans) > 0 {
		s := spans[int(pick)%len(spans)]
		i = s[0] + int(pos)%(s[1]-s[0])
	}
	alphabet := []byte("AZaz09+/=,:]x\x00\xff")
	c := alphabet[int(to)%len(alphabet)]
	if c == out[i] {
		c ^= 1
	}
	out[i] = c
	return out
}

// diffCase encrypts one random tree and compares both decryptions of it
// and of a tampered copy. It returns whether the library accepts its own
// file: not always (a comment sops writes where YAML reads it elsewhere,
// invalid UTF-8 in JSON), and then the reader must refuse it too.
func diffCase(t *testing.T, recipient string, seed uint64, f int, pick, pos uint32, to byte) sopstest.Refusal {
	t.Helper()
	df := diffFormats[f%len(diffFormats)]
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), format: df.format}
	tree, opts := g.tree(), g.options(recipient)
	enc, err := sopstest.EncryptBranches(df.name, tree, opts)
	if err != nil {
		t.Skipf("the library does not encrypt this tree: %v", err)
	}
	why, err := compare(df.name, enc)
	if err != nil {
		t.Fatalf("%s, seed %d, %+v:\n%s\n%v", df.name, seed, opts, enc, err)
	}
	bad := tamper(enc, pick, pos, to)
	if _, err := compare(df.name, bad); err != nil {
		t.Fatalf("%s, seed %d, tampered (pick %d, pos %d):\n%s\n%v", df.name, seed, pick, pos, bad, err)
	}
	// A structural tamper, as sops itself would print the edited tree.
	kind := tamperKinds[int(pos)%len(tamperKinds)]
	flat := df.format == FormatDotenv || df.format == FormatINI
	edited, err := sopstest.Rewrite(df.name, enc, structuralTamper(g.r, kind, flat))
	if err != nil {
		return why // the library cannot print the edit: nothing to compare
	}
	if _, err := compare(df.name, edited); err != nil {
		t.Fatalf("%s, seed %d, %s:\n%s\n%v", df.name, seed, kind, edited, err)
	}
	return why
}

func TestDecryptDifferential(t *testing.T) {
	id := newAgeKey(t)
	diffEnv(t, id)
	n := 400
	if testing.Short() {
		n = 60
	}
	total, accepted := map[Format]int{}, map[Format]int{}
	for i := range n {
		seed := uint64(i) * 7919
		format := diffFormats[i%len(diffFormats)].format
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if diffCase(t, id.Recipient().String(), seed, i, uint32(i%3), uint32(seed>>3), byte(i)) == sopstest.Accepted {
				accepted[format]++
			}
		})
		total[format]++
	}
	// Most generated files must open, or the comparison says little.
	for f, n := range total {
		if accepted[f]*4 < n*3 {
			t.Errorf("%s: the library opens only %d of its %d files", f, accepted[f], n)
		}
	}
	t.Logf("trees per format: %v, opened: %v", total, accepted)
}

func FuzzDecryptDifferential(f *testing.F) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		f.Fatal(err)
	}
	diffEnv(f, id)
	for i := range 10 {
		f.Add(uint64(i), i, uint32(i%2), uint32(i*31), byte(i))
	}
	f.Fuzz(func(t *testing.T, seed uint64, format int, pick, pos uint32, to byte) {
		if format < 0 {
			format = -format
		}
		diffCase(t, id.Recipient().String(), seed, format, pick, pos, to)
	})
}
