// Package hostroutes reads the IPv4 ranges the host already uses, from
// its routing table and its interface addresses, so that a new network's
// subnet does not overlap them.
package hostroutes

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"

	"github.com/driftless-dev/driftless/drift"
)

// Parse reads /proc/net/route: destination and mask in hex, in host
// (little-endian on every platform Docker runs on) byte order. The default
// route covers everything and is skipped: traffic to a bridge's subnet
// goes to the bridge, not the gateway.
func Parse(r io.Reader) ([]drift.SubnetUse, error) {
	var out []drift.SubnetUse
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 8 {
			continue
		}
		dst, err1 := hexAddr(f[1])
		mask, err2 := hexAddr(f[7])
		if err1 != nil || err2 != nil {
			return out, fmt.Errorf("route %q: bad destination or mask", sc.Text())
		}
		bits, _ := net.IPMask(mask.AsSlice()).Size()
		if bits == 0 {
			continue
		}
		out = append(out, drift.SubnetUse{Prefix: netip.PrefixFrom(dst, bits).Masked(), By: "host route via " + f[0]})
	}
	return out, sc.Err()
}

func hexAddr(s string) (netip.Addr, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 4 {
		return netip.Addr{}, errors.New("not a hex IPv4 address")
	}
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], binary.LittleEndian.Uint32(b))
	return netip.AddrFrom4(a), nil
}

// AddressUses turns the host's interface addresses into the ranges they sit
// in (an address without a route still answers on its interface).
func AddressUses(addrs []net.Addr) []drift.SubnetUse {
	var out []drift.SubnetUse
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok || !ip.Unmap().Is4() || ip.Unmap().IsLoopback() {
			continue
		}
		bits, _ := ipn.Mask.Size()
		if len(ipn.Mask) == net.IPv6len {
			bits -= 96
		}
		out = append(out, drift.SubnetUse{Prefix: netip.PrefixFrom(ip.Unmap(), bits).Masked(), By: "host address " + ipn.String()})
	}
	return out
}
