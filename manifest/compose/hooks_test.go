package compose_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// post_start and pre_stop become the service's hooks, in order, a string
// command split as compose splits it; an environment entry without a value
// is left out.
func TestComposeLifecycleHooks(t *testing.T) {
	files := loadtest.Web(
		"post_start:",
		"  - command: chown -R 1001:1001 /data",
		"    user: root",
		"    environment: [FOO=bar, UNSET]",
		"pre_stop:",
		"  - command: [./flush.sh, --all]",
		"    working_dir: /app",
		"  - command: echo bye",
		"    privileged: true",
	)
	a := loadtest.MustLoadCompose(t, files, load.Options{Policy: policy.Policy{Allow: []string{policy.AllowPrivileged}}})
	spec := a.Service("web").Spec
	wantPost := []manifest.Hook{{Command: []string{"chown", "-R", "1001:1001", "/data"}, User: "root", Env: map[string]string{"FOO": "bar"}}}
	wantPre := []manifest.Hook{{Command: []string{"./flush.sh", "--all"}, WorkingDir: "/app"}, {Command: []string{"echo", "bye"}, Privileged: true}}
	if !reflect.DeepEqual(spec.PostStart, wantPost) || !reflect.DeepEqual(spec.PreStop, wantPre) {
		t.Errorf("hooks:\npost %+v\npre  %+v\nwant\npost %+v\npre  %+v", spec.PostStart, spec.PreStop, wantPost, wantPre)
	}

	// A privileged hook is a host power, refused where it is written.
	got := strings.Join(loadtest.ComposeErrors(t, files, load.Options{}), "\n")
	if want := "compose.yaml:12:21: services.web.pre_stop[1].privileged: a privileged hook runs as a privileged container would"; !strings.HasPrefix(got, want) {
		t.Errorf("without the allowance: %s\nwant %s…", got, want)
	}
	got = strings.Join(loadtest.ComposeErrors(t, loadtest.Web("post_start: [{command: echo hi}]"), load.Options{Target: manifest.TargetSwarm}), "\n")
	if want := "services.web.post_start: Swarm starts and stops tasks itself: lifecycle hooks are for apps on one engine"; !strings.Contains(got, want) {
		t.Errorf("on swarm: %s\nwant %s", got, want)
	}
}
