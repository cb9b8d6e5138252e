package native_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

func loadGPU(t *testing.T, spec string, opts load.Options) (*manifest.App, error) {
	t.Helper()
	fsys := fstest.MapFS{"a.yaml": {Data: []byte(loadtest.Svc + "  image: x\n" + spec)}}
	return appdir.LoadWith(fsys, ".", "shop", opts)
}

// spec.deviceRequests: count all (or left out) is -1, capabilities
// default to [gpu], requests are sorted, device IDs keep their order.
func TestNativeDeviceRequests(t *testing.T) {
	a, err := loadGPU(t, `  deviceRequests:
    - driver: nvidia
      deviceIDs: ["1", "0"]
      capabilities: [gpu, utility]
      options: {foo: bar}
    - {driver: amd, count: 2}
    - {driver: nvidia}
    - {count: All}
`, load.Options{Policy: policy.Policy{Allow: []string{policy.AllowDevices}}})
	if err != nil {
		t.Fatal(err)
	}
	svc := a.Services[0]
	want := []manifest.DeviceRequest{
		{Count: manifest.DeviceCountAll, Capabilities: [][]string{{"gpu"}}},
		{Driver: "amd", Count: 2, Capabilities: [][]string{{"gpu"}}},
		{Driver: "nvidia", Count: manifest.DeviceCountAll, Capabilities: [][]string{{"gpu"}}},
		{Driver: "nvidia", DeviceIDs: []string{"1", "0"}, Capabilities: [][]string{{"gpu", "utility"}}, Options: map[string]string{"foo": "bar"}},
	}
	if got := svc.Spec.DeviceRequests; !reflect.DeepEqual(got, want) {
		t.Errorf("device requests:\n got %#v\nwant %#v", got, want)
	}
	for model, written := range map[string]string{"deviceRequests[0]": "spec.deviceRequests[3]", "deviceRequests[1]": "spec.deviceRequests[1]", "deviceRequests[3]": "spec.deviceRequests[0]"} {
		if got := svc.Field(model).Field; got != written {
			t.Errorf("%s written at %q, want %q", model, got, written)
		}
	}
}

func TestNativeDeviceRequestErrors(t *testing.T) {
	tests := []struct {
		name, spec string
		opts       load.Options
		want       []string
	}{
		{"count and ids", "  deviceRequests: [{driver: nvidia, count: 1, deviceIDs: ['0']}]\n", load.Options{}, []string{
			"a.yaml:7:20: spec.deviceRequests[0]: count and device IDs are exclusive: ask for a number of devices or name them"}},
		{"count", "  deviceRequests: [{count: some}, {count: -1}]\n", load.Options{}, []string{
			`a.yaml:7:28: spec.deviceRequests[0].count: must be all or a number of devices, got "some"`,
			`a.yaml:7:43: spec.deviceRequests[1].count: must be all or a number of devices, got "-1"`}},
		{"empty id and capability", "  deviceRequests: [{deviceIDs: [''], capabilities: ['']}]\n", load.Options{}, []string{
			"a.yaml:7:20: spec.deviceRequests[0]: a device ID must not be empty",
			"a.yaml:7:53: spec.deviceRequests[0].capabilities[0]: must not be empty"}},
		{"unknown field", "  deviceRequests: [{gpus: 1}]\n", load.Options{}, []string{
			"a.yaml:7:21: spec.deviceRequests[0].gpus: unknown field"}},
		{"policy", "  deviceRequests: [{driver: nvidia}]\n", load.Options{}, []string{
			"a.yaml:7:20: spec.deviceRequests[0]: device request nvidia count=all caps=[gpu] gives the container direct hardware access (GPUs); allow it for this app with `allow: [devices]` in driftless.yaml (or `--allow devices`)"}},
		{"swarm", "  deviceRequests: [{driver: nvidia}]\n", load.Options{Target: manifest.TargetSwarm, Policy: policy.Policy{Allow: policy.AllowNames}}, []string{
			"a.yaml:7:20: spec.deviceRequests[0]: Swarm services cannot be given device requests (GPUs)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadGPU(t, tt.spec, tt.opts)
			got := loadtest.ErrorLines(t, err)
			if len(got) != len(tt.want) || !slices.EqualFunc(got, tt.want, strings.HasPrefix) {
				t.Errorf("errors:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
			}
		})
	}
}
