package deploy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// pullFake is an engine that holds some images and records pulls.
type pullFake struct {
	dockerAPI
	present map[string]bool
	pulls   []string
	auths   []string
	stream  []jsonstream.Message
	pullErr error
}

func (f *pullFake) ImageInspect(ctx context.Context, ref string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	if f.present[ref] {
		return client.ImageInspectResult{}, nil
	}
	return client.ImageInspectResult{}, cerrdefs.ErrNotFound.WithMessage("No such image: " + ref)
}

func (f *pullFake) ImagePull(ctx context.Context, ref string, o client.ImagePullOptions) (client.ImagePullResponse, error) {
	f.pulls = append(f.pulls, ref)
	f.auths = append(f.auths, o.RegistryAuth)
	if f.pullErr != nil {
		return nil, f.pullErr
	}
	return &fakeStream{msgs: f.stream}, nil
}

type fakeStream struct {
	io.ReadCloser
	msgs []jsonstream.Message
}

func (s *fakeStream) Close() error { return nil }
func (s *fakeStream) JSONMessages(context.Context) iter.Seq2[jsonstream.Message, error] {
	return func(yield func(jsonstream.Message, error) bool) {
		for _, m := range s.msgs {
			if !yield(m, nil) {
				return
			}
		}
	}
}
func (s *fakeStream) Wait(context.Context) error { return nil }

type staticCreds map[string]registrytypes.AuthConfig

func (c staticCreds) Lookup(_ context.Context, _, host string) (registrytypes.AuthConfig, error) {
	return c[host], nil
}

func ensure(t *testing.T, f *pullFake, policy, image string, events *[]string) error {
	t.Helper()
	e := newEngine(f, Options{Credentials: staticCreds{"reg.example:5000": {Username: "u", Password: "p"}}})
	r := &run{e: e, app: "shop", images: map[string]*imageCheck{}, progress: func(ev drift.Event) {
		*events = append(*events, string(ev.Phase)+" "+ev.Message)
	}}
	svc := &manifest.Service{Name: "web", Spec: manifest.ServiceSpec{Image: image}, PullPolicy: policy}
	s := &step{change: drift.Change{Name: "shop-web-1"}}
	err := r.ensureImage(context.Background(), s, svc)
	// Once per apply: a second replica of the same image asks nothing.
	if err2 := r.ensureImage(context.Background(), s, svc); (err == nil) != (err2 == nil) {
		t.Errorf("second ensure: %v, first: %v", err2, err)
	}
	return err
}

func TestPullPolicies(t *testing.T) {
	img := "reg.example:5000/shop/web:1"
	t.Run("missing pulls only an absent image, with credentials and progress", func(t *testing.T) {
		f := &pullFake{present: map[string]bool{}, stream: []jsonstream.Message{{ID: "a1", Status: "Pulling fs layer"}, {ID: "a1", Status: "Pull complete"}}}
		var events []string
		if err := ensure(t, f, manifest.PullMissing, img, &events); err != nil {
			t.Fatal(err)
		}
		if len(f.pulls) != 1 || f.pulls[0] != img {
			t.Fatalf("pulls = %v", f.pulls)
		}
		b, _ := base64.URLEncoding.DecodeString(f.auths[0])
		var ac registrytypes.AuthConfig
		if err := json.Unmarshal(b, &ac); err != nil || ac.Username != "u" || ac.Password != "p" {
			t.Errorf("X-Registry-Auth = %q (%+v)", f.auths[0], ac)
		}
		want := []string{"pull pull " + img + ": a1: Pulling fs layer", "pull pull " + img + ": a1: Pull complete"}
		if strings.Join(events, "\n") != strings.Join(want, "\n") {
			t.Errorf("events\n%s\nwant\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
		}
		f2 := &pullFake{present: map[string]bool{img: true}}
		if err := ensure(t, f2, manifest.PullMissing, img, &events); err != nil || len(f2.pulls) != 0 {
			t.Errorf("present image: err %v, pulls %v", err, f2.pulls)
		}
	})
	t.Run("always pulls a present image, once per apply", func(t *testing.T) {
		f := &pullFake{present: map[string]bool{img: true}}
		var events []string
		if err := ensure(t, f, manifest.PullAlways, img, &events); err != nil || len(f.pulls) != 1 {
			t.Errorf("err %v, pulls %v", err, f.pulls)
		}
	})
	t.Run("never fails an absent image without pulling", func(t *testing.T) {
		f := &pullFake{present: map[string]bool{}}
		var events []string
		err := ensure(t, f, manifest.PullNever, img, &events)
		var fail *drift.Failure
		if !errors.As(err, &fail) || fail.Cause != drift.FailureRollout || !strings.Contains(fail.Summary, "is not on the engine and pullPolicy is never") || len(f.pulls) != 0 {
			t.Errorf("err %v, pulls %v", err, f.pulls)
		}
	})
	t.Run("a denied pull is a rollout failure naming the registry", func(t *testing.T) {
		f := &pullFake{present: map[string]bool{}, pullErr: errors.New("Error response from daemon: unauthorized: authentication required")}
		var events []string
		err := ensure(t, f, manifest.PullMissing, img, &events)
		var fail *drift.Failure
		if !errors.As(err, &fail) || fail.Cause != drift.FailureRollout || !strings.HasPrefix(fail.Summary, "image "+img+" could not be pulled from registry reg.example:5000: authentication failed") || fail.Transient {
			t.Errorf("err %v", err)
		}
	})
	t.Run("an unreachable registry is transient: retried, not backed off further", func(t *testing.T) {
		f := &pullFake{present: map[string]bool{}, pullErr: errors.New(`Get "http://reg.example:5000/v2/": dial tcp 10.0.0.1:5000: connect: connection refused`)}
		var events []string
		err := ensure(t, f, manifest.PullMissing, img, &events)
		var fail *drift.Failure
		if !errors.As(err, &fail) || !fail.Transient || !strings.Contains(fail.Summary, "registry unreachable") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("an error in the stream is classified too", func(t *testing.T) {
		f := &pullFake{present: map[string]bool{}, stream: []jsonstream.Message{{Error: &jsonstream.Error{Message: "manifest for " + img + " not found: manifest unknown"}}}}
		var events []string
		err := ensure(t, f, manifest.PullMissing, img, &events)
		if err == nil || !strings.Contains(err.Error(), "not found (manifest unknown)") {
			t.Errorf("err %v", err)
		}
	})
}

func TestPickDigest(t *testing.T) {
	a, b := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	for _, tt := range []struct {
		image, id string
		repo      []string
		want      string
	}{
		{"reg:5000/shop/web:stable@" + a, "sha256:id", []string{"other/x@" + b, "reg:5000/shop/web@" + a}, a},
		{"nginx:1", "sha256:id", []string{"nginx@" + b}, b},
		{"shop/web:1", "sha256:id", []string{"mirror/web@" + b}, b},
		{"local:1", "sha256:id", nil, "sha256:id"},
	} {
		if got := pickDigest(tt.image, tt.id, tt.repo); got != tt.want {
			t.Errorf("%s %v: got %s, want %s", tt.image, tt.repo, got, tt.want)
		}
	}
}

func TestProgressLineOnePerStateChange(t *testing.T) {
	layers := map[string]string{}
	var got []string
	for _, m := range []jsonstream.Message{
		{Status: "Pulling from shop/web", ID: "v1"},
		{Status: "Pulling fs layer", ID: "a1"},
		{Status: "Downloading", ID: "a1", Progress: &jsonstream.Progress{Current: 1000, Total: 3_400_000}},
		{Status: "Downloading", ID: "a1", Progress: &jsonstream.Progress{Current: 2_000, Total: 3_400_000}},
		{Status: "Downloading", ID: "a1", Progress: &jsonstream.Progress{Current: 2_000_000, Total: 3_400_000}},
		{Status: "Downloading", ID: "a1", Progress: &jsonstream.Progress{Current: 2_100_000, Total: 3_400_000}},
		{Status: "Download complete", ID: "a1"},
		{Status: "Pull complete", ID: "a1"},
		{Status: "Digest: sha256:abc"},
		{},
	} {
		if l := progressLine(layers, m); l != "" {
			got = append(got, l)
		}
	}
	want := []string{"v1: Pulling from shop/web", "a1: Pulling fs layer", "a1: Downloading 1.0kB/3.4MB", "a1: Downloading 2.0MB/3.4MB", "a1: Download complete", "a1: Pull complete", "Digest: sha256:abc"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
