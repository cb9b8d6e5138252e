package swarm

import (
	"context"
	"errors"
	"strings"
	"testing"

	swarmtypes "github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/deploy/registry"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// nodesAPI answers NodeList; the rest of api is not used by builds.
type nodesAPI struct {
	api
	nodes []swarmtypes.Node
}

func (n nodesAPI) NodeList(context.Context, client.NodeListOptions) (client.NodeListResult, error) {
	return client.NodeListResult{Items: n.nodes}, nil
}

// fakeBuilder records what the Swarm engine asked of the manager's
// engine.
type fakeBuilder struct {
	builds  int
	pushes  []string
	pushErr error
}

func (b *fakeBuilder) EnsureImages(context.Context, *manifest.App, func(drift.BuildEvent)) error {
	b.builds++
	return nil
}

func (b *fakeBuilder) PushImage(_ context.Context, _, ref string, progress deploy.PullProgress) error {
	b.pushes = append(b.pushes, ref)
	progress("abc: Pushed")
	return b.pushErr
}

func nodes(n int) []swarmtypes.Node {
	var out []swarmtypes.Node
	for range n {
		out = append(out, swarmtypes.Node{Spec: swarmtypes.NodeSpec{Availability: swarmtypes.NodeAvailabilityActive}})
	}
	return out
}

func buildApp(t *testing.T, image string) *manifest.App {
	t.Helper()
	compose := "services:\n  web:\n    build: ./web\n"
	if image != "" {
		compose += "    image: " + image + "\n"
	}
	return loadApp(t, map[string]string{"compose.yaml": compose, "web/Dockerfile": "FROM scratch\n"})
}

func TestEnsureImagesOnSwarm(t *testing.T) {
	tests := []struct {
		name      string
		image     string
		nodes     int
		pushErr   error
		builds    int
		pushes    int
		wantErr   string // "" = none
		buildErr  bool   // the revision is refused (a BuildError)
		wantHint  string
		pushAgain bool // a second call pushes again
	}{
		{name: "one node, no registry: built, not pushed", nodes: 1, builds: 1},
		{name: "one node, registry: built and pushed once", image: "127.0.0.1:5000/shop/web", nodes: 1, builds: 1, pushes: 1},
		{name: "three nodes, registry: built and pushed", image: "registry.example.com/shop/web:stable", nodes: 3, builds: 1, pushes: 1},
		{name: "two nodes, nowhere to push: refused before building", image: "shop/web", nodes: 2,
			wantErr: "the Swarm has 2 nodes that can run tasks, and an image built on the manager exists only there", buildErr: true,
			wantHint: "name a registry in the image: of web (for example image: registry.example.com/shop/web)"},
		{name: "registry refuses the push: revision refused with what to fix", image: "127.0.0.1:5000/shop/web", nodes: 2, builds: 1, pushes: 1,
			pushErr: &registry.PushError{Image: "x", Registry: "127.0.0.1:5000", Kind: registry.PullAuth, Err: errors.New("unauthorized")},
			wantErr: "authentication failed", buildErr: true, wantHint: "fix the registry or the credentials", pushAgain: true},
		{name: "registry unreachable: retried, not refused", image: "127.0.0.1:5000/shop/web", nodes: 2, builds: 1, pushes: 1,
			pushErr: &registry.PushError{Image: "x", Registry: "127.0.0.1:5000", Kind: registry.PullUnreachable, Err: errors.New("connection refused")},
			wantErr: "registry unreachable", pushAgain: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &fakeBuilder{pushErr: tt.pushErr}
			e := newEngine(nodesAPI{nodes: nodes(tt.nodes)}, Options{Builder: b})
			app := buildApp(t, tt.image)
			var events []drift.BuildEvent
			err := e.EnsureImages(context.Background(), app, func(ev drift.BuildEvent) { events = append(events, ev) })
			if b.builds != tt.builds || len(b.pushes) != tt.pushes {
				t.Errorf("builds %d, pushes %v; want %d builds, %d pushes", b.builds, b.pushes, tt.builds, tt.pushes)
			}
			var be *drift.BuildError
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
			case errors.As(err, &be) != tt.buildErr:
				t.Errorf("err = %#v: refusal (BuildError) %v, want %v", err, !tt.buildErr, tt.buildErr)
			case be != nil && !strings.Contains(be.Hint, tt.wantHint):
				t.Errorf("hint = %q, want it to say %q", be.Hint, tt.wantHint)
			}
			if tt.pushes > 0 {
				registry := strings.Split(tt.image, "/")[0]
				if len(events) < 2 || events[0].Phase != drift.BuildPush || events[0].Line != "to "+registry || events[1].Line != "abc: Pushed" {
					t.Errorf("push progress = %+v, want the registry, then the layers", events)
				}
				for _, ref := range b.pushes {
					if ref != app.Service("web").Spec.Image {
						t.Errorf("pushed %s, want the service's content-addressed image %s", ref, app.Service("web").Spec.Image)
					}
				}
			}
			// A second revision with the same context pushes only if the
			// first push did not go through.
			before := len(b.pushes)
			_ = e.EnsureImages(context.Background(), app, nil)
			if again := len(b.pushes) > before; tt.pushes > 0 && again != tt.pushAgain {
				t.Errorf("second EnsureImages pushed again: %v, want %v", again, tt.pushAgain)
			}
		})
	}
}

func TestActiveNodes(t *testing.T) {
	ns := nodes(3)
	ns[1].Spec.Availability = swarmtypes.NodeAvailabilityDrain
	ns[2].Status.State = swarmtypes.NodeStateDown // may come back and get a task
	if got := activeNodes(ns); got != 2 {
		t.Errorf("activeNodes = %d, want 2 (a drained node takes no tasks, a down one may again)", got)
	}
	if got := activeNodes(nil); got != 1 {
		t.Errorf("activeNodes(none) = %d, want 1 (the manager)", got)
	}
}

// A task of a built image must not carry the app's label the image has
// (a container inherits its image's labels): the single-engine back end
// and driftless logs would take it for one of the app's containers.
func TestBuiltServiceTasksNotOwnedByTheEngine(t *testing.T) {
	app := buildApp(t, "127.0.0.1:5000/shop/web")
	c := ServiceSpec(app, app.Service("web"), "abc").TaskTemplate.ContainerSpec
	if v, ok := c.Labels[drift.LabelApp]; !ok || v != "" {
		t.Errorf("task container labels = %v, want %s cleared (present and empty)", c.Labels, drift.LabelApp)
	}
	if c.Labels[LabelTaskApp] != "shop" {
		t.Errorf("task container labels = %v, want %s=shop", c.Labels, LabelTaskApp)
	}
}
