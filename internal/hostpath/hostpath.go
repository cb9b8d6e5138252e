// Package hostpath tells where a host path lands on this machine, for the
// host-power policy (policy.Host): a symlink under a directory the
// policy allows must not carry a bind mount to the Docker socket.
package hostpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/driftless-dev/driftless/manifest/policy"
)

// maxLinks bounds the symlinks followed for one path, as the kernel's
// ELOOP does (40 there; more is harmless here).
const maxLinks = 255

// Host is this machine as the policy sees it: paths resolved here, and
// the sockets the environment names (getenv is os.Getenv outside tests).
func Host(getenv func(string) string) policy.Host {
	return policy.Host{Resolve: Resolve, Sockets: Sockets(getenv)}
}

// Resolve returns where the absolute path p lands: every symlink followed
// (a dangling one to where it points, which is where the path lands once
// the target exists), and from the first part that does not exist on,
// the rest as written — Docker creates a missing bind source there.
func Resolve(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	done, rest, links := "/", parts(p), 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			// done has no symlinks left: its parent is lexical.
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, name)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return filepath.Join(append([]string{next}, rest...)...), nil
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink == 0:
			done = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			done = "/"
		}
		rest = append(parts(target), rest...)
	}
	return done, nil
}

func parts(p string) []string { return strings.Split(p, "/") }

// Sockets are this machine's engine sockets beyond the well-known places:
// DOCKER_HOST's, when it is a unix socket, and rootless Docker's in
// $XDG_RUNTIME_DIR.
func Sockets(getenv func(string) string) []string {
	var out []string
	if s, ok := strings.CutPrefix(getenv("DOCKER_HOST"), "unix://"); ok && filepath.IsAbs(s) {
		out = append(out, filepath.Clean(s))
	}
	if d := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		out = append(out, filepath.Join(d, "docker.sock"))
	}
	return out
}
