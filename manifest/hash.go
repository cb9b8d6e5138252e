package manifest

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
)

// HashService is the hash a replica records: the first 16 hex characters of
// a SHA-256 over the canonical JSON of the spec and labels. Replicas and
// DependsOn are left out: scaling or reordering startup must not replace
// running containers. Order of set-like lists and maps does not matter.
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
}

// CanonicalService returns a deep copy of spec with set-like lists sorted
// and empty collections nil, so equal specs marshal identically.
func CanonicalService(spec ServiceSpec) ServiceSpec {
	out := cloneService(spec)
	out.SecretEnv = sortedSet(out.SecretEnv)
	out.Networks = sortedSet(out.Networks)
	out.DependsOn = sortedSet(out.DependsOn)
	slices.SortFunc(out.Ports, func(a, b Port) int {
		return cmp.Or(cmp.Compare(a.ContainerPort, b.ContainerPort), cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.HostPort, b.HostPort))
	})
	slices.SortFunc(out.Volumes, func(a, b VolumeMount) int {
		return cmp.Or(cmp.Compare(a.MountPath, b.MountPath), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(out.Binds, func(a, b BindMount) int {
		return cmp.Or(cmp.Compare(a.MountPath, b.MountPath), cmp.Compare(a.HostPath, b.HostPath), cmp.Compare(a.RepoPath, b.RepoPath))
	})
	slices.SortFunc(out.Tmpfs, func(a, b TmpfsMount) int { return cmp.Compare(a.MountPath, b.MountPath) })
	slices.SortFunc(out.Devices, func(a, b Device) int {
		return cmp.Or(cmp.Compare(a.ContainerPath, b.ContainerPath), cmp.Compare(a.HostPath, b.HostPath))
	})
	slices.SortFunc(out.Ulimits, func(a, b Ulimit) int { return cmp.Compare(a.Name, b.Name) })
	out.CapAdd = sortedSet(out.CapAdd)
	out.CapDrop = sortedSet(out.CapDrop)
	out.ExtraHosts = sortedSet(out.ExtraHosts)
	out.GroupAdd = sortedSet(out.GroupAdd)
	for n, a := range out.Aliases {
		out.Aliases[n] = sortedSet(a)
	}
	// DNS servers, search domains, options and security options keep their
	// order: it means something to the resolver and the kernel.
	return out
}

// cloneService deep-copies spec, keeping list order; empty collections
// become nil.
func cloneService(spec ServiceSpec) ServiceSpec {
	out := spec
	out.Command = nonEmpty(spec.Command)
	out.Args = nonEmpty(spec.Args)
	out.Env = copyMap(spec.Env)
	out.SecretEnv = nonEmpty(spec.SecretEnv)
	out.Secrets = nonEmpty(spec.Secrets)
	out.EnvFrom = nonEmpty(spec.EnvFrom)
	out.Ports = nonEmpty(spec.Ports)
	out.Networks = nonEmpty(spec.Networks)
	out.Volumes = nonEmpty(spec.Volumes)
	out.DependsOn = nonEmpty(spec.DependsOn)
	out.DependsOnCondition = copyMap(spec.DependsOnCondition)
	if spec.Healthcheck != nil {
		h := *spec.Healthcheck
		h.Test = slices.Clone(h.Test)
		out.Healthcheck = &h
	}
	if len(spec.Aliases) > 0 {
		out.Aliases = make(map[string][]string, len(spec.Aliases))
		for n, a := range spec.Aliases {
			out.Aliases[n] = slices.Clone(a)
		}
	} else {
		out.Aliases = nil
	}
	out.ExtraHosts = nonEmpty(spec.ExtraHosts)
	out.DNS = nonEmpty(spec.DNS)
	out.DNSSearch = nonEmpty(spec.DNSSearch)
	out.DNSOptions = nonEmpty(spec.DNSOptions)
	out.Binds = nonEmpty(spec.Binds)
	out.Tmpfs = nonEmpty(spec.Tmpfs)
	out.CapAdd = nonEmpty(spec.CapAdd)
	out.CapDrop = nonEmpty(spec.CapDrop)
	out.SecurityOpt = nonEmpty(spec.SecurityOpt)
	out.Devices = nonEmpty(spec.Devices)
	out.GroupAdd = nonEmpty(spec.GroupAdd)
	out.Sysctls = copyMap(spec.Sysctls)
	out.Ulimits = nonEmpty(spec.Ulimits)
	if spec.Build != nil {
		b := *spec.Build
		b.Args = copyMap(b.Args)
		out.Build = &b
	}
	if spec.Logging != nil {
		l := *spec.Logging
		l.Options = copyMap(l.Options)
		out.Logging = &l
	}
	if spec.Readiness != nil {
		r := *spec.Readiness
		if r.HTTPGet != nil {
			h := *r.HTTPGet
			r.HTTPGet = &h
		}
		if r.TCPSocket != nil {
			t := *r.TCPSocket
			r.TCPSocket = &t
		}
		if r.Exec != nil {
			r.Exec = &ExecProbe{Command: slices.Clone(r.Exec.Command), Shell: r.Exec.Shell}
		}
		out.Readiness = &r
	}
	return out
}

// nonEmpty copies s, returning nil for an empty list.
func nonEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// sortedSet copies s sorted and deduplicated, nil if empty. Duplicates are
// reported by validation; dropping them here keeps the hash meaningful.
func sortedSet(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(s)))
}
