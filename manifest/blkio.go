package manifest

import (
	"fmt"
	"path"
	"strings"
)

// Blkio is a service's block IO weight and per-device limits (compose's
// blkio_config, docker run's --blkio-weight and --device-read-bps and
// kin). An engine whose kernel has no IO weight discards the weights with
// a warning, as it does for docker run; the limits need the device on the
// engine's host.
type Blkio struct {
	// Weight is the relative IO weight, 10 to 1000; 0 is the engine's.
	Weight          uint16           `json:"weight,omitempty"`
	WeightDevice    []WeightDevice   `json:"weightDevice,omitempty"`
	DeviceReadBps   []ThrottleDevice `json:"deviceReadBps,omitempty"`
	DeviceWriteBps  []ThrottleDevice `json:"deviceWriteBps,omitempty"`
	DeviceReadIOps  []ThrottleDevice `json:"deviceReadIOps,omitempty"`
	DeviceWriteIOps []ThrottleDevice `json:"deviceWriteIOps,omitempty"`
}

// WeightDevice is the IO weight on one device of the host.
type WeightDevice struct {
	Path   string `json:"path"`
	Weight uint16 `json:"weight"`
}

// ThrottleDevice is a rate limit on one device of the host: bytes or
// operations per second.
type ThrottleDevice struct {
	Path string `json:"path"`
	Rate uint64 `json:"rate"`
}

// Empty reports whether b sets nothing.
func (b *Blkio) Empty() bool {
	return b == nil || (b.Weight == 0 && len(b.WeightDevice) == 0 && len(b.DeviceReadBps) == 0 &&
		len(b.DeviceWriteBps) == 0 && len(b.DeviceReadIOps) == 0 && len(b.DeviceWriteIOps) == 0)
}

// CheckBlkioWeight checks an IO weight as Docker takes it: 10 to 1000
// (0, unset, is the engine's).
func CheckBlkioWeight(w int64) string {
	if w != 0 && (w < 10 || w > 1000) {
		return fmt.Sprintf("must be between 10 and 1000, got %d", w)
	}
	return ""
}

// CheckBlkioDevice checks the device path of a weight or limit: a
// clean absolute path under /dev, which the engine resolves on its host.
func CheckBlkioDevice(p string) string {
	if path.Clean(p) != p || !strings.HasPrefix(p, "/dev/") {
		return fmt.Sprintf("device %q must be a block device's path under /dev, such as /dev/sda", p)
	}
	return ""
}
