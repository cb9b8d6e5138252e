package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"testing/fstest"
)

func baseSpec() ServiceSpec {
	return ServiceSpec{
		Image:     "shop/web:v7",
		Replicas:  3,
		Env:       map[string]string{"A": "1", "B": "2", "TOKEN": "s3cret"},
		SecretEnv: []string{"TOKEN"},
		Ports:     []Port{{ContainerPort: 80, Protocol: "tcp"}, {ContainerPort: 53, Protocol: "udp"}},
		Networks:  []string{"backend", "default"},
		Volumes:   []VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "logs", MountPath: "/logs"}},
		Restart:   RestartAlways,
		Update:    Update{Strategy: StrategyRolling, MaxSurge: 1},
		DependsOn: []string{"db"},
	}
}

func TestHashService(t *testing.T) {
	labels := map[string]string{"team": "shop", "tier": "front"}
	base := HashService(nil, labels, baseSpec())
	if len(base) != 16 || strings.Trim(base, "0123456789abcdef") != "" {
		t.Fatalf("hash %q: want 16 hex characters", base)
	}

	same := map[string]func(*ServiceSpec, *map[string]string){
		"set-like lists in another order": func(s *ServiceSpec, _ *map[string]string) {
			s.Ports = []Port{s.Ports[1], s.Ports[0]}
			s.Networks = []string{"default", "backend"}
			s.Volumes = []VolumeMount{s.Volumes[1], s.Volumes[0]}
		},
		"maps rebuilt in another order": func(s *ServiceSpec, l *map[string]string) {
			s.Env = map[string]string{"TOKEN": "s3cret", "B": "2", "A": "1"}
			*l = map[string]string{"tier": "front", "team": "shop"}
		},
		"replicas changed":  func(s *ServiceSpec, _ *map[string]string) { s.Replicas = 10 },
		"dependsOn changed": func(s *ServiceSpec, _ *map[string]string) { s.DependsOn = []string{"cache", "db"} },
	}
	for name, change := range same {
		s, l := baseSpec(), map[string]string{"team": "shop", "tier": "front"}
		change(&s, &l)
		if got := HashService(nil, l, s); got != base {
			t.Errorf("%s: hash changed %s -> %s; it must not force a recreate", name, base, got)
		}
	}

	different := map[string]func(*ServiceSpec, *map[string]string){
		"image":         func(s *ServiceSpec, _ *map[string]string) { s.Image = "shop/web:v8" },
		"env value":     func(s *ServiceSpec, _ *map[string]string) { s.Env["A"] = "2" },
		"secret value":  func(s *ServiceSpec, _ *map[string]string) { s.Env["TOKEN"] = "other" },
		"label":         func(_ *ServiceSpec, l *map[string]string) { (*l)["team"] = "ops" },
		"label removed": func(_ *ServiceSpec, l *map[string]string) { delete(*l, "tier") },
		"args order":    func(s *ServiceSpec, _ *map[string]string) { s.Args = []string{"b", "a"} },
		"host port":     func(s *ServiceSpec, _ *map[string]string) { s.Ports[0].HostPort = 8080 },
	}
	for name, change := range different {
		s, l := baseSpec(), map[string]string{"team": "shop", "tier": "front"}
		change(&s, &l)
		if got := HashService(nil, l, s); got == base {
			t.Errorf("%s changed but the hash did not", name)
		}
	}

	// Args order is meaningful: ["a","b"] and ["b","a"] differ.
	a, b := baseSpec(), baseSpec()
	a.Args, b.Args = []string{"a", "b"}, []string{"b", "a"}
	if HashService(nil, nil, a) == HashService(nil, nil, b) {
		t.Error("args order must change the hash")
	}
}

// TestHashServiceSurvivesFullContentHash: content hashes became full
// SHA-256s (they name a directory every app shares), but a spec hash
// recorded on a running container by the version that used 16 characters
// still matches, so an upgrade recreates nothing. The values below are
// that version's; changed content still changes the hash.
func TestHashServiceSurvivesFullContentHash(t *testing.T) {
	tree := &RepoTree{Dir: true, Files: []RepoFile{{Path: "a.conf", Data: []byte("a=1\n")}}}
	full := tree.Hash()
	if len(full) != 64 || !strings.HasPrefix(full, "16c08f162172c884") {
		t.Fatalf("content hash %q: want the full SHA-256", full)
	}
	spec := func(content string) ServiceSpec {
		s := baseSpec()
		s.Binds = []BindMount{{RepoPath: "conf", ContentHash: content, MountPath: "/etc/app", ReadOnly: true}}
		return s
	}
	labels := map[string]string{"team": "shop"}
	s := spec(full)
	if got, want := HashService(nil, labels, s), "82f364d236ba8698"; got != want {
		t.Errorf("spec hash %s, want %s: the one recorded before content hashes were full", got, want)
	}
	if s.Binds[0].ContentHash != full {
		t.Error("HashService changed its input's content hash")
	}
	other := (&RepoTree{Dir: true, Files: []RepoFile{{Path: "a.conf", Data: []byte("a=2\n")}}}).Hash()
	if HashService(nil, labels, spec(other)) == HashService(nil, labels, s) {
		t.Error("changed content must change the spec hash")
	}
}

func TestHashServiceDoesNotModifyInput(t *testing.T) {
	s := baseSpec()
	HashService(nil, nil, s)
	if s.Replicas != 3 || s.Ports[0].ContainerPort != 80 || len(s.DependsOn) != 1 {
		t.Errorf("input modified: %+v", s)
	}
}

func TestHashNetworkAndVolume(t *testing.T) {
	n := HashNetwork(map[string]string{"a": "b"}, NetworkSpec{Driver: "bridge"})
	if n != HashNetwork(map[string]string{"a": "b"}, NetworkSpec{Driver: "bridge"}) {
		t.Error("network hash not stable")
	}
	if n == HashNetwork(map[string]string{"a": "b"}, NetworkSpec{Driver: "bridge", Internal: true}) {
		t.Error("internal must change the network hash")
	}
	if n == HashNetwork(nil, NetworkSpec{Driver: "bridge"}) {
		t.Error("labels must change the network hash")
	}
	if HashNetwork(map[string]string{}, NetworkSpec{Driver: "bridge"}) != HashNetwork(nil, NetworkSpec{Driver: "bridge"}) {
		t.Error("empty and nil labels must hash alike")
	}
	if HashVolume(nil, VolumeSpec{Driver: "local"}) == HashVolume(nil, VolumeSpec{Driver: "nfs"}) {
		t.Error("driver must change the volume hash")
	}
}

// The hashes of a parsed manifest do not depend on how the YAML is written.
func TestLoadedHashIgnoresDeclarationOrder(t *testing.T) {
	net := "---\napiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: b}\n---\napiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: c}\n"
	a, err := loadFiles(t, map[string]string{"a.yaml": svc + "  image: x\n  env: {A: '1', B: '2'}\n  networks: [b, c]\n  replicas: 2\n" + net})
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadFiles(t, map[string]string{"a.yaml": svc + "  replicas: 5\n  networks: [c, b]\n  env: {B: '2', A: '1'}\n  image: x\n" + net})
	if err != nil {
		t.Fatal(err)
	}
	if a.Services[0].Hash != b.Services[0].Hash {
		t.Errorf("hash differs: %s vs %s", a.Services[0].Hash, b.Services[0].Hash)
	}
}

func TestRedacted(t *testing.T) {
	s := baseSpec()
	key := SecretKey("agent-key")
	r := s.Redacted(key)
	if got, want := r.Env["TOKEN"], key.Redact("s3cret"); got != want || !strings.HasPrefix(got, "(sensitive hmac:") || len(got) != len("(sensitive hmac:)")+8 {
		t.Errorf("TOKEN = %q, want %q", got, want)
	}
	if strings.Contains(r.Env["TOKEN"], "s3cret") {
		t.Error("secret value visible")
	}
	// The unsalted digest an attacker could precompute must not appear.
	sum := sha256.Sum256([]byte("s3cret"))
	if strings.Contains(r.Env["TOKEN"], hex.EncodeToString(sum[:])[:8]) {
		t.Errorf("redacted form %q carries the plain sha256 of the value", r.Env["TOKEN"])
	}
	if SecretKey("other-key").Redact("s3cret") == r.Env["TOKEN"] {
		t.Error("another agent's key gives the same redacted form: the key is not used")
	}
	if r.Env["A"] != "1" {
		t.Errorf("non-secret value changed: %q", r.Env["A"])
	}
	if s.Env["TOKEN"] != "s3cret" {
		t.Error("Redacted modified the original")
	}
	r.Ports[0].HostPort = 1
	if s.Ports[0].HostPort != 0 {
		t.Error("Redacted shares slices with the original")
	}
	other := baseSpec()
	other.Env["TOKEN"] = "changed"
	if other.Redacted(key).Env["TOKEN"] == r.Env["TOKEN"] {
		t.Error("a changed secret must stay detectable")
	}
}

func TestHashServiceKeyedSecrets(t *testing.T) {
	s := baseSpec()
	k1, k2 := SecretKey("one"), SecretKey("two")
	if HashService(k1, nil, s) == HashService(k2, nil, s) {
		t.Error("the hash of a spec with a secret does not depend on the key: a guess of the secret can be checked against it")
	}
	plain := baseSpec()
	plain.SecretEnv = nil
	plain.Env["TOKEN"] = "x"
	if HashService(k1, nil, plain) != HashService(k2, nil, plain) {
		t.Error("a spec without secrets hashes differently under another key: upgrading would replace every container")
	}
	changed := baseSpec()
	changed.Env["TOKEN"] = "rotated"
	if HashService(k1, nil, s) == HashService(k1, nil, changed) {
		t.Error("a changed secret must change the hash")
	}
}

func TestLoadHashesWithTheKey(t *testing.T) {
	fsys := fstest.MapFS{"web.yaml": {Data: []byte("apiVersion: driftless.dev/v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  image: web:1\n  env:\n    TOKEN: hunter2\n  secretEnv: [TOKEN]\n")}}
	a, err := LoadWith(fsys, ".", "shop", LoadOptions{SecretKey: SecretKey("k1")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadWith(fsys, ".", "shop", LoadOptions{SecretKey: SecretKey("k2")})
	if err != nil {
		t.Fatal(err)
	}
	if a.Services[0].Hash == b.Services[0].Hash {
		t.Error("two keys give one service hash")
	}
	if want := HashService(SecretKey("k1"), a.Services[0].Labels, a.Services[0].Spec); a.Services[0].Hash != want {
		t.Errorf("loaded hash %s, want the keyed hash %s", a.Services[0].Hash, want)
	}
}
