package dockerssh

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Bounds of a connection's end.
const (
	// exitWait is how long a read that met the end of ssh's output, or a
	// write that met a closed pipe, waits for ssh's exit status.
	exitWait = 5 * time.Second
	// closeWait is how long Close lets ssh exit on its own, its stdin and
	// stdout closed, before it is killed.
	closeWait = 2 * time.Second
	// stderrKeep is how much of ssh's stderr is kept for errors.
	stderrKeep = 16 << 10
)

// conn is one ssh process as a net.Conn: writes go to its stdin, reads
// come from its stdout. The pipes are the process's own *os.File ends, so
// deadlines work.
type conn struct {
	d      *Dialer
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	stderr *tail

	exited  chan struct{} // closed when the process has been waited for
	waitErr error         // its exit, once exited is closed

	closeOnce sync.Once
}

func (d *Dialer) start() (*conn, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	c := &conn{d: d, stdin: inW, stdout: outR, stderr: &tail{}, exited: make(chan struct{})}
	c.cmd = exec.Command(d.opts.SSH, d.args...)
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = inR, outW, c.stderr
	// The shared connection's master, which the first ssh leaves behind,
	// must not hold up Wait through the stderr pipe.
	c.cmd.WaitDelay = time.Second
	err = c.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: the ssh client %q is not installed (package openssh-client)", ErrUnreachable, d.opts.SSH)
		}
		return nil, fmt.Errorf("start ssh: %w", err)
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// failure is the error that explains an end of output or a broken pipe:
// ssh's exit and what it said, nil when it exited cleanly (or not yet).
func (c *conn) failure() error {
	select {
	case <-c.exited:
	case <-time.After(exitWait):
		return nil
	}
	if c.waitErr == nil {
		return nil
	}
	return describe(c.d.url, c.d.opts, c.waitErr, c.stderr.String())
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.stdout.Read(p)
	if err == io.EOF {
		if f := c.failure(); f != nil {
			return n, f
		}
	}
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	n, err := c.stdin.Write(p)
	if err != nil && !errors.Is(err, os.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
		if f := c.failure(); f != nil {
			return n, f
		}
	}
	return n, err
}

// Close closes ssh's stdin and stdout, lets it exit within closeWait and
// kills it after that.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.stdin.Close()
		c.stdout.Close()
		select {
		case <-c.exited:
		case <-time.After(closeWait):
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
		c.d.forget(c)
	})
	return nil
}

// Addr is the address of both ends of a connection: the ssh:// URL.
type Addr struct{ URL URL }

// Network is "ssh".
func (Addr) Network() string  { return "ssh" }
func (a Addr) String() string { return a.URL.String() }

func (c *conn) LocalAddr() net.Addr  { return Addr{c.d.url} }
func (c *conn) RemoteAddr() net.Addr { return Addr{c.d.url} }

func (c *conn) SetDeadline(t time.Time) error {
	return errors.Join(c.stdin.SetWriteDeadline(t), c.stdout.SetReadDeadline(t))
}
func (c *conn) SetReadDeadline(t time.Time) error  { return c.stdout.SetReadDeadline(t) }
func (c *conn) SetWriteDeadline(t time.Time) error { return c.stdin.SetWriteDeadline(t) }

// tail keeps the last stderrKeep bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - stderrKeep; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
