package drift

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestAllocateSubnets(t *testing.T) {
	pfx := netip.MustParsePrefix
	pool := DefaultAddressPool()
	tiny := AddressPool{Base: pfx("10.213.0.0/28"), Size: 29}
	use := func(p, by string) SubnetUse { return SubnetUse{Prefix: pfx(p), By: by} }
	req := func(name string) SubnetRequest { return SubnetRequest{Network: name} }
	tests := []struct {
		name   string
		pool   AddressPool
		used   []SubnetUse
		wanted []SubnetRequest
		want   string // "net=subnet[*]" in order, * = from the pool; or "error: ..."
	}{
		{"first free subnets in order", pool, nil, []SubnetRequest{req("a"), req("b")},
			"a=10.213.0.0/24* b=10.213.1.0/24*"},
		{"skips engine networks and host routes", pool,
			[]SubnetUse{use("10.213.0.0/24", "network x"), use("10.213.1.128/25", "route via eth1"), use("172.17.0.0/16", "network bridge")},
			[]SubnetRequest{req("a")}, "a=10.213.2.0/24*"},
		{"a route covering part of the pool skips all it covers", pool,
			[]SubnetUse{use("10.213.0.0/23", "route via wg0")}, []SubnetRequest{req("a")}, "a=10.213.2.0/24*"},
		{"previous subnet is reused when free", pool, []SubnetUse{use("10.213.0.0/24", "network x")},
			[]SubnetRequest{{Network: "a", Previous: pfx("10.213.7.0/24")}}, "a=10.213.7.0/24*"},
		{"previous subnet taken meanwhile: first free", pool, []SubnetUse{use("10.213.7.0/24", "network x")},
			[]SubnetRequest{{Network: "a", Previous: pfx("10.213.7.0/24")}}, "a=10.213.0.0/24*"},
		{"previous subnet outside the pool is not reused", pool, nil,
			[]SubnetRequest{{Network: "a", Previous: pfx("192.168.5.0/24")}}, "a=10.213.0.0/24*"},
		{"declared subnet kept and counted as used by the pool's", pool, nil,
			[]SubnetRequest{req("a"), {Network: "b", Declared: pfx("10.213.0.0/24")}}, "b=10.213.0.0/24 a=10.213.1.0/24*"},
		{"declared subnet overlapping a network is refused", pool, []SubnetUse{use("192.168.0.0/20", "network other")},
			[]SubnetRequest{{Network: "b", Declared: pfx("192.168.4.0/24")}},
			"error: cannot create network b: its declared subnet 192.168.4.0/24 overlaps 192.168.0.0/20 (network other): declare a subnet that is free on this host"},
		{"two declared subnets of one batch overlap", pool, nil,
			[]SubnetRequest{{Network: "a", Declared: pfx("192.168.4.0/24")}, {Network: "b", Declared: pfx("192.168.4.0/23")}},
			"error: cannot create network b: its declared subnet 192.168.4.0/23 overlaps 192.168.4.0/24 (network a): declare a subnet that is free on this host"},
		{"tiny pool: two subnets, third refused naming the setting", tiny, nil, []SubnetRequest{req("a"), req("b"), req("c")},
			"error: cannot create network c: the address pool 10.213.0.0/28 is exhausted (all 2 /29 subnets overlap networks on the engine or host routes): set a larger addressPool in driftless.yaml (or --address-pool), or remove networks that are no longer used"},
		{"pool covered by a host route is exhausted", pool, []SubnetUse{use("10.0.0.0/8", "route via tun0")}, []SubnetRequest{req("a")},
			"error: cannot create network a: the address pool 10.213.0.0/16 is exhausted (all 256 /24 subnets overlap networks on the engine or host routes): set a larger addressPool in driftless.yaml (or --address-pool), or remove networks that are no longer used"},
		{"pool off: declared only", AddressPool{}, nil, []SubnetRequest{req("a"), {Network: "b", Declared: pfx("10.1.0.0/24")}}, "b=10.1.0.0/24"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AllocateSubnets(tt.pool, tt.used, tt.wanted)
			var s string
			if err != nil {
				if !errors.Is(err, ErrSubnetUnavailable) {
					t.Errorf("error %v does not match ErrSubnetUnavailable", err)
				}
				s = "error: " + err.Error()
			} else {
				var parts []string
				for _, a := range got {
					star := ""
					if a.FromPool {
						star = "*"
					}
					parts = append(parts, fmt.Sprintf("%s=%s%s", a.Network, a.Subnet, star))
				}
				s = strings.Join(parts, " ")
			}
			if s != tt.want {
				t.Errorf("got  %s\nwant %s", s, tt.want)
			}
		})
	}
}

// Allocating one network at a time, each result joining the used set (as
// the engine sees it after each create), gives every network a distinct
// subnet until the pool is full.
func TestAllocateSubnetsOneAtATimeFillsThePool(t *testing.T) {
	pool := AddressPool{Base: netip.MustParsePrefix("10.213.0.0/22"), Size: 24}
	used := []SubnetUse{{Prefix: netip.MustParsePrefix("10.213.2.0/24"), By: "network foreign"}}
	seen := map[netip.Prefix]bool{}
	for i := range 3 {
		got, err := AllocateSubnets(pool, used, []SubnetRequest{{Network: fmt.Sprint("n", i)}})
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		s := got[0].Subnet
		if seen[s] || s == used[0].Prefix {
			t.Fatalf("allocation %d: %s given twice", i, s)
		}
		seen[s] = true
		used = append(used, SubnetUse{Prefix: s, By: "network " + got[0].Network})
	}
	_, err := AllocateSubnets(pool, used, []SubnetRequest{{Network: "n3"}})
	var ex *PoolExhaustedError
	if !errors.As(err, &ex) || ex.Network != "n3" {
		t.Fatalf("4th allocation: %v, want PoolExhaustedError", err)
	}
}

func TestParseAddressPool(t *testing.T) {
	tests := []struct {
		base string
		size int
		want string // pool or "error: ..."
	}{
		{"10.213.0.0/16", 0, "10.213.0.0/16/24"},
		{"10.213.0.0/28", 29, "10.213.0.0/28/29"},
		{"docker", 0, "docker"},
		{"10.213.0.1/16", 24, "error: address pool 10.213.0.1/16: host bits are set; did you mean 10.213.0.0/16?"},
		{"10.213.0.0/16", 8, "error: address pool 10.213.0.0/16: size /8 must be between /16 (the pool itself) and /29"},
		{"10.213.0.0/16", 30, "error: address pool 10.213.0.0/16: size /30 must be between /16 (the pool itself) and /29"},
		{"10.0.0.0/8", 28, "error: address pool 10.0.0.0/8: /28 cuts it into more than 65536 subnets; use a smaller pool or larger subnets"},
		{"fd00::/48", 64, "error: address pool fd00::/48: only IPv4 pools are supported"},
		{"ten", 24, `error: address pool "ten": must be an IPv4 CIDR such as 10.213.0.0/16, or "docker" to let Docker pick subnets`},
	}
	for _, tt := range tests {
		p, err := ParseAddressPool(tt.base, tt.size)
		got := p.String()
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != tt.want {
			t.Errorf("ParseAddressPool(%q, %d) = %s, want %s", tt.base, tt.size, got, tt.want)
		}
	}
}

func FuzzParseAddressPool(f *testing.F) {
	f.Add("10.213.0.0/16", 24)
	f.Add("docker", 0)
	f.Add("0.0.0.0/0", 16)
	f.Fuzz(func(t *testing.T, base string, size int) {
		p, err := ParseAddressPool(base, size)
		if err != nil || !p.Enabled() {
			return
		}
		if p.Len() < 1 || p.Len() > maxPoolSubnets {
			t.Fatalf("%s: %d subnets", p, p.Len())
		}
		last := p.subnet(p.Len() - 1)
		if !p.Base.Contains(p.subnet(0).Addr()) || !p.Base.Contains(last.Addr()) || !p.contains(last) {
			t.Fatalf("%s: subnets leave the pool: %s", p, last)
		}
	})
}
