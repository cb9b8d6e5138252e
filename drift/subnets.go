package drift

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// LabelSubnet records on a network the subnet driftless gave it, so a
// replaced network gets the same one back. It is not part of the spec hash:
// an allocated subnet is not drift.
const LabelSubnet = LabelPrefix + "subnet"

// The default address pool: Docker's own default pools (172.17-31/16 and
// 192.168/16 in /20s) hold about 30 networks; a /16 of 10/8 that home
// routers, cloud VPCs and VPNs rarely use, cut into /24s, holds 256.
const (
	DefaultAddressPoolBase = "10.213.0.0/16"
	DefaultAddressPoolSize = 24
)

// AddressPoolSetting names where a user changes the pool, for messages.
const AddressPoolSetting = "addressPool in driftless.yaml (or --address-pool)"

// maxPoolSubnets bounds the scan of one allocation.
const maxPoolSubnets = 1 << 16

// AddressPool is where the subnets of the app networks driftless creates
// come from: Base cut into prefixes of length Size. The zero pool is off:
// Docker picks from its own default pools.
type AddressPool struct {
	Base netip.Prefix
	Size int
}

// DefaultAddressPool is the pool used when none is configured.
func DefaultAddressPool() AddressPool {
	return AddressPool{Base: netip.MustParsePrefix(DefaultAddressPoolBase), Size: DefaultAddressPoolSize}
}

// ParseAddressPool reads a pool: base is an IPv4 CIDR, or "docker" to
// leave subnets to Docker's own pools; size is the prefix length of each
// subnet (0: DefaultAddressPoolSize).
func ParseAddressPool(base string, size int) (AddressPool, error) {
	base = strings.TrimSpace(base)
	if base == "docker" {
		return AddressPool{}, nil
	}
	if size == 0 {
		size = DefaultAddressPoolSize
	}
	p, err := netip.ParsePrefix(base)
	if err != nil {
		return AddressPool{}, fmt.Errorf("address pool %q: must be an IPv4 CIDR such as %s, or \"docker\" to let Docker pick subnets", base, DefaultAddressPoolBase)
	}
	pool := AddressPool{Base: p, Size: size}
	return pool, pool.Validate()
}

// Validate checks that the pool is usable.
func (p AddressPool) Validate() error {
	if !p.Enabled() {
		return nil
	}
	b := p.Base
	switch {
	case !b.Addr().Is4():
		return fmt.Errorf("address pool %s: only IPv4 pools are supported", b)
	case b.Masked() != b:
		return fmt.Errorf("address pool %s: host bits are set; did you mean %s?", b, b.Masked())
	case p.Size < b.Bits() || p.Size > 29:
		// A /30 has two usable addresses: the gateway and one container.
		return fmt.Errorf("address pool %s: size /%d must be between /%d (the pool itself) and /29", b, p.Size, b.Bits())
	case p.Size-b.Bits() > 16:
		return fmt.Errorf("address pool %s: /%d cuts it into more than %d subnets; use a smaller pool or larger subnets", b, p.Size, maxPoolSubnets)
	}
	return nil
}

// Enabled reports whether driftless allocates subnets at all.
func (p AddressPool) Enabled() bool { return p.Base.IsValid() }

// Len is the number of subnets in the pool.
func (p AddressPool) Len() int {
	if !p.Enabled() {
		return 0
	}
	return 1 << (p.Size - p.Base.Bits())
}

func (p AddressPool) String() string {
	if !p.Enabled() {
		return "docker"
	}
	return fmt.Sprintf("%s/%d", p.Base, p.Size)
}

// subnet returns the i-th subnet of the pool.
func (p AddressPool) subnet(i int) netip.Prefix {
	a := p.Base.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += uint32(i) << (32 - p.Size)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), p.Size)
}

// contains reports whether s is one of the pool's subnets.
func (p AddressPool) contains(s netip.Prefix) bool {
	return p.Enabled() && s.Bits() == p.Size && p.Base.Contains(s.Addr()) && s.Masked() == s
}

// SubnetUse is an address range already taken, and by what (for messages):
// "network shop-default", "route via eth0".
type SubnetUse struct {
	Prefix netip.Prefix
	By     string
}

// SubnetRequest is one network to be created.
type SubnetRequest struct {
	Network string // Docker name
	// Declared is the subnet the manifest gives the network: kept as it
	// is, and checked for overlap.
	Declared netip.Prefix
	// Previous is the subnet recorded on the network this one replaces:
	// reused while it is free, so a replaced network keeps its addresses.
	Previous netip.Prefix
}

// SubnetAllocation is the subnet a requested network gets.
type SubnetAllocation struct {
	Network string
	Subnet  netip.Prefix
	// FromPool is false for a declared subnet.
	FromPool bool
}

// ErrSubnetUnavailable is what both allocation errors match.
var ErrSubnetUnavailable = errors.New("no subnet available")

// PoolExhaustedError says that every subnet of the pool is in use.
type PoolExhaustedError struct {
	Network string
	Pool    AddressPool
}

func (e *PoolExhaustedError) Error() string {
	return fmt.Sprintf("cannot create network %s: the address pool %s is exhausted (all %d /%d subnets overlap networks on the engine or host routes): "+
		"set a larger %s, or remove networks that are no longer used", e.Network, e.Pool.Base, e.Pool.Len(), e.Pool.Size, AddressPoolSetting)
}

func (e *PoolExhaustedError) Is(target error) bool { return target == ErrSubnetUnavailable }

// SubnetOverlapError says that a declared subnet overlaps one in use.
type SubnetOverlapError struct {
	Network string
	Subnet  netip.Prefix
	With    SubnetUse
}

func (e *SubnetOverlapError) Error() string {
	return fmt.Sprintf("cannot create network %s: its declared subnet %s overlaps %s (%s): declare a subnet that is free on this host", e.Network, e.Subnet, e.With.Prefix, e.With.By)
}

func (e *SubnetOverlapError) Is(target error) bool { return target == ErrSubnetUnavailable }

// AllocateSubnets decides the subnet of each requested network: a declared
// subnet is kept if it overlaps nothing in use; otherwise the previous
// subnet is reused while it is free, else the pool's first free subnet is
// taken. Subnets decided for earlier requests count as used for later
// ones. With the pool off, only declared subnets are returned. It returns
// the allocations so far and the first error, a *SubnetOverlapError or a
// *PoolExhaustedError.
func AllocateSubnets(pool AddressPool, used []SubnetUse, wanted []SubnetRequest) ([]SubnetAllocation, error) {
	taken := append([]SubnetUse(nil), used...)
	overlap := func(s netip.Prefix) (SubnetUse, bool) {
		for _, u := range taken {
			if u.Prefix.Overlaps(s) {
				return u, true
			}
		}
		return SubnetUse{}, false
	}
	var out []SubnetAllocation
	// Declared subnets first: they cannot move, the pool's can.
	for _, w := range wanted {
		if !w.Declared.IsValid() {
			continue
		}
		if u, ok := overlap(w.Declared); ok {
			return out, &SubnetOverlapError{Network: w.Network, Subnet: w.Declared, With: u}
		}
		taken = append(taken, SubnetUse{Prefix: w.Declared, By: "network " + w.Network})
		out = append(out, SubnetAllocation{Network: w.Network, Subnet: w.Declared})
	}
	if !pool.Enabled() {
		return out, nil
	}
	for _, w := range wanted {
		if w.Declared.IsValid() {
			continue
		}
		s, ok := netip.Prefix{}, false
		if pool.contains(w.Previous) {
			_, busy := overlap(w.Previous)
			s, ok = w.Previous, !busy
		}
		for i := 0; !ok && i < pool.Len(); i++ {
			s = pool.subnet(i)
			_, busy := overlap(s)
			ok = !busy
		}
		if !ok {
			return out, &PoolExhaustedError{Network: w.Network, Pool: pool}
		}
		taken = append(taken, SubnetUse{Prefix: s, By: "network " + w.Network})
		out = append(out, SubnetAllocation{Network: w.Network, Subnet: s, FromPool: true})
	}
	return out, nil
}
