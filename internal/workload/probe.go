package workload

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Probe checks target once, as a healthcheck `test` does, so that images
// made of the workload alone (no shell, curl or wget) can carry a compose
// healthcheck: `test: [CMD, /driftless, workload, probe, URL]`.
//
// An http:// or https:// URL is healthy when it answers 2xx or 3xx;
// tcp://HOST:PORT when a connection is accepted. The error says why not.
func Probe(ctx context.Context, target string, timeout time.Duration) error {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return fmt.Errorf("probe %q: want http://HOST:PORT/PATH or tcp://HOST:PORT", target)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch u.Scheme {
	case "http", "https":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return fmt.Errorf("probe %s: %w", target, err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("probe %s: %w", target, err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("probe %s: status %s", target, resp.Status)
		}
		return nil
	case "tcp":
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", u.Host)
		if err != nil {
			return fmt.Errorf("probe %s: %w", target, err)
		}
		return conn.Close()
	default:
		return fmt.Errorf("probe %q: unsupported scheme %q: want http, https or tcp", target, u.Scheme)
	}
}
