package manifest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// SecretKey is the per-agent key secret values are digested with before
// they reach a hash or a display. A keyed digest (HMAC-SHA256) rather than a
// plain SHA-256 keeps a low-entropy secret from being guessed offline from
// `docker inspect` labels or the UI: without the key, a digest reveals
// nothing. The agent keeps it in its data directory (see package secrets);
// the CLI reads the same file so that both compute the same hashes.
//
// A nil key still digests (HMAC with an empty key): that is for tests and
// for `validate`, whose hashes are never stored.
type SecretKey []byte

// Digest is the keyed digest of a secret value: 16 hex characters.
func (k SecretKey) Digest(v string) string {
	m := hmac.New(sha256.New, k)
	m.Write([]byte(v))
	return hex.EncodeToString(m.Sum(nil))[:16]
}

// Redact is how a secret value is shown and recorded:
// "(sensitive hmac:<8 hex>)". A change stays visible in a diff, the value
// never shows.
func (k SecretKey) Redact(v string) string {
	return redactedPrefix + k.Digest(v)[:8] + ")"
}

// redactedPrefix starts every redacted value; values recorded by older
// versions start "(sensitive sha256:".
const redactedPrefix = "(sensitive hmac:"

// IsRedacted reports whether v is a redacted form rather than a value.
func IsRedacted(v string) bool {
	return len(v) > len("(sensitive") && v[:len("(sensitive")] == "(sensitive"
}
