package deploy_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
)

// volumesFrom (compose's volumes_from): web mounts what app's replica
// mounts, read-only, at the same path, and is created after it. A new
// release of app leaves web alone, still on the same volume; web removed
// by hand comes back with the mount.
func TestVolumesFromMountsAnotherServicesVolumes(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	ctx := context.Background()
	docs := func(color string) []string {
		return []string{
			"apiVersion: driftless.dev/v1\nkind: Volume\nmetadata: {name: code}\n",
			fmt.Sprintf("apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: app}\nspec:\n  image: {{image}}\n  stopGracePeriodSeconds: 1\n  env: {COLOR: %s}\n  volumes: [{name: code, mountPath: /var/www}]\n", color),
			"apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: web}\nspec:\n  image: {{image}}\n  stopGracePeriodSeconds: 1\n  volumesFrom: [{service: app, readOnly: true}]\n",
		}
	}
	apply := func(docs []string) {
		t.Helper()
		desired := f.load(docs...)
		if res, _ := f.apply(desired, f.plan(desired, drift.Options{})); res.Err != nil {
			t.Fatalf("apply: %v", res.Err)
		}
		if p := f.plan(desired, drift.Options{}); len(p.Changes) != 0 {
			t.Fatalf("plan after apply:\n%s", p.String())
		}
	}
	webMount := func() string {
		t.Helper()
		web := service(f.observe(), "web")
		if len(web) != 1 {
			t.Fatalf("web: %+v", web)
		}
		c, err := f.cli.ContainerInspect(ctx, web[0].ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{f.app + "-app-1:ro"}; !slices.Equal(c.Container.HostConfig.VolumesFrom, want) {
			t.Errorf("web's VolumesFrom %v, want %v", c.Container.HostConfig.VolumesFrom, want)
		}
		for _, m := range c.Container.Mounts {
			if m.Destination == "/var/www" {
				if m.Name != f.app+"-code" || m.RW {
					t.Errorf("web's /var/www: volume %q, RW %v; want %s-code, read-only", m.Name, m.RW, f.app)
				}
				return web[0].ID
			}
		}
		t.Fatalf("web does not mount /var/www: %+v", c.Container.Mounts)
		return ""
	}

	apply(docs("red"))
	first := webMount()
	apply(docs("blue"))
	if id := webMount(); id != first {
		t.Errorf("a new release of app replaced web (%s -> %s)", first[:12], id[:12])
	}
	if _, err := f.cli.ContainerRemove(ctx, first, client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	apply(docs("blue"))
	if id := webMount(); id == first {
		t.Error("web removed by hand was not recreated")
	}
}
