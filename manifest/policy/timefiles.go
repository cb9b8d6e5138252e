package policy

import (
	"path"
	"strings"

	"github.com/driftless-dev/driftless/manifest"
)

// timeFiles are the host files that tell the time zone, which
// self-hosted compose files bind read-only into nearly every container
// (/etc/localtime:/etc/localtime:ro). Reading them gives a container
// nothing but the host's zone, so they need no hostPaths when read-only.
var timeFiles = []string{"/etc/localtime", "/etc/timezone"}

// zoneinfo is where /etc/localtime links to on every distribution.
const zoneinfo = "/usr/share/zoneinfo"

// isTimeFile reports whether hp is one of the time files as written.
func isTimeFile(hp string) bool {
	hp = path.Clean(hp)
	for _, f := range timeFiles {
		if hp == f {
			return true
		}
	}
	return false
}

// timeFileAllowed reports whether a bind is a read-only bind of a time
// file that lands on itself or, for /etc/localtime, on a zone file: such
// a bind is allowed without hostPaths. A writable one, or one whose
// symlink leads elsewhere, is judged like any host path.
func (v *hostView) timeFileAllowed(b manifest.BindMount) bool {
	hp := path.Clean(b.HostPath)
	if !b.ReadOnly || !isTimeFile(hp) {
		return false
	}
	if v.resolve == nil {
		return true
	}
	landed, err := v.resolve(hp)
	if err != nil {
		return false
	}
	landed = path.Clean(landed)
	return landed == hp || (hp == "/etc/localtime" && strings.HasPrefix(landed, zoneinfo+"/"))
}

// timeFileHint is the other way to mount a time file, for the hostPaths
// message of a writable one.
func timeFileHint(b manifest.BindMount) string {
	if isTimeFile(b.HostPath) && !b.ReadOnly {
		return ", or mount it read-only (:ro), which needs no hostPaths"
	}
	return ", or mount a file from the repository with a relative path"
}
