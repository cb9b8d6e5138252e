package dockerspec

import (
	"maps"
	"slices"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/api/types/container"
)

// deviceRequests are the engine's form of rs (HostConfig.DeviceRequests,
// docker run --gpus), nil for none.
func deviceRequests(rs []manifest.DeviceRequest) []container.DeviceRequest {
	var out []container.DeviceRequest
	for _, r := range rs {
		var caps [][]string
		for _, c := range r.Capabilities {
			caps = append(caps, slices.Clone(c))
		}
		out = append(out, container.DeviceRequest{Driver: r.Driver, Count: r.Count, DeviceIDs: slices.Clone(r.DeviceIDs), Capabilities: caps, Options: maps.Clone(r.Options)})
	}
	return out
}
