// Package web serves driftless's dashboard, JSON API, webhooks, metrics and
// health endpoints. It reads status and history from the agent and enqueues
// work; every decision about what to do stays in package loop (sync/loop).
package web

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/loop"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web/webhook"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Agent is what the web server needs from the sync agent.
type Agent interface {
	Apps() []status.AppStatus
	App(name string) (status.AppStatus, bool)
	History(q status.HistoryQuery) ([]status.HistoryEntry, error)
	Entry(id uint64) (status.HistoryEntry, bool)
	// Series is an app's ready/desired replica series from since on.
	Series(app string, since time.Time) []status.ServiceSeries
	Enqueue(app, trigger string) error
	SetSuspended(app string, suspended bool) error
	SetSelfHeal(app string, on bool) error
	Pin(ctx context.Context, app, sha string) error
	Unpin(app string) error
	// Unquarantine retries the app's quarantined head on purpose.
	Unquarantine(app string) error
	Subscribe() (<-chan status.Event, func())
	Ready() error
	// EngineReady is whether one engine answers (/readyz?engine=NAME);
	// an error wrapping loop.ErrUnknownEngine for a name it does not have.
	EngineReady(name string) error
}

// AppSource is the part of an app's configuration webhooks need to decide
// which apps a push concerns. It is never rendered or serialised.
type AppSource struct {
	Name          string
	Repo          string
	Branch        string
	Tag           string
	WebhookSecret string // per-app secret; empty means Options.WebhookSecret
	// BranchMatch is a source of previews' branch pattern (path.Match
	// syntax): a push to any matching branch concerns it.
	BranchMatch string
}

// appConfigLister is implemented by *loop.Agent; when the agent has it,
// Options.Sources need not be set.
type appConfigLister interface {
	AppConfigs() []config.AppConfig
}

// SourcesFrom adapts the agent's app configs for webhook matching. Apps
// fixed to a commit are left out: no push changes what they run.
func SourcesFrom(configs func() []config.AppConfig) func() []AppSource {
	return func() []AppSource {
		var out []AppSource
		for _, c := range configs() {
			if c.Commit != "" {
				continue
			}
			out = append(out, AppSource{Name: c.Name, Repo: c.Repo, Branch: c.Branch, Tag: c.Tag, WebhookSecret: c.WebhookSecret})
		}
		return out
	}
}

// Options configure a Server.
type Options struct {
	Agent Agent
	// Notifier, if set, gets a "Test notification" button per destination.
	Notifier Notifier
	Listen   string // default 127.0.0.1:8080
	// APIToken is the bearer token write actions need. Without it, writes are
	// only accepted from loopback.
	APIToken string
	// WebhookSecret is used for apps without their own secret.
	WebhookSecret string
	// Sources lists the configured apps' repositories and webhook secrets.
	// A function rather than a slice so configuration changes are seen.
	// Nil: taken from the agent's AppConfigs when it has that method
	// (*loop.Agent does), else no app matches any webhook.
	Sources func() []AppSource
	// PublicRead serves read-only pages and API to any address without a
	// token.
	PublicRead bool
	// Registry is served at /metrics; web registers its webhook counters on
	// it. Nil means a private registry holding only web's metrics.
	Registry *prometheus.Registry
	Logger   *slog.Logger
	// MaxBodyBytes caps request bodies (webhooks, API); default 1 MiB.
	MaxBodyBytes int64

	// InsecureNoToken lets the server listen on a non-loopback address
	// without an APIToken; New refuses that otherwise. Pages then carry a
	// warning.
	InsecureNoToken bool
	// DistrustLoopback makes loopback clients show the token like everyone
	// else. Set it when a reverse proxy or a --network host container
	// shares the host: their requests arrive from loopback too.
	DistrustLoopback bool
	// TLSCertFile and TLSKeyFile, both or neither, serve HTTPS.
	TLSCertFile, TLSKeyFile string
	// BodyTimeout bounds reading a request's body; default 10s.
	BodyTimeout time.Duration
	// MaxConnections caps open connections; default 256.
	MaxConnections int
	// MaxEventStreams caps open live streams (/events and followed logs)
	// in all; default 64.
	MaxEventStreams int
	// MaxEventStreamsPerClient caps one client address's open live
	// streams (an IPv6 /64; behind a proxy on this host, the client it
	// names); default 8.
	MaxEventStreamsPerClient int
	// SessionLifetime and SessionIdle end login sessions; defaults 12h
	// and 1h.
	SessionLifetime, SessionIdle time.Duration
	// MaxAuthFailures is how many failed logins, bearer tokens or webhook
	// signatures one client address may send per minute before it gets
	// 429; default 5.
	MaxAuthFailures int
	// Now is the clock for sessions, rate limits and the container states
	// pages show; nil means time.Now.
	Now func() time.Time

	// Repos gives an app's clone, for what a revision changed; nil (or a
	// nil Repo) shows no diffs.
	Repos func(app string) Repo
	// Logs reads the apps' container logs; nil shows none.
	Logs LogSource
}

// Defaults of the limits in Options.
const (
	DefaultBodyTimeout     = 10 * time.Second
	DefaultMaxConnections  = 256
	DefaultMaxEventStreams = 64
	// DefaultMaxEventStreamsPerClient leaves room for a few dashboard
	// tabs and followed logs per person.
	DefaultMaxEventStreamsPerClient = 8
	DefaultSessionLifetime          = 12 * time.Hour
	DefaultSessionIdle              = time.Hour
	DefaultMaxAuthFailures          = 5
	authFailureWindow               = time.Minute
)

// Server is the HTTP front end of the agent.
type Server struct {
	opts     Options
	log      *slog.Logger
	engine   *gin.Engine
	pages    map[string]*template.Template
	csrfKey  []byte // per-process random key for CSRF tokens
	webhooks *prometheus.CounterVec
	tls      *tls.Config // nil: plain HTTP
	sessions *sessionStore
	failures *failureLimiter
	streams  *streamSlots
	configs  appConfigLister // nil: no per-app link templates
	diffs    diffCache
}

// New builds a Server. It calls gin.SetMode(gin.ReleaseMode), which is gin's
// package-level state: gin's debug output must never reach the operator's
// logs, and there is no per-engine switch.
func New(opts Options) (*Server, error) {
	if opts.Agent == nil {
		return nil, errors.New("web: Options.Agent is required")
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:8080"
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Sources == nil {
		if ac, ok := opts.Agent.(appConfigLister); ok {
			opts.Sources = SourcesFrom(ac.AppConfigs)
		} else {
			opts.Sources = func() []AppSource { return nil }
		}
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	setLimitDefaults(&opts)
	if err := checkExposure(opts); err != nil {
		return nil, err
	}
	lister, _ := opts.Agent.(appConfigLister)
	opts.Agent = scrubbingAgent{opts.Agent}
	s := &Server{opts: opts, log: opts.Logger, configs: lister}
	s.sessions = newSessionStore(opts.SessionLifetime, opts.SessionIdle, opts.Now)
	s.failures = newFailureLimiter(opts.MaxAuthFailures, authFailureWindow, opts.Now)
	s.streams = newStreamSlots(opts.MaxEventStreams, opts.MaxEventStreamsPerClient)
	if opts.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(opts.TLSCertFile, opts.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("web: loading the TLS certificate %s and key %s: %w (check --tls-cert and --tls-key: PEM files, the key matching the certificate)", opts.TLSCertFile, opts.TLSKeyFile, err)
		}
		s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}

	s.csrfKey = make([]byte, 32)
	if _, err := rand.Read(s.csrfKey); err != nil {
		return nil, fmt.Errorf("web: generating CSRF key: %w", err)
	}

	s.webhooks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "driftless_webhook_requests_total",
		Help: "Webhook requests received, by provider and result (queued, ignored, ping, unauthorized, rate_limited, bad_request, too_large, timeout).",
	}, []string{"provider", "result"})
	if err := opts.Registry.Register(s.webhooks); err != nil {
		return nil, fmt.Errorf("web: registering webhook metrics: %w", err)
	}

	pages, err := parsePages(s.linkFuncs())
	if err != nil {
		return nil, err
	}
	s.pages = pages

	gin.SetMode(gin.ReleaseMode)
	s.engine = s.routes()
	return s, nil
}

func setLimitDefaults(o *Options) {
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.MaxEventStreams <= 0 {
		o.MaxEventStreams = DefaultMaxEventStreams
	}
	if o.MaxEventStreamsPerClient <= 0 {
		o.MaxEventStreamsPerClient = DefaultMaxEventStreamsPerClient
	}
	if o.SessionLifetime <= 0 {
		o.SessionLifetime = DefaultSessionLifetime
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.MaxAuthFailures <= 0 {
		o.MaxAuthFailures = DefaultMaxAuthFailures
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// ErrNoToken is returned by New for a non-loopback listen address without
// an API token or InsecureNoToken.
var ErrNoToken = errors.New("no API token")

// CheckExposure reports the error New would return for settings that open
// the agent to the network without a way to authenticate, so a caller can
// refuse before starting anything else.
func CheckExposure(o Options) error {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:8080"
	}
	return checkExposure(o)
}

// checkExposure refuses settings that would open the agent to the network
// without a way to authenticate.
func checkExposure(o Options) error {
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return errors.New("web: TLS needs both a certificate and a key: set --tls-cert and --tls-key (driftless.yaml: tlsCertFile and tlsKeyFile), or neither")
	}
	if o.APIToken != "" || o.InsecureNoToken || loopbackListen(o.Listen) {
		return nil
	}
	return fmt.Errorf("web: refusing to listen on %s with %w: anyone who can reach it could use the dashboard, and every client arriving over loopback "+
		"(a reverse proxy, a --network host container) could change deployments. Set a token with --api-token-file FILE or DRIFTLESS_API_TOKEN "+
		"(driftless.yaml: apiTokenFile or apiTokenEnv), or listen on 127.0.0.1, or pass --insecure-no-token to start anyway", o.Listen, ErrNoToken)
}

// loopbackListen reports whether addr only accepts connections from this
// machine. A host name other than localhost counts as exposed: it may
// resolve to anything.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	return isLoopbackName(host)
}

// Scheme is "https" when TLS is configured, else "http".
func (s *Server) Scheme() string {
	if s.tls != nil {
		return "https"
	}
	return "http"
}

// Handler returns the HTTP handler serving everything.
func (s *Server) Handler() http.Handler { return s.engine }

// ListenAndServe serves on Options.Listen until ctx ends, then shuts down
// gracefully (open event streams are closed first so shutdown does not hang).
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := s.Listen()
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Listen opens Options.Listen, so a caller can fail fast on a busy address
// before starting anything else.
func (s *Server) Listen() (net.Listener, error) { return Listen(s.opts.Listen) }

// Listen opens the dashboard's address. The agent calls it before it
// creates anything, so a busy port leaves no trace behind.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("web: listening on %s: %w (pick another address with --listen)", addr, err)
	}
	return ln, nil
}

// Serve serves on ln until ctx ends, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Request contexts derive from baseCtx, so cancelling it ends SSE streams.
	baseCtx, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := &http.Server{
		Handler: s.engine,
		// Headers must arrive in time; bodies get BodyTimeout from the
		// bodyDeadline middleware. No whole-request ReadTimeout: it would
		// also end /events streams.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		TLSConfig:         s.tls,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.log.Info("web UI and API listening", "url", s.Scheme()+"://"+displayAddr(ln.Addr().String()))
	s.warnExposure(ln.Addr().String())
	ln = newLimitListener(ln, s.opts.MaxConnections)

	errc := make(chan error, 1)
	go func() {
		if s.tls != nil {
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("web: serving: %w", err)
	case <-ctx.Done():
	}
	cancelBase()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("web: shutting down: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("web: serving: %w", err)
	}
	return nil
}

// warnExposure says loudly in the log what an insecure setup allows.
func (s *Server) warnExposure(addr string) {
	if s.opts.APIToken != "" {
		return
	}
	switch {
	case !loopbackListen(addr):
		s.log.Warn("INSECURE: serving on a network address without an API token (--insecure-no-token); "+
			"set --api-token-file or DRIFTLESS_API_TOKEN to require a token", "listen", addr, "writes_from_loopback", !s.opts.DistrustLoopback)
	case s.opts.DistrustLoopback:
		s.log.Warn("no API token and loopback is not trusted: nobody can use write actions; set --api-token-file or DRIFTLESS_API_TOKEN")
	}
}

// insecureBanner is the warning every page carries while the agent listens
// on the network without a token; empty otherwise.
func (s *Server) insecureBanner() string {
	if s.opts.APIToken != "" || !s.opts.InsecureNoToken || loopbackListen(s.opts.Listen) {
		return ""
	}
	return "This agent listens on " + s.opts.Listen + " without an API token (--insecure-no-token): nobody has to log in, and " +
		"clients on this host can change deployments. Set an API token to secure it."
}

// displayAddr turns a wildcard listen address into one a browser can open.
func displayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

func (s *Server) routes() *gin.Engine {
	r := gin.New()
	r.ContextWithFallback = true
	// Client addresses come from RemoteAddr only: forwarded headers never
	// grant access (they take loopback's trust away, see trustedLoopback,
	// and name the client of a local proxy for the per-client limits).
	_ = r.SetTrustedProxies(nil)
	r.Use(s.recovery(), s.logging(), securityHeaders(), s.bodyDeadline(), s.limitBody(), s.identify())

	healthz := func(c *gin.Context) { c.String(http.StatusOK, "ok") }
	r.GET("/healthz", healthz)
	r.HEAD("/healthz", healthz)
	r.GET("/readyz", s.readyz)
	r.HEAD("/readyz", s.readyz)

	hooks := r.Group("/hooks")
	for _, p := range webhook.Providers() {
		hooks.POST("/"+p.Name, s.webhook(p))
	}

	static, _ := fs.Sub(staticFS, "static")
	r.GET("/static/*file", s.serveStatic(static))

	r.GET("/login", s.loginPage)
	r.POST("/login", s.formGuard(), s.login)
	r.POST("/logout", s.formGuard(), s.logout)

	read := r.Group("/", s.requireRead())
	read.GET("/metrics", gin.WrapH(promhttp.HandlerFor(s.opts.Registry, promhttp.HandlerOpts{})))
	read.GET("/events", s.events)
	read.GET("/", s.overviewPage)
	read.GET("/apps/:app", s.appPage)
	read.GET("/apps/:app/history", s.historyPage)
	read.GET("/apps/:app/timeline", s.timelinePart)
	read.GET("/apps/:app/logs/:container", s.requireLogs(), s.logsPage)
	read.GET("/history", s.historyPage)
	read.GET("/history/:id", s.entryPage)
	read.GET("/revisions/:sha", s.revisionPage)

	api := r.Group("/api/v1")
	apiRead := api.Group("/", s.requireRead())
	apiRead.GET("/apps", s.apiApps)
	apiRead.GET("/apps/:app", s.apiApp)
	apiRead.GET("/apps/:app/services", s.apiServices)
	apiRead.GET("/apps/:app/plan", s.apiPlan)
	apiRead.GET("/apps/:app/diff", s.apiDiff)
	apiRead.GET("/apps/:app/logs", s.requireLogs(), s.apiLogs)
	apiRead.GET("/apps/:app/history", s.apiHistory)
	apiRead.GET("/history", s.apiHistory)
	apiRead.GET("/history/:id", s.apiEntry)
	apiRead.GET("/sources", s.apiSources)

	apiWrite := api.Group("/", s.requireWrite(), s.apiOriginGuard())
	for _, a := range actions() {
		apiWrite.POST("/apps/:app/"+a.name, s.apiAction(a))
	}
	apiWrite.POST("/notifications/:name/test", s.apiTestNotification)

	forms := r.Group("/", s.requireWrite(), s.formGuard())
	for _, a := range actions() {
		forms.POST("/apps/:app/"+a.name, s.formAction(a))
	}
	forms.POST("/notifications/:name/test", s.formTestNotification)

	r.NoRoute(func(c *gin.Context) {
		if strings.HasPrefix(c.Request.URL.Path, "/api/") {
			jsonError(c, http.StatusNotFound, "no such endpoint: "+c.Request.Method+" "+c.Request.URL.Path)
			return
		}
		s.errorPage(c, http.StatusNotFound, "Page not found", "There is no page at "+c.Request.URL.Path+".")
	})
	return r
}

// readyz answers with the status code and one word; why the agent is not
// ready (app names, errors) only to those who may read the dashboard.
func (s *Server) readyz(c *gin.Context) {
	ready := s.opts.Agent.Ready
	if name, one := c.GetQuery("engine"); one {
		ready = func() error { return s.opts.Agent.EngineReady(name) }
	}
	if err := ready(); err != nil {
		if errors.Is(err, loop.ErrUnknownEngine) {
			c.String(http.StatusNotFound, "no such engine")
			return
		}
		if s.mayRead(c) {
			c.String(http.StatusServiceUnavailable, "not ready: %s", scrubCredentials(err.Error()))
			return
		}
		c.String(http.StatusServiceUnavailable, "not-ready")
		return
	}
	c.String(http.StatusOK, "ready")
}

func (s *Server) serveStatic(files fs.FS) gin.HandlerFunc {
	h := http.StripPrefix("/static/", http.FileServer(http.FS(files)))
	return func(c *gin.Context) {
		// Assets are embedded in the binary, so they change only on upgrade.
		c.Header("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(c.Writer, c.Request)
	}
}

// recovery turns a panic into a 500 and a logged error with the route, so a
// bug in one handler never takes the agent down.
func (s *Server) recovery() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			rec := recover()
			if rec == nil {
				return
			}
			if rec == http.ErrAbortHandler {
				panic(rec)
			}
			s.log.Error("web handler panicked; request answered with 500",
				"method", c.Request.Method, "path", c.Request.URL.Path, "panic", fmt.Sprint(rec))
			if !c.Writer.Written() {
				jsonError(c, http.StatusInternalServerError, "internal error; see the agent's log")
			}
			c.Abort()
		}()
		c.Next()
	}
}

// logging logs one line per request. Query strings and headers are left out:
// they may carry tokens.
func (s *Server) logging() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		level := slog.LevelInfo
		switch p := c.Request.URL.Path; {
		case p == "/healthz" || p == "/readyz" || p == "/metrics" || strings.HasPrefix(p, "/static/"):
			level = slog.LevelDebug
		case c.Writer.Status() >= 500:
			level = slog.LevelError
		}
		s.log.Log(c.Request.Context(), level, "http request",
			"method", c.Request.Method, "path", c.Request.URL.Path, "status", c.Writer.Status(),
			"duration", time.Since(start).Round(time.Microsecond), "remote", c.Request.RemoteAddr)
	}
}

func securityHeaders() gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		// Answers carry app state or session-bound tokens: no cache may
		// keep them. Static assets override this.
		h.Set("Cache-Control", "no-store")
		c.Next()
	}
}

func jsonError(c *gin.Context, code int, msg string) {
	c.AbortWithStatusJSON(code, gin.H{"error": msg})
}
