package native

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// blkioLimits are the four lists of per-device limits: their field names,
// and whether their rate is bytes (else operations) per second.
func blkioLimits(b *rawBlkio) []struct {
	name  string
	list  []rawThrottle
	bytes bool
} {
	return []struct {
		name  string
		list  []rawThrottle
		bytes bool
	}{{"deviceReadBps", b.DeviceReadBps, true}, {"deviceWriteBps", b.DeviceWriteBps, true}, {"deviceReadIOps", b.DeviceReadIOps, false}, {"deviceWriteIOps", b.DeviceWriteIOps, false}}
}

// throttleRate reads a limit's rate: a memory quantity of bytes, or a
// whole number of operations.
func throttleRate(q yamlpos.Quantity, bytes bool) (uint64, error) {
	if bytes {
		n, err := manifest.ParseMemory(string(q))
		return uint64(max(n, 0)), err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(q)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("must be a whole number of operations per second, got %q", string(q))
	}
	return n, nil
}

// normalizeBlkio maps resources.blkio; validateBlkio has checked it.
func normalizeBlkio(raw *rawBlkio) *manifest.Blkio {
	if raw == nil {
		return nil
	}
	b := &manifest.Blkio{Weight: uint16(orDefault(raw.Weight, 0))}
	for _, d := range raw.WeightDevice {
		b.WeightDevice = append(b.WeightDevice, manifest.WeightDevice{Path: d.Path, Weight: uint16(orDefault(d.Weight, 0))})
	}
	outs := []*[]manifest.ThrottleDevice{&b.DeviceReadBps, &b.DeviceWriteBps, &b.DeviceReadIOps, &b.DeviceWriteIOps}
	for i, l := range blkioLimits(raw) {
		for _, d := range l.list {
			var rate uint64
			if d.Rate != nil {
				rate, _ = throttleRate(*d.Rate, l.bytes)
			}
			*outs[i] = append(*outs[i], manifest.ThrottleDevice{Path: d.Path, Rate: rate})
		}
	}
	if b.Empty() {
		return nil
	}
	return b
}

// validateBlkio checks resources.blkio: weights 10 to 1000, devices under
// /dev, every limit with a rate.
func validateBlkio(r yamlpos.Reporter, b *rawBlkio) {
	if b == nil {
		return
	}
	const at = "spec.resources.blkio"
	if b.Weight != nil {
		if msg := manifest.CheckBlkioWeight(int64(*b.Weight)); msg != "" {
			r.Errorf(at+".weight", "%s", msg)
		}
	}
	device := func(field, p string) {
		if p == "" {
			r.Required(field + ".path")
		} else if msg := manifest.CheckBlkioDevice(p); msg != "" {
			r.Errorf(field+".path", "%s", msg)
		}
	}
	for i, d := range b.WeightDevice {
		field := yamlpos.IndexPath(at+".weightDevice", i)
		device(field, d.Path)
		if d.Weight == nil {
			r.Required(field + ".weight")
		} else if msg := manifest.CheckBlkioWeight(int64(*d.Weight)); msg != "" {
			r.Errorf(field+".weight", "%s", msg)
		}
	}
	for _, l := range blkioLimits(b) {
		for i, d := range l.list {
			field := yamlpos.IndexPath(at+"."+l.name, i)
			device(field, d.Path)
			if d.Rate == nil {
				r.Required(field + ".rate")
			} else if _, err := throttleRate(*d.Rate, l.bytes); err != nil {
				r.Errorf(field+".rate", "%v", err)
			}
		}
	}
}
