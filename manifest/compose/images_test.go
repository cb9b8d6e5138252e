package compose_test

import (
	"reflect"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

func TestComposePullPolicyMapping(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", manifest.PullMissing}, {"missing", manifest.PullMissing}, {"if_not_present", manifest.PullMissing},
		{"always", manifest.PullAlways}, {"never", manifest.PullNever},
	} {
		line := "pull_policy: " + tt.in
		if tt.in == "" {
			line = "restart: always"
		}
		a := loadtest.MustLoadCompose(t, loadtest.Web(line), load.Options{})
		if got := a.Service("web").PullPolicy; got != tt.want {
			t.Errorf("pull_policy %q: got %q, want %q", tt.in, got, tt.want)
		}
	}
	// build with a build: section is what driftless does anyway: the
	// image is built from the revision, never pulled.
	files := loadtest.Web("pull_policy: build", "build: ./web")
	files["web/Dockerfile"] = "FROM scratch\n"
	built := loadtest.MustLoadCompose(t, files, load.Options{})
	if s := built.Service("web"); s.PullPolicy != manifest.PullMissing || s.Spec.Build == nil {
		t.Errorf("pull_policy build with build:: policy %q, build %+v; want missing and the build", s.PullPolicy, s.Spec.Build)
	}
	a := loadtest.MustLoadCompose(t, loadtest.Web("x-driftless: {imageUpdate: {interval: 2s}}"), load.Options{})
	if got := a.Service("web").ImageUpdate; got == nil || got.Interval != "2s" {
		t.Errorf("x-driftless.imageUpdate: got %+v", got)
	}
}

func TestComposePullPolicyRefused(t *testing.T) {
	tests := []struct{ line, want string }{
		{"pull_policy: build", `compose.yaml:4:18: services.web.pull_policy: "build" needs a build: section: driftless builds the image from the revision`},
		{"pull_policy: daily", `compose.yaml:4:18: services.web.pull_policy: "daily" is not supported: use x-driftless: {imageUpdate: {interval: 24h}} to follow a tag`},
		{"pull_policy: every_12h", `compose.yaml:4:18: services.web.pull_policy: "every_12h" is not supported: use x-driftless: {imageUpdate: {interval: 24h}} to follow a tag`},
		{"x-driftless: {imageUpdate: {interval: soon}}", `compose.yaml:4:43: services.web.x-driftless.imageUpdate.interval: "soon" is neither a duration ("1h") nor a cron spec ("0 3 * * *", "@every 10m")`},
	}
	for _, tt := range tests {
		got := loadtest.ComposeErrors(t, loadtest.Web(tt.line), load.Options{})
		if !reflect.DeepEqual(got, []string{tt.want}) {
			t.Errorf("%s:\ngot  %q\nwant %q", tt.line, got, tt.want)
		}
	}
}
