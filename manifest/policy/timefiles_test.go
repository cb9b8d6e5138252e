package policy_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// /etc/localtime and /etc/timezone, read-only, need no hostPaths; where
// /etc/localtime leads into the zone files, that is allowed too, and
// nothing else is.
func TestTimeFilesReadOnlyNeedNoHostPaths(t *testing.T) {
	host := fakeHost(map[string]string{
		"/etc/localtime": "/usr/share/zoneinfo/Europe/Berlin",
		"/etc/timezone":  "/etc/shadow",
	})
	bind := func(hp string, ro bool) *manifest.App {
		return &manifest.App{Name: "shop", Services: []manifest.Service{{Name: "web", Spec: manifest.ServiceSpec{
			Binds: []manifest.BindMount{{HostPath: hp, MountPath: "/etc/x", ReadOnly: ro}},
		}}}}
	}
	tests := []struct {
		hostPath string
		readOnly bool
		host     policy.Host
		want     string // the refusal; "" accepted
	}{
		{"/etc/localtime", true, policy.Host{}, ""},
		{"/etc/timezone", true, policy.Host{}, ""},
		{"/etc/localtime", true, host, ""},
		{"/etc/localtime", false, host, "host path /etc/localtime is outside the paths this app may mount; allow it with `hostPaths: [/etc/localtime]` in driftless.yaml (or `--allow-host-path /etc/localtime`), or mount it read-only (:ro), which needs no hostPaths"},
		{"/etc/timezone", true, host, "host path /etc/timezone is outside the paths this app may mount"},
		{"/etc/localtime/../passwd", true, policy.Host{}, "host path /etc/passwd is outside"},
		{"/usr/share/zoneinfo", true, policy.Host{}, "host path /usr/share/zoneinfo is outside"},
		{"/etc", true, policy.Host{}, "host path /etc is outside"},
	}
	for _, tc := range tests {
		errs := policy.CheckHostPaths(bind(tc.hostPath, tc.readOnly), policy.Policy{}, tc.host)
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%s (ro %v): refused: %v", tc.hostPath, tc.readOnly, errs)
		case tc.want == "":
		case len(errs) != 1 || !strings.HasPrefix(errs[0].Msg, tc.want):
			t.Errorf("%s (ro %v): errors %v\nwant one starting %s", tc.hostPath, tc.readOnly, errs, tc.want)
		}
	}
	// As compose files write them.
	files := loadtest.Web("volumes: ['/etc/localtime:/etc/localtime:ro', '/etc/timezone:/etc/timezone:ro']")
	if _, err := loadtest.LoadComposeFiles(t, files, load.Options{}); err != nil {
		t.Errorf("read-only time files refused: %v", err)
	}
	got := loadtest.ComposeErrors(t, loadtest.Web("volumes: ['/etc/localtime:/etc/localtime']"), load.Options{})
	if want := "compose.yaml:4:15: services.web.volumes[0]: host path /etc/localtime is outside the paths this app may mount"; len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Errorf("writable: got %q, want %q...", got, want)
	}
}
