package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/mount"

	"github.com/driftless-dev/driftless/manifest"
)

// A secret is mounted read-only at its target from a file named by its
// digest, owner and mode under the app's and service's directory; the
// create call carries the path, never the value.
func TestSecretMounts(t *testing.T) {
	ref := manifest.SecretRef{Name: "db", File: "db.yaml", Target: "/run/secrets/db", UID: "999", Mode: 0o400, Digest: "0123456789abcdef"}
	app := &manifest.App{Name: "shop", SecretData: map[string][]byte{ref.Digest: []byte("hunter2")}}
	svc := &manifest.Service{Name: "web", Spec: manifest.ServiceSpec{Image: "web:1", Replicas: 1, Secrets: []manifest.SecretRef{ref}}}
	rc, err := buildReplicaConfig(replicaInput{App: app, Service: svc, Slot: 1, SecretsDir: "/run/driftless/secrets"})
	if err != nil {
		t.Fatal(err)
	}
	want := mount.Mount{Type: mount.TypeBind, Source: "/run/driftless/secrets/shop/web/0123456789abcdef.999.-.0400", Target: "/run/secrets/db", ReadOnly: true}
	var found bool
	for _, m := range rc.Create.HostConfig.Mounts {
		if m.Target == want.Target {
			found = m.Type == want.Type && m.Source == want.Source && m.ReadOnly
		}
	}
	if !found {
		t.Errorf("mounts %+v, want %+v", rc.Create.HostConfig.Mounts, want)
	}
	if b, _ := json.Marshal(rc.Create); strings.Contains(string(b), "hunter2") {
		t.Error("the create call holds the secret value")
	}
	// A secret that was not decrypted with the app cannot be mounted.
	ref.Digest = ""
	svc.Spec.Secrets[0] = ref
	if _, err := buildReplicaConfig(replicaInput{App: app, Service: svc, Slot: 1, SecretsDir: "/x"}); err == nil {
		t.Error("a secret without a digest was mounted")
	}
}

// writeSecretFile writes once (complete, with the mode asked for) and
// reuses the file after.
func TestWriteSecretFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "shop", "web", "d.-.-.0440")
	ref := manifest.SecretRef{Mode: 0o440}
	if err := writeSecretFile(p, []byte("v1"), ref); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o440 {
		t.Fatalf("mode %v, %v; want 0440", fi.Mode().Perm(), err)
	}
	if d, _ := os.Stat(filepath.Dir(p)); d.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", d.Mode().Perm())
	}
	if err := writeSecretFile(p, []byte("other"), ref); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "v1" {
		t.Errorf("content %q: a file under its final name is never rewritten (its name is its content)", b)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(p), tmpPrefix+"*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
