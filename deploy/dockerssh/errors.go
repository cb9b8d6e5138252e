package dockerssh

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The kinds of failure a connection reports; its error wraps one of them
// and says what to fix.
var (
	// ErrHostKey: the host's key is not in known_hosts, or differs from
	// the one there. Nothing is sent to such a host.
	ErrHostKey = errors.New("ssh: host key not trusted")
	// ErrAuth: the host refused the key (or the key file cannot be used).
	ErrAuth = errors.New("ssh: permission denied")
	// ErrUnreachable: no SSH connection to the host (name, network, port,
	// no ssh client).
	ErrUnreachable = errors.New("ssh: cannot reach the host")
	// ErrRemoteDocker: logged in, but `docker system dial-stdio` failed on
	// the host (no docker CLI, too old, no engine or no access to it).
	ErrRemoteDocker = errors.New("ssh: docker on the remote host failed")
)

// rule recognises a failure by a fragment of what ssh or the remote
// shell printed.
type rule struct {
	kind      error
	fragments []string
	hint      func(u URL, o Options) string
}

// rules are tried in order; the first whose fragment occurs in stderr
// explains the failure.
var rules = []rule{
	{ErrHostKey, []string{"REMOTE HOST IDENTIFICATION HAS CHANGED"}, func(u URL, o Options) string {
		return fmt.Sprintf("the key %s presented differs from the one in %s: if the host was reinstalled, check its new fingerprint and replace that line; otherwise someone may be intercepting the connection", target(u), knownHosts(o))
	}},
	{ErrHostKey, []string{"Host key verification failed", "host key is known for"}, func(u URL, o Options) string {
		return fmt.Sprintf("the key of %s is not in %s: check its fingerprint and add it (e.g. ssh-keyscan%s %s >> %s)", target(u), knownHosts(o), portFlag(u), u.Host, knownHosts(o))
	}},
	{ErrAuth, []string{"UNPROTECTED PRIVATE KEY FILE", "Load key", "invalid format"}, func(_ URL, o Options) string {
		return fmt.Sprintf("%s cannot be used: it must be a private key readable only by its owner (chmod 600)", keyName(o))
	}},
	{ErrAuth, []string{"Permission denied (", "Too many authentication failures"}, func(u URL, o Options) string {
		return fmt.Sprintf("%s did not accept %s: add the matching public key to %s's ~/.ssh/authorized_keys on the host", target(u), keyName(o), userName(u))
	}},
	{ErrUnreachable, []string{"Could not resolve hostname"}, func(u URL, _ Options) string {
		return fmt.Sprintf("the host name %s does not resolve", u.Host)
	}},
	{ErrUnreachable, []string{"Connection refused"}, func(u URL, _ Options) string {
		return fmt.Sprintf("nothing accepts SSH connections at %s: is sshd running there, and is the port right?", target(u))
	}},
	{ErrUnreachable, []string{"timed out", "No route to host", "Network is unreachable"}, func(u URL, _ Options) string {
		return fmt.Sprintf("no answer from %s: check the address, the network and firewalls", target(u))
	}},
	{ErrUnreachable, []string{"Connection closed by", "Connection reset by", "kex_exchange_identification"}, func(u URL, _ Options) string {
		return fmt.Sprintf("%s closed the connection during the SSH handshake (sshd's limits, or not an SSH server)", target(u))
	}},
	{ErrRemoteDocker, []string{"docker: command not found", "docker: not found", "\"docker\": executable file not found"}, func(u URL, _ Options) string {
		return fmt.Sprintf("the docker CLI is not installed on %s (or not on the PATH of %s's non-interactive shell): install it (package docker.io or docker-ce-cli)", u.Host, userName(u))
	}},
	{ErrRemoteDocker, []string{"is not a docker command", "unknown command"}, func(u URL, _ Options) string {
		return fmt.Sprintf("the docker CLI on %s is too old for `docker system dial-stdio` (18.09 or later needed)", u.Host)
	}},
	{ErrRemoteDocker, []string{"Cannot connect to the Docker daemon", "Docker daemon socket", "connect: no such file or directory", "connect: permission denied", "connect: connection refused"}, func(u URL, _ Options) string {
		return fmt.Sprintf("docker on %s cannot reach its engine at %s: is dockerd running there, and may %s use its socket (root or the docker group)?", u.Host, socketName(u), userName(u))
	}},
}

// describe turns ssh's exit and stderr into an error that says what to
// fix, ssh's own words appended.
func describe(u URL, o Options, exit error, stderr string) error {
	lines := stderrLines(stderr)
	for _, r := range rules {
		if said := matching(lines, r.fragments); said != "" {
			return fmt.Errorf("%w: %s (ssh said: %s)", r.kind, r.hint(u, o), said)
		}
	}
	if len(lines) == 0 {
		return fmt.Errorf("ssh to %s: %v, with no message", target(u), exit)
	}
	// An exit of 255 is ssh's own failure, anything else the remote
	// command's.
	kind := ErrRemoteDocker
	if code, ok := exitCode(exit); ok && code == 255 {
		kind = ErrUnreachable
	}
	return fmt.Errorf("%w: ssh to %s: %v (ssh said: %s)", kind, target(u), exit, strings.Join(lines[max(0, len(lines)-3):], " / "))
}

// stderrLines are stderr's non-empty lines, without ssh's banner of @s.
func stderrLines(stderr string) []string {
	var out []string
	for l := range strings.Lines(stderr) {
		l = strings.TrimSpace(l)
		if l == "" || strings.Trim(l, "@") == "" {
			continue
		}
		out = append(out, l)
	}
	return out
}

// matching is the lines holding a fragment, joined.
func matching(lines, fragments []string) string {
	var hit []string
	for _, l := range lines {
		for _, f := range fragments {
			if strings.Contains(l, f) {
				hit = append(hit, l)
				break
			}
		}
	}
	return strings.Join(hit, " / ")
}

func exitCode(err error) (int, bool) {
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) {
		return ee.ExitCode(), true
	}
	return 0, false
}

// target is user@host:port as far as the address says.
func target(u URL) string {
	s := u.Host
	if strings.Contains(s, ":") {
		s = "[" + s + "]"
	}
	if u.Port != 0 {
		s += ":" + strconv.Itoa(u.Port)
	}
	if u.User != "" {
		s = u.User + "@" + s
	}
	return s
}

func portFlag(u URL) string {
	if u.Port == 0 {
		return ""
	}
	return " -p " + strconv.Itoa(u.Port)
}

func knownHosts(o Options) string {
	if o.KnownHostsFile == "" {
		return "~/.ssh/known_hosts"
	}
	return o.KnownHostsFile
}

func keyName(o Options) string {
	if o.KeyFile == "" {
		return "the default keys"
	}
	return "the key " + o.KeyFile
}

func userName(u URL) string {
	if u.User == "" {
		return "the login user"
	}
	return u.User
}

func socketName(u URL) string {
	if u.Socket == "" {
		return "its default socket"
	}
	return u.Socket
}
