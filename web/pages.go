package web

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web/internal/overview"
)

var pageNames = []string{"overview", "app", "history", "entry", "logs", "login", "error"}

// parsePages parses every page with the shared functions and extra, the
// ones that need the server (links to the Git host).
func parsePages(extra template.FuncMap) (map[string]*template.Template, error) {
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(templateFuncs()).Funcs(extra).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web: parsing template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// pageHeader is what the layout around every page needs.
type pageHeader struct {
	Title     string
	Path      string
	CSRF      string
	Pinned    []status.AppStatus
	TokenMode bool // an API token is configured
	LoggedIn  bool
	CanWrite  bool // action buttons work for this visitor
	Flash     string
	LiveApp   string    // the app whose events refresh this page; "" = any
	Live      bool      // the page refreshes itself on events
	Now       time.Time // when the page is rendered: container states are worded as of it
	Insecure  string    // warning shown on every page: no token on a network address
}

const flashCookie = "driftless_flash"

func (s *Server) header(c *gin.Context, title string) pageHeader {
	r := c.Request
	h := pageHeader{
		Title:     title,
		Path:      r.URL.RequestURI(),
		CSRF:      s.csrfToken(r),
		TokenMode: s.opts.APIToken != "",
		LoggedIn:  s.visitor(c).authed,
		Now:       s.opts.Now(),
		Insecure:  s.insecureBanner(),
	}
	h.CanWrite = h.LoggedIn || (!h.TokenMode && s.visitor(c).loopback)
	// The login and error pages are shown to anyone; app state only to
	// readers.
	if s.mayRead(c) {
		for _, a := range s.opts.Agent.Apps() {
			if a.Pinned != nil {
				h.Pinned = append(h.Pinned, a)
			}
		}
	}
	if ck, err := r.Cookie(flashCookie); err == nil {
		if msg, err := url.QueryUnescape(ck.Value); err == nil {
			h.Flash = msg
		}
		http.SetCookie(c.Writer, &http.Cookie{Name: flashCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	}
	return h
}

// render executes a page into a buffer first, so a template error becomes
// a clean 500 rather than half a page.
func (s *Server) render(c *gin.Context, code int, page string, data any) {
	var buf bytes.Buffer
	if err := s.pages[page].ExecuteTemplate(&buf, "page", data); err != nil {
		s.log.Error("rendering page failed", "page", page, "err", err)
		c.Data(http.StatusInternalServerError, "text/plain; charset=utf-8", []byte("internal error rendering this page; see the agent's log"))
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Data(code, "text/html; charset=utf-8", buf.Bytes())
}

type errorData struct {
	pageHeader
	Message string
}

func (s *Server) errorPage(c *gin.Context, code int, title, msg string) {
	s.render(c, code, "error", errorData{pageHeader: s.header(c, title), Message: msg})
}

type overviewData struct {
	pageHeader
	Apps []status.AppStatus
	// Groups are the apps by where they are declared: apps: first, then
	// each source's.
	Groups []overview.Group
	// Engines are the engines the apps run on, with several; Engine is
	// the one the page shows the apps of (?engine=NAME), "" for all.
	Engines       []overview.Engine
	Engine        string
	Notifications []string // destinations, each with a test button
	Timelines     map[string]template.HTML
	Range         string
	Ranges        []rangeLink
	Legend        template.HTML
}

func (s *Server) overviewPage(c *gin.Context) {
	rng, span, err := parseRange(c.Query("range"))
	if err != nil {
		s.errorPage(c, http.StatusBadRequest, "Bad timeline range", err.Error())
		return
	}
	h := s.header(c, "Apps")
	h.Live = true
	d := overviewData{pageHeader: h, Apps: s.opts.Agent.Apps(), Notifications: s.destinations(),
		Timelines: map[string]template.HTML{}, Range: rng, Ranges: rangeLinks("/", rng), Legend: timelineLegend()}
	d.Engines = overview.Engines(d.Apps)
	if name := c.Query("engine"); name != "" {
		if !slices.ContainsFunc(d.Engines, func(e overview.Engine) bool { return e.Name == name }) {
			s.errorPage(c, http.StatusNotFound, "No such engine", "No app runs on an engine called "+name+".")
			return
		}
		d.Engine, d.Apps = name, overview.OnEngine(d.Apps, name)
		for i := range d.Ranges {
			d.Ranges[i].URL += "&engine=" + url.QueryEscape(name)
		}
	}
	for _, a := range d.Apps {
		d.Timelines[a.Name] = s.timelineFor(a.Name, span, true)
	}
	d.Groups = overview.Groups(d.Apps, s.sources())
	s.render(c, http.StatusOK, "overview", d)
}

// sourceLister is implemented by *loop.Agent.
type sourceLister interface {
	Sources() []status.SourceSet
}

// sources are the agent's sources: entries; none when it has no such method.
func (s *Server) sources() []status.SourceSet {
	if l, ok := s.opts.Agent.(sourceLister); ok {
		return l.Sources()
	}
	return nil
}

type appData struct {
	pageHeader
	App      status.AppStatus
	Timeline template.HTML
	Range    string
	Ranges   []rangeLink
	Diff     *diffView // what the running revision changed
	Rows     historyRows
	HistErr  string
}

// historyRows is what the shared history table needs.
type historyRows struct {
	Entries  []status.HistoryEntry
	ShowApp  bool
	CanWrite bool
	CSRF     string
	Path     string
	Applied  map[string]string // app → running revision: no "roll back" offered to it
	Filtered bool
}

func (s *Server) appPage(c *gin.Context) {
	st, ok := s.appOr404(c)
	if !ok {
		return
	}
	rng, span, err := parseRange(c.Query("range"))
	if err != nil {
		s.errorPage(c, http.StatusBadRequest, "Bad timeline range", err.Error())
		return
	}
	h := s.header(c, st.Name)
	h.Live, h.LiveApp = true, st.Name
	d := appData{pageHeader: h, App: st, Range: rng, Ranges: rangeLinks("/apps/"+url.PathEscape(st.Name), rng),
		Timeline: s.timelineFor(st.Name, span, false)}
	recent, err := s.opts.Agent.History(status.HistoryQuery{App: st.Name, Limit: 10})
	if err != nil {
		d.HistErr = err.Error()
	}
	d.Rows = historyRows{Entries: recent, CanWrite: h.CanWrite, CSRF: h.CSRF, Path: h.Path, Applied: s.appliedRevisions()}
	d.Diff = s.appliedDiff(c.Request.Context(), st)
	s.render(c, http.StatusOK, "app", d)
}

type kindFilter struct {
	Kind   status.HistoryKind
	Active bool
	URL    string
}

type historyData struct {
	pageHeader
	App       string
	Kinds     []kindFilter
	AllURL    string
	Rows      historyRows
	NextURL   string
	NewestURL string
}

func (s *Server) historyPage(c *gin.Context) {
	app := c.Param("app")
	if app != "" {
		if _, ok := s.appOr404(c); !ok {
			return
		}
	}
	q, err := parseHistoryQuery(c)
	if err != nil {
		s.errorPage(c, http.StatusBadRequest, "Bad history query", err.Error())
		return
	}
	page, err := s.queryHistory(q)
	if err != nil {
		s.errorPage(c, http.StatusInternalServerError, "History unavailable", "Reading history failed: "+err.Error())
		return
	}
	base := "/history"
	title := "History"
	if app != "" {
		base = "/apps/" + url.PathEscape(app) + "/history"
		title = app + " · history"
	}
	h := s.header(c, title)
	h.Live, h.LiveApp = q.Before == 0, app
	d := historyData{pageHeader: h, App: app, AllURL: base, Rows: historyRows{
		Entries: page.Entries, ShowApp: app == "", CanWrite: h.CanWrite, CSRF: h.CSRF, Path: h.Path,
		Applied: s.appliedRevisions(), Filtered: len(q.Kinds) > 0,
	}}
	kindsParam := func(kinds []status.HistoryKind) url.Values {
		v := url.Values{}
		if len(kinds) > 0 {
			var ks []string
			for _, k := range kinds {
				ks = append(ks, string(k))
			}
			v.Set("kind", strings.Join(ks, ","))
		}
		return v
	}
	for _, k := range allKinds {
		active := slices.Contains(q.Kinds, k)
		// Clicking a chip toggles that kind in the filter.
		next := slices.DeleteFunc(slices.Clone(q.Kinds), func(x status.HistoryKind) bool { return x == k })
		if !active {
			next = append(next, k)
		}
		d.Kinds = append(d.Kinds, kindFilter{Kind: k, Active: active, URL: withQuery(base, kindsParam(next))})
	}
	if page.Next != 0 {
		v := kindsParam(q.Kinds)
		v.Set("before", strconv.FormatUint(page.Next, 10))
		if q.Limit != defaultHistoryLimit {
			v.Set("limit", strconv.Itoa(q.Limit))
		}
		d.NextURL = withQuery(base, v)
	}
	if q.Before != 0 {
		d.NewestURL = withQuery(base, kindsParam(q.Kinds))
	}
	s.render(c, http.StatusOK, "history", d)
}

func (s *Server) appliedRevisions() map[string]string {
	m := map[string]string{}
	for _, a := range s.opts.Agent.Apps() {
		if a.Applied != nil {
			m[a.Name] = a.Applied.SHA
		}
	}
	return m
}

func withQuery(base string, v url.Values) string {
	if len(v) == 0 {
		return base
	}
	return base + "?" + v.Encode()
}

type entryData struct {
	pageHeader
	Entry   status.HistoryEntry
	Diff    *diffView // what the revision changed in Git
	Applied string
}

func (s *Server) entryPage(c *gin.Context) {
	id, err := parseEntryID(c)
	if err != nil {
		s.errorPage(c, http.StatusBadRequest, "Bad history entry", err.Error())
		return
	}
	e, ok := s.opts.Agent.Entry(id)
	if !ok {
		s.errorPage(c, http.StatusNotFound, "No such history entry", fmt.Sprintf("There is no history entry %d; old entries may have been pruned.", id))
		return
	}
	d := entryData{pageHeader: s.header(c, fmt.Sprintf("%s · entry %d", e.App, e.ID)), Entry: e}
	d.Diff = s.entryDiff(c.Request.Context(), e)
	if st, ok := s.opts.Agent.App(e.App); ok && st.Applied != nil {
		d.Applied = st.Applied.SHA
	}
	s.render(c, http.StatusOK, "entry", d)
}

// revisionPage opens the newest sync of a commit, so a revert can link to
// the commit it reverts. Only the kept history is searched.
func (s *Server) revisionPage(c *gin.Context) {
	sha := strings.ToLower(c.Param("sha"))
	if len(sha) < 4 || len(sha) > 40 || strings.Trim(sha, "0123456789abcdef") != "" {
		s.errorPage(c, http.StatusBadRequest, "Bad revision", "A revision is 4 to 40 hex digits of a commit SHA.")
		return
	}
	q := status.HistoryQuery{Kinds: []status.HistoryKind{status.KindSync}, Limit: 500}
	for page := 0; page < 20; page++ {
		entries, err := s.opts.Agent.History(q)
		if err != nil {
			s.errorPage(c, http.StatusInternalServerError, "History unavailable", err.Error())
			return
		}
		for _, e := range entries {
			if e.Revision != nil && strings.HasPrefix(e.Revision.SHA, sha) {
				c.Redirect(http.StatusFound, fmt.Sprintf("/history/%d", e.ID))
				return
			}
		}
		if len(entries) < q.Limit {
			break
		}
		q.Before = entries[len(entries)-1].ID
	}
	s.errorPage(c, http.StatusNotFound, "Revision not in history",
		fmt.Sprintf("No sync of %s is in the kept history: it ran before this agent started, or its entry was trimmed.", sha))
}

// formAction runs an action posted from a page and redirects back with a
// one-shot message.
func (s *Server) formAction(a action) gin.HandlerFunc {
	return func(c *gin.Context) {
		app := c.Param("app")
		in := actionInput{Revision: strings.TrimSpace(c.PostForm("revision"))}
		if v, ok := c.GetPostForm("enabled"); ok {
			on := v == "true" || v == "on" || v == "1"
			in.Enabled = &on
		}
		code, msg := s.runAction(c.Request.Context(), a, app, in)
		if code >= 400 {
			s.errorPage(c, code, "Action failed", msg)
			return
		}
		http.SetCookie(c.Writer, &http.Cookie{
			Name: flashCookie, Value: url.QueryEscape(msg), Path: "/", MaxAge: 30,
			HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(c.Request),
		})
		c.Redirect(http.StatusSeeOther, localPath(c.PostForm("next"), "/apps/"+url.PathEscape(app)))
	}
}

func templateFuncs() template.FuncMap {
	return template.FuncMap{
		"ago":         ago,
		"age":         age,
		"stamp":       stamp,
		"dur":         dur,
		"short":       shortSHA,
		"shortDigest": shortDigest,
		"tone":        tone,
		"lower":       strings.ToLower,
		"redactURL":   redactURL,
		"symbol":      drift.Action.Symbol,
		"actionTone": func(a drift.Action) string {
			switch a {
			case drift.ActionCreate:
				return "create"
			case drift.ActionRemove:
				return "remove"
			case drift.ActionReplace:
				return "replace"
			}
			return "start" // start and update in place: a change to a container that stays
		},
		"replicas": func(a status.AppStatus) string {
			var desired, ready int
			for _, s := range a.Services {
				desired += s.Desired
				ready += s.Ready
			}
			return fmt.Sprintf("%d/%d", ready, desired)
		},
		"replicaTone": func(a status.AppStatus) string {
			var desired, ready int
			for _, s := range a.Services {
				desired += s.Desired
				ready += s.Ready
			}
			switch {
			case desired == 0:
				return "muted"
			case ready >= desired:
				return "ok"
			case ready == 0:
				return "bad"
			}
			return "warn"
		},
		"revision": func(r *gitsource.Revision) gitsource.Revision {
			if r == nil {
				return gitsource.Revision{}
			}
			return *r
		},
		"sameSHA": func(a, b string) bool {
			if a == "" || b == "" {
				return false
			}
			return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
		},
		"planText":   drift.Plan.String,
		"isRollback": func(k status.HistoryKind) bool { return k == status.KindRollback },
		"isSync":     func(k status.HistoryKind) bool { return k == status.KindSync },
		"str":        func(v any) string { return fmt.Sprint(v) },
	}
}

func shortSHA(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// age is a compact duration since t: 45s, 12m, 3h, 5d.
func age(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := time.Since(t)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return age(t) + " ago"
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// tone maps a status word to a colour class; the word itself is always
// shown next to the colour.
func tone(word any) string {
	switch strings.ToLower(fmt.Sprint(word)) {
	case "synced", "healthy", "running", "succeeded", "done", "ready", "queued":
		return "ok"
	case "outofsync", "progressing", "partial", "restarting", "repair", "rollback", "pinned", "skipped", "created":
		return "warn"
	case "degraded", "missing", "failed", "exited", "dead", "refused", "flapping", "error", "not ready":
		return "bad"
	case "sync":
		return "info"
	}
	return "muted"
}

var urlCredentials = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@'"]+@`)

// scrubCredentials removes user:password@ from any URL in s. Source URLs
// reach web already redacted; this catches credentials echoed in error
// messages (git's "unable to access 'https://user:token@…'").
func scrubCredentials(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return urlCredentials.ReplaceAllString(s, "$1")
}

// scrubStatus applies scrubCredentials to the free-text fields of a status.
func scrubStatus(st status.AppStatus) status.AppStatus {
	st.Source.URL = scrubCredentials(st.Source.URL)
	st.Source.Error = scrubCredentials(st.Source.Error)
	st.Message = scrubCredentials(st.Message)
	if len(st.Errors) > 0 {
		errs := slices.Clone(st.Errors)
		for i := range errs {
			errs[i].Message = scrubCredentials(errs[i].Message)
		}
		st.Errors = errs
	}
	if st.Refused != nil {
		r := *st.Refused
		r.Reason = scrubCredentials(r.Reason)
		st.Refused = &r
	}
	return st
}

func scrubEntry(e status.HistoryEntry) status.HistoryEntry {
	e.Summary = scrubCredentials(e.Summary)
	if len(e.Errors) > 0 {
		errs := slices.Clone(e.Errors)
		for i := range errs {
			errs[i] = scrubCredentials(errs[i])
		}
		e.Errors = errs
	}
	return e
}

// scrubbingAgent scrubs credentials from everything web reads, so no
// handler can forget to.
type scrubbingAgent struct{ Agent }

func (a scrubbingAgent) Apps() []status.AppStatus {
	apps := a.Agent.Apps()
	out := make([]status.AppStatus, len(apps))
	for i, st := range apps {
		out[i] = scrubStatus(st)
	}
	return out
}

// Sources passes on the agent's sources: entries, their errors scrubbed.
func (a scrubbingAgent) Sources() []status.SourceSet {
	l, ok := a.Agent.(sourceLister)
	if !ok {
		return nil
	}
	out := l.Sources()
	for i := range out {
		out[i].Source.Error = scrubCredentials(out[i].Source.Error)
		if r := out[i].Refused; r != nil {
			c := *r
			c.Reason = scrubCredentials(c.Reason)
			c.Errors = slices.Clone(c.Errors)
			for j := range c.Errors {
				c.Errors[j] = scrubCredentials(c.Errors[j])
			}
			out[i].Refused = &c
		}
	}
	return out
}

func (a scrubbingAgent) App(name string) (status.AppStatus, bool) {
	st, ok := a.Agent.App(name)
	return scrubStatus(st), ok
}

func (a scrubbingAgent) History(q status.HistoryQuery) ([]status.HistoryEntry, error) {
	entries, err := a.Agent.History(q)
	out := make([]status.HistoryEntry, len(entries))
	for i, e := range entries {
		out[i] = scrubEntry(e)
	}
	return out, err
}

func (a scrubbingAgent) Entry(id uint64) (status.HistoryEntry, bool) {
	e, ok := a.Agent.Entry(id)
	return scrubEntry(e), ok
}

// redactURL drops credentials from a URL before it is shown, in case a
// status message carries one.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

// shortDigest shows an image digest as Docker does: "sha256:" and the
// first 12 hex digits.
func shortDigest(d string) string {
	algo, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) <= 12 {
		return d
	}
	return algo + ":" + hex[:12]
}
