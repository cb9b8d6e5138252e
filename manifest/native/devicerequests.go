package native

import (
	"slices"
	"strconv"
	"strings"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// rawDeviceRequest asks the engine's device driver for devices (GPUs):
// compose's deploy.resources.reservations.devices.
type rawDeviceRequest struct {
	Driver string `json:"driver"`
	// Count is a number of devices or all (the default without
	// deviceIDs).
	Count     *yamlpos.Scalar `json:"count"`
	DeviceIDs []string        `json:"deviceIDs"`
	// Capabilities the driver must have, all of them ([gpu], the
	// default).
	Capabilities []string          `json:"capabilities"`
	Options      map[string]string `json:"options"`
}

// defaultDeviceCapabilities are a device request's capabilities when it
// names none: a GPU.
var defaultDeviceCapabilities = []string{"gpu"}

// deviceCount reads a count: all, or a number of devices.
func deviceCount(s *yamlpos.Scalar) (int, bool) {
	if s == nil {
		return 0, true
	}
	if strings.EqualFold(string(*s), "all") {
		return manifest.DeviceCountAll, true
	}
	n, err := strconv.Atoi(string(*s))
	return n, err == nil && n >= 0
}

// deviceRequest is the model's form of d (defaults applied).
func deviceRequest(d rawDeviceRequest) manifest.DeviceRequest {
	n, _ := deviceCount(d.Count)
	if d.Count == nil && len(d.DeviceIDs) == 0 {
		n = manifest.DeviceCountAll
	}
	caps := d.Capabilities
	if len(caps) == 0 {
		caps = defaultDeviceCapabilities
	}
	return manifest.DeviceRequest{Driver: d.Driver, Count: n, DeviceIDs: slices.Clone(d.DeviceIDs), Capabilities: [][]string{slices.Clone(caps)}, Options: copyMap(d.Options)}
}

func validateDeviceRequests(r yamlpos.Reporter, raw *rawServiceSpec) {
	for i, d := range raw.DeviceRequests {
		dp := yamlpos.IndexPath("spec.deviceRequests", i)
		if _, ok := deviceCount(d.Count); !ok {
			r.Errorf(dp+".count", "must be all or a number of devices, got %q", *d.Count)
			continue
		}
		for j, c := range d.Capabilities {
			if strings.TrimSpace(c) == "" {
				r.Errorf(yamlpos.IndexPath(dp+".capabilities", j), "must not be empty")
			}
		}
		if p := deviceRequest(d).Problem(); p != "" {
			r.Errorf(dp, "%s", p)
		}
	}
}

func normalizeDeviceRequests(raw *rawServiceSpec, spec *manifest.ServiceSpec) {
	for _, d := range raw.DeviceRequests {
		spec.DeviceRequests = append(spec.DeviceRequests, deviceRequest(d))
	}
}

// deviceRequestFields locates the normalized (sorted) device requests.
func deviceRequestFields(raw *rawServiceSpec, spec manifest.ServiceSpec, add func(model, written string)) {
	for i, d := range raw.DeviceRequests {
		want := deviceRequest(d).String()
		if j := slices.IndexFunc(spec.DeviceRequests, func(m manifest.DeviceRequest) bool { return m.String() == want }); j >= 0 {
			add(yamlpos.IndexPath("deviceRequests", j), yamlpos.IndexPath("spec.deviceRequests", i))
		}
	}
}
