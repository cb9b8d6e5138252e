package dockerssh

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// URL is a parsed ssh://[user@]host[:port][/remote/socket/path].
type URL struct {
	User string // "" = ssh's default (the ssh config's User, else the local user)
	Host string // a name or an address, IPv6 without brackets
	Port int    // 0 = ssh's default (the ssh config's Port, else 22)
	// Socket is the Docker socket on the remote host, "" for the remote
	// docker CLI's own default (its DOCKER_HOST, else
	// /var/run/docker.sock).
	Socket string
}

// String is the URL in its canonical form, as the user wrote it.
func (u URL) String() string {
	var b strings.Builder
	b.WriteString("ssh://")
	if u.User != "" {
		b.WriteString(u.User + "@")
	}
	host := u.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	b.WriteString(host)
	if u.Port != 0 {
		b.WriteString(":" + strconv.Itoa(u.Port))
	}
	b.WriteString(u.Socket)
	return b.String()
}

// ParseURL parses and checks an ssh:// engine address. It refuses what
// ssh would misread or what cannot work: a password (use a key), a port
// out of range, a query or fragment, a relative socket path, and names
// that ssh would take for options.
func ParseURL(raw string) (URL, error) {
	fail := func(format string, args ...any) (URL, error) {
		return URL{}, fmt.Errorf("engine address %q: %s", redact(raw), fmt.Sprintf(format, args...))
	}
	if !strings.HasPrefix(raw, "ssh://") {
		return fail("not an ssh:// address (ssh://[user@]host[:port][/path/to/docker.sock])")
	}
	u, err := url.Parse(raw)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // url.Error repeats the raw URL, password and all
		}
		return fail("%v", err)
	}
	if _, has := u.User.Password(); has {
		return fail("a password in the address is not supported: give the agent a key (keyFile) and add its public key to the remote user's authorized_keys")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return fail("a query or fragment (?… #…) has no meaning here")
	}
	out := URL{User: u.User.Username(), Host: u.Hostname()}
	if out.Host == "" {
		return fail("no host")
	}
	if strings.HasPrefix(out.Host, "-") || strings.HasPrefix(out.User, "-") {
		return fail("a user or host may not start with '-'")
	}
	if u.User != nil && out.User == "" {
		return fail("empty user before '@'")
	}
	if out.Port, err = parsePort(u); err != nil {
		return fail("%v", err)
	}
	if u.Path != "" && u.Path != "/" {
		if err := checkSocketPath(u.Path); err != nil {
			return fail("%v", err)
		}
		out.Socket = u.Path
	}
	return out, nil
}

// parsePort is the address's port, 0 for none.
func parsePort(u *url.URL) (int, error) {
	p := u.Port()
	if p == "" {
		if strings.HasSuffix(u.Host, ":") {
			return 0, errors.New("empty port after ':'")
		}
		return 0, nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q out of range 1-65535", p)
	}
	return n, nil
}

// checkSocketPath accepts the characters socket paths are made of, so the
// path reaches the remote shell (which ssh runs the command with) as one
// word without quoting.
func checkSocketPath(p string) error {
	for _, r := range p {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+@%", r)
		if !ok {
			return fmt.Errorf("socket path %q: character %q is not allowed (letters, digits and / . _ - + @ %%)", p, r)
		}
	}
	if strings.Contains(p, "//") || strings.HasSuffix(p, "/") {
		return fmt.Errorf("socket path %q is not a clean absolute path", p)
	}
	return nil
}

// redact hides a password in an address that carries one.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		rest := strings.TrimPrefix(raw, "ssh://")
		if at := strings.LastIndex(rest, "@"); at >= 0 && strings.Contains(rest[:at], ":") {
			return "ssh://…@" + rest[at+1:]
		}
		return raw
	}
	if _, has := u.User.Password(); has {
		return u.Redacted()
	}
	return raw
}
