package deploy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/deploy/hostfiles"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/volume"
	"github.com/moby/moby/client"
)

// listFake answers the list calls of Observe and RemoveUnusedFiles.
type listFake struct {
	dockerAPI
	containers []container.Summary
	networks   []network.Summary
	volumes    []volume.Volume
}

func (f *listFake) Ping(context.Context, client.PingOptions) (client.PingResult, error) {
	return client.PingResult{}, nil
}

func (f *listFake) DaemonHost() string { return "unix:///fake.sock" }

func (f *listFake) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	return client.ContainerListResult{Items: f.containers}, nil
}

func (f *listFake) NetworkList(context.Context, client.NetworkListOptions) (client.NetworkListResult, error) {
	return client.NetworkListResult{Items: f.networks}, nil
}

func (f *listFake) VolumeList(context.Context, client.VolumeListOptions) (client.VolumeListResult, error) {
	return client.VolumeListResult{Items: f.volumes}, nil
}

// Observing with foreign objects reports every network and volume the app
// does not own, whatever its name: external ones are looked up there.
func TestObserveForeignNetworksAndVolumes(t *testing.T) {
	net := func(name, app string) network.Summary {
		n := network.Summary{}
		n.Name, n.ID, n.Driver = name, "id-"+name, "bridge"
		if app != "" {
			n.Labels = map[string]string{drift.LabelApp: app, drift.LabelResource: "x"}
		}
		return n
	}
	vol := func(name, app string) volume.Volume {
		v := volume.Volume{Name: name, Driver: "local"}
		if app != "" {
			v.Labels = map[string]string{drift.LabelApp: app}
		}
		return v
	}
	fake := &listFake{
		networks: []network.Summary{net("shop-default", "shop"), net("corp-net", ""), net("bridge", ""), net("other-x", "other")},
		volumes:  []volume.Volume{vol("shop-data", "shop"), vol("corp-data", ""), vol("other-y", "other")},
	}
	e := newEngine(fake, Options{FilesDir: t.TempDir()})
	defer e.prober.Stop()
	a, err := e.Observe(context.Background(), "shop", true)
	if err != nil {
		t.Fatal(err)
	}
	names := func(ns []drift.Network) (out []string) {
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return out
	}
	vnames := func(vs []drift.Volume) (out []string) {
		for _, v := range vs {
			out = append(out, v.Name)
		}
		return out
	}
	if got := names(a.ForeignNetworks); !slices.Equal(got, []string{"bridge", "corp-net", "other-x"}) {
		t.Errorf("foreign networks = %v", got)
	}
	if got := vnames(a.ForeignVolumes); !slices.Equal(got, []string{"corp-data", "other-y"}) {
		t.Errorf("foreign volumes = %v", got)
	}
	if got := names(a.Networks); !slices.Equal(got, []string{"shop-default"}) {
		t.Errorf("owned networks = %v", got)
	}
}

// repoFilesApp binds a repository directory and a single repository file.
func repoFilesApp() *manifest.App {
	conf := &manifest.RepoTree{Dir: true, Files: []manifest.RepoFile{{Path: "a.conf", Data: []byte("a=1\n")}, {Path: "bin/run", Exec: true, Data: []byte("#!/bin/sh\n")}}}
	single := &manifest.RepoTree{Files: []manifest.RepoFile{{Data: []byte("x")}}}
	spec := manifest.ServiceSpec{Image: "web:v1", Replicas: 1, Binds: []manifest.BindMount{
		{RepoPath: "conf", ContentHash: conf.Hash(), MountPath: "/etc/app", ReadOnly: true},
		{RepoPath: "one.txt", ContentHash: single.Hash(), MountPath: "/one.txt", ReadOnly: true},
	}}
	return &manifest.App{
		Name:     "shop",
		Services: []manifest.Service{{Name: "web", Spec: spec, Hash: manifest.HashService(nil, nil, spec)}},
		Content:  map[string]*manifest.RepoTree{conf.Hash(): conf, single.Hash(): single},
	}
}

func TestMaterializeAndRemoveUnusedFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "files")
	fake := &listFake{}
	e := newEngine(fake, Options{FilesDir: dir})
	defer e.prober.Stop()
	t.Cleanup(func() { _ = hostfiles.RemoveTree(dir) })
	app := repoFilesApp()
	svc := &app.Services[0]
	if err := e.files.MaterializeService(app, svc); err != nil {
		t.Fatal(err)
	}
	conf, single := svc.Spec.Binds[0].ContentHash, svc.Spec.Binds[1].ContentHash
	for p, want := range map[string]os.FileMode{
		filepath.Join(dir, conf):               0o555 | os.ModeDir,
		filepath.Join(dir, conf, "a.conf"):     0o444,
		filepath.Join(dir, conf, "bin"):        0o555 | os.ModeDir,
		filepath.Join(dir, conf, "bin", "run"): 0o555,
		filepath.Join(dir, single):             0o555 | os.ModeDir,
		filepath.Join(dir, single, "file"):     0o444,
	} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode(), err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, conf, "a.conf")); string(b) != "a=1\n" {
		t.Errorf("content = %q", b)
	}
	before, _ := os.Stat(filepath.Join(dir, conf, "a.conf"))
	if err := e.files.MaterializeService(app, svc); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(dir, conf, "a.conf"))
	if !os.SameFile(before, after) {
		t.Error("an existing tree must be reused, not rewritten")
	}
	// A leftover of an interrupted write.
	if err := os.Mkdir(filepath.Join(dir, hostfiles.TmpPrefix+"dead-1"), 0o755); err != nil {
		t.Fatal(err)
	}

	fake.containers = []container.Summary{{ID: "c1", Labels: map[string]string{drift.LabelApp: "shop"},
		Mounts: []container.MountPoint{{Type: mount.TypeBind, Source: filepath.Join(dir, single, "file")}}}}
	removed, err := e.RemoveUnusedFiles(context.Background(), time.Hour)
	if err != nil || len(removed) != 0 {
		t.Errorf("young trees removed: %v %v", removed, err)
	}
	removed, err = e.RemoveUnusedFiles(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if want := []string{hostfiles.TmpPrefix + "dead-1", conf}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	if _, err := os.Stat(filepath.Join(dir, single, "file")); err != nil {
		t.Errorf("a mounted tree was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, conf)); !os.IsNotExist(err) {
		t.Errorf("an unused tree is still there: %v", err)
	}
}
