package deploy

import "time"

// DefaultRequestTimeout is Options.RequestTimeout's default. An engine
// that answers at all answers a create, start or inspect in well under a
// second; a loaded two-core machine took tens of seconds. Two minutes
// leaves that room and still ends a pass that would otherwise wait for
// ever on a daemon that accepts connections and never answers (a
// deadlock in dockerd, a remote host whose link went silent).
const DefaultRequestTimeout = 2 * time.Minute
