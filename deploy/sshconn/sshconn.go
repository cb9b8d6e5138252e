// Package sshconn reaches a Docker engine over SSH the way the docker CLI
// does: each connection is the system ssh client running `docker system
// dial-stdio` on the far side, which relays the engine's API between its
// standard input and output and the engine's socket there. The far side
// needs sshd, the docker CLI, and DOCKER_HOST (or the default socket)
// naming its engine for the login user.
package sshconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Target is an engine reached over SSH.
type Target struct {
	// URL is ssh://[user@]host[:port].
	URL string
	// KeyFile is the private key the agent logs in with; "": ssh's own
	// defaults (~/.ssh, an agent).
	KeyFile string
	// KnownHostsFile holds the far side's host key; "": ~/.ssh/known_hosts.
	// A host whose key is not there is refused, never trusted on first use.
	KnownHostsFile string
}

// Args are the ssh command line for one connection.
func (t Target) Args() ([]string, error) {
	u, err := url.Parse(t.URL)
	if err != nil || u.Scheme != "ssh" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("%q is not an ssh://[user@]host[:port] address", t.URL)
	}
	args := []string{"-T", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=10"}
	if t.KnownHostsFile != "" {
		args = append(args, "-o", "UserKnownHostsFile="+t.KnownHostsFile)
	}
	if t.KeyFile != "" {
		args = append(args, "-i", t.KeyFile, "-o", "IdentitiesOnly=yes")
	}
	if p := u.Port(); p != "" {
		args = append(args, "-p", p)
	}
	if u.User != nil && u.User.Username() != "" {
		args = append(args, "-l", u.User.Username())
	}
	return append(args, "--", u.Hostname(), "docker", "system", "dial-stdio"), nil
}

// Dial starts one ssh connection to the engine; network and addr are
// ignored (the client's placeholder host).
func (t Target) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	args, err := t.Args()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Not CommandContext: the connection outlives the dial's context.
	cmd := exec.Command("ssh", args...)
	c := &conn{cmd: cmd, target: t.URL}
	cmd.Stderr = &c.stderr
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if c.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("ssh %s: %w", t.URL, err)
	}
	return c, nil
}

// conn is one ssh process as a net.Conn.
type conn struct {
	cmd    *exec.Cmd
	target string
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr lockedBuffer

	waitOnce sync.Once
	waitErr  error
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.stdout.Read(p)
	if errors.Is(err, io.EOF) {
		if werr := c.wait(); werr != nil {
			return n, werr
		}
	}
	return n, err
}

func (c *conn) Write(p []byte) (int, error) { return c.stdin.Write(p) }

// wait reaps the process once; an error says what ssh said.
func (c *conn) wait() error {
	c.waitOnce.Do(func() {
		if err := c.cmd.Wait(); err != nil {
			c.waitErr = fmt.Errorf("ssh %s: %w: %s", c.target, err, strings.TrimSpace(c.stderr.String()))
		}
	})
	return c.waitErr
}

// Close ends the process: the far side's dial-stdio ends with its input.
func (c *conn) Close() error {
	_ = c.stdin.Close()
	if c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
	}
	_ = c.wait()
	return nil
}

func (c *conn) LocalAddr() net.Addr                { return addr(c.target) }
func (c *conn) RemoteAddr() net.Addr               { return addr(c.target) }
func (c *conn) SetDeadline(t time.Time) error      { return nil }
func (c *conn) SetReadDeadline(t time.Time) error  { return nil }
func (c *conn) SetWriteDeadline(t time.Time) error { return nil }

type addr string

func (a addr) Network() string { return "ssh" }
func (a addr) String() string  { return string(a) }

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
