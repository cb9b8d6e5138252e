package deploy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/image"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// fakeDigest is the digest the fake registries answer with.
const fakeDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"

// accessFake is an engine holding images by reference, with their
// repository digests.
type accessFake struct {
	pullFake
	images  map[string]image.InspectResponse
	distErr error
}

func (f *accessFake) DistributionInspect(context.Context, string, client.DistributionInspectOptions) (client.DistributionInspectResult, error) {
	return client.DistributionInspectResult{}, f.distErr
}

func (f *accessFake) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	if img, ok := f.images[ref]; ok {
		return client.ImageInspectResult{InspectResponse: img}, nil
	}
	return client.ImageInspectResult{}, cerrdefs.ErrNotFound.WithMessage("No such image: " + ref)
}

// appCreds are credentials per app and host.
type appCreds map[string]map[string]registrytypes.AuthConfig

func (c appCreds) Lookup(_ context.Context, app, host string) (registrytypes.AuthConfig, error) {
	return c[app][host], nil
}

// basicRegistry answers manifest HEADs of private/web for deployer:pw and
// of public/web for anyone, counting them.
type basicRegistry struct {
	mu    sync.Mutex
	heads int
}

func (b *basicRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.heads++
	b.mu.Unlock()
	u, p, ok := r.BasicAuth()
	switch {
	case strings.HasPrefix(r.URL.Path, "/v2/public/web/manifests/"):
	case !ok || u != "deployer" || p != "pw":
		w.Header().Set("WWW-Authenticate", `Basic realm="fake"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	case !strings.HasPrefix(r.URL.Path, "/v2/private/web/manifests/"):
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.Header().Set("Docker-Content-Digest", fakeDigest)
}

func (b *basicRegistry) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.heads
}

// TestPullAccess: an image another app pulled with credentials runs for
// this app only when this app's own credentials can pull it (one HEAD,
// then remembered for those credentials); the refusal is a pull's
// authentication failure and nothing is pulled. Images this app pulled,
// public images, images pulled anonymously or by nobody through
// driftless, and images without a registry origin are not asked about.
func TestPullAccess(t *testing.T) {
	reg := &basicRegistry{}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	private, public := host+"/private/web:1", host+"/public/web:1"
	right := registrytypes.AuthConfig{Username: "deployer", Password: "pw"}
	wrong := registrytypes.AuthConfig{Username: "deployer", Password: "nope"}
	origin := func(ref string) []string { return []string{strings.TrimSuffix(ref, ":1") + "@" + fakeDigest} }
	cases := []struct {
		name    string
		ref     string
		digests []string
		pulled  map[string]bool // app → pulled anonymously
		creds   registrytypes.AuthConfig
		heads   int
		refused bool
	}{
		{name: "another app pulled it, wrong password", ref: private, digests: origin(private), pulled: map[string]bool{"blog": false}, creds: wrong, heads: 4, refused: true}, // a refusal is asked again at the next apply
		{name: "another app pulled it, no credentials", ref: private, digests: origin(private), pulled: map[string]bool{"blog": false}, heads: 2, refused: true},
		{name: "another app pulled it, right password", ref: private, digests: origin(private), pulled: map[string]bool{"blog": false}, creds: right, heads: 2},
		{name: "another app pulled a public image", ref: public, digests: origin(public), pulled: map[string]bool{"blog": false}, heads: 1},
		{name: "this app pulled it too", ref: private, digests: origin(private), pulled: map[string]bool{"blog": false, "shop": false}, creds: wrong},
		{name: "another app pulled it anonymously", ref: private, digests: origin(private), pulled: map[string]bool{"blog": true}, creds: wrong},
		{name: "nobody pulled it through driftless", ref: private, digests: origin(private), creds: wrong},
		{name: "built or loaded here", ref: private, pulled: map[string]bool{"blog": false}, creds: wrong},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &accessFake{images: map[string]image.InspectResponse{tc.ref: {ID: "sha256:img", RepoDigests: tc.digests}}}
			e := newEngine(f, Options{FilesDir: filepath.Join(t.TempDir(), "files"), Credentials: appCreds{"shop": {host: tc.creds}}})
			defer e.prober.Stop()
			for app, anon := range tc.pulled {
				e.pulls.Pull(app, tc.ref, "sha256:img", anon)
			}
			before := reg.count()
			for range 2 { // a second apply asks again only after a refusal
				r := &run{e: e, app: "shop", images: map[string]*imageCheck{}, progress: func(drift.Event) {}}
				svc := &manifest.Service{Name: "web", Spec: manifest.ServiceSpec{Image: tc.ref}, PullPolicy: manifest.PullMissing}
				err := r.ensureImage(context.Background(), &step{change: drift.Change{Name: "shop-web-1"}}, svc)
				var fail *drift.Failure
				want := "image " + tc.ref + " could not be pulled from registry " + host + ": authentication failed (401/denied): check the credentials for " + host
				switch {
				case tc.refused && (!errors.As(err, &fail) || fail.Cause != drift.FailureRollout || fail.Transient || !strings.HasPrefix(fail.Summary, want) || !strings.Contains(fail.Summary, "another app pulled it")):
					t.Errorf("got %v, want a rollout failure starting %q", err, want)
				case !tc.refused && err != nil:
					t.Errorf("got %v, want the image used", err)
				}
			}
			if n := reg.count() - before; n != tc.heads {
				t.Errorf("%d registry requests for two applies, want %d", n, tc.heads)
			}
			if len(f.pulls) != 0 {
				t.Errorf("pulled %v: a check pulls nothing", f.pulls)
			}
		})
	}
}

// TestPullAccessUnreachable: a registry that cannot be asked is a
// transient failure (retried), not a pass.
func TestPullAccessUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	ref := host + "/private/web:1"
	f := &accessFake{images: map[string]image.InspectResponse{ref: {ID: "sha256:img", RepoDigests: []string{host + "/private/web@" + fakeDigest}}}}
	f.distErr = errors.New(`Get "http://` + host + `/v2/": dial tcp ` + host + `: connect: connection refused`)
	e := newEngine(f, Options{FilesDir: filepath.Join(t.TempDir(), "files")})
	defer e.prober.Stop()
	e.pulls.Pull("blog", ref, "sha256:img", false)
	r := &run{e: e, app: "shop", images: map[string]*imageCheck{}, progress: func(drift.Event) {}}
	err := r.ensureImage(context.Background(), &step{}, &manifest.Service{Name: "web", Spec: manifest.ServiceSpec{Image: ref}})
	var fail *drift.Failure
	if !errors.As(err, &fail) || !fail.Transient || !strings.Contains(fail.Summary, "registry unreachable") {
		t.Errorf("got %v, want a transient unreachable failure", err)
	}
}

func TestOrigins(t *testing.T) {
	got := origins("reg.example/shop/web:1", []string{"reg.example/other@" + fakeDigest, "reg.example/shop/web@" + fakeDigest, "not a reference", "reg.example/shop/web:tagonly"})
	want := []string{"reg.example/shop/web@" + fakeDigest, "reg.example/other@" + fakeDigest}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("origins %v, want %v", got, want)
	}
}
