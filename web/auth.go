package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
)

const (
	sessionCookie = "driftless_session"
	csrfField     = "csrf"
)

// trustedLoopback reports whether the request comes from this machine and
// names this machine in its Host header. The Host check defends against DNS
// rebinding: a web page on evil.example resolved to 127.0.0.1 reaches us
// from loopback but carries Host: evil.example.
func trustedLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return false
	}
	return isLoopbackName(hostOnly(r.Host))
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

// equalSecret compares secrets in constant time, also with respect to their
// lengths (both sides are hashed first).
func equalSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// sessionValue is what the login cookie holds: derived from the token so it
// survives restarts and changes when the token changes, without the token
// itself ever being stored in the browser.
func (s *Server) sessionValue() string {
	m := hmac.New(sha256.New, []byte(s.opts.APIToken))
	m.Write([]byte("driftless-session-v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// authenticated reports whether the request carries the API token, as a
// bearer token or as the login cookie.
func (s *Server) authenticated(r *http.Request) bool {
	if s.opts.APIToken == "" {
		return false
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		tok, ok := strings.CutPrefix(auth, "Bearer ")
		return ok && equalSecret(strings.TrimSpace(tok), s.opts.APIToken)
	}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		return equalSecret(ck.Value, s.sessionValue())
	}
	return false
}

func wantsHTML(c *gin.Context) bool {
	p := c.Request.URL.Path
	return !strings.HasPrefix(p, "/api/") && p != "/events" && p != "/metrics"
}

// requireRead admits loopback, everyone with PublicRead, and token holders.
func (s *Server) requireRead() gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		if s.opts.PublicRead || trustedLoopback(r) || s.authenticated(r) {
			c.Next()
			return
		}
		if s.opts.APIToken != "" {
			if wantsHTML(c) && r.Method == http.MethodGet {
				c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(r.URL.RequestURI()))
				c.Abort()
				return
			}
			c.Header("WWW-Authenticate", `Bearer realm="driftless"`)
			s.deny(c, http.StatusUnauthorized, "authentication required: send Authorization: Bearer <api token>, or log in at /login")
			return
		}
		s.deny(c, http.StatusForbidden, "read access is only open to loopback: start the agent with --public-read to serve pages to other hosts, or with --api-token and send Authorization: Bearer <token>")
	}
}

// requireWrite admits token holders; with no token configured, only
// loopback.
func (s *Server) requireWrite() gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		if s.opts.APIToken != "" {
			if s.authenticated(r) {
				c.Next()
				return
			}
			c.Header("WWW-Authenticate", `Bearer realm="driftless"`)
			s.deny(c, http.StatusUnauthorized, "this action needs the API token: send Authorization: Bearer <token>, or log in at /login")
			return
		}
		if trustedLoopback(r) {
			c.Next()
			return
		}
		s.deny(c, http.StatusForbidden, "write actions are refused from other hosts while no API token is configured: start the agent with --api-token <token> and send Authorization: Bearer <token>")
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
// redirects after login and form posts from leaving the site.
func localPath(p, fallback string) string {
	if p == "" || !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") {
		return fallback
	}
	return p
}

func (s *Server) loginPage(c *gin.Context) {
	s.render(c, http.StatusOK, "login", loginData{
		Next:       localPath(c.Query("next"), "/"),
		NoToken:    s.opts.APIToken == "",
		LoggedIn:   s.authenticated(c.Request),
		pageHeader: s.header(c, "Log in"),
	})
}

type loginData struct {
	pageHeader
	Next     string
	NoToken  bool
	LoggedIn bool
	Failed   bool
}

func (s *Server) login(c *gin.Context) {
	next := localPath(c.PostForm("next"), "/")
	if s.opts.APIToken == "" || !equalSecret(c.PostForm("token"), s.opts.APIToken) {
		s.log.Warn("failed web login", "remote", c.Request.RemoteAddr)
		s.render(c, http.StatusUnauthorized, "login", loginData{
			Next: next, NoToken: s.opts.APIToken == "", Failed: s.opts.APIToken != "",
			pageHeader: s.header(c, "Log in"),
		})
		return
	}
	http.SetCookie(c.Writer, &http.Cookie{
		Name: sessionCookie, Value: s.sessionValue(), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.Request.TLS != nil,
	})
	c.Redirect(http.StatusSeeOther, next)
}

func (s *Server) logout(c *gin.Context) {
	http.SetCookie(c.Writer, &http.Cookie{
		Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.Request.TLS != nil,
	})
	c.Redirect(http.StatusSeeOther, "/login")
}
