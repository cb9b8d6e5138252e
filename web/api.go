package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/loop"
	"github.com/driftless-dev/driftless/sync/status"
)

// appOr404 looks the app up and answers 404 when it is not configured.
func (s *Server) appOr404(c *gin.Context) (status.AppStatus, bool) {
	name := c.Param("app")
	st, ok := s.opts.Agent.App(name)
	if !ok {
		s.notFoundApp(c, name)
	}
	return st, ok
}

func (s *Server) unknownAppMessage(name string) string {
	var names []string
	for _, a := range s.opts.Agent.Apps() {
		names = append(names, a.Name)
	}
	if len(names) == 0 {
		return fmt.Sprintf("app %q is not configured (no apps are configured)", name)
	}
	return fmt.Sprintf("app %q is not configured; configured apps: %s", name, strings.Join(names, ", "))
}

func (s *Server) notFoundApp(c *gin.Context, name string) {
	if wantsHTML(c) {
		s.errorPage(c, http.StatusNotFound, "Unknown app", s.unknownAppMessage(name))
		c.Abort()
		return
	}
	jsonError(c, http.StatusNotFound, s.unknownAppMessage(name))
}

// revLinks are a revision's pages on the Git host; empty when the host
// is not recognised and no template is configured.
type revLinks struct {
	Commit string `json:"commit,omitempty"`
	Tree   string `json:"tree,omitempty"`
}

// appJSON is an app's status with links to its revisions on the Git host.
type appJSON struct {
	status.AppStatus
	Links struct {
		Applied *revLinks `json:"applied,omitempty"`
		Fetched *revLinks `json:"fetched,omitempty"`
	} `json:"links"`
}

func (s *Server) revLinksOf(app string, r *gitsource.Revision) *revLinks {
	v := s.linkRev(app, r)
	if v.CommitURL == "" && v.TreeURL == "" {
		return nil
	}
	return &revLinks{Commit: v.CommitURL, Tree: v.TreeURL}
}

func (s *Server) appWithLinks(st status.AppStatus) appJSON {
	out := appJSON{AppStatus: st}
	out.Links.Applied = s.revLinksOf(st.Name, st.Applied)
	out.Links.Fetched = s.revLinksOf(st.Name, st.Fetched)
	return out
}

func (s *Server) apiApps(c *gin.Context) {
	apps := []appJSON{}
	for _, st := range s.opts.Agent.Apps() {
		apps = append(apps, s.appWithLinks(st))
	}
	c.JSON(http.StatusOK, apps)
}

// apiSources serves GET /api/v1/sources: each sources: entry, its
// accepted revision and apps, a refused revision, and the apps no longer
// in Git.
func (s *Server) apiSources(c *gin.Context) {
	out := s.sources()
	if out == nil {
		out = []status.SourceSet{}
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) apiApp(c *gin.Context) {
	if st, ok := s.appOr404(c); ok {
		c.JSON(http.StatusOK, s.appWithLinks(st))
	}
}

func (s *Server) apiServices(c *gin.Context) {
	st, ok := s.appOr404(c)
	if !ok {
		return
	}
	if st.Services == nil {
		st.Services = []status.ServiceStatus{}
	}
	c.JSON(http.StatusOK, st.Services)
}

func (s *Server) apiPlan(c *gin.Context) {
	st, ok := s.appOr404(c)
	if !ok {
		return
	}
	format := c.DefaultQuery("format", "json")
	if format != "json" && format != "text" {
		jsonError(c, http.StatusBadRequest, fmt.Sprintf("format must be json or text, not %q", format))
		return
	}
	if st.Drift == nil {
		jsonError(c, http.StatusNotFound, fmt.Sprintf("app %q has no plan yet: its first pass has not observed the engine; retry in a moment", st.Name))
		return
	}
	if format == "text" {
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte(st.Drift.String()))
		return
	}
	c.JSON(http.StatusOK, st.Drift)
}

// historyPage is one page of history; Next is the cursor for the next
// (older) page, 0 when there is none.
type historyPage struct {
	Entries []status.HistoryEntry `json:"entries"`
	Next    uint64                `json:"next,omitempty"`
}

var allKinds = []status.HistoryKind{
	status.KindSync, status.KindRepair, status.KindRefused, status.KindRollback,
	status.KindFlapping, status.KindSource, status.KindAction,
	status.KindForcePush, status.KindImage, status.KindRelease, status.KindJob, status.KindApps,
}

const (
	defaultHistoryLimit = 50
	maxHistoryLimit     = 500
)

// parseHistoryQuery reads ?before=, ?limit= and ?kind= (comma-separated or
// repeated).
func parseHistoryQuery(c *gin.Context) (status.HistoryQuery, error) {
	q := status.HistoryQuery{App: c.Param("app"), Limit: defaultHistoryLimit}
	if v := c.Query("before"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return q, fmt.Errorf("before must be a history entry id (a positive integer), not %q", v)
		}
		q.Before = n
	}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxHistoryLimit {
			return q, fmt.Errorf("limit must be an integer from 1 to %d, not %q", maxHistoryLimit, v)
		}
		q.Limit = n
	}
	for _, v := range c.QueryArray("kind") {
		for k := range strings.SplitSeq(v, ",") {
			k = strings.TrimSpace(k)
			if k == "" {
				continue
			}
			kind := status.HistoryKind(k)
			if !slices.Contains(allKinds, kind) {
				return q, fmt.Errorf("unknown history kind %q; kinds are %s", k, kindList())
			}
			if !slices.Contains(q.Kinds, kind) {
				q.Kinds = append(q.Kinds, kind)
			}
		}
	}
	return q, nil
}

func kindList() string {
	var ks []string
	for _, k := range allKinds {
		ks = append(ks, string(k))
	}
	return strings.Join(ks, ", ")
}

// queryHistory fetches one page, asking for one extra entry to learn
// whether an older page exists.
func (s *Server) queryHistory(q status.HistoryQuery) (historyPage, error) {
	limit := q.Limit
	if limit < maxHistoryLimit {
		q.Limit = limit + 1
	}
	entries, err := s.opts.Agent.History(q)
	if err != nil {
		return historyPage{}, err
	}
	page := historyPage{Entries: entries}
	if len(entries) > limit {
		page.Entries = entries[:limit]
	}
	if len(entries) > limit || (limit == maxHistoryLimit && len(entries) == limit) {
		page.Next = page.Entries[len(page.Entries)-1].ID
	}
	if page.Entries == nil {
		page.Entries = []status.HistoryEntry{}
	}
	return page, nil
}

func (s *Server) apiHistory(c *gin.Context) {
	if c.Param("app") != "" {
		if _, ok := s.appOr404(c); !ok {
			return
		}
	}
	q, err := parseHistoryQuery(c)
	if err != nil {
		jsonError(c, http.StatusBadRequest, err.Error())
		return
	}
	page, err := s.queryHistory(q)
	if err != nil {
		s.log.Error("reading history failed", "app", q.App, "err", err)
		jsonError(c, http.StatusInternalServerError, "reading history failed: "+err.Error())
		return
	}
	c.JSON(http.StatusOK, page)
}

func parseEntryID(c *gin.Context) (uint64, error) {
	v := c.Param("id")
	id, err := strconv.ParseUint(v, 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("history entry id must be a positive integer, not %q", v)
	}
	return id, nil
}

func (s *Server) apiEntry(c *gin.Context) {
	id, err := parseEntryID(c)
	if err != nil {
		jsonError(c, http.StatusBadRequest, err.Error())
		return
	}
	e, ok := s.opts.Agent.Entry(id)
	if !ok {
		jsonError(c, http.StatusNotFound, fmt.Sprintf("no history entry %d (old entries may have been pruned)", id))
		return
	}
	c.JSON(http.StatusOK, struct {
		status.HistoryEntry
		Links *revLinks `json:"links,omitempty"`
	}{e, s.revLinksOf(e.App, e.Revision)})
}

// actionInput is what an action may take besides the app.
type actionInput struct {
	Enabled  *bool  `json:"enabled"`
	Revision string `json:"revision"`
}

// action is one write operation, shared by the JSON API and the HTML forms.
type action struct {
	name string
	// parse validates input and explains what a valid body looks like.
	parse func(in actionInput) error
	run   func(ctx context.Context, a Agent, app string, in actionInput) error
	done  func(app string, in actionInput) string
}

var shaPattern = regexp.MustCompile(`^[0-9a-fA-F]{4,64}$`)

func actions() []action {
	noInput := func(actionInput) error { return nil }
	return []action{
		{
			name:  "sync",
			parse: noInput,
			run: func(_ context.Context, a Agent, app string, _ actionInput) error {
				return a.Enqueue(app, loop.TriggerManual)
			},
			done: func(app string, _ actionInput) string { return "sync of " + app + " queued" },
		},
		{
			name:  "suspend",
			parse: noInput,
			run:   func(_ context.Context, a Agent, app string, _ actionInput) error { return a.SetSuspended(app, true) },
			done: func(app string, _ actionInput) string {
				return app + " suspended: driftless will not change its containers until resumed"
			},
		},
		{
			name:  "resume",
			parse: noInput,
			run:   func(_ context.Context, a Agent, app string, _ actionInput) error { return a.SetSuspended(app, false) },
			done:  func(app string, _ actionInput) string { return app + " resumed" },
		},
		{
			name: "selfheal",
			parse: func(in actionInput) error {
				if in.Enabled == nil {
					return errors.New(`body must be {"enabled": true} or {"enabled": false}`)
				}
				return nil
			},
			run: func(_ context.Context, a Agent, app string, in actionInput) error {
				return a.SetSelfHeal(app, *in.Enabled)
			},
			done: func(app string, in actionInput) string {
				if *in.Enabled {
					return "self-heal on for " + app
				}
				return "self-heal off for " + app + ": drift is reported, not repaired"
			},
		},
		{
			name: "pin",
			parse: func(in actionInput) error {
				if in.Revision == "" {
					return errors.New(`body must be {"revision": "<commit sha>"}`)
				}
				if !shaPattern.MatchString(in.Revision) {
					return fmt.Errorf("revision must be a commit SHA (4 to 64 hex digits), not %q", in.Revision)
				}
				return nil
			},
			run: func(ctx context.Context, a Agent, app string, in actionInput) error {
				return a.Pin(ctx, app, in.Revision)
			},
			done: func(app string, in actionInput) string {
				return app + " pinned to " + in.Revision + "; it no longer follows its branch until unpinned"
			},
		},
		{
			name:  "unpin",
			parse: noInput,
			run:   func(_ context.Context, a Agent, app string, _ actionInput) error { return a.Unpin(app) },
			done:  func(app string, _ actionInput) string { return app + " unpinned: following its branch again" },
		},
		{
			name:  "unquarantine",
			parse: noInput,
			run:   func(_ context.Context, a Agent, app string, _ actionInput) error { return a.Unquarantine(app) },
			done: func(app string, _ actionInput) string {
				return "quarantine of " + app + "'s head lifted: retrying it now"
			},
		},
	}
}

// runAction checks the app exists, validates input and runs the action.
// It returns the HTTP status and a message for the user.
func (s *Server) runAction(ctx context.Context, a action, app string, in actionInput) (int, string) {
	if _, ok := s.opts.Agent.App(app); !ok {
		return http.StatusNotFound, s.unknownAppMessage(app)
	}
	if err := a.parse(in); err != nil {
		return http.StatusBadRequest, err.Error()
	}
	if err := a.run(ctx, s.opts.Agent, app, in); err != nil {
		if _, ok := s.opts.Agent.App(app); !ok || errors.Is(err, loop.ErrUnknownApp) {
			return http.StatusNotFound, s.unknownAppMessage(app)
		}
		s.log.Warn("action refused by agent", "action", a.name, "app", app, "err", err)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return http.StatusServiceUnavailable, a.name + " did not finish: " + err.Error()
		}
		return http.StatusConflict, err.Error()
	}
	s.log.Info("action", "action", a.name, "app", app)
	if a.name == "sync" {
		return http.StatusAccepted, a.done(app, in)
	}
	return http.StatusOK, a.done(app, in)
}

func (s *Server) apiAction(a action) gin.HandlerFunc {
	return func(c *gin.Context) {
		var in actionInput
		body, err := io.ReadAll(c.Request.Body)
		if err != nil {
			jsonError(c, bodyStatus(err), s.bodyErrorMessage(err))
			return
		}
		if len(strings.TrimSpace(string(body))) > 0 {
			dec := json.NewDecoder(strings.NewReader(string(body)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				jsonError(c, http.StatusBadRequest, "request body is not valid JSON for "+a.name+": "+err.Error())
				return
			}
		}
		code, msg := s.runAction(c.Request.Context(), a, c.Param("app"), in)
		if code >= 400 {
			jsonError(c, code, msg)
			return
		}
		resp := gin.H{"message": msg}
		if st, ok := s.opts.Agent.App(c.Param("app")); ok {
			resp["app"] = st
		}
		c.JSON(code, resp)
	}
}

func tooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// bodyErrorMessage says what went wrong reading a request body.
func (s *Server) bodyErrorMessage(err error) string {
	switch bodyStatus(err) {
	case http.StatusRequestTimeout:
		return fmt.Sprintf("the request body did not arrive within %s; send it at once", s.opts.BodyTimeout)
	case http.StatusRequestEntityTooLarge:
		return fmt.Sprintf("request body exceeds %d bytes", s.opts.MaxBodyBytes)
	}
	return "reading request body: " + err.Error()
}

// bodyDeadline gives every request body BodyTimeout to arrive, so a client
// trickling a body cannot hold a connection and a handler open. Where the
// connection cannot take a deadline (tests' recorders) the body is read as
// is.
func (s *Server) bodyDeadline() gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		if r.Body == nil || r.Body == http.NoBody {
			c.Next()
			return
		}
		rc := http.NewResponseController(c.Writer)
		// Deadlines are on the wall clock, whatever Options.Now says.
		if err := rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout)); err == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, clear: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		}
		c.Next()
	}
}

// limitBody caps every request body at MaxBodyBytes.
func (s *Server) limitBody() gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.Body != nil {
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, s.opts.MaxBodyBytes)
		}
		c.Next()
	}
}
