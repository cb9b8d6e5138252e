// Package probecheck is one httpGet or tcpSocket readiness check. The
// agent's prober runs it against a container's address on the agent's
// host, and `driftless probe` runs the same function inside the probe
// container on a remote engine (deploy/remoteprobe), so both give the same
// verdict in the same words.
package probecheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// BodyLimit is how much of a failing answer's body a reason quotes.
const BodyLimit = 256

// NewClient is the HTTP client of probes: no keep-alive, so each probe is
// a fresh connection as a kubelet's is (a replica that stops accepting
// connections is noticed); redirects are not followed (a 3xx passes); no
// proxy.
func NewClient() *http.Client {
	return &http.Client{
		Transport:     &http.Transport{DisableKeepAlives: true, Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// HTTPURL is the URL an httpGet probe of port and path asks at ip.
func HTTPURL(ip string, port int, path string) string {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return "http://" + net.JoinHostPort(ip, strconv.Itoa(port)) + path
}

// TCPAddr is the address a tcpSocket probe of port connects to at ip.
func TCPAddr(ip string, port int) string {
	return net.JoinHostPort(ip, strconv.Itoa(port))
}

// HTTP GETs target: nil on a 2xx or 3xx answer; otherwise the error reads
// "GET URL: 503 Service Unavailable: body" or "GET URL: connection
// refused". ctx bounds it.
func HTTP(ctx context.Context, c *http.Client, target string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "driftless-probe")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", target, unwrapURLError(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, BodyLimit))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		msg := fmt.Sprintf("GET %s: %s", target, resp.Status)
		if b := strings.TrimSpace(string(body)); b != "" {
			msg += ": " + b
		}
		return errors.New(msg)
	}
	return nil
}

// TCP connects to addr: nil when the connection is accepted; otherwise
// the error reads "connect IP:PORT: connection refused".
func TCP(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("connect %s: %w", addr, unwrapURLError(err))
	}
	return conn.Close()
}

// unwrapURLError drops url.Error's repetition of method and URL.
func unwrapURLError(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}
