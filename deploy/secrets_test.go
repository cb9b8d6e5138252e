package deploy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/mount"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/manifest"
)

// A secret is mounted read-only at its target from a file named by its
// digest, owner and mode under the app's and service's directory; the
// create call carries the path, never the value.
func TestSecretMounts(t *testing.T) {
	ref := manifest.SecretRef{Name: "db", File: "db.yaml", Target: "/run/secrets/db", UID: "999", Mode: 0o400, Digest: "0123456789abcdef"}
	app := &manifest.App{Name: "shop", SecretData: map[string][]byte{ref.Digest: []byte("hunter2")}}
	svc := &manifest.Service{Name: "web", Spec: manifest.ServiceSpec{Image: "web:1", Replicas: 1, Secrets: []manifest.SecretRef{ref}}}
	rc, err := dockerspec.BuildReplicaConfig(dockerspec.ReplicaInput{App: app, Service: svc, Slot: 1, SecretsDir: "/run/driftless/secrets"})
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
	if _, err := dockerspec.BuildReplicaConfig(dockerspec.ReplicaInput{App: app, Service: svc, Slot: 1, SecretsDir: "/x"}); err == nil {
		t.Error("a secret without a digest was mounted")
	}
}
