package manifest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// Specs that use none of the fields added for compose hash exactly as
// before they existed (the values were computed by the release before).
// Specs with secretEnv changed once, when secret values entered the hash
// as keyed digests instead of plain text (the values below use the nil
// key); the README's upgrade note says such services are replaced once.
func TestHashesOfExistingSpecsAreUnchanged(t *testing.T) {
	if got := manifest.HashService(nil, map[string]string{"team": "shop"}, baseSpec()); got != "4ec58862360c2e45" {
		t.Errorf("service hash = %s, want 4ec58862360c2e45", got)
	}
	s := baseSpec()
	s.Readiness = &manifest.Readiness{HTTPGet: &manifest.HTTPGetProbe{Path: "/", Port: 80}, PeriodSeconds: 2, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
	s.Resources = manifest.Resources{MemoryBytes: 1 << 29, NanoCPUs: 5e8}
	s.Ports[0].HostPort = 8080
	if got := manifest.HashService(nil, nil, s); got != "aa54d6d1df005aca" {
		t.Errorf("service hash with readiness and resources = %s, want aa54d6d1df005aca", got)
	}
	if got := manifest.HashNetwork(map[string]string{"a": "b"}, manifest.NetworkSpec{Driver: "bridge", Internal: true}); got != "7f42615d74290aff" {
		t.Errorf("network hash = %s", got)
	}
	if got := manifest.HashVolume(nil, manifest.VolumeSpec{Driver: "local"}); got != "b74f5608e25c0ca3" {
		t.Errorf("volume hash = %s", got)
	}
	app, err := appdir.LoadDir("../examples/shop", "shop")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cache": "5d9bbf7b617750bf", "web": "167f8708f9fabe32"}
	for _, svc := range app.Services {
		if svc.Hash != want[svc.Name] {
			t.Errorf("examples/shop %s hash = %s, want %s", svc.Name, svc.Hash, want[svc.Name])
		}
	}
	if n := app.Network("backend"); n == nil || n.Hash != "d39014e413719798" {
		t.Errorf("examples/shop backend network = %+v", n)
	}
}

func baseSpec() manifest.ServiceSpec {
	return manifest.ServiceSpec{
		Image:     "shop/web:v7",
		Replicas:  3,
		Env:       map[string]string{"A": "1", "B": "2", "TOKEN": "s3cret"},
		SecretEnv: []string{"TOKEN"},
		Ports:     []manifest.Port{{ContainerPort: 80, Protocol: "tcp"}, {ContainerPort: 53, Protocol: "udp"}},
		Networks:  []string{"backend", "default"},
		Volumes:   []manifest.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "logs", MountPath: "/logs"}},
		Restart:   manifest.RestartAlways,
		Update:    manifest.Update{Strategy: manifest.StrategyRolling, MaxSurge: 1},
		DependsOn: []string{"db"},
	}
}

func TestHashService(t *testing.T) {
	labels := map[string]string{"team": "shop", "tier": "front"}
	base := manifest.HashService(nil, labels, baseSpec())
	if len(base) != 16 || strings.Trim(base, "0123456789abcdef") != "" {
		t.Fatalf("hash %q: want 16 hex characters", base)
	}

	same := map[string]func(*manifest.ServiceSpec, *map[string]string){
		"set-like lists in another order": func(s *manifest.ServiceSpec, _ *map[string]string) {
			s.Ports = []manifest.Port{s.Ports[1], s.Ports[0]}
			s.Networks = []string{"default", "backend"}
			s.Volumes = []manifest.VolumeMount{s.Volumes[1], s.Volumes[0]}
		},
		"maps rebuilt in another order": func(s *manifest.ServiceSpec, l *map[string]string) {
			s.Env = map[string]string{"TOKEN": "s3cret", "B": "2", "A": "1"}
			*l = map[string]string{"tier": "front", "team": "shop"}
		},
		"replicas changed":     func(s *manifest.ServiceSpec, _ *map[string]string) { s.Replicas = 10 },
		"dependsOn changed":    func(s *manifest.ServiceSpec, _ *map[string]string) { s.DependsOn = []string{"cache", "db"} },
		"dependsOnRestart set": func(s *manifest.ServiceSpec, _ *map[string]string) { s.DependsOnRestart = []string{"db"} },
	}
	for name, change := range same {
		s, l := baseSpec(), map[string]string{"team": "shop", "tier": "front"}
		change(&s, &l)
		if got := manifest.HashService(nil, l, s); got != base {
			t.Errorf("%s: hash changed %s -> %s; it must not force a recreate", name, base, got)
		}
	}

	different := map[string]func(*manifest.ServiceSpec, *map[string]string){
		"image":         func(s *manifest.ServiceSpec, _ *map[string]string) { s.Image = "shop/web:v8" },
		"env value":     func(s *manifest.ServiceSpec, _ *map[string]string) { s.Env["A"] = "2" },
		"secret value":  func(s *manifest.ServiceSpec, _ *map[string]string) { s.Env["TOKEN"] = "other" },
		"label":         func(_ *manifest.ServiceSpec, l *map[string]string) { (*l)["team"] = "ops" },
		"label removed": func(_ *manifest.ServiceSpec, l *map[string]string) { delete(*l, "tier") },
		"args order":    func(s *manifest.ServiceSpec, _ *map[string]string) { s.Args = []string{"b", "a"} },
		"host port":     func(s *manifest.ServiceSpec, _ *map[string]string) { s.Ports[0].HostPort = 8080 },
	}
	for name, change := range different {
		s, l := baseSpec(), map[string]string{"team": "shop", "tier": "front"}
		change(&s, &l)
		if got := manifest.HashService(nil, l, s); got == base {
			t.Errorf("%s changed but the hash did not", name)
		}
	}

	// Args order is meaningful: ["a","b"] and ["b","a"] differ.
	a, b := baseSpec(), baseSpec()
	a.Args, b.Args = []string{"a", "b"}, []string{"b", "a"}
	if manifest.HashService(nil, nil, a) == manifest.HashService(nil, nil, b) {
		t.Error("args order must change the hash")
	}
}

// TestHashServiceSurvivesFullContentHash: content hashes became full
// SHA-256s (they name a directory every app shares), but a spec hash
// recorded on a running container by the version that used 16 characters
// still matches, so an upgrade recreates nothing. The values below are
// that version's; changed content still changes the hash.
func TestHashServiceSurvivesFullContentHash(t *testing.T) {
	tree := &manifest.RepoTree{Dir: true, Files: []manifest.RepoFile{{Path: "a.conf", Data: []byte("a=1\n")}}}
	full := tree.Hash()
	if len(full) != 64 || !strings.HasPrefix(full, "16c08f162172c884") {
		t.Fatalf("content hash %q: want the full SHA-256", full)
	}
	spec := func(content string) manifest.ServiceSpec {
		s := baseSpec()
		s.Binds = []manifest.BindMount{{RepoPath: "conf", ContentHash: content, MountPath: "/etc/app", ReadOnly: true}}
		return s
	}
	labels := map[string]string{"team": "shop"}
	s := spec(full)
	if got, want := manifest.HashService(nil, labels, s), "82f364d236ba8698"; got != want {
		t.Errorf("spec hash %s, want %s: the one recorded before content hashes were full", got, want)
	}
	if s.Binds[0].ContentHash != full {
		t.Error("HashService changed its input's content hash")
	}
	other := (&manifest.RepoTree{Dir: true, Files: []manifest.RepoFile{{Path: "a.conf", Data: []byte("a=2\n")}}}).Hash()
	if manifest.HashService(nil, labels, spec(other)) == manifest.HashService(nil, labels, s) {
		t.Error("changed content must change the spec hash")
	}
}

func TestHashServiceDoesNotModifyInput(t *testing.T) {
	s := baseSpec()
	manifest.HashService(nil, nil, s)
	if s.Replicas != 3 || s.Ports[0].ContainerPort != 80 || len(s.DependsOn) != 1 {
		t.Errorf("input modified: %+v", s)
	}
}

func TestHashNetworkAndVolume(t *testing.T) {
	n := manifest.HashNetwork(map[string]string{"a": "b"}, manifest.NetworkSpec{Driver: "bridge"})
	if n != manifest.HashNetwork(map[string]string{"a": "b"}, manifest.NetworkSpec{Driver: "bridge"}) {
		t.Error("network hash not stable")
	}
	if n == manifest.HashNetwork(map[string]string{"a": "b"}, manifest.NetworkSpec{Driver: "bridge", Internal: true}) {
		t.Error("internal must change the network hash")
	}
	if n == manifest.HashNetwork(nil, manifest.NetworkSpec{Driver: "bridge"}) {
		t.Error("labels must change the network hash")
	}
	if manifest.HashNetwork(map[string]string{}, manifest.NetworkSpec{Driver: "bridge"}) != manifest.HashNetwork(nil, manifest.NetworkSpec{Driver: "bridge"}) {
		t.Error("empty and nil labels must hash alike")
	}
	if manifest.HashVolume(nil, manifest.VolumeSpec{Driver: "local"}) == manifest.HashVolume(nil, manifest.VolumeSpec{Driver: "nfs"}) {
		t.Error("driver must change the volume hash")
	}
}

// The hashes of a parsed manifest do not depend on how the YAML is written.
func TestLoadedHashIgnoresDeclarationOrder(t *testing.T) {
	net := "---\napiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: b}\n---\napiVersion: driftless.dev/v1\nkind: Network\nmetadata: {name: c}\n"
	a, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc + "  image: x\n  env: {A: '1', B: '2'}\n  networks: [b, c]\n  replicas: 2\n" + net})
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadtest.LoadFiles(t, map[string]string{"a.yaml": loadtest.Svc + "  replicas: 5\n  networks: [c, b]\n  env: {B: '2', A: '1'}\n  image: x\n" + net})
	if err != nil {
		t.Fatal(err)
	}
	if a.Services[0].Hash != b.Services[0].Hash {
		t.Errorf("hash differs: %s vs %s", a.Services[0].Hash, b.Services[0].Hash)
	}
}

func TestRedacted(t *testing.T) {
	s := baseSpec()
	key := manifest.SecretKey("agent-key")
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
	if manifest.SecretKey("other-key").Redact("s3cret") == r.Env["TOKEN"] {
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
	k1, k2 := manifest.SecretKey("one"), manifest.SecretKey("two")
	if manifest.HashService(k1, nil, s) == manifest.HashService(k2, nil, s) {
		t.Error("the hash of a spec with a secret does not depend on the key: a guess of the secret can be checked against it")
	}
	plain := baseSpec()
	plain.SecretEnv = nil
	plain.Env["TOKEN"] = "x"
	if manifest.HashService(k1, nil, plain) != manifest.HashService(k2, nil, plain) {
		t.Error("a spec without secrets hashes differently under another key: upgrading would replace every container")
	}
	changed := baseSpec()
	changed.Env["TOKEN"] = "rotated"
	if manifest.HashService(k1, nil, s) == manifest.HashService(k1, nil, changed) {
		t.Error("a changed secret must change the hash")
	}
}

func TestLoadHashesWithTheKey(t *testing.T) {
	fsys := fstest.MapFS{"web.yaml": {Data: []byte("apiVersion: driftless.dev/v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  image: web:1\n  env:\n    TOKEN: hunter2\n  secretEnv: [TOKEN]\n")}}
	a, err := appdir.LoadWith(fsys, ".", "shop", load.Options{SecretKey: manifest.SecretKey("k1")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := appdir.LoadWith(fsys, ".", "shop", load.Options{SecretKey: manifest.SecretKey("k2")})
	if err != nil {
		t.Fatal(err)
	}
	if a.Services[0].Hash == b.Services[0].Hash {
		t.Error("two keys give one service hash")
	}
	if want := manifest.HashService(manifest.SecretKey("k1"), a.Services[0].Labels, a.Services[0].Spec); a.Services[0].Hash != want {
		t.Errorf("loaded hash %s, want the keyed hash %s", a.Services[0].Hash, want)
	}
}
