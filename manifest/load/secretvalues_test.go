package load

import (
	"strings"
	"testing"
)

// FuzzSecretValues: whatever a decrypted file holds, reading it neither
// panics nor echoes the plaintext in an error.
func FuzzSecretValues(f *testing.F) {
	f.Add("db.env", "", []byte("A=1\nB=two\n"))
	f.Add("s.yaml", "token", []byte("token: x\nn: 1\n"))
	f.Add("s.json", "", []byte(`{"a": "b", "c": [1]}`))
	f.Add("bin", "", []byte("\x00raw"))
	f.Fuzz(func(t *testing.T, file, key string, plain []byte) {
		vals, err := secretValues("s", file, key, plain, true)
		if err != nil {
			// Key names may be quoted; the plaintext as a whole never.
			if len(plain) >= 8 && !strings.Contains(file+key, string(plain)) && strings.Contains(err.Error(), string(plain)) {
				t.Fatalf("error echoes the plaintext: %v", err)
			}
			return
		}
		for k := range vals {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				t.Fatalf("invalid variable name %q from %q", k, plain)
			}
		}
	})
}
