package deploy

import (
	"context"
	"net"
	"net/netip"

	"github.com/moby/moby/client"
)

// infoAPI is the engine's /info; *client.Client has it.
type infoAPI interface {
	Info(ctx context.Context, options client.InfoOptions) (client.SystemInfoResult, error)
}

// engineInsecure reads, once, which registries the engine treats as
// insecure (its insecure-registries: CIDRs and names); without an answer,
// the engine's default, loopback.
func (e *Engine) engineInsecure(ctx context.Context, host string) bool {
	e.insecureOnce.Do(func() {
		e.insecureCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		api, ok := e.raw.(infoAPI)
		if !ok {
			return
		}
		res, err := api.Info(ctx, client.InfoOptions{})
		if err != nil || res.Info.RegistryConfig == nil {
			return
		}
		e.insecureCIDRs = res.Info.RegistryConfig.InsecureRegistryCIDRs
		e.insecureNames = map[string]bool{}
		for name, idx := range res.Info.RegistryConfig.IndexConfigs {
			if idx != nil && !idx.Secure {
				e.insecureNames[name] = true
			}
		}
	})
	if e.insecureNames[host] {
		return true
	}
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	ips := []string{h}
	if _, err := netip.ParseAddr(h); err != nil {
		ips, _ = net.DefaultResolver.LookupHost(ctx, h)
	}
	for _, s := range ips {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		for _, p := range e.insecureCIDRs {
			if p.Contains(ip.Unmap()) {
				return true
			}
		}
	}
	return false
}
