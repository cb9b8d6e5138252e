// Package dockerssh reaches a Docker engine over SSH the way the docker
// CLI does for DOCKER_HOST=ssh://…: it runs the system ssh client with
// `docker system dial-stdio` as the remote command, and speaks the Docker
// API over that process's stdin and stdout. Each connection the Docker
// client opens is one ssh process; ssh's connection sharing (ControlMaster)
// carries them all over one SSH connection per Dialer, so a short HTTP
// request costs a process start, not a handshake.
//
// What the remote host needs: an sshd that accepts the agent's key for the
// user in the address, and the docker CLI (18.09 or later) on that user's
// PATH, allowed to use the engine's socket (root, or the docker group).
// The address may name the socket: ssh://user@host/run/user/1000/docker.sock
// runs `docker -H unix:///run/user/1000/docker.sock system dial-stdio`.
//
// ssh runs in batch mode (it never prompts) and always checks the host
// key (StrictHostKeyChecking=yes): a host that is not in known_hosts, or
// whose key changed, is refused with an error that says so. A password in
// the address is refused: authentication is by key. The user's own ssh
// configuration (~/.ssh/config) still applies to what the Dialer does not
// set, as for the docker CLI.
//
// Failures come back from the connection's first read or write as errors
// that wrap ErrHostKey, ErrAuth, ErrUnreachable or ErrRemoteDocker and
// say what to fix, with ssh's own words appended.
package dockerssh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults of Options.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultControlPersist = 60 * time.Second
)

// Options configure a Dialer.
type Options struct {
	// KeyFile is the private key to authenticate with (ssh -i). Only that
	// key is offered (IdentitiesOnly=yes), not an agent's or ~/.ssh's.
	// "" = ssh's defaults.
	KeyFile string
	// KnownHostsFile holds the remote host's key (UserKnownHostsFile).
	// "" = ssh's default, ~/.ssh/known_hosts. Either way an unknown or
	// changed host key is refused.
	KnownHostsFile string
	// ConnectTimeout bounds the TCP connection and the SSH handshake;
	// default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// ControlPersist is how long the shared SSH connection stays open
	// after its last session ended; default DefaultControlPersist.
	ControlPersist time.Duration
	// SSH is the ssh client to run; default "ssh" on PATH.
	SSH string
}

// Dialer opens connections to the Docker engine behind an ssh:// address.
// Its DialContext fits deploy.Options.Dial (and the moby client's
// WithDialContext); Close stops its shared SSH connection.
type Dialer struct {
	url  URL
	opts Options
	// dir is the Dialer's private directory (0700), which holds the
	// control socket of the shared connection.
	dir  string
	args []string // ssh's arguments for a connection

	mu     sync.Mutex
	closed bool
	conns  map[*conn]struct{}
}

// New checks the address and options and makes the Dialer's private
// directory. It starts nothing: the first connection opens the shared SSH
// connection.
func New(address string, opts Options) (*Dialer, error) {
	u, err := ParseURL(address)
	if err != nil {
		return nil, err
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.ControlPersist <= 0 {
		opts.ControlPersist = DefaultControlPersist
	}
	if opts.SSH == "" {
		opts.SSH = "ssh"
	}
	if opts.KeyFile, err = checkFile("keyFile", opts.KeyFile); err != nil {
		return nil, err
	}
	if opts.KnownHostsFile, err = checkFile("knownHostsFile", opts.KnownHostsFile); err != nil {
		return nil, err
	}
	dir, err := controlDir()
	if err != nil {
		return nil, err
	}
	d := &Dialer{url: u, opts: opts, dir: dir, conns: map[*conn]struct{}{}}
	d.args = sshArgs(u, opts, d.controlPath())
	return d, nil
}

// checkFile makes a key or known_hosts path absolute and refuses what ssh
// would read differently: whitespace and quotes split or end an option's
// value, and % starts one of ssh's tokens. "" stays "".
func checkFile(name, path string) (string, error) {
	if path == "" {
		return "", nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", name, path, err)
	}
	if strings.ContainsAny(abs, " \t\n\"'%\\") {
		return "", fmt.Errorf("%s %q: ssh cannot be given a path with spaces, quotes, backslashes or %%; move the file", name, path)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return abs, nil
}

// controlDir makes the private directory of the control socket. A socket
// path must fit in 108 bytes, ssh adds a temporary suffix of 17 while it
// binds, so a long TMPDIR gives way to /tmp.
func controlDir() (string, error) {
	base := os.TempDir()
	if len(base) > 60 {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "dlssh-")
	if err != nil {
		return "", fmt.Errorf("ssh control directory: %w", err)
	}
	return dir, nil
}

func (d *Dialer) controlPath() string { return filepath.Join(d.dir, "cm") }

// URL is the parsed address.
func (d *Dialer) URL() URL { return d.url }

// sshArgs is the ssh command line of one connection, without "ssh".
func sshArgs(u URL, o Options, controlPath string) []string {
	args := []string{
		"-T", "-x", "-a", // no terminal (a binary stream), no X11 or agent forwarding
		"-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=yes",
	}
	if o.KnownHostsFile != "" {
		args = append(args, "-o", "UserKnownHostsFile="+o.KnownHostsFile)
	}
	if o.KeyFile != "" {
		args = append(args, "-o", "IdentitiesOnly=yes", "-i", o.KeyFile)
	}
	args = append(args,
		"-o", "ConnectTimeout="+seconds(o.ConnectTimeout),
		// A dead link ends the event stream within about 45s instead of
		// TCP's minutes.
		"-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3",
		"-o", "ControlMaster=auto", "-o", "ControlPath="+controlPath, "-o", "ControlPersist="+seconds(o.ControlPersist),
	)
	if u.User != "" {
		args = append(args, "-l", u.User)
	}
	if u.Port != 0 {
		args = append(args, "-p", strconv.Itoa(u.Port))
	}
	args = append(args, "--", u.Host, "docker")
	if u.Socket != "" {
		args = append(args, "-H", "unix://"+u.Socket)
	}
	return append(args, "system", "dial-stdio")
}

// seconds is d in whole seconds, at least 1, as ssh wants it.
func seconds(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}

// ErrClosed is returned by DialContext after Close.
var ErrClosed = errors.New("dockerssh: dialer closed")

// DialContext starts one ssh process and returns a connection over its
// stdin and stdout. network and addr are ignored (the Docker client passes
// its placeholder host). The process starts at once; a failure to connect
// or authenticate is returned by the connection's first read or write.
func (d *Dialer) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	c, err := d.start()
	if err != nil {
		return nil, err
	}
	d.conns[c] = struct{}{}
	return c, nil
}

// forget drops a closed connection.
func (d *Dialer) forget(c *conn) {
	d.mu.Lock()
	delete(d.conns, c)
	d.mu.Unlock()
}

// closeTimeout bounds Close when called without a context.
const closeTimeout = 10 * time.Second

// Close closes the open connections and stops the shared SSH connection,
// within closeTimeout; see CloseContext.
func (d *Dialer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return d.CloseContext(ctx)
}

// CloseContext closes the open connections, asks the shared SSH
// connection's master process to exit (ssh -O exit), kills it if it is
// still there when ctx ends, and removes the private directory. Later
// dials fail with ErrClosed.
func (d *Dialer) CloseContext(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	conns := make([]*conn, 0, len(d.conns))
	for c := range d.conns {
		conns = append(conns, c)
	}
	d.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	err := d.stopMaster(ctx)
	if rerr := os.RemoveAll(d.dir); err == nil {
		err = rerr
	}
	return err
}

var masterPID = regexp.MustCompile(`pid=(\d+)`)

// MasterPID is the process ID of the shared connection's master, 0 when
// there is none.
func (d *Dialer) MasterPID(ctx context.Context) int {
	if _, err := os.Stat(d.controlPath()); err != nil {
		return 0
	}
	out, _ := d.control(ctx, "check")
	m := masterPID.FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

func (d *Dialer) stopMaster(ctx context.Context) error {
	pid := d.MasterPID(ctx)
	if pid == 0 {
		return nil
	}
	if out, err := d.control(ctx, "exit"); err != nil && alive(pid) {
		d.kill(pid)
		return fmt.Errorf("stop the shared ssh connection (pid %d): %v: %s", pid, err, strings.TrimSpace(out))
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for alive(pid) {
		select {
		case <-ctx.Done():
			d.kill(pid)
			return fmt.Errorf("the shared ssh connection (pid %d) did not exit; killed it", pid)
		case <-tick.C:
		}
	}
	return nil
}

// kill ends the master by its PID, once it is known to be ssh.
func (d *Dialer) kill(pid int) {
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(comm)) == "ssh" {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// control runs ssh -O cmd against the Dialer's control socket.
func (d *Dialer) control(ctx context.Context, cmd string) (string, error) {
	args := []string{"-o", "ControlPath=" + d.controlPath(), "-O", cmd}
	if d.url.User != "" {
		args = append(args, "-l", d.url.User)
	}
	if d.url.Port != 0 {
		args = append(args, "-p", strconv.Itoa(d.url.Port))
	}
	args = append(args, "--", d.url.Host)
	out, err := exec.CommandContext(ctx, d.opts.SSH, args...).CombinedOutput()
	return string(out), err
}

// alive says whether a process exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
