package deploy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/deploy/hostroutes"
	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// subnetAttempts bounds the retries when another process took the subnet
// between our list and our create.
const subnetAttempts = 10

// createWithSubnet decides the subnet of a network about to be created and creates
// it: allocation and create run under one lock per engine, so two apps'
// passes never pick the same subnet; a subnet taken meanwhile by another
// process (a CLI apply, a second agent) makes Docker refuse the create,
// and the allocation is made again from a fresh list. It reports whether
// the network turned out to exist already (see createOnce).
func (e *Engine) createWithSubnet(ctx context.Context, app, name string, spec manifest.NetworkSpec, previous string, opts client.NetworkCreateOptions) (bool, netip.Prefix, error) {
	req := drift.SubnetRequest{Network: name}
	if spec.Subnet != "" {
		p, err := netip.ParsePrefix(spec.Subnet)
		if err != nil {
			return false, netip.Prefix{}, fmt.Errorf("network %s: %w", name, err)
		}
		req.Declared = p
	} else if !e.allocates(spec) {
		existed, err := e.createOnce(ctx, app, name, opts)
		return existed, netip.Prefix{}, err
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
				return false, netip.Prefix{}, ctx.Err()
			case <-time.After(time.Duration(rand.IntN(50*attempt)) * time.Millisecond):
			}
		}
		var used []drift.SubnetUse
		if used, err = e.usedSubnets(ctx); err != nil {
			return false, netip.Prefix{}, err
		}
		// A subnet Docker refused is taken even if the list does not show
		// it yet.
		used = append(used, refused...)
		var got []drift.SubnetAllocation
		if got, err = drift.AllocateSubnets(*e.opts.AddressPool, used, []drift.SubnetRequest{req}); err != nil {
			// Nothing to retry until a person frees a subnet or changes
			// the pool.
			return false, netip.Prefix{}, &drift.Failure{Cause: drift.FailureConflict, Summary: err.Error()}
		}
		subnet := got[0].Subnet
		v4 := network.IPAMConfig{Subnet: subnet}
		if spec.Subnet != "" {
			// Checked by the front ends; both are inside the declared subnet.
			if gw, err := netip.ParseAddr(spec.Gateway); err == nil {
				v4.Gateway = gw
			}
			if r, err := netip.ParsePrefix(spec.IPRange); err == nil {
				v4.IPRange = r
			}
		}
		opts.IPAM = &network.IPAM{Driver: "default", Config: []network.IPAMConfig{v4}}
		if v6, err := netip.ParsePrefix(spec.SubnetV6); err == nil {
			// Beside the declared IPv4 subnet or the pool's.
			opts.IPAM.Config = append(opts.IPAM.Config, network.IPAMConfig{Subnet: v6})
		}
		if got[0].FromPool {
			opts.Labels[drift.LabelSubnet] = subnet.String()
		}
		existed, err := e.createOnce(ctx, app, name, opts)
		if existed {
			return true, netip.Prefix{}, nil
		}
		if err == nil || !isSubnetTaken(err) {
			return false, subnet, err
		}
		e.log.Info("subnet taken while creating network; allocating again", "network", name, "subnet", subnet, "err", err)
		refused = append(refused, drift.SubnetUse{Prefix: subnet, By: "a network created meanwhile"})
	}
	return false, netip.Prefix{}, err
}

// createOnce creates network name for app unless it exists. Docker on API
// 1.41 does not refuse a second network with a name (the client has no
// CheckDuplicate), so the name is looked up right before the create, and
// again after it: if another process created one meanwhile, the younger of
// the two, if it is ours, is removed at once. It reports whether the
// network existed (ours or the other process's is kept, not this create's).
// A network that Docker makes after our lookup and after our second look
// (a create of an agent killed mid-call) is repaired by the next plan (see
// drift's keptNetworks).
func (e *Engine) createOnce(ctx context.Context, app, name string, opts client.NetworkCreateOptions) (bool, error) {
	if existing, err := e.lookupNetworks(ctx, app, name); err != nil || len(existing) > 0 {
		return len(existing) > 0, err
	}
	res, err := e.api.NetworkCreate(ctx, name, opts)
	if err != nil {
		return false, err
	}
	same, err := e.lookupNetworks(ctx, app, name)
	if err != nil || len(same) < 2 || same[0].ID == res.ID {
		return false, nil
	}
	e.log.Warn("another network with this name was created at the same time; removing this one", "network", name, "kept", shortID(same[0].ID), "removed", shortID(res.ID))
	if _, err := e.api.NetworkRemove(ctx, res.ID, client.NetworkRemoveOptions{}); err != nil && !engineerr.IsNotFound(err) {
		return false, fmt.Errorf("remove network %s (%s), made twice: %w", name, shortID(res.ID), err)
	}
	return true, nil
}

// lookupNetworks lists the networks named exactly name (Docker's name
// filter also matches parts of names), oldest first. One that is not app's
// holds the name: an error, since driftless never adopts a foreign one.
func (e *Engine) lookupNetworks(ctx context.Context, app, name string) ([]drift.Network, error) {
	res, err := e.api.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("name", name)})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	var out []drift.Network
	for _, s := range res.Items {
		if s.Name != name {
			continue
		}
		n := dockerspec.NetworkFromSummary(s)
		if n.App != app {
			return nil, fmt.Errorf("name %s is held by a network driftless does not own; rename or remove it", name)
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b drift.Network) int { return drift.CompareNetworkAge(&a, &b) })
	return out, nil
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
		routes, rerr := hostroutes.Parse(f)
		f.Close()
		if rerr != nil {
			e.log.Warn("cannot read host routes; subnets may overlap them", "file", e.opts.RoutesFile, "err", rerr)
		}
		used = append(used, routes...)
	} else {
		e.log.Warn("cannot read host routes; subnets may overlap them", "err", err)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		used = append(used, hostroutes.AddressUses(addrs)...)
	}
	return used, nil
}
