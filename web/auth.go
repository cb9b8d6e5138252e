package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/gin-gonic/gin"

	"github.com/driftless-dev/driftless/web/webhook"
)

const (
	sessionCookie = "driftless_session"
	csrfField     = "csrf"
)

// trustedLoopback reports whether the request comes from this machine and
// names this machine in its Host header. The Host check defends against DNS
// rebinding: a web page on evil.example resolved to 127.0.0.1 reaches us
// from loopback but carries Host: evil.example.
//
// A request that carries a forwarding header came through a proxy: a
// reverse proxy on this host connects from loopback on behalf of anyone,
// so its requests get no loopback trust, for reads and writes alike.
func trustedLoopback(r *http.Request) bool {
	return loopbackPeer(r.RemoteAddr) && !proxied(r) && isLoopbackName(hostOnly(r.Host))
}

// loopbackPeer reports whether the connection comes from this machine.
func loopbackPeer(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// proxied reports whether the request says a proxy forwarded it. Only the
// headers' presence counts: an empty X-Forwarded-For is still a proxy's.
func proxied(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip"} {
		if len(r.Header.Values(h)) > 0 {
			return true
		}
	}
	return false
}

func isLoopbackName(h string) bool {
	if strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// visitor is who a request comes from, worked out once per request by
// identify.
type visitor struct {
	authed   bool // carries the API token or a live login session
	loopback bool // a loopback client, and loopback is trusted
}

const visitorKey = "driftless.visitor"

// trusted reports whether the request is a loopback client the server
// trusts as the machine's operator.
func (s *Server) trusted(r *http.Request) bool {
	return !s.opts.DistrustLoopback && trustedLoopback(r)
}

// identify works out the visitor. A wrong bearer token counts as a failed
// attempt for the client's address; an address with too many gets 429
// before its token is even compared.
func (s *Server) identify() gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		v := visitor{loopback: s.trusted(r)}
		if s.opts.APIToken != "" {
			if auth := r.Header.Get("Authorization"); auth != "" {
				client := clientOf(r)
				if wait := s.failures.retryAfter(client); wait > 0 {
					s.tooManyFailures(c, wait)
					return
				}
				tok, ok := strings.CutPrefix(auth, "Bearer ")
				if ok && webhook.EqualSecret(strings.TrimSpace(tok), s.opts.APIToken) {
					v.authed = true
				} else {
					s.failures.fail(client)
					s.log.Warn("wrong API token in Authorization header", "remote", r.RemoteAddr)
				}
			} else if ck, err := r.Cookie(sessionCookie); err == nil {
				v.authed = s.sessions.valid(ck.Value)
			}
		}
		c.Set(visitorKey, v)
		c.Next()
	}
}

func (s *Server) visitor(c *gin.Context) visitor {
	v, _ := c.Get(visitorKey)
	vis, _ := v.(visitor)
	return vis
}

func (s *Server) tooManyFailures(c *gin.Context, wait time.Duration) {
	c.Header("Retry-After", retryAfterSeconds(wait))
	s.deny(c, http.StatusTooManyRequests, fmt.Sprintf("too many failed attempts from this address: wait %s seconds, then retry with the right token", retryAfterSeconds(wait)))
}

// mayRead reports whether the visitor may see app state.
func (s *Server) mayRead(c *gin.Context) bool {
	v := s.visitor(c)
	return s.opts.PublicRead || v.loopback || v.authed
}

// secure reports whether cookies must be marked Secure.
func (s *Server) secure(r *http.Request) bool {
	return s.tls != nil || r.TLS != nil
}

func wantsHTML(c *gin.Context) bool {
	p := c.Request.URL.Path
	return !strings.HasPrefix(p, "/api/") && p != "/events" && p != "/metrics"
}

// requireRead admits loopback, everyone with PublicRead, and token holders.
func (s *Server) requireRead() gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.mayRead(c) {
			c.Next()
			return
		}
		if s.opts.APIToken != "" {
			s.askForToken(c, "authentication required: send Authorization: Bearer <api token>, or log in at /login")
			return
		}
		s.deny(c, http.StatusForbidden, "read access is only open to loopback: start the agent with --public-read to serve pages to other hosts, or with --api-token-file FILE and send Authorization: Bearer <token>")
	}
}

// askForToken sends a browser to the login page and answers anything else
// 401 with msg.
func (s *Server) askForToken(c *gin.Context, msg string) {
	r := c.Request
	if wantsHTML(c) && r.Method == http.MethodGet {
		c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(r.URL.RequestURI()))
		c.Abort()
		return
	}
	c.Header("WWW-Authenticate", `Bearer realm="driftless"`)
	s.deny(c, http.StatusUnauthorized, msg)
}

// mayReadLogs reports whether the visitor may read container logs: token
// holders (bearer or login session), and trusted loopback only while no
// token is configured. Logs are what applications print, secrets included,
// so --public-read does not open them, and a configured token is asked of
// loopback too.
func (s *Server) mayReadLogs(c *gin.Context) bool {
	v := s.visitor(c)
	return v.authed || (s.opts.APIToken == "" && v.loopback)
}

// requireLogs guards the logs page and the logs API (its follow stream
// included), after requireRead.
func (s *Server) requireLogs() gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.mayReadLogs(c) {
			c.Next()
			return
		}
		if s.opts.APIToken != "" {
			s.askForToken(c, "container logs need the API token, also with --public-read and from loopback: send Authorization: Bearer <token>, or log in at /login")
			return
		}
		s.deny(c, http.StatusForbidden, "container logs are served only to trusted loopback while no API token is configured: "+
			"set one with --api-token-file FILE or DRIFTLESS_API_TOKEN (driftless.yaml: apiTokenFile or apiTokenEnv) and send Authorization: Bearer <token>")
	}
}

// requireWrite admits token holders; with no token configured, only
// loopback.
func (s *Server) requireWrite() gin.HandlerFunc {
	return func(c *gin.Context) {
		v := s.visitor(c)
		if s.opts.APIToken != "" {
			if v.authed {
				c.Next()
				return
			}
			c.Header("WWW-Authenticate", `Bearer realm="driftless"`)
			s.deny(c, http.StatusUnauthorized, "this action needs the API token: send Authorization: Bearer <token>, or log in at /login")
			return
		}
		if v.loopback {
			c.Next()
			return
		}
		if s.opts.DistrustLoopback {
			s.deny(c, http.StatusUnauthorized, "write actions need an API token and none is configured (loopback is not trusted): start the agent with --api-token-file FILE or DRIFTLESS_API_TOKEN and send Authorization: Bearer <token>")
			return
		}
		s.deny(c, http.StatusForbidden, "write actions are refused from other hosts while no API token is configured: start the agent with --api-token-file FILE or DRIFTLESS_API_TOKEN and send Authorization: Bearer <token>")
	}
}

func (s *Server) deny(c *gin.Context, code int, msg string) {
	if wantsHTML(c) {
		s.errorPage(c, code, http.StatusText(code), msg)
		c.Abort()
		return
	}
	jsonError(c, code, msg)
}

// sameOrigin reports whether a browser says the request comes from our own
// pages. Sec-Fetch-Site is authoritative where sent; older browsers are
// judged by Origin, then Referer.
func sameOrigin(r *http.Request) bool {
	if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		return err == nil && strings.EqualFold(u.Host, r.Host)
	}
	if r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return true
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		u, err := url.Parse(ref)
		return err == nil && strings.EqualFold(u.Host, r.Host)
	}
	return false
}

// csrfToken is an HMAC of the login session under a per-process key: forms
// carry it, and a foreign site cannot read it.
func (s *Server) csrfToken(r *http.Request) string {
	session := ""
	if ck, err := r.Cookie(sessionCookie); err == nil {
		session = ck.Value
	}
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte("csrf|" + session))
	return hex.EncodeToString(m.Sum(nil))
}

// formGuard protects HTML form posts against cross-site requests: the
// request must be same-origin and carry the CSRF token.
func (s *Server) formGuard() gin.HandlerFunc {
	return func(c *gin.Context) {
		// Parse now, so a slow or oversized body is answered as such rather
		// than as a missing CSRF token.
		if err := c.Request.ParseForm(); err != nil {
			s.deny(c, bodyStatus(err), s.bodyErrorMessage(err))
			return
		}
		if !sameOrigin(c.Request) {
			s.deny(c, http.StatusForbidden, "this form was not submitted from driftless's own pages (cross-site request refused); open the page again and retry")
			return
		}
		tok := c.PostForm(csrfField)
		if !hmac.Equal([]byte(tok), []byte(s.csrfToken(c.Request))) {
			s.deny(c, http.StatusForbidden, "the form's security token is missing or stale (the agent may have restarted); reload the page and retry")
			return
		}
		c.Next()
	}
}

// apiOriginGuard refuses API writes a browser made on behalf of another
// site. Command-line clients send neither header and pass.
func (s *Server) apiOriginGuard() gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		sfs := r.Header.Get("Sec-Fetch-Site")
		crossSite := sfs != "" && sfs != "same-origin" && sfs != "none"
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || !strings.EqualFold(u.Host, r.Host) {
				crossSite = true
			}
		}
		if crossSite {
			jsonError(c, http.StatusForbidden, "cross-site request refused")
			return
		}
		c.Next()
	}
}

// localPath returns p if it is a path on this site, else fallback; it keeps
// redirects after login and form posts from leaving the site. Browsers
// drop tabs and newlines from URLs and read "\\" as "/", so "/\t/evil" and
// "/\\evil" lead off-site like "//evil"; escaped forms are checked too, for
// servers in front that decode them.
func localPath(p, fallback string) string {
	if !isLocalPath(p) {
		return fallback
	}
	return p
}

func isLocalPath(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	decoded, err := url.PathUnescape(p)
	if err != nil {
		return false
	}
	for _, v := range []string{p, decoded} {
		if strings.HasPrefix(v, "//") || strings.ContainsRune(v, '\\') || strings.ContainsFunc(v, unicode.IsControl) {
			return false
		}
	}
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil && u.Opaque == ""
}

func (s *Server) loginPage(c *gin.Context) {
	d := s.loginData(c, localPath(c.Query("next"), "/"))
	d.LoggedIn = s.visitor(c).authed
	s.render(c, http.StatusOK, "login", d)
}

type loginData struct {
	pageHeader
	Next     string
	NoToken  bool
	LoggedIn bool
	Failed   bool
	Wait     string // seconds to wait after too many failures
	// Idle and Lifetime say when a session ends.
	Idle, Lifetime string
}

func (s *Server) loginData(c *gin.Context, next string) loginData {
	return loginData{
		Next: next, NoToken: s.opts.APIToken == "", pageHeader: s.header(c, "Log in"),
		Idle: roundDur(s.opts.SessionIdle), Lifetime: roundDur(s.opts.SessionLifetime),
	}
}

// roundDur prints 1h or 12h rather than 1h0m0s.
func roundDur(d time.Duration) string {
	out := d.String()
	out = strings.TrimSuffix(out, "0s")
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
}

func (s *Server) login(c *gin.Context) {
	next := localPath(c.PostForm("next"), "/")
	client := clientOf(c.Request)
	if wait := s.failures.retryAfter(client); wait > 0 && s.opts.APIToken != "" {
		c.Header("Retry-After", retryAfterSeconds(wait))
		d := s.loginData(c, next)
		d.Wait = retryAfterSeconds(wait)
		s.render(c, http.StatusTooManyRequests, "login", d)
		return
	}
	if s.opts.APIToken == "" || !webhook.EqualSecret(c.PostForm("token"), s.opts.APIToken) {
		if s.opts.APIToken != "" {
			s.failures.fail(client)
		}
		s.log.Warn("failed web login", "remote", c.Request.RemoteAddr)
		d := s.loginData(c, next)
		d.Failed = s.opts.APIToken != ""
		s.render(c, http.StatusUnauthorized, "login", d)
		return
	}
	id, err := s.sessions.create()
	if err != nil {
		s.log.Error("login failed", "err", err)
		s.errorPage(c, http.StatusInternalServerError, "Login failed", "The agent could not start a session; see its log.")
		return
	}
	// A new session on login: a session ID planted before login is never
	// promoted.
	if ck, err := c.Request.Cookie(sessionCookie); err == nil {
		s.sessions.remove(ck.Value)
	}
	http.SetCookie(c.Writer, &http.Cookie{
		Name: sessionCookie, Value: id, Path: "/", MaxAge: int(s.opts.SessionLifetime.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(c.Request),
	})
	c.Redirect(http.StatusSeeOther, next)
}

// logout ends the session on the server too, so a copied cookie stops
// working at once.
func (s *Server) logout(c *gin.Context) {
	if ck, err := c.Request.Cookie(sessionCookie); err == nil {
		s.sessions.remove(ck.Value)
	}
	http.SetCookie(c.Writer, &http.Cookie{
		Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(c.Request),
	})
	c.Redirect(http.StatusSeeOther, "/login")
}
