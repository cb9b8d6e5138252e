package manifest

import (
	"reflect"
	"testing"
)

func TestNativePullPolicyAndImageUpdate(t *testing.T) {
	tests := []struct {
		name       string
		spec       string
		wantPolicy string
		wantUpdate *ImageUpdate
	}{
		{"default is missing", "  image: shop/web:1\n", PullMissing, nil},
		{"always", "  image: shop/web:1\n  pullPolicy: always\n", PullAlways, nil},
		{"never", "  image: shop/web:1\n  pullPolicy: never\n", PullNever, nil},
		{"image update by duration", "  image: shop/web:stable\n  imageUpdate: {interval: 1h}\n", PullMissing, &ImageUpdate{Interval: "1h"}},
		{"image update by cron", "  image: shop/web:stable\n  imageUpdate: {interval: \"0 3 * * *\"}\n", PullMissing, &ImageUpdate{Interval: "0 3 * * *"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app, err := loadFiles(t, map[string]string{"web.yaml": svc + tt.spec})
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
	a, err := loadFiles(t, map[string]string{"web.yaml": svc + "  image: shop/web:1\n"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadFiles(t, map[string]string{"web.yaml": svc + "  image: shop/web:1\n  pullPolicy: always\n  imageUpdate: {interval: 5m}\n"})
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
			_, err := loadFiles(t, map[string]string{"web.yaml": svc + tt.spec})
			if err == nil {
				t.Fatal("load succeeded")
			}
			if got := errorLines(t, err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

const sixtyFourA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

func TestComposePullPolicyMapping(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", PullMissing}, {"missing", PullMissing}, {"if_not_present", PullMissing},
		{"always", PullAlways}, {"never", PullNever},
	} {
		line := "pull_policy: " + tt.in
		if tt.in == "" {
			line = "restart: always"
		}
		a := mustLoadCompose(t, web(line), LoadOptions{})
		if got := a.Service("web").PullPolicy; got != tt.want {
			t.Errorf("pull_policy %q: got %q, want %q", tt.in, got, tt.want)
		}
	}
	a := mustLoadCompose(t, web("x-driftless: {imageUpdate: {interval: 2s}}"), LoadOptions{})
	if got := a.Service("web").ImageUpdate; got == nil || got.Interval != "2s" {
		t.Errorf("x-driftless.imageUpdate: got %+v", got)
	}
}

func TestComposePullPolicyRefused(t *testing.T) {
	tests := []struct{ line, want string }{
		{"pull_policy: build", `compose.yaml:4:18: services.web.pull_policy: "build" is not supported: build and tag the image, then set image:`},
		{"pull_policy: daily", `compose.yaml:4:18: services.web.pull_policy: "daily" is not supported: use x-driftless: {imageUpdate: {interval: 24h}} to follow a tag`},
		{"pull_policy: every_12h", `compose.yaml:4:18: services.web.pull_policy: "every_12h" is not supported: use x-driftless: {imageUpdate: {interval: 24h}} to follow a tag`},
		{"x-driftless: {imageUpdate: {interval: soon}}", `compose.yaml:4:43: services.web.x-driftless.imageUpdate.interval: "soon" is neither a duration ("1h") nor a cron spec ("0 3 * * *", "@every 10m")`},
	}
	for _, tt := range tests {
		got := composeErrors(t, web(tt.line), LoadOptions{})
		if !reflect.DeepEqual(got, []string{tt.want}) {
			t.Errorf("%s:\ngot  %q\nwant %q", tt.line, got, tt.want)
		}
	}
}
