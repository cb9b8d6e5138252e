package dockerssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		in   string
		want URL
		err  string // a fragment of the error; "" = no error
	}{
		{in: "ssh://host", want: URL{Host: "host"}},
		{in: "ssh://deploy@host.example", want: URL{User: "deploy", Host: "host.example"}},
		{in: "ssh://deploy@10.0.0.5:2222", want: URL{User: "deploy", Host: "10.0.0.5", Port: 2222}},
		{in: "ssh://[::1]:22", want: URL{Host: "::1", Port: 22}},
		{in: "ssh://host/", want: URL{Host: "host"}},
		{in: "ssh://u@host/run/user/1000/docker.sock", want: URL{User: "u", Host: "host", Socket: "/run/user/1000/docker.sock"}},
		{in: "tcp://host:2376", err: "not an ssh:// address"},
		{in: "host", err: "not an ssh:// address"},
		{in: "ssh://", err: "no host"},
		{in: "ssh://u@", err: "no host"},
		{in: "ssh://u:hunter2@host", err: "a password in the address is not supported"},
		{in: "ssh://host:0", err: `port "0" out of range`},
		{in: "ssh://host:65536", err: `port "65536" out of range`},
		{in: "ssh://host:", err: "empty port"},
		{in: "ssh://host:ssh", err: "invalid port"},
		{in: "ssh://-oProxyCommand=x", err: "may not start with '-'"},
		{in: "ssh://-x@host", err: "may not start with '-'"},
		{in: "ssh://@host", err: "empty user"},
		{in: "ssh://host?x=1", err: "query or fragment"},
		{in: "ssh://host#frag", err: "query or fragment"},
		{in: "ssh://host/var/run/docker.sock;rm", err: `character ';' is not allowed`},
		{in: "ssh://host/var/run//docker.sock", err: "not a clean absolute path"},
	}
	for _, tt := range tests {
		got, err := ParseURL(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("ParseURL(%q): %v", tt.in, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseURL(%q) = %+v, %v; want an error with %q", tt.in, got, err, tt.err)
		case tt.err == "" && got != tt.want:
			t.Errorf("ParseURL(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestParseURLNeverRepeatsAPassword(t *testing.T) {
	for _, in := range []string{"ssh://u:hunter2@host", "ssh://u:hunter2@host:99999", "ssh://u:hunter2@host\x7f"} {
		_, err := ParseURL(in)
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseURL(%q): %v", in, err)
		}
	}
}

func TestURLString(t *testing.T) {
	for _, in := range []string{"ssh://host", "ssh://u@host:2222/run/docker.sock", "ssh://[::1]:22"} {
		u, err := ParseURL(in)
		if err != nil {
			t.Fatal(err)
		}
		if u.String() != in {
			t.Errorf("%q: String() = %q", in, u.String())
		}
	}
}

func TestSSHArgs(t *testing.T) {
	u := URL{User: "deploy", Host: "10.0.0.5", Port: 2222, Socket: "/run/docker.sock"}
	o := Options{KeyFile: "/keys/id", KnownHostsFile: "/keys/known_hosts", ConnectTimeout: 1500 * time.Millisecond, ControlPersist: time.Minute}
	got := strings.Join(sshArgs(u, o, "/tmp/dlssh-1/cm"), " ")
	want := "-T -x -a -o BatchMode=yes -o StrictHostKeyChecking=yes" +
		" -o UserKnownHostsFile=/keys/known_hosts -o IdentitiesOnly=yes -i /keys/id" +
		" -o ConnectTimeout=2 -o ServerAliveInterval=15 -o ServerAliveCountMax=3" +
		" -o ControlMaster=auto -o ControlPath=/tmp/dlssh-1/cm -o ControlPersist=60" +
		" -l deploy -p 2222 -- 10.0.0.5 docker -H unix:///run/docker.sock system dial-stdio"
	if got != want {
		t.Errorf("ssh args:\n got %s\nwant %s", got, want)
	}

	// The least: ssh's defaults for user, port, key and known_hosts, and
	// the remote docker's own default socket.
	got = strings.Join(sshArgs(URL{Host: "h"}, Options{ConnectTimeout: DefaultConnectTimeout, ControlPersist: DefaultControlPersist}, "/c"), " ")
	want = "-T -x -a -o BatchMode=yes -o StrictHostKeyChecking=yes" +
		" -o ConnectTimeout=10 -o ServerAliveInterval=15 -o ServerAliveCountMax=3" +
		" -o ControlMaster=auto -o ControlPath=/c -o ControlPersist=60 -- h docker system dial-stdio"
	if got != want {
		t.Errorf("ssh args:\n got %s\nwant %s", got, want)
	}
}

func TestNewChecksFiles(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "id")
	if err := os.WriteFile(key, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New("ssh://h", Options{KeyFile: filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "keyFile") {
		t.Errorf("missing key file: %v", err)
	}
	spaced := filepath.Join(dir, "a b")
	if err := os.WriteFile(spaced, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New("ssh://h", Options{KnownHostsFile: spaced}); err == nil || !strings.Contains(err.Error(), "spaces") {
		t.Errorf("known_hosts path with a space: %v", err)
	}
	d, err := New("ssh://h", Options{KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if fi, err := os.Stat(d.dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("control directory: %v %v", fi, err)
	}
	if !slices.Contains(d.args, key) || !slices.Contains(d.args, "ControlPath="+filepath.Join(d.dir, "cm")) {
		t.Errorf("args %v lack the key or the control path", d.args)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control directory left after Close: %v", err)
	}
	if _, err := d.DialContext(context.Background(), "tcp", "x"); !errors.Is(err, ErrClosed) {
		t.Errorf("dial after Close: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	u := URL{User: "deploy", Host: "10.0.0.5", Port: 2222, Socket: "/run/docker.sock"}
	o := Options{KeyFile: "/keys/id", KnownHostsFile: "/keys/known_hosts"}
	exit255 := exitWith(t, 255)
	tests := []struct {
		name   string
		stderr string
		exit   error
		kind   error
		want   string
	}{
		{"unknown host key", "No ED25519 host key is known for [10.0.0.5]:2222 and you have requested strict checking.\r\nHost key verification failed.\r\n", exit255, ErrHostKey,
			"ssh: host key not trusted: the key of deploy@10.0.0.5:2222 is not in /keys/known_hosts: check its fingerprint and add it (e.g. ssh-keyscan -p 2222 10.0.0.5 >> /keys/known_hosts) (ssh said: No ED25519 host key is known for [10.0.0.5]:2222 and you have requested strict checking. / Host key verification failed.)"},
		{"changed host key", "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\nIT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!\nHost key verification failed.\n", exit255, ErrHostKey,
			"ssh: host key not trusted: the key deploy@10.0.0.5:2222 presented differs from the one in /keys/known_hosts: if the host was reinstalled, check its new fingerprint and replace that line; otherwise someone may be intercepting the connection (ssh said: @    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @)"},
		{"key refused", "deploy@10.0.0.5: Permission denied (publickey).\r\n", exit255, ErrAuth,
			"ssh: permission denied: deploy@10.0.0.5:2222 did not accept the key /keys/id: add the matching public key to deploy's ~/.ssh/authorized_keys on the host (ssh said: deploy@10.0.0.5: Permission denied (publickey).)"},
		{"key file too open", "@@@@@\n@         WARNING: UNPROTECTED PRIVATE KEY FILE!          @\n@@@@@\nPermissions 0644 for '/keys/id' are too open.\nLoad key \"/keys/id\": bad permissions\ndeploy@10.0.0.5: Permission denied (publickey).\n", exit255, ErrAuth,
			"ssh: permission denied: the key /keys/id cannot be used: it must be a private key readable only by its owner (chmod 600) (ssh said: @         WARNING: UNPROTECTED PRIVATE KEY FILE!          @ / Load key \"/keys/id\": bad permissions)"},
		{"refused", "ssh: connect to host 10.0.0.5 port 2222: Connection refused\r\n", exit255, ErrUnreachable,
			"ssh: cannot reach the host: nothing accepts SSH connections at deploy@10.0.0.5:2222: is sshd running there, and is the port right? (ssh said: ssh: connect to host 10.0.0.5 port 2222: Connection refused)"},
		{"no name", "ssh: Could not resolve hostname nowhere: Name or service not known\r\n", exit255, ErrUnreachable,
			"ssh: cannot reach the host: the host name 10.0.0.5 does not resolve (ssh said: ssh: Could not resolve hostname nowhere: Name or service not known)"},
		{"timeout", "ssh: connect to host 10.0.0.5 port 2222: Connection timed out\r\n", exit255, ErrUnreachable,
			"ssh: cannot reach the host: no answer from deploy@10.0.0.5:2222: check the address, the network and firewalls (ssh said: ssh: connect to host 10.0.0.5 port 2222: Connection timed out)"},
		{"no docker (bash)", "bash: line 1: docker: command not found\n", exitWith(t, 127), ErrRemoteDocker,
			"ssh: docker on the remote host failed: the docker CLI is not installed on 10.0.0.5 (or not on the PATH of deploy's non-interactive shell): install it (package docker.io or docker-ce-cli) (ssh said: bash: line 1: docker: command not found)"},
		{"no docker (dash)", "sh: 1: docker: not found\n", exitWith(t, 127), ErrRemoteDocker,
			"ssh: docker on the remote host failed: the docker CLI is not installed on 10.0.0.5 (or not on the PATH of deploy's non-interactive shell): install it (package docker.io or docker-ce-cli) (ssh said: sh: 1: docker: not found)"},
		{"no engine", "error during connect: dial unix /run/docker.sock: connect: no such file or directory\n", exitWith(t, 1), ErrRemoteDocker,
			"ssh: docker on the remote host failed: docker on 10.0.0.5 cannot reach its engine at /run/docker.sock: is dockerd running there, and may deploy use its socket (root or the docker group)? (ssh said: error during connect: dial unix /run/docker.sock: connect: no such file or directory)"},
		{"unknown ssh failure", "kex: something odd\n", exit255, ErrUnreachable,
			"ssh: cannot reach the host: ssh to deploy@10.0.0.5:2222: exit status 255 (ssh said: kex: something odd)"},
		{"silent", "", exitWith(t, 3), nil,
			"ssh to deploy@10.0.0.5:2222: exit status 3, with no message"},
	}
	for _, tt := range tests {
		err := describe(u, o, tt.exit, tt.stderr)
		if err.Error() != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, err, tt.want)
		}
		if tt.kind != nil && !errors.Is(err, tt.kind) {
			t.Errorf("%s: %v is not %v", tt.name, err, tt.kind)
		}
	}
}

// exitWith is a real *exec.ExitError with the code.
func exitWith(t *testing.T, code int) error {
	t.Helper()
	err := exec.Command("sh", "-c", fmt.Sprintf("exit %d", code)).Run()
	if err == nil {
		t.Fatal("no exit error")
	}
	return err
}

// fakeSSH is a Dialer whose "ssh" is a shell script.
func fakeSSH(t *testing.T, script string) *Dialer {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ssh")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := New("ssh://deploy@host:2222", Options{SSH: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestConnCarriesStdinAndStdout(t *testing.T) {
	// The last arguments are the remote command, as ssh gets them.
	d := fakeSSH(t, `for a; do last="$last $a"; done; echo "cmd:$last"; exec cat`)
	c, err := d.DialContext(context.Background(), "tcp", "docker.example.com:80")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 200)
	got := ""
	for !strings.Contains(got, "ping") {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("read: %v (so far %q)", err, got)
		}
		got += string(buf[:n])
	}
	if !strings.Contains(got, "docker system dial-stdio\n") {
		t.Errorf("remote command: %q", got)
	}
	if c.RemoteAddr().String() != "ssh://deploy@host:2222" {
		t.Errorf("remote address %s", c.RemoteAddr())
	}
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past its deadline: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(buf); err == nil {
		t.Error("read after Close succeeded")
	}
}

func TestConnReportsSSHFailureOnRead(t *testing.T) {
	d := fakeSSH(t, `echo "deploy@host: Permission denied (publickey)." >&2; exit 255`)
	c, err := d.DialContext(context.Background(), "tcp", "x")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = io.ReadAll(c)
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "Permission denied (publickey)") {
		t.Errorf("read: %v", err)
	}
}

func TestConnCleanEndIsEOF(t *testing.T) {
	d := fakeSSH(t, `printf 'HTTP/1.1 200 OK\r\n\r\n'`)
	c, err := d.DialContext(context.Background(), "tcp", "x")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "HTTP/1.1 200 OK\r\n\r\n" {
		t.Errorf("read %q, %v", b, err)
	}
}

func TestCloseKillsAStuckProcess(t *testing.T) {
	// It ignores the end of its input and keeps running.
	d := fakeSSH(t, `trap '' PIPE; exec sleep 60`)
	c, err := d.DialContext(context.Background(), "tcp", "x")
	if err != nil {
		t.Fatal(err)
	}
	pid := c.(*conn).cmd.Process.Pid
	t0 := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took > closeWait+time.Second {
		t.Errorf("Close took %v", took)
	}
	if alive(pid) {
		t.Errorf("ssh (pid %d) still running after Close", pid)
	}
}

func TestDialerCloseClosesConnections(t *testing.T) {
	d := fakeSSH(t, `exec cat`)
	c, err := d.DialContext(context.Background(), "tcp", "x")
	if err != nil {
		t.Fatal(err)
	}
	pid := c.(*conn).cmd.Process.Pid
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("ssh (pid %d) still running after the Dialer's Close", pid)
	}
}

func TestDialHonoursADoneContext(t *testing.T) {
	d := fakeSSH(t, `exec cat`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.DialContext(ctx, "tcp", "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("dial with a done context: %v", err)
	}
}

func TestMissingSSHClient(t *testing.T) {
	d, err := New("ssh://h", Options{SSH: "/nonexistent/ssh"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, err = d.DialContext(context.Background(), "tcp", "x")
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "is not installed (package openssh-client)") {
		t.Errorf("dial without ssh: %v", err)
	}
}
