package native_test

import (
	"reflect"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
)

func TestNativePullPolicyAndImageUpdate(t *testing.T) {
	tests := []struct {
		name       string
		spec       string
		wantPolicy string
		wantUpdate *manifest.ImageUpdate
	}{
		{"default is missing", "  image: shop/web:1\n", manifest.PullMissing, nil},
		{"always", "  image: shop/web:1\n  pullPolicy: always\n", manifest.PullAlways, nil},
		{"never", "  image: shop/web:1\n  pullPolicy: never\n", manifest.PullNever, nil},
		{"image update by duration", "  image: shop/web:stable\n  imageUpdate: {interval: 1h}\n", manifest.PullMissing, &manifest.ImageUpdate{Interval: "1h"}},
		{"image update by cron", "  image: shop/web:stable\n  imageUpdate: {interval: \"0 3 * * *\"}\n", manifest.PullMissing, &manifest.ImageUpdate{Interval: "0 3 * * *"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app, err := loadtest.LoadFiles(t, map[string]string{"web.yaml": loadtest.Svc + tt.spec})
			if err != nil {
				t.Fatal(err)
			}
			s := app.Service("web")
			if s.PullPolicy != tt.wantPolicy || !reflect.DeepEqual(s.ImageUpdate, tt.wantUpdate) {
				t.Errorf("got pullPolicy %q imageUpdate %+v, want %q %+v", s.PullPolicy, s.ImageUpdate, tt.wantPolicy, tt.wantUpdate)
			}
		})
	}
}

// The pull policy and the tag schedule say how an image is fetched, not
// what runs: changing them must not replace running replicas.
func TestPullPolicyIsNotHashed(t *testing.T) {
	a, err := loadtest.LoadFiles(t, map[string]string{"web.yaml": loadtest.Svc + "  image: shop/web:1\n"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadtest.LoadFiles(t, map[string]string{"web.yaml": loadtest.Svc + "  image: shop/web:1\n  pullPolicy: always\n  imageUpdate: {interval: 5m}\n"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Service("web").Hash != b.Service("web").Hash {
		t.Errorf("hash changed with pullPolicy/imageUpdate: %s vs %s", a.Service("web").Hash, b.Service("web").Hash)
	}
}

func TestNativeImageErrors(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want []string
	}{
		{"unknown policy", "  image: shop/web:1\n  pullPolicy: sometimes\n",
			[]string{`web.yaml:7:15: spec.pullPolicy: must be missing, always or never, got "sometimes"`}},
		{"bad interval", "  image: shop/web:1\n  imageUpdate: {interval: often}\n",
			[]string{`web.yaml:7:27: spec.imageUpdate.interval: "often" is neither a duration ("1h") nor a cron spec ("0 3 * * *", "@every 10m")`}},
		{"interval too short", "  image: shop/web:1\n  imageUpdate: {interval: 10ms}\n",
			[]string{`web.yaml:7:27: spec.imageUpdate.interval: "10ms" is too short: check a tag at most once a second`}},
		{"missing interval", "  image: shop/web:1\n  imageUpdate: {}\n",
			[]string{`web.yaml:7:3: spec.imageUpdate.interval: is required: a duration ("1h") or a cron spec ("0 3 * * *")`}},
		{"never with update", "  image: shop/web:1\n  pullPolicy: never\n  imageUpdate: {interval: 1h}\n",
			[]string{`web.yaml:8:3: spec.imageUpdate: cannot be used with pullPolicy: never (an update must pull the new digest)`}},
		{"digest pinned", "  image: shop/web@sha256:" + sixtyFourA + "\n  imageUpdate: {interval: 1h}\n",
			[]string{`web.yaml:7:3: spec.imageUpdate: image "shop/web@sha256:` + sixtyFourA + `" is pinned by digest and can never move: remove imageUpdate or use a tag`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadtest.LoadFiles(t, map[string]string{"web.yaml": loadtest.Svc + tt.spec})
			if err == nil {
				t.Fatal("load succeeded")
			}
			if got := loadtest.ErrorLines(t, err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

const sixtyFourA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
