package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/driftless-dev/driftless/manifest"
)

// stateDirCheck judges where a state directory lands on the host: inside
// the app's state directory, symlinks followed. A container that mounts
// one state directory can put a symlink there; another mount below it
// would then follow the link on the host (Docker resolves bind sources
// there). "" when it stays inside.
func stateDirCheck(host Host, app, statePath string) string {
	if host.StateDir == "" || host.Resolve == nil {
		return ""
	}
	root := manifest.StateHostPath(host.StateDir, app, "")
	written := manifest.StateHostPath(host.StateDir, app, statePath)
	rootLanded, err := host.Resolve(root)
	if err != nil {
		return fmt.Sprintf("cannot tell where the app's state directory %s leads on the host (%v)", root, err)
	}
	landed, err := host.Resolve(written)
	if err != nil {
		return fmt.Sprintf("cannot tell where state directory ./%s (%s) leads on the host (%v); driftless follows its symlinks before it mounts it", statePath, written, err)
	}
	rootLanded, landed = path.Clean(rootLanded), path.Clean(landed)
	if landed == rootLanded || strings.HasPrefix(landed, rootLanded+"/") {
		return ""
	}
	return fmt.Sprintf("state directory ./%s (%s) leads to %s on the host (symlinks followed), outside the app's state directory %s; "+
		"remove the symlink from the state directory (a container that mounts a directory above it can have made it)", statePath, written, landed, root)
}
