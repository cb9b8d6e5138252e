package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// HashService is the hash a replica records: the first 16 hex characters of
// a SHA-256 over the canonical JSON of the spec and labels. Replicas and
// the dependencies (DependsOn, DependsOnCondition, DependsOnRestart) are
// left out: scaling or reordering startup must not replace running
// containers. Order of set-like lists and maps does not matter.
//
// Secret env values enter the hash only as key's digest of them, so the
// hash on a container's label cannot be used to test guesses of a secret
// by anyone without the key; a changed secret still changes the hash.
//
// A repository bind's ContentHash enters the hash as its first
// LegacyContentIDLen characters, as content hashes were before they were
// full: containers created by an older version keep their spec hash and are
// not all recreated on upgrade. That is no weaker than the hash itself,
// which keeps 16 characters of its own SHA-256: a pusher who can make two
// contents collide there can as well make two specs collide, and either
// only within their own app. Where the content lands on the host is named
// by the full hash (deploy's materialize).
func HashService(key SecretKey, labels map[string]string, spec ServiceSpec) string {
	spec = CanonicalService(spec)
	for i := range spec.Binds {
		b := &spec.Binds[i]
		b.ContentHash = b.ContentHash[:min(LegacyContentIDLen, len(b.ContentHash))]
	}
	for k, v := range spec.Env {
		if spec.IsSecretEnv(k) {
			spec.Env[k] = key.Digest(v)
		}
	}
	spec.Replicas = 0
	if spec.NetworkMode == NetworkDefault {
		// The same network as bridge, which the compose front end wrote
		// for "default" before: a replica made then is not replaced.
		spec.NetworkMode = NetworkBridge
	}
	if spec.Build != nil {
		spec.Build.NoCache, spec.Build.Pull = false, false // how to build, not what runs
	}
	spec.Update.Canary, spec.Update.CanaryWatch = 0, 0
	spec.DependsOn = nil
	spec.DependsOnCondition = nil
	spec.DependsOnRestart = nil
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
// key's redacted form of them (see SecretKey.Redact).
func (s ServiceSpec) Redacted(key SecretKey) ServiceSpec {
	out := cloneService(s)
	for k, v := range out.Env {
		if s.IsSecretEnv(k) {
			out.Env[k] = key.Redact(v)
		}
	}
	return out
}

// Rehash recomputes every service's hash with key and records key on the
// app. The loader calls it last, so every hash an App carries is keyed.
func (a *App) Rehash(key SecretKey) {
	a.SecretKey = key
	for i := range a.Services {
		s := &a.Services[i]
		s.Hash = HashService(key, s.Labels, s.Spec)
	}
	for i := range a.Jobs {
		j := &a.Jobs[i]
		j.Service.Hash = HashService(key, j.Service.Labels, j.Service.Spec)
		j.Hash = HashJob(key, *j)
	}
}
