package secrets

import (
	"errors"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/secrets/sopstest"
)

// Files as people write them — multi-document YAML with anchors, block
// scalars and comments everywhere; JSON with escapes and numbers beyond
// int64; dotenv and INI with comments — open to what the library prints,
// under each encryption rule.
func TestDecryptHandWrittenFiles(t *testing.T) {
	id := newAgeKey(t)
	diffEnv(t, id)
	files := []struct{ name, plain string }{
		{"app.yaml", `# head comment
db: &db
    host: db.internal # where
    port: 5432
    password: "s3cret: with colon"
    pw_list:
        # first
        - a
        - 2.50
        - true
        - null
    note: |
        line one
        line two
    big: 123456789012345678901234567890
    when: 2024-01-02T03:04:05Z
    tagged: !!binary aGVsbG8=
replica: *db
pub_key_unencrypted: visible
ключ: значение # юникод
empty: ""
emptymap: {}
emptylist: []
# foot comment
---
second: document
sec_token: x
`},
		{"app.json", `{"a": {"b": [1, 2.5, -3e10, 18446744073709551616, true, false, null, "\u00e9\n\t\"q\""]}, "pub_x": "clear", "sec": {"pw": "p"}, "": "empty key", "n": 9007199254740993}`},
		{"app.env", "# a comment\nUSER=app\nPASSWORD=s3cret=with=equals\nEMPTY=\nMULTI=one\\ntwo\n#sops:enc\nsec_TOKEN=t\n"},
		{"app.ini", "; top comment\n[database]\n# section comment\nuser = app\npassword = s3cret\n[pub_section]\nkey_unencrypted = visible\nsec_key = hidden ; inline\n"},
		{"db-password", "s3cret\x00 binary ✓\n"},
	}
	rules := []sopstest.Options{
		{},
		{UnencryptedSuffix: "_unencrypted"},
		{EncryptedSuffix: "_unencrypted"},
		{UnencryptedRegex: "^pub"},
		{EncryptedRegex: "^(sec|pass)"},
		{UnencryptedCommentRegex: "where"},
		{EncryptedCommentRegex: "sops:enc"},
		{MACOnlyEncrypted: true, EncryptedRegex: "^pass"},
	}
	for _, f := range files {
		tree, err := sopstest.LoadPlain(f.name, []byte(f.plain))
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		for _, o := range rules {
			o.AgeGroups = [][]string{{id.Recipient().String()}}
			enc, err := sopstest.EncryptBranches(f.name, tree, o)
			if err != nil {
				t.Fatalf("%s %+v: %v", f.name, o, err)
			}
			why, err := compare(f.name, enc)
			if err != nil {
				t.Errorf("%s %+v: %v\n%s", f.name, o, err, enc)
			}
			if why != sopstest.Accepted {
				t.Errorf("%s %+v: the library refuses its own file (%s)", f.name, o, why)
			}
			tree, _ = sopstest.LoadPlain(f.name, []byte(f.plain)) // encryption changed it in place
		}
	}
}

// Several key groups: the data key is split (Shamir); any threshold of
// groups opens the file, fewer do not — as with the library.
func TestDecryptShamirKeyGroups(t *testing.T) {
	a, b, c := newAgeKey(t), newAgeKey(t), newAgeKey(t)
	tree, err := sopstest.LoadPlain("s.yaml", []byte("password: split\n"))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := sopstest.EncryptBranches("s.yaml", tree, sopstest.Options{
		AgeGroups:       [][]string{{a.Recipient().String()}, {b.Recipient().String()}, {c.Recipient().String()}},
		ShamirThreshold: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	diffEnv(t, a)
	t.Setenv("SOPS_AGE_KEY", a.String()+"\n"+c.String())
	if why, err := compare("s.yaml", enc); err != nil || why != sopstest.Accepted {
		t.Errorf("two of three groups: %s, %v", why, err)
	}
	if got, err := Decrypt("s.yaml", enc, Keys{AgeIdentities: b.String() + "\n" + c.String()}); err != nil || string(got) != "password: split\n" {
		t.Errorf("two groups from the app's key file: %q, %v", got, err)
	}
	t.Setenv("SOPS_AGE_KEY", b.String())
	if why, err := compare("s.yaml", enc); err != nil || why != sopstest.NoKey {
		t.Errorf("one of three groups: %s, %v (want both to find no key)", why, err)
	}
}

// A file encrypted only for key types driftless does not use (a cloud
// KMS) is refused as having no key, naming the key types and what to do;
// a file with an age key beside them still opens with it.
func TestDecryptRefusesUnsupportedKeyTypes(t *testing.T) {
	id := newAgeKey(t)
	diffEnv(t, id)
	enc := encrypt(t, "db.yaml", "password: s3cret\n", id)
	kms := map[string]string{"arn": "arn:aws:kms:eu-west-1:111122223333:key/1234abcd", "created_at": "2024-01-02T03:04:05Z", "enc": "AQICAHh", "aws_profile": ""}
	azure := map[string]string{"vault_url": "https://v.vault.azure.net", "name": "sops", "version": "1", "created_at": "2024-01-02T03:04:05Z", "enc": "x"}
	only, err := sopstest.WithOnlyKeys(enc, map[string][]map[string]string{"kms": {kms}, "azure_kv": {azure}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Decrypt("db.yaml", only, Keys{AgeIdentities: id.String()})
	if !errors.Is(err, ErrNoKey) {
		t.Fatalf("KMS and Azure only: %v, want ErrNoKey", err)
	}
	for _, want := range []string{"encrypted only for keys of type kms, azure_kv", "driftless opens age and OpenPGP keys", "add an age or OpenPGP recipient"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("KMS and Azure only: %v\nwant it to say %q", err, want)
		}
	}
	// (The library is not asked: it would call AWS and Azure.)
}
