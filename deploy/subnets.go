package deploy

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/drift/manifest"
)

// subnetAttempts bounds the retries when another process took the subnet
// between our list and our create.
const subnetAttempts = 10

// createWithSubnet decides the subnet of a network about to be created and creates
// it: allocation and create run under one lock per engine, so two apps'
// passes never pick the same subnet; a subnet taken meanwhile by another
// process (a CLI apply, a second agent) makes Docker refuse the create,
// and the allocation is made again from a fresh list.
func (e *Engine) createWithSubnet(ctx context.Context, name string, spec manifest.NetworkSpec, previous string, opts client.NetworkCreateOptions) (netip.Prefix, error) {
	req := drift.SubnetRequest{Network: name}
	if spec.Subnet != "" {
		p, err := netip.ParsePrefix(spec.Subnet)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("network %s: %w", name, err)
		}
		req.Declared = p
	} else if !e.allocates(spec) {
		_, err := e.api.NetworkCreate(ctx, name, opts)
		return netip.Prefix{}, err
	}
	req.Previous, _ = netip.ParsePrefix(previous)
	e.subnetMu.Lock()
	defer e.subnetMu.Unlock()
	var err error
	var refused []drift.SubnetUse
	for attempt := range subnetAttempts {
		if attempt > 0 {
			// The other creator allocates in the same order: a short
			// random pause lets one of the two go first next time.
			select {
			case <-ctx.Done():
				return netip.Prefix{}, ctx.Err()
			case <-time.After(time.Duration(rand.IntN(50*attempt)) * time.Millisecond):
			}
		}
		var used []drift.SubnetUse
		if used, err = e.usedSubnets(ctx); err != nil {
			return netip.Prefix{}, err
		}
		// A subnet Docker refused is taken even if the list does not show
		// it yet.
		used = append(used, refused...)
		var got []drift.SubnetAllocation
		if got, err = drift.AllocateSubnets(*e.opts.AddressPool, used, []drift.SubnetRequest{req}); err != nil {
			// Nothing to retry until a person frees a subnet or changes
			// the pool.
			return netip.Prefix{}, &drift.Failure{Cause: drift.FailureConflict, Summary: err.Error()}
		}
		subnet := got[0].Subnet
		opts.IPAM = &network.IPAM{Driver: "default", Config: []network.IPAMConfig{{Subnet: subnet}}}
		if got[0].FromPool {
			opts.Labels[drift.LabelSubnet] = subnet.String()
		}
		if _, err = e.api.NetworkCreate(ctx, name, opts); err == nil || !isSubnetTaken(err) {
			return subnet, err
		}
		e.log.Info("subnet taken while creating network; allocating again", "network", name, "subnet", subnet, "err", err)
		refused = append(refused, drift.SubnetUse{Prefix: subnet, By: "a network created meanwhile"})
	}
	return netip.Prefix{}, err
}

// allocates reports whether driftless picks the subnet of a network: local
// bridge networks only (other drivers' subnets follow their parent
// interface), and only with a pool.
func (e *Engine) allocates(spec manifest.NetworkSpec) bool {
	return e.opts.AddressPool.Enabled() && (spec.Driver == "" || spec.Driver == "bridge")
}

// isSubnetTaken recognises Docker's refusals of a subnet that overlaps
// another network (libnetwork's IPAM and bridge driver wordings).
func isSubnetTaken(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Pool overlaps") || strings.Contains(msg, "overlapping")
}

// usedSubnets is every IPv4 range already in use: the subnets of every
// network on the engine (any owner), the host's routes and the host's
// interface addresses. It lists networks rather than reading the view:
// creates are rare, and a list is exact at the moment of the lock.
func (e *Engine) usedSubnets(ctx context.Context) ([]drift.SubnetUse, error) {
	res, err := e.api.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list networks to choose a subnet: %w", err)
	}
	var used []drift.SubnetUse
	for _, n := range res.Items {
		for _, c := range n.IPAM.Config {
			if c.Subnet.IsValid() && c.Subnet.Addr().Is4() {
				used = append(used, drift.SubnetUse{Prefix: c.Subnet.Masked(), By: "network " + n.Name})
			}
		}
	}
	if f, err := os.Open(e.opts.RoutesFile); err == nil {
		routes, rerr := parseRoutes(f)
		f.Close()
		if rerr != nil {
			e.log.Warn("cannot read host routes; subnets may overlap them", "file", e.opts.RoutesFile, "err", rerr)
		}
		used = append(used, routes...)
	} else {
		e.log.Warn("cannot read host routes; subnets may overlap them", "err", err)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		used = append(used, addressUses(addrs)...)
	}
	return used, nil
}

// parseRoutes reads /proc/net/route: destination and mask in hex, in host
// (little-endian on every platform Docker runs on) byte order. The default
// route covers everything and is skipped: traffic to a bridge's subnet
// goes to the bridge, not the gateway.
func parseRoutes(r io.Reader) ([]drift.SubnetUse, error) {
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

// addressUses turns the host's interface addresses into the ranges they sit
// in (an address without a route still answers on its interface).
func addressUses(addrs []net.Addr) []drift.SubnetUse {
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
