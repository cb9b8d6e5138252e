package web

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// failureLimiter counts failed credential checks per client address in a
// sliding window. Once an address reaches max failures it is refused until
// the oldest failure leaves the window, so a token cannot be guessed faster
// than max tries per window.
type failureLimiter struct {
	max    int
	window time.Duration
	now    func() time.Time

	mu    sync.Mutex
	fails map[string][]time.Time // oldest first, at most max entries
}

// maxTrackedClients bounds the limiter's memory against an attacker
// spraying failures from many addresses.
const maxTrackedClients = 10000

func newFailureLimiter(max int, window time.Duration, now func() time.Time) *failureLimiter {
	return &failureLimiter{max: max, window: window, now: now, fails: map[string][]time.Time{}}
}

// retryAfter is how long the client must wait before its credentials are
// checked again; 0 means now.
func (l *failureLimiter) retryAfter(client string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	recent := l.recent(client, now)
	if len(recent) < l.max {
		return 0
	}
	return recent[0].Add(l.window).Sub(now)
}

// fail records one failed check.
func (l *failureLimiter) fail(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	recent := l.recent(client, now)
	if recent == nil && len(l.fails) >= maxTrackedClients {
		l.evict(now)
	}
	recent = append(recent, now)
	if len(recent) > l.max {
		recent = recent[len(recent)-l.max:]
	}
	l.fails[client] = recent
}

// recent drops the client's failures that left the window; l.mu is held.
func (l *failureLimiter) recent(client string, now time.Time) []time.Time {
	ts := l.fails[client]
	i := 0
	for i < len(ts) && !ts[i].After(now.Add(-l.window)) {
		i++
	}
	if i == len(ts) {
		delete(l.fails, client)
		return nil
	}
	ts = ts[i:]
	l.fails[client] = ts
	return ts
}

// evict makes room: expired clients first, then any one.
func (l *failureLimiter) evict(now time.Time) {
	for c := range l.fails {
		l.recent(c, now)
	}
	for c := range l.fails {
		if len(l.fails) < maxTrackedClients {
			return
		}
		delete(l.fails, c)
	}
}

// clientKey is the address a connection's peer counts as: the IP, or the
// /64 for IPv6, since one host usually holds a whole /64.
func clientKey(remoteAddr string) string {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return addrKey(ap.Addr())
}

func addrKey(addr netip.Addr) string {
	addr = addr.Unmap()
	if addr.Is6() {
		if p, err := addr.Prefix(64); err == nil {
			return p.String()
		}
	}
	return addr.String()
}

// clientOf is who a request counts against in the per-client limits
// (failed credentials, open streams): the peer's address, or, for a
// request a proxy on this host forwarded, the client the proxy names.
// Without that, every client behind a reverse proxy would share the
// proxy's 127.0.0.1, and one of them could lock all out. Only a loopback
// peer's headers are read, so a remote client cannot choose its key; the
// key is kept apart from direct clients', so a forged header cannot spend
// another address's allowance either.
func clientOf(r *http.Request) string {
	peer := clientKey(r.RemoteAddr)
	if !loopbackPeer(r.RemoteAddr) || !proxied(r) {
		return peer
	}
	if addr, ok := forwardedClient(r.Header); ok {
		return "proxied " + addrKey(addr)
	}
	return peer
}

// forwardedClient is the client a proxy says it forwarded for: the last
// hop of X-Forwarded-For (the one the proxy itself appended; earlier ones
// are the client's to write), else the last for= of Forwarded, else
// X-Real-IP.
func forwardedClient(h http.Header) (netip.Addr, bool) {
	if v := lastListItem(h.Values("X-Forwarded-For")); v != "" {
		return parseHostAddr(v)
	}
	if v := lastListItem(h.Values("Forwarded")); v != "" {
		for _, pair := range strings.Split(v, ";") {
			if k, val, ok := strings.Cut(strings.TrimSpace(pair), "="); ok && strings.EqualFold(k, "for") {
				return parseHostAddr(strings.Trim(val, `"`))
			}
		}
		return netip.Addr{}, false
	}
	if vs := h.Values("X-Real-Ip"); len(vs) > 0 {
		return parseHostAddr(strings.TrimSpace(vs[len(vs)-1]))
	}
	return netip.Addr{}, false
}

// lastListItem is the last non-empty element of a comma-separated header
// that may be repeated.
func lastListItem(values []string) string {
	for i := len(values) - 1; i >= 0; i-- {
		items := strings.Split(values[i], ",")
		for j := len(items) - 1; j >= 0; j-- {
			if it := strings.TrimSpace(items[j]); it != "" {
				return it
			}
		}
	}
	return ""
}

// parseHostAddr reads "192.0.2.1", "192.0.2.1:443", "2001:db8::1" or
// "[2001:db8::1]:443".
func parseHostAddr(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return a, true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr(), true
	}
	return netip.Addr{}, false
}

// streamSlots caps open live streams (dashboard events, followed logs):
// max in all, so many clients together cannot exhaust the agent's memory,
// and perClient for one client (clientOf), so one client cannot take them
// all. Each stream holds a connection for as long as its client likes.
type streamSlots struct {
	max, perClient int

	mu       sync.Mutex
	open     int
	byClient map[string]int // only clients with an open stream
}

// streamRefusal says which cap a refused stream hit.
type streamRefusal int

const (
	streamAdmitted streamRefusal = iota
	streamClientFull
	streamAllFull
)

func newStreamSlots(max, perClient int) *streamSlots {
	return &streamSlots{max: max, perClient: min(perClient, max), byClient: map[string]int{}}
}

// acquire takes a slot for client; release gives it back (once, however
// often it is called).
func (s *streamSlots) acquire(client string) (release func(), refused streamRefusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.byClient[client] >= s.perClient:
		return nil, streamClientFull
	case s.open >= s.max:
		return nil, streamAllFull
	}
	s.open++
	s.byClient[client]++
	return sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.open--
		if s.byClient[client]--; s.byClient[client] <= 0 {
			delete(s.byClient, client)
		}
	}), streamAdmitted
}

// count is the number of open streams, in all and of client.
func (s *streamSlots) count(client string) (all, ofClient int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open, s.byClient[client]
}

// retryAfterSeconds renders a wait for the Retry-After header, rounded up
// so a client that obeys it is not refused again.
func retryAfterSeconds(d time.Duration) string {
	return fmt.Sprint(max(1, int(math.Ceil(d.Seconds()))))
}

// sessionStore holds the login sessions. A session is a random ID in the
// browser's cookie; the server keeps only its hash, so a dump of memory or
// a timing side channel on the map lookup does not yield a usable cookie.
// Sessions end after lifetime, after idle without a request, at logout,
// and when the process restarts.
type sessionStore struct {
	lifetime, idle time.Duration
	now            func() time.Time

	mu       sync.Mutex
	sessions map[[32]byte]*session
}

type session struct {
	created, seen time.Time
}

// maxSessions bounds memory; only token holders can create sessions, so
// the bound is about forgotten browsers, not attackers.
const maxSessions = 1000

func newSessionStore(lifetime, idle time.Duration, now func() time.Time) *sessionStore {
	return &sessionStore{lifetime: lifetime, idle: idle, now: now, sessions: map[[32]byte]*session{}}
}

// create starts a session and returns its ID for the cookie.
func (s *sessionStore) create() (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generating a session ID: %w", err)
	}
	id := hex.EncodeToString(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, v := range s.sessions {
		if s.expired(v, now) {
			delete(s.sessions, k)
		}
	}
	if len(s.sessions) >= maxSessions {
		// Drop the session idle the longest.
		keys := make([][32]byte, 0, len(s.sessions))
		for k := range s.sessions {
			keys = append(keys, k)
		}
		oldest := slices.MinFunc(keys, func(a, b [32]byte) int { return s.sessions[a].seen.Compare(s.sessions[b].seen) })
		delete(s.sessions, oldest)
	}
	s.sessions[sha256.Sum256([]byte(id))] = &session{created: now, seen: now}
	return id, nil
}

// valid reports whether id names a live session, and marks it used.
func (s *sessionStore) valid(id string) bool {
	if id == "" {
		return false
	}
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.sessions[key]
	if !ok {
		return false
	}
	now := s.now()
	if s.expired(v, now) {
		delete(s.sessions, key)
		return false
	}
	v.seen = now
	return true
}

func (s *sessionStore) expired(v *session, now time.Time) bool {
	return now.Sub(v.created) >= s.lifetime || now.Sub(v.seen) >= s.idle
}

// remove ends a session (logout).
func (s *sessionStore) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, sha256.Sum256([]byte(id)))
}

// limitListener accepts at most n connections at a time; further clients
// wait in the kernel's backlog until one closes, so a flood of idle or slow
// connections cannot exhaust the process's file descriptors.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: sync.OnceFunc(func() { <-l.sem })}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// errBodyTimeout is what reading a request body returns once the body read
// deadline passed: the client sends too slowly, and is answered 408.
var errBodyTimeout = errors.New("request body not received in time")

// deadlineBody turns the connection's deadline error into errBodyTimeout
// and lifts the deadline once the body is read, so a long-running handler
// (pin waits for a fetch) is not cut off by it.
type deadlineBody struct {
	io.ReadCloser
	clear func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.clear()
	case err != nil && isTimeout(err):
		return n, errBodyTimeout
	}
	return n, err
}

func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// bodyStatus maps a body read error to the status to answer with.
func bodyStatus(err error) int {
	switch {
	case errors.Is(err, errBodyTimeout):
		return http.StatusRequestTimeout
	case tooLarge(err):
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}
