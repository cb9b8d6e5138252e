package manifest

import (
	"crypto/sha256"
	"encoding/hex"
)

// AnonymousVolumeName is the Docker name of the anonymous volume a
// service's replica slot mounts at target: "<app>-<service>-<slot>-anon-"
// and 12 hex characters of the target's SHA-256. It depends on nothing
// but these, so the container that replaces slot N's (in a rollout or a
// repair) mounts the same volume again, as compose carries anonymous
// volumes over to a recreated container. The target is hashed, not
// spelled out: a path may hold characters a Docker name cannot.
func AnonymousVolumeName(app, service string, slot int, target string) string {
	sum := sha256.Sum256([]byte(target))
	return ContainerName(app, service, slot) + "-anon-" + hex.EncodeToString(sum[:6])
}
