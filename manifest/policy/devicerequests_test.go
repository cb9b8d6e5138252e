package policy_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// A device request (a GPU) is a host power under devices: refused where
// it was written unless the app allows devices.
func TestDeviceRequestsNeedDevices(t *testing.T) {
	app := &manifest.App{Name: "shop", Services: []manifest.Service{{
		Name: "ml",
		Spec: manifest.ServiceSpec{Image: "shop/ml:1", DeviceRequests: []manifest.DeviceRequest{
			{Driver: "nvidia", Count: manifest.DeviceCountAll, Capabilities: [][]string{{"gpu"}}},
		}},
		Fields: map[string]manifest.FieldRef{"deviceRequests[0]": {Pos: manifest.Position{File: "apps/shop/ml.yaml", Line: 9, Column: 7}, Field: "spec.deviceRequests[0]"}},
	}}}
	errs := policy.CheckPolicy(app, policy.Policy{}, policy.Host{})
	want := "apps/shop/ml.yaml:9:7: spec.deviceRequests[0]: device request nvidia count=all caps=[gpu] gives the container direct hardware access (GPUs); allow it for this app with `allow: [devices]` in driftless.yaml (or `--allow devices`)"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("got %v, want %q", errs, want)
	}
	for _, allow := range [][]string{{policy.AllowDevices}, policy.AllowNames} {
		if errs := policy.CheckPolicy(app, policy.Policy{Allow: allow}, policy.Host{}); len(errs) != 0 {
			t.Errorf("allow %v: %v", allow, errs)
		}
	}
	if errs := policy.CheckPolicy(app, policy.Policy{Allow: []string{policy.AllowPrivileged}}, policy.Host{}); len(errs) != 1 || !strings.Contains(errs[0].Error(), "allow: [devices]") {
		t.Errorf("privileged allowed, devices not: %v", errs)
	}
}

// Swarm schedules devices as generic resources: a device request is
// refused on a Swarm target, even when devices are allowed.
func TestSwarmRefusesDeviceRequests(t *testing.T) {
	app := &manifest.App{Name: "shop", Services: []manifest.Service{{
		Name: "ml",
		Spec: manifest.ServiceSpec{Image: "shop/ml:1", DeviceRequests: []manifest.DeviceRequest{{Count: 1, Capabilities: [][]string{{"gpu"}}}}},
	}}}
	got := policy.CheckSwarm(app).Error()
	if !strings.Contains(got, "deviceRequests[0]: Swarm services cannot be given device requests (GPUs)") {
		t.Errorf("got %q", got)
	}
}
