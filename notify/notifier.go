package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nicholas-fedor/shoutrrr/pkg/router"
	"github.com/nicholas-fedor/shoutrrr/pkg/types"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/loop"
	"github.com/driftless-dev/driftless/sync/status"
)

// Defaults of config.NotifySettings.
const (
	DefaultSourceUnreachableAfter = 5 * time.Minute
	DefaultRepairBatch            = time.Minute
)

var defaultRetry = retry{Attempts: 6, Base: 2 * time.Second, Max: 2 * time.Minute}

// Recorder keeps delivery problems where people look: the app's history.
// *loop.Agent satisfies it.
type Recorder interface {
	RecordNotification(app, summary, result string) error
}

// Options configure a Notifier.
type Options struct {
	Config     config.Config // Notifications, Notify, ExternalURL, each app's own and each source's template's
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	HTTPClient *http.Client     // commit statuses; default a client with a 30s timeout
	Now        func() time.Time // default time.Now
	retry      retry            // tests shorten it
}

// Notifier is the loop's loop.Observer: it derives events and commit
// statuses from each report and hands them to one goroutine per
// destination.
type Notifier struct {
	log         *slog.Logger
	now         func() time.Time
	externalURL string
	window      time.Duration
	counter     *prometheus.CounterVec

	mu       sync.Mutex // guards the detector, the tracker and recorder
	det      *detector
	tracker  *statusTracker
	recorder Recorder

	// An app listed under apps: has its own destinations and host; the
	// apps a source generates share the source's, whose names are only
	// known at run time (each report's status says its source).
	global      []*destination
	perApp      map[string][]*destination
	perSource   map[string][]*destination
	hosts       map[string]*host // by app
	sourceHosts map[string]*host // by source
}

// destination is one shoutrrr URL and the kinds it wants.
type destination struct {
	name   string
	kinds  []Kind
	sender sender
	w      *worker
}

// host is one app's or source's commit-status client and its delivery
// goroutine.
type host struct {
	client *hostClient
	w      *worker
	repo   string // the repository's URL as status shows it (credentials removed)
}

// sender sends one message; *router.ServiceRouter behind shoutrrrSender.
type sender interface {
	send(title, body string) error
}

type shoutrrrSender struct{ r *router.ServiceRouter }

func (s shoutrrrSender) send(title, body string) error {
	var errs []error
	for _, err := range s.r.Send(body, &types.Params{"title": title}) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// New checks every destination and commit-status setting and prepares
// them; nothing is sent before Start.
func New(o Options) (*Notifier, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if o.retry.Attempts == 0 {
		o.retry = defaultRetry
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	set := o.Config.Notify
	if set.SourceUnreachableAfter <= 0 {
		set.SourceUnreachableAfter = DefaultSourceUnreachableAfter
	}
	if set.RepairBatch <= 0 {
		set.RepairBatch = DefaultRepairBatch
	}
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "driftless_notifications_total",
		Help: "Notifications and commit statuses by destination and result (sent, retried, failed, dropped)."}, []string{"destination", "result"})
	if err := o.Registerer.Register(counter); err != nil {
		return nil, err
	}
	n := &Notifier{log: o.Logger, now: o.Now, externalURL: strings.TrimRight(o.Config.ExternalURL, "/"), window: set.RepairBatch,
		counter: counter, det: newDetector(set.SourceUnreachableAfter, set.RepairBatch), tracker: newStatusTracker(),
		perApp: map[string][]*destination{}, perSource: map[string][]*destination{}, hosts: map[string]*host{}, sourceHosts: map[string]*host{}}
	var errs []error
	names := map[string]bool{}
	mk := func(where string, cfgs []config.Notification) []*destination {
		var out []*destination
		for i, c := range cfgs {
			d, err := n.destination(c, o.retry)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s[%d] (%s): %w", where, i, c.Name, err))
				continue
			}
			if names[c.Name] {
				errs = append(errs, fmt.Errorf("%s[%d]: name %q is used by another destination; names must be unique", where, i, c.Name))
			}
			names[c.Name] = true
			out = append(out, d)
		}
		return out
	}
	n.global = mk("notifications", o.Config.Notifications)
	mkHost := func(where, name string, app config.AppConfig) *host {
		if app.CommitStatus == nil {
			return nil
		}
		c, err := newHostClient(*app.CommitStatus, app.Repo, o.HTTPClient)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			return nil
		}
		return &host{client: c, w: newWorker(name, o.retry, counter, o.Logger, n.problem), repo: config.RedactURL(app.Repo)}
	}
	n.perApp = appDestinations(o.Config.Apps, mk)
	for _, app := range o.Config.Apps {
		if h := mkHost("apps ("+app.Name+")", "commit-status/"+app.Name, app); h != nil {
			n.hosts[app.Name] = h
		}
	}
	for _, src := range o.Config.Sources {
		// The template's commitStatus goes to the source's repository,
		// also for an app that a driftless-apps.yaml puts on another
		// branch: it is the same repository.
		n.perSource[src.Name] = mk("sources ("+src.Name+"): template.notifications", src.App.Notifications)
		if h := mkHost("sources ("+src.Name+"): template", "commit-status/source:"+src.Name, src.App); h != nil {
			n.sourceHosts[src.Name] = h
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return n, nil
}

func (n *Notifier) destination(c config.Notification, r retry) (*destination, error) {
	kinds, err := ParseKinds(c.Events)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	rt, err := router.New(nil, c.URL)
	if err != nil {
		// The URL holds the destination's token: never repeat it.
		return nil, fmt.Errorf("url: %s", redact(err.Error(), c.URL))
	}
	rt.Timeout = 30 * time.Second
	return &destination{name: c.Name, kinds: kinds, sender: shoutrrrSender{rt},
		w: newWorker(c.Name, r, n.counter, n.log, n.problem)}, nil
}

// urlPattern finds URLs in error messages (net/http quotes the URL it
// posted to), which may hold a destination's token.
var urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"']+`)

func redact(msg, raw string) string {
	if raw != "" {
		msg = strings.ReplaceAll(msg, raw, "<url>")
	}
	return urlPattern.ReplaceAllString(msg, "<url>")
}

// Start runs the delivery goroutines until ctx ends. rec records delivery
// problems in history; nil logs them only.
func (n *Notifier) Start(ctx context.Context, rec Recorder) {
	n.mu.Lock()
	n.recorder = rec
	n.mu.Unlock()
	for _, w := range n.workers() {
		go w.run(ctx)
	}
}

func (n *Notifier) workers() []*worker {
	var out []*worker
	for _, d := range n.all() {
		out = append(out, d.w)
	}
	for _, h := range n.hosts {
		out = append(out, h.w)
	}
	for _, h := range n.sourceHosts {
		out = append(out, h.w)
	}
	return out
}

// all are the global destinations, then each app's and each source's.
func (n *Notifier) all() []*destination {
	out := slices.Clone(n.global)
	for _, ds := range n.perApp {
		out = append(out, ds...)
	}
	for _, ds := range n.perSource {
		out = append(out, ds...)
	}
	return out
}

// destinationsOf are the destinations of e: the global ones, and its
// app's own or, for a generated app, its source's.
func (n *Notifier) destinationsOf(e Event) []*destination {
	own := n.perApp[e.App]
	if e.Source != "" {
		own = n.perSource[e.Source]
	}
	return append(slices.Clone(n.global), own...)
}

// Destinations are the destinations' names, for the dashboard.
func (n *Notifier) Destinations() []string {
	var out []string
	for _, d := range n.all() {
		out = append(out, d.name)
	}
	slices.Sort(out)
	return out
}

// ErrUnknownDestination is returned by Test for a name not configured.
var ErrUnknownDestination = errors.New("unknown notification destination")

// Test sends a test message to one destination now, without retries, and
// says whether it arrived.
func (n *Notifier) Test(ctx context.Context, name string) error {
	for _, d := range n.all() {
		if d.name != name {
			continue
		}
		done := make(chan error, 1)
		go func() {
			done <- d.sender.send("driftless: test notification", "This is a test notification from driftless to "+name+".")
		}()
		select {
		case err := <-done:
			result := ResultSent
			if err != nil {
				result = ResultFailed
				err = errors.New(redact(err.Error(), ""))
			}
			n.counter.WithLabelValues(name, result).Inc()
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("%w %q", ErrUnknownDestination, name)
}

// Observe implements loop.Observer. It only computes and enqueues.
func (n *Notifier) Observe(r loop.Report) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.now()
	events := n.det.events(r, now)
	for _, s := range n.tracker.statuses(r, n.externalURL) {
		n.postStatus(r, s)
	}
	n.dispatch(events)
	if slices.ContainsFunc(r.Entries, func(e status.HistoryEntry) bool { return e.Kind == status.KindRepair }) {
		n.armFlush(now)
	}
}

// armFlush sends the next repair batch when its window ends.
func (n *Notifier) armFlush(now time.Time) {
	if next, ok := n.det.nextDue(); ok {
		time.AfterFunc(max(next.Sub(now), 0), n.flush)
	}
}

func (n *Notifier) flush() {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.now()
	n.dispatch(n.det.due(now))
	n.armFlush(now)
}

func (n *Notifier) dispatch(events []Event) {
	for _, e := range events {
		for _, d := range n.destinationsOf(e) {
			if !slices.Contains(d.kinds, e.Kind) {
				continue
			}
			t, b := title(e), body(e, n.externalURL)
			s := d.sender
			d.w.enqueue(job{app: e.App, what: string(e.Kind) + " message", deliver: func(context.Context) error {
				if err := s.send(t, b); err != nil {
					return errors.New(redact(err.Error(), ""))
				}
				return nil
			}})
		}
	}
}

// postStatus queues s on the host of r's app, or of the source that
// generated it. An app that a config: source places in another
// repository has no host: its commits are not in the source's.
func (n *Notifier) postStatus(r loop.Report, s commitStatus) {
	app := r.App
	h, ok := n.hosts[app]
	if source := r.Next.FromSource; source != "" {
		h, ok = n.sourceHosts[source]
		if ok && r.Next.Source.URL != "" && r.Next.Source.URL != h.repo {
			return
		}
	}
	if !ok {
		return
	}
	h.w.enqueue(job{app: app, what: s.State + " commit status for " + s.SHA, deliver: func(ctx context.Context) error {
		return h.client.post(ctx, s)
	}})
}

// problem records a delivery that failed for good, or works again.
func (n *Notifier) problem(app, dest, summary, result string) {
	n.mu.Lock()
	rec := n.recorder
	n.mu.Unlock()
	if rec == nil {
		return
	}
	if err := rec.RecordNotification(app, dest+": "+summary, result); err != nil {
		n.log.Error("delivery problem not recorded in history", "app", app, "destination", dest, "err", err)
	}
}

// The agent takes the Notifier as its observer.
var _ loop.Observer = (*Notifier)(nil)

// appDestinations are each app's own destinations, made by mk. The
// instances of an app on several engines (APP@ENGINE) share the ones
// their one entry declares.
func appDestinations(apps []config.AppConfig, mk func(where string, cfgs []config.Notification) []*destination) map[string][]*destination {
	out := map[string][]*destination{}
	byEntry := map[string][]*destination{}
	for _, app := range apps {
		ds, shared := byEntry[app.InstanceOf]
		if !shared {
			ds = mk("apps ("+app.NameOnEngine()+"): notifications", app.Notifications)
			if app.InstanceOf != "" {
				byEntry[app.InstanceOf] = ds
			}
		}
		out[app.Name] = ds
	}
	return out
}
