package manifest

import (
	"fmt"
	"net/netip"
)

// AddressProblem says why ip cannot be a fixed address in the declared
// subnet of network key, or "": ip must lie inside it and be none of the
// addresses Docker keeps (the subnet's own, the gateway — declared, or
// the first address —, the IPv4 broadcast). Both front ends check addresses with it, after making
// sure the network declares a subnet of ip's family.
func AddressProblem(subnet, gateway, key string, ip netip.Addr) string {
	p, err := netip.ParsePrefix(subnet)
	if err != nil {
		return "" // the subnet itself is reported
	}
	p = p.Masked()
	gw, err := netip.ParseAddr(gateway)
	if err != nil {
		gw = p.Addr().Next() // Docker's: the subnet's first address
	}
	switch {
	case !p.Contains(ip):
		return fmt.Sprintf("%s is outside network %q's subnet %s", ip, key, p)
	case ip == p.Addr():
		return fmt.Sprintf("%s is the address of subnet %s itself: pick one inside it", ip, p)
	case ip == gw && gateway != "":
		return fmt.Sprintf("%s is network %q's gateway: pick another", ip, key)
	case ip == gw:
		return fmt.Sprintf("%s is the gateway Docker gives subnet %s (its first address): pick another", ip, p)
	case ip.Is4() && ip == lastAddr(p):
		return fmt.Sprintf("%s is the broadcast address of subnet %s: pick another", ip, p)
	}
	return ""
}

// CheckGateway checks a declared IPv4 gateway and address range against
// their subnet: the gateway an address inside it other than its own and
// its broadcast, the range a prefix inside it.
func CheckGateway(subnet, gateway, ipRange string) (gatewayErr, rangeErr error) {
	p, err := netip.ParsePrefix(subnet)
	if err != nil {
		return nil, nil // the subnet itself is reported
	}
	p = p.Masked()
	if gateway != "" {
		gw, err := netip.ParseAddr(gateway)
		switch {
		case err != nil || !gw.Is4():
			gatewayErr = fmt.Errorf("gateway %q is not an IPv4 address", gateway)
		case !p.Contains(gw) || gw == p.Addr() || gw == lastAddr(p):
			gatewayErr = fmt.Errorf("gateway %s is not a host address of subnet %s", gw, p)
		}
	}
	if ipRange != "" {
		r, err := netip.ParsePrefix(ipRange)
		switch {
		case err != nil || !r.Addr().Is4():
			rangeErr = fmt.Errorf("ip_range %q is not an IPv4 CIDR such as 172.28.5.0/24", ipRange)
		case r.Masked() != r:
			rangeErr = fmt.Errorf("ip_range %s has host bits set; did you mean %s?", r, r.Masked())
		case r.Bits() < p.Bits() || !p.Contains(r.Addr()):
			rangeErr = fmt.Errorf("ip_range %s is not inside subnet %s", r, p)
		}
	}
	return gatewayErr, rangeErr
}

// lastAddr is the last address of a masked prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// CheckSubnetV6 checks a declared IPv6 subnet: a CIDR without host bits,
// large enough for a gateway and a container.
func CheckSubnetV6(s string) error {
	if s == "" {
		return nil
	}
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil || !p.Addr().Is6() || p.Addr().Is4In6():
		return fmt.Errorf("subnet %q must be an IPv6 CIDR such as fd00:20::/64", s)
	case p.Masked() != p:
		return fmt.Errorf("subnet %s has host bits set; did you mean %s?", s, p.Masked())
	case p.Bits() > 126:
		return fmt.Errorf("subnet %s is too small for a gateway and a container: use /126 or larger", s)
	}
	return nil
}
