package dockerspec

import (
	"reflect"
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/volume"
)

// Each slot mounts its own volume at each anonymous target, by the name
// that does not change when the slot's container is replaced, and the
// volume's labels read back as the slot's.
func TestReplicaConfigAnonymousVolumes(t *testing.T) {
	spec := manifest.ServiceSpec{Image: "postgres:16", Replicas: 2, AnonymousVolumes: []manifest.AnonymousVolume{
		{MountPath: "/var/lib/postgresql/data"}, {MountPath: "/seed"},
	}}
	app := &manifest.App{Name: "shop", Services: []manifest.Service{{Name: "db", Spec: spec}}}
	mounts := map[int][]mount.Mount{}
	for slot := 1; slot <= 2; slot++ {
		rc, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: slot, Revision: "abc"})
		if err != nil {
			t.Fatal(err)
		}
		mounts[slot] = rc.Create.HostConfig.Mounts
	}
	data2 := manifest.AnonymousVolumeName("shop", "db", 2, "/var/lib/postgresql/data")
	want := []mount.Mount{{
		Type: mount.TypeVolume, Source: data2, Target: "/var/lib/postgresql/data",
		VolumeOptions: &mount.VolumeOptions{Labels: map[string]string{
			drift.LabelApp: "shop", drift.LabelService: "db", drift.LabelSlot: "2",
			drift.LabelTarget: "/var/lib/postgresql/data", drift.LabelRevision: "abc"}},
	}, {
		Type: mount.TypeVolume, Source: manifest.AnonymousVolumeName("shop", "db", 2, "/seed"), Target: "/seed",
		VolumeOptions: &mount.VolumeOptions{Labels: map[string]string{
			drift.LabelApp: "shop", drift.LabelService: "db", drift.LabelSlot: "2",
			drift.LabelTarget: "/seed", drift.LabelRevision: "abc"}},
	}}
	if !reflect.DeepEqual(mounts[2], want) {
		t.Errorf("slot 2 mounts:\n got %+v\nwant %+v", mounts[2], want)
	}
	if mounts[1][0].Source == data2 {
		t.Errorf("slots 1 and 2 share volume %s", data2)
	}

	got := VolumeFromSummary(volume.Volume{Name: data2, Driver: "local", Labels: want[0].VolumeOptions.Labels})
	if !got.Anonymous() || got.App != "shop" || got.Service != "db" || got.Slot != 2 || got.Target != "/var/lib/postgresql/data" || got.Resource != "" {
		t.Errorf("observed %+v", got)
	}
	if named := VolumeFromSummary(volume.Volume{Name: "shop-data", Labels: map[string]string{drift.LabelApp: "shop", drift.LabelResource: "data"}}); named.Anonymous() {
		t.Errorf("a declared volume reads as anonymous: %+v", named)
	}
}

// A volume the image declares gets the slot's anonymous volume, unless
// the spec mounts something at its target.
func TestReplicaConfigImageVolumes(t *testing.T) {
	spec := manifest.ServiceSpec{Image: "postgres:16", Replicas: 1,
		Tmpfs:            []manifest.TmpfsMount{{MountPath: "/run/postgresql"}},
		AnonymousVolumes: []manifest.AnonymousVolume{{MountPath: "/seed"}},
	}
	app := &manifest.App{Name: "shop", Services: []manifest.Service{{Name: "db", Spec: spec}}}
	rc, err := BuildReplicaConfig(ReplicaInput{App: app, Service: &app.Services[0], Slot: 1, Revision: "abc",
		ImageVolumes: []string{"/var/lib/postgresql/data", "/run/postgresql/", "/seed"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range rc.Create.HostConfig.Mounts {
		if m.Type == mount.TypeVolume {
			got = append(got, m.Target+" "+m.Source+" "+m.VolumeOptions.Labels[drift.LabelTarget])
		}
	}
	want := []string{
		"/seed " + manifest.AnonymousVolumeName("shop", "db", 1, "/seed") + " /seed",
		"/var/lib/postgresql/data " + manifest.AnonymousVolumeName("shop", "db", 1, "/var/lib/postgresql/data") + " /var/lib/postgresql/data",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("volume mounts:\n got %q\nwant %q", got, want)
	}
}
