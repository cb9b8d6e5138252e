// Package netleave keeps two containers from leaving one network at the
// same moment on engines where that can deadlock the engine.
//
// Docker before 20.10.27 (Debian 12's docker.io is 20.10.24) takes
// libnetwork's network and controller locks in opposite orders when one
// endpoint leaves a network while the engine is still processing another
// endpoint's removal from that network (moby/moby#42545, backported to
// 20.10.27 by moby/libnetwork#2679). Once that happens the engine answers
// pings and lists but never again creates, starts, stops or removes a
// container: only restarting the engine clears it. Stopping or force-
// removing several replicas of one app at once, each on the app's
// network, is exactly that pattern.
//
// A Guard serialises, per network, the calls by which a container leaves
// its networks (stop, force remove, disconnect), on such engines only.
package netleave

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Affected reports whether an engine of this version (Docker's
// ServerVersion, e.g. "20.10.24+dfsg1") has the deadlock. A version that
// does not parse counts as unaffected: the fix is in every release since
// 20.10.27, and engines without a Docker version string (Podman's API
// says its own) do not run libnetwork.
func Affected(version string) bool {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	num := func(s string) (int, bool) {
		end := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
		if end >= 0 {
			s = s[:end]
		}
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	major, ok1 := num(parts[0])
	minor, ok2 := num(parts[1])
	if !ok1 || !ok2 {
		return false
	}
	switch {
	case major >= 22 || major < 17:
		// 17.x and later use year.month; what is below is not Docker's.
		return false
	case major < 20 || (major == 20 && minor < 10):
		return true
	case major == 20 && minor == 10:
		if len(parts) < 3 {
			return true
		}
		patch, ok := num(parts[2])
		return !ok || patch < 27
	}
	// 21.x was never released; treat it as fixed.
	return false
}

// Guard serialises network leaves per network name. The zero value is not
// usable; a nil *Guard serialises nothing.
type Guard struct {
	// version asks the engine its version; it is asked until it answers,
	// then never again.
	version func(context.Context) (string, error)

	mu       sync.Mutex
	known    bool
	affected bool
	nets     map[string]*slot
}

type slot struct {
	ch    chan struct{}
	users int
}

// New returns a Guard that asks the engine's version once, when first
// needed, through version.
func New(version func(context.Context) (string, error)) *Guard {
	return &Guard{version: version, nets: map[string]*slot{}}
}

// Affected reports whether the engine has the deadlock. An engine that
// cannot be asked counts as affected this time (serialising costs time,
// the deadlock costs the engine) and is asked again next time.
func (g *Guard) Affected(ctx context.Context) bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	if g.known {
		defer g.mu.Unlock()
		return g.affected
	}
	g.mu.Unlock()
	v, err := g.version(ctx)
	if err != nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.known, g.affected = true, Affected(v)
	return g.affected
}

// Hold waits until no other holder has any of networks, then holds them
// until release is called. On an unaffected engine it returns at once.
// Networks are taken in name order, so two holders of overlapping sets
// cannot wait on each other.
func (g *Guard) Hold(ctx context.Context, networks []string) (release func(), err error) {
	if len(networks) == 0 || !g.Affected(ctx) {
		return func() {}, nil
	}
	names := slices.Clone(networks)
	slices.Sort(names)
	names = slices.Compact(names)
	g.mu.Lock()
	slots := make([]*slot, len(names))
	for i, n := range names {
		s := g.nets[n]
		if s == nil {
			s = &slot{ch: make(chan struct{}, 1)}
			g.nets[n] = s
		}
		s.users++
		slots[i] = s
	}
	g.mu.Unlock()
	held := 0
	release = func() {
		for _, s := range slots[:held] {
			<-s.ch
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		for i, s := range slots {
			if s.users--; s.users == 0 {
				delete(g.nets, names[i])
			}
		}
	}
	for _, s := range slots {
		select {
		case s.ch <- struct{}{}:
			held++
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		}
	}
	return release, nil
}
