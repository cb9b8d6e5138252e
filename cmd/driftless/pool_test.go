package main

import (
	"net/netip"
	"testing"

	"github.com/driftless-dev/driftless/drift"
)

// --address-pool and --address-pool-size win over the file's addressPool,
// each on its own.
func TestAddressPoolFlags(t *testing.T) {
	file := &drift.AddressPool{Base: netip.MustParsePrefix("10.50.0.0/16"), Size: 24}
	for _, tc := range []struct {
		base string
		size int
		file *drift.AddressPool
		want string
	}{
		{"", 0, nil, "<nil>"},
		{"", 0, file, "10.50.0.0/16/24"},
		{"10.60.0.0/20", 0, file, "10.60.0.0/20/24"},
		{"", 26, file, "10.50.0.0/16/26"},
		{"", 26, nil, "10.213.0.0/16/26"},
		{"docker", 0, file, "docker"},
		{"10.60.0.0/20", 8, nil, "error: --address-pool: address pool 10.60.0.0/20: size /8 must be between /20 (the pool itself) and /29"},
	} {
		f := &runFlags{addressPool: tc.base, addressPoolSize: tc.size}
		p, err := f.addressPoolOr(tc.file)
		got := "<nil>"
		switch {
		case err != nil:
			got = "error: " + err.Error()
		case p != nil:
			got = p.String()
		}
		if got != tc.want {
			t.Errorf("--address-pool %q --address-pool-size %d over %v: %s, want %s", tc.base, tc.size, tc.file, got, tc.want)
		}
	}
}
