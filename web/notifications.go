package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"
)

// Notifier sends a test notification to one destination.
// *notify.Notifier satisfies it.
type Notifier interface {
	Destinations() []string
	Test(ctx context.Context, destination string) error
}

// errNoDestination is what a test of an unknown destination says.
var errNoDestination = errors.New("no such notification destination")

// testNotification sends a test message now and says whether it arrived.
func (s *Server) testNotification(ctx context.Context, name string) (int, string) {
	n := s.opts.Notifier
	if n == nil {
		return http.StatusNotFound, errNoDestination.Error() + ": none are configured"
	}
	found := false
	for _, d := range n.Destinations() {
		found = found || d == name
	}
	if !found {
		return http.StatusNotFound, errNoDestination.Error() + ": " + name
	}
	if err := n.Test(ctx, name); err != nil {
		return http.StatusBadGateway, "test notification to " + name + " failed: " + scrubCredentials(err.Error())
	}
	return http.StatusOK, "test notification sent to " + name
}

func (s *Server) apiTestNotification(c *gin.Context) {
	code, msg := s.testNotification(c.Request.Context(), c.Param("name"))
	if code >= 400 {
		jsonError(c, code, msg)
		return
	}
	c.JSON(code, gin.H{"message": msg})
}

func (s *Server) formTestNotification(c *gin.Context) {
	code, msg := s.testNotification(c.Request.Context(), c.Param("name"))
	if code >= 400 {
		s.errorPage(c, code, "Test notification failed", msg)
		return
	}
	http.SetCookie(c.Writer, &http.Cookie{
		Name: flashCookie, Value: url.QueryEscape(msg), Path: "/", MaxAge: 30,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(c.Request),
	})
	c.Redirect(http.StatusSeeOther, "/")
}

// destinations are the names the overview offers a test button for.
func (s *Server) destinations() []string {
	if s.opts.Notifier == nil {
		return nil
	}
	return s.opts.Notifier.Destinations()
}
