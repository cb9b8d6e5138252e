package manifest_test

import (
	"testing"

	"github.com/driftless-dev/driftless/manifest"
)

// Device requests are hashed: a change replaces the replicas; their order
// (they are independent) does not, their device IDs' order does.
func TestHashServiceDeviceRequests(t *testing.T) {
	gpu := manifest.DeviceRequest{Driver: "nvidia", Count: manifest.DeviceCountAll, Capabilities: [][]string{{"gpu"}}}
	other := manifest.DeviceRequest{Driver: "amd", DeviceIDs: []string{"0", "1"}, Capabilities: [][]string{{"gpu"}}}
	with := func(rs ...manifest.DeviceRequest) string {
		s := baseSpec()
		s.DeviceRequests = rs
		return manifest.HashService(nil, nil, s)
	}
	base := manifest.HashService(nil, nil, baseSpec())
	if with() != base {
		t.Error("no device requests must hash as before they existed")
	}
	if with(gpu) == base {
		t.Error("a device request must change the hash")
	}
	if with(gpu, other) != with(other, gpu) {
		t.Error("the order of device requests must not change the hash")
	}
	swapped := other
	swapped.DeviceIDs = []string{"1", "0"}
	one := gpu
	one.Count = 1
	caps := gpu
	caps.Capabilities = [][]string{{"gpu", "utility"}}
	opts := gpu
	opts.Options = map[string]string{"a": "b"}
	for _, c := range []struct {
		name string
		a, b manifest.DeviceRequest
	}{{"device IDs' order", other, swapped}, {"count", gpu, one}, {"capabilities", gpu, caps}, {"options", gpu, opts}} {
		if with(c.a) == with(c.b) {
			t.Errorf("%s changed but the hash did not", c.name)
		}
	}
}

func TestCanonicalServiceCopiesDeviceRequests(t *testing.T) {
	s := baseSpec()
	s.DeviceRequests = []manifest.DeviceRequest{{Driver: "nvidia", DeviceIDs: []string{"0"}, Capabilities: [][]string{{"gpu"}}, Options: map[string]string{"a": "b"}}}
	c := manifest.CanonicalService(s)
	c.DeviceRequests[0].DeviceIDs[0] = "9"
	c.DeviceRequests[0].Capabilities[0][0] = "x"
	c.DeviceRequests[0].Options["a"] = "z"
	if r := s.DeviceRequests[0]; r.DeviceIDs[0] != "0" || r.Capabilities[0][0] != "gpu" || r.Options["a"] != "b" {
		t.Errorf("CanonicalService shares the input's device request: %+v", r)
	}
}

func TestDeviceRequestStringAndProblem(t *testing.T) {
	for _, tt := range []struct {
		r             manifest.DeviceRequest
		text, problem string
	}{
		{manifest.DeviceRequest{Driver: "nvidia", Count: -1, Capabilities: [][]string{{"gpu"}}}, "nvidia count=all caps=[gpu]", ""},
		{manifest.DeviceRequest{DeviceIDs: []string{"0", "1"}, Capabilities: [][]string{{"gpu", "utility"}, {"compute"}}, Options: map[string]string{"b": "2", "a": "1"}},
			"(any driver) ids=0,1 caps=[gpu,utility]|[compute] options=a=1,b=2", ""},
		{manifest.DeviceRequest{Driver: "nvidia", Count: 2, DeviceIDs: []string{"0"}}, "nvidia count=2 ids=0", "count and device IDs are exclusive: ask for a number of devices or name them"},
		{manifest.DeviceRequest{Count: -2}, "(any driver) count=-2", "count must be all or a number of devices, got -2"},
		{manifest.DeviceRequest{DeviceIDs: []string{" "}}, "(any driver) ids= ", "a device ID must not be empty"},
	} {
		if got := tt.r.String(); got != tt.text {
			t.Errorf("String() = %q, want %q", got, tt.text)
		}
		if got := tt.r.Problem(); got != tt.problem {
			t.Errorf("%s: Problem() = %q, want %q", tt.text, got, tt.problem)
		}
	}
}
