package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// HashService is the hash a replica records: the first 16 hex characters of
// a SHA-256 over the canonical JSON of the spec and labels. Replicas and
// DependsOn are left out: scaling or reordering startup must not replace
// running containers. Order of set-like lists and maps does not matter.
func HashService(labels map[string]string, spec ServiceSpec) string {
	spec = canonicalService(spec)
	spec.Replicas = 0
	spec.DependsOn = nil
	spec.DependsOnCondition = nil
	return hashJSON(KindService, labels, spec)
}

// HashNetwork is the hash a network records; see HashService.
func HashNetwork(labels map[string]string, spec NetworkSpec) string {
	return hashJSON(KindNetwork, labels, spec)
}

// HashVolume is the hash a volume records; see HashService.
func HashVolume(labels map[string]string, spec VolumeSpec) string {
	return hashJSON(KindVolume, labels, spec)
}

func hashJSON(kind string, labels map[string]string, spec any) string {
	// encoding/json sorts map keys and keeps struct field order, which
	// makes its output canonical for these types.
	b, err := json.Marshal(struct {
		Kind   string            `json:"kind"`
		Labels map[string]string `json:"labels,omitempty"`
		Spec   any               `json:"spec"`
	}{kind, copyMap(labels), spec})
	if err != nil {
		panic("manifest: spec not marshalable: " + err.Error()) // plain data types: cannot happen
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// Redacted returns a deep copy of s whose secret env values are replaced by
// "(sensitive sha256:<8 hex>)": a change stays visible in a diff, the value
// never shows.
func (s ServiceSpec) Redacted() ServiceSpec {
	out := cloneService(s)
	for k, v := range out.Env {
		if s.IsSecretEnv(k) {
			out.Env[k] = RedactValue(v)
		}
	}
	return out
}

// RedactValue is how a secret value is shown.
func RedactValue(v string) string {
	sum := sha256.Sum256([]byte(v))
	return "(sensitive sha256:" + hex.EncodeToString(sum[:])[:8] + ")"
}
