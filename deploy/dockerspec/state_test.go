package dockerspec

import (
	"reflect"
	"testing"

	"github.com/moby/moby/api/types/mount"

	"github.com/driftless-dev/driftless/manifest"
)

// A state directory is mounted from <state>/<app>/<path>, read-write
// unless the bind says ro; an SELinux label takes the legacy form, the
// only one that relabels on API 1.41.
func TestReplicaConfigStateBinds(t *testing.T) {
	svc := &manifest.Service{Name: "db", Spec: manifest.ServiceSpec{Image: "postgres:16", Replicas: 1, Binds: []manifest.BindMount{
		{StatePath: "volumes/db/data", MountPath: "/var/lib/postgresql/data"},
		{StatePath: "backup", MountPath: "/backup", ReadOnly: true, Propagation: "rslave"},
		{StatePath: "labelled", MountPath: "/l", SELinux: "Z"},
	}}}
	app := &manifest.App{Name: "shop", Services: []manifest.Service{*svc}}
	rc, err := BuildReplicaConfig(ReplicaInput{App: app, Service: svc, Slot: 1, StateDir: "/var/lib/driftless/state"})
	if err != nil {
		t.Fatal(err)
	}
	host := rc.Create.HostConfig
	want := []mount.Mount{
		{Type: mount.TypeBind, Source: "/var/lib/driftless/state/shop/volumes/db/data", Target: "/var/lib/postgresql/data"},
		{Type: mount.TypeBind, Source: "/var/lib/driftless/state/shop/backup", Target: "/backup", ReadOnly: true, BindOptions: &mount.BindOptions{Propagation: mount.PropagationRSlave}},
	}
	if !reflect.DeepEqual(host.Mounts, want) {
		t.Errorf("mounts %+v, want %+v", host.Mounts, want)
	}
	if !reflect.DeepEqual(host.Binds, []string{"/var/lib/driftless/state/shop/labelled:/l:rw,Z"}) {
		t.Errorf("binds %q", host.Binds)
	}
	if _, err := BuildReplicaConfig(ReplicaInput{App: app, Service: svc, Slot: 1}); err == nil {
		t.Error("a state bind without a state directory must fail")
	}
}
