package deploy_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// On an engine without a GPU (and without the NVIDIA container toolkit,
// which registers the nvidia device driver), a service that reserves a
// GPU fails at start with the engine's reason, and its half-made replica
// is removed; the app's other services are applied. A driver-less
// request (compose's gpus without driver) is refused the same way: the
// engine has no device driver with capability gpu.
func TestDeviceRequestOnEngineWithoutGPU(t *testing.T) {
	f := newFixture(t, deploy.Options{})
	desired := f.loadWith(load.Options{Policy: policy.Policy{Allow: []string{policy.AllowDevices}}}, map[string]string{
		"web.yaml": webYAML(1, ""),
		"ml.yaml": `apiVersion: driftless.dev/v1
kind: Service
metadata: {name: ml}
spec:
  image: {{image}}
  stopGracePeriodSeconds: 1
  deviceRequests: [{driver: nvidia, count: all, capabilities: [gpu]}]
`,
		"anygpu.yaml": `apiVersion: driftless.dev/v1
kind: Service
metadata: {name: anygpu}
spec:
  image: {{image}}
  stopGracePeriodSeconds: 1
  deviceRequests: [{count: 1}]
`,
	})
	plan := f.plan(desired, drift.Options{})
	res, _ := f.apply(desired, plan)
	if res.Err == nil {
		t.Fatal("apply with GPU requests on an engine without GPUs succeeded")
	}
	want := map[string]string{
		"ml":     `could not select device driver "nvidia" with capabilities: [[gpu]]`,
		"anygpu": `could not select device driver "" with capabilities: [[gpu]]`,
	}
	for _, o := range res.Outcomes {
		t.Logf("%s: %s %q", o.Change.Name, o.Result, o.Error)
		if w, ok := want[o.Change.Service]; ok {
			if o.Result != drift.ResultFailed || !strings.Contains(o.Error, w) {
				t.Errorf("%s: %s %q, want failed with %q", o.Change.Name, o.Result, o.Error, w)
			}
		} else if o.Result != drift.ResultDone {
			t.Errorf("%s: %s %q; other services must still be applied", o.Change.Name, o.Result, o.Error)
		}
	}
	actual := f.observe()
	for svc := range want {
		if cs := service(actual, svc); len(cs) != 0 {
			t.Errorf("%s: %d containers left, want none: %+v", svc, len(cs), cs)
		}
	}
	if web := service(actual, "web"); len(web) != 1 || !web[0].Ready {
		t.Errorf("web: %+v", web)
	}
}
