// Package dialclient is the Docker client of an engine reached through a
// dial function (deploy.Options.Dial: ssh://), where opening a connection
// is expensive: over SSH it starts an ssh process, an SSH session and a
// remote `docker system dial-stdio`, tens to hundreds of milliseconds
// each, seconds on a loaded host.
//
// Every change (create, start, stop, remove, connect…) and every ping goes
// over a connection of its own, as on every engine: a daemon that is
// shutting down has closed its listener but still answers on connections
// already open, and a start sent over one would "repair" a container the
// daemon is about to stop; a new connection is refused and the engine
// counts as down. Reads (lists and inspects) cannot change anything, so
// they reuse idle connections: a readiness wait, a remote probe's exec
// inspect and the observations of a pass cost no process starts. So does
// creating an exec: it runs nothing until it is started, and its start
// (a hijacked stream) opens a connection of its own.
package dialclient

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/moby/moby/client"
)

// Limits of the pool of idle connections reads reuse. Each idle
// connection is an SSH session the remote sshd counts against its
// MaxSessions (10 by default, with the event stream and the changes in
// flight), so only a few are kept.
const (
	IdleConns   = 3
	IdleTimeout = 30 * time.Second
)

// Client is a Docker client whose connections all come from one dial
// function; reads reuse idle connections, changes and pings never do.
type Client struct {
	*client.Client // changes, pings, streams (events, logs, attaches)
	reads          *client.Client
	name           string
}

// New makes the client. name is the engine's address (the ssh:// URL),
// which DaemonHost returns instead of the placeholder host the requests
// carry; hook, if not nil, sees every request (request counting).
func New(dial func(ctx context.Context, network, addr string) (net.Conn, error), name string, hook func(*http.Request) error) (*Client, error) {
	fresh, err := client.New(Options(&http.Transport{DisableKeepAlives: true}, dial, hook)...)
	if err != nil {
		return nil, err
	}
	reads, err := client.New(Options(&http.Transport{MaxIdleConnsPerHost: IdleConns, IdleConnTimeout: IdleTimeout}, dial, hook)...)
	if err != nil {
		fresh.Close()
		return nil, err
	}
	return &Client{Client: fresh, reads: reads, name: name}, nil
}

// Options configure a client whose connections all come from dial, over
// transport. The placeholder host is set before the HTTP client, so the
// transport takes no proxy from the environment. HTTP/1 only: the client
// clones the transport, a clone of one that may speak HTTP/2 has a TLS
// config, and with one the client hijacks (exec attach) over its own
// dialer, not dial.
func Options(transport *http.Transport, dial func(context.Context, string, string) (net.Conn, error), hook func(*http.Request) error) []client.Opt {
	var h1 http.Protocols
	h1.SetHTTP1(true)
	transport.Protocols = &h1
	opts := []client.Opt{
		client.WithHost("http://docker"), client.WithHTTPClient(&http.Client{Transport: transport, CheckRedirect: client.CheckRedirect}),
		client.WithDialContext(dial), client.WithAPIVersionFromEnv(), client.WithScheme("http"),
	}
	if hook != nil {
		opts = append(opts, client.WithHTTPRequestHook(hook))
	}
	return opts
}

// DaemonHost names the engine by its address.
func (c *Client) DaemonHost() string {
	if c.name == "" {
		return "the engine reached through Options.Dial"
	}
	return c.name
}

// Close closes both clients' connections.
func (c *Client) Close() error {
	err := c.Client.Close()
	if rerr := c.reads.Close(); err == nil {
		err = rerr
	}
	return err
}

// The reads.

func (c *Client) ContainerList(ctx context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	return c.reads.ContainerList(ctx, o)
}

func (c *Client) ContainerInspect(ctx context.Context, id string, o client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	return c.reads.ContainerInspect(ctx, id, o)
}

func (c *Client) NetworkList(ctx context.Context, o client.NetworkListOptions) (client.NetworkListResult, error) {
	return c.reads.NetworkList(ctx, o)
}

func (c *Client) NetworkInspect(ctx context.Context, id string, o client.NetworkInspectOptions) (client.NetworkInspectResult, error) {
	return c.reads.NetworkInspect(ctx, id, o)
}

func (c *Client) VolumeList(ctx context.Context, o client.VolumeListOptions) (client.VolumeListResult, error) {
	return c.reads.VolumeList(ctx, o)
}

func (c *Client) VolumeInspect(ctx context.Context, id string, o client.VolumeInspectOptions) (client.VolumeInspectResult, error) {
	return c.reads.VolumeInspect(ctx, id, o)
}

func (c *Client) ImageInspect(ctx context.Context, ref string, o ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	return c.reads.ImageInspect(ctx, ref, o...)
}

func (c *Client) ImageList(ctx context.Context, o client.ImageListOptions) (client.ImageListResult, error) {
	return c.reads.ImageList(ctx, o)
}

func (c *Client) ExecInspect(ctx context.Context, id string, o client.ExecInspectOptions) (client.ExecInspectResult, error) {
	return c.reads.ExecInspect(ctx, id, o)
}

// ExecCreate goes with the reads: an exec instance does nothing until it
// is started, over a new connection, so a remote probe costs one.
func (c *Client) ExecCreate(ctx context.Context, id string, o client.ExecCreateOptions) (client.ExecCreateResult, error) {
	return c.reads.ExecCreate(ctx, id, o)
}

func (c *Client) Info(ctx context.Context, o client.InfoOptions) (client.SystemInfoResult, error) {
	return c.reads.Info(ctx, o)
}

func (c *Client) ServerVersion(ctx context.Context, o client.ServerVersionOptions) (client.ServerVersionResult, error) {
	return c.reads.ServerVersion(ctx, o)
}
