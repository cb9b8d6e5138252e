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

var allowDevices = load.Options{Policy: policy.Policy{Allow: []string{policy.AllowDevices}}}

// GPU reservations map to device requests as docker compose sends them: a
// reservation's capabilities as its one list, gpus with gpu added, count
// all as -1, count left out as all.
func TestComposeDeviceRequests(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []manifest.DeviceRequest
		field string // where deviceRequests[0] was written
	}{
		{"gpus: all", []string{"gpus: all"},
			[]manifest.DeviceRequest{{Count: manifest.DeviceCountAll, Capabilities: [][]string{{"gpu"}}}}, "services.web.gpus"},
		{"gpus list", []string{"gpus: [{driver: nvidia, count: 1, options: {foo: bar}}]"},
			[]manifest.DeviceRequest{{Driver: "nvidia", Count: 1, Capabilities: [][]string{{"gpu"}}, Options: map[string]string{"foo": "bar"}}}, "services.web.gpus[0]"},
		{"gpus with capabilities", []string{"gpus: [{driver: nvidia, device_ids: ['1'], capabilities: [utility]}]"},
			[]manifest.DeviceRequest{{Driver: "nvidia", DeviceIDs: []string{"1"}, Capabilities: [][]string{{"utility", "gpu"}}}}, "services.web.gpus[0]"},
		{"reservation count all", []string{"deploy:", "  resources:", "    reservations:", "      devices:", "        - driver: nvidia", "          count: all", "          capabilities: [gpu]"},
			[]manifest.DeviceRequest{{Driver: "nvidia", Count: manifest.DeviceCountAll, Capabilities: [][]string{{"gpu"}}}}, "services.web.deploy.resources.reservations.devices[0]"},
		{"reservation without count is all", []string{"deploy: {resources: {reservations: {devices: [{driver: nvidia, capabilities: [gpu, compute]}]}}}"},
			[]manifest.DeviceRequest{{Driver: "nvidia", Count: manifest.DeviceCountAll, Capabilities: [][]string{{"gpu", "compute"}}}}, "services.web.deploy.resources.reservations.devices[0]"},
		{"reservation device ids keep their order, requests are sorted", []string{
			"deploy: {resources: {reservations: {devices: [{driver: nvidia, device_ids: ['1', '0'], capabilities: [gpu]}, {driver: amd, count: 2, capabilities: [gpu]}]}}}"},
			[]manifest.DeviceRequest{
				{Driver: "amd", Count: 2, Capabilities: [][]string{{"gpu"}}},
				{Driver: "nvidia", DeviceIDs: []string{"1", "0"}, Capabilities: [][]string{{"gpu"}}},
			}, "services.web.deploy.resources.reservations.devices[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := loadtest.LoadComposeFiles(t, loadtest.Web(tt.lines...), allowDevices)
			if err != nil {
				t.Fatal(err)
			}
			svc := a.Services[0]
			if got := svc.Spec.DeviceRequests; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("device requests:\n got %#v\nwant %#v", got, tt.want)
			}
			if got := svc.Field("deviceRequests[0]").Field; got != tt.field {
				t.Errorf("deviceRequests[0] written at %q, want %q", got, tt.field)
			}
		})
	}
}

func TestComposeDeviceRequestRefusals(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		opts  load.Options
		want  string
	}{
		{"not allowed", []string{"gpus: all"}, load.Options{},
			"compose.yaml:4:11: services.web.gpus: device request (any driver) count=all caps=[gpu] gives the container direct hardware access (GPUs); allow it for this app with `allow: [devices]` in driftless.yaml (or `--allow devices`)"},
		{"reservation not allowed", []string{"deploy: {resources: {reservations: {devices: [{driver: nvidia, count: 1, capabilities: [gpu]}]}}}"}, load.Options{},
			"compose.yaml:4:51: services.web.deploy.resources.reservations.devices[0]: device request nvidia count=1 caps=[gpu] gives the container direct hardware access (GPUs); allow it for this app with `allow: [devices]` in driftless.yaml (or `--allow devices`)"},
		{"count and device_ids", []string{"gpus: [{driver: nvidia, count: 1, device_ids: ['0']}]"}, allowDevices,
			`"count" and "device_ids" attributes are exclusive`},
		{"negative count", []string{"gpus: [{driver: nvidia, count: -2}]"}, allowDevices,
			"compose.yaml:4:12: services.web.gpus[0]: count must be all or a number of devices, got -2"},
		{"capabilities required in a reservation", []string{"deploy: {resources: {reservations: {devices: [{driver: nvidia}]}}}"}, allowDevices,
			"missing property 'capabilities'"},
		{"swarm", []string{"gpus: all"}, load.Options{Target: manifest.TargetSwarm, Policy: allowDevices.Policy},
			"compose.yaml:4:11: services.web.gpus: Swarm services cannot be given device requests (GPUs)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(loadtest.ComposeErrors(t, loadtest.Web(tt.lines...), tt.opts), "\n")
			if !strings.Contains(got, tt.want) {
				t.Errorf("errors:\n%s\nlack %q", got, tt.want)
			}
		})
	}
}
