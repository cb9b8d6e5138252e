package sync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"sort"
	"strings"
	stdsync "sync"
	"time"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/drift/manifest"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"
)

// Engine is the Docker side of a pass. *deploy.Engine satisfies it.
type Engine interface {
	Ping(ctx context.Context) error
	Observe(ctx context.Context, app string, withForeign bool) (drift.Actual, error)
	Apply(ctx context.Context, desired *manifest.App, plan drift.Plan, progress func(deploy.Event)) deploy.Result
	// Watch calls onEvent for Docker events on driftless's containers until
	// ctx ends or the connection drops.
	Watch(ctx context.Context, onEvent func(app, container, action string)) error
}

// Source is one app's Git source. *gitsource.Source satisfies it.
type Source interface {
	Fetch(ctx context.Context) (gitsource.FetchResult, error)
	// Files returns the app's manifests directory at sha.
	Files(ctx context.Context, sha string) (fs.FS, error)
	Revision(ctx context.Context, sha string) (gitsource.Revision, error)
}

// ErrUnknownApp is returned for an app name not in the config.
var ErrUnknownApp = errors.New("unknown app")

// Options configure an Agent.
type Options struct {
	DataDir   string
	Apps      []AppConfig
	Engine    Engine
	NewSource func(AppConfig) (Source, error)
	Workers   int // default 2
	// ResyncInterval enqueues every app in case events were missed;
	// default 5m.
	ResyncInterval time.Duration
	Registerer     prometheus.Registerer // nil: metrics are kept but not exported
	Logger         *slog.Logger
	Now            func() time.Time // default time.Now

	// HistoryRetention is how many history entries are kept; default
	// DefaultHistoryRetention.
	HistoryRetention int
	// RetryBase and RetryMax bound the backoff of failing passes; defaults
	// 1s and 5m.
	RetryBase, RetryMax time.Duration
}

// Agent keeps every configured app converged to its Git revision.
type Agent struct {
	opts    Options
	log     *slog.Logger
	now     func() time.Time
	engine  Engine
	store   *store
	queue   *queue
	metrics *metrics
	names   []string // sorted

	mu   stdsync.Mutex // guards the public part of every appState
	apps map[string]*appState

	subsMu  stdsync.Mutex
	subs    map[int]chan Event
	nextSub int

	closeOnce stdsync.Once
	closeErr  error
}

// New validates the options, opens the history store in DataDir and
// restores the runtime toggles saved there. It does no network I/O.
func New(opts Options) (*Agent, error) {
	if opts.Engine == nil {
		return nil, errors.New("sync: Options.Engine is required")
	}
	if opts.NewSource == nil {
		return nil, errors.New("sync: Options.NewSource is required")
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.ResyncInterval <= 0 {
		opts.ResyncInterval = 5 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = time.Second
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = 5 * time.Minute
	}
	a := &Agent{
		opts:   opts,
		log:    opts.Logger,
		now:    opts.Now,
		engine: opts.Engine,
		queue:  newQueue(opts.RetryBase, opts.RetryMax),
		apps:   map[string]*appState{},
		subs:   map[int]chan Event{},
	}
	for _, cfg := range opts.Apps {
		if !manifest.ValidName(cfg.Name) {
			return nil, fmt.Errorf("app %q: invalid name", cfg.Name)
		}
		if _, dup := a.apps[cfg.Name]; dup {
			return nil, fmt.Errorf("app %q is configured twice", cfg.Name)
		}
		if cfg.Interval == "" {
			cfg.Interval = DefaultInterval
		}
		sched, err := ParseSchedule(cfg.Interval)
		if err != nil {
			return nil, fmt.Errorf("app %s: interval: %w", cfg.Name, err)
		}
		src, err := opts.NewSource(cfg)
		if err != nil {
			return nil, fmt.Errorf("app %s: source: %w", cfg.Name, err)
		}
		a.apps[cfg.Name] = newAppState(cfg, sched, src)
		a.names = append(a.names, cfg.Name)
	}
	sort.Strings(a.names)

	st, err := openStore(opts.DataDir, opts.HistoryRetention)
	if err != nil {
		return nil, err
	}
	a.store = st
	for _, name := range a.names {
		p, err := st.LoadApp(name)
		if err != nil {
			st.Close()
			return nil, err
		}
		a.apps[name].restore(p)
	}
	m, err := newMetrics(opts.Registerer, a.queue.Len)
	if err != nil {
		st.Close()
		return nil, err
	}
	a.metrics = m
	return a, nil
}

// Close closes the history store. Run calls it on return.
func (a *Agent) Close() error {
	a.closeOnce.Do(func() { a.closeErr = a.store.Close() })
	return a.closeErr
}

// Run reconciles until ctx ends. Every app is enqueued once at startup;
// after that, schedules, Docker events, the resync timer and Enqueue add
// work. On shutdown a pass in progress is cancelled between or inside its
// steps, which is safe because the next start re-reads the world.
func (a *Agent) Run(ctx context.Context) error {
	defer a.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var wg stdsync.WaitGroup
	for range a.opts.Workers {
		wg.Go(func() { a.worker(ctx) })
	}
	for _, name := range a.names {
		a.queue.Add(name, "startup")
	}

	sched := cron.New()
	for _, name := range a.names {
		a.mu.Lock()
		s := a.apps[name].sched
		a.mu.Unlock()
		sched.Schedule(s, cron.FuncJob(func() { a.queue.Add(name, "poll") }))
	}
	sched.Start()

	wg.Go(func() { a.watchEngine(ctx) })
	wg.Go(func() {
		t := time.NewTicker(a.opts.ResyncInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, name := range a.names {
					a.queue.Add(name, "resync")
				}
			}
		}
	})

	<-ctx.Done()
	<-sched.Stop().Done()
	a.queue.ShutDown()
	wg.Wait()
	a.log.Info("sync loop stopped")
	return nil
}

func (a *Agent) worker(ctx context.Context) {
	for {
		name, triggers, shutdown := a.queue.Get()
		if shutdown {
			return
		}
		err := a.reconcile(ctx, name, joinTriggers(triggers))
		a.queue.Done(name)
		if ctx.Err() != nil {
			continue
		}
		var stalled *stalledError
		switch {
		case err == nil:
			a.queue.Forget(name)
		case errors.As(err, &stalled):
			// Retrying cannot fix it; the next poll or commit will.
			a.queue.Forget(name)
			a.log.Warn("pass stalled", "app", name, "err", err)
		default:
			// Waiting errors (Git server or engine unreachable) and generic
			// ones both retry with per-app exponential backoff (1s doubling
			// to 5m): a delay that grows is what both need, and the schedule
			// and Docker events still enqueue the app meanwhile.
			d := a.queue.AddRateLimited(name, "retry")
			a.log.Warn("pass failed", "app", name, "err", err, "retryIn", d.Round(time.Millisecond))
		}
	}
}

// eventDelay is how long a Docker event waits before it starts a pass. A
// removed or stopped container is final: repair at once, since heal latency
// is what users feel. Other events (a process dying that Docker's restart
// policy is about to restart, health changes) wait a moment so a burst
// collapses into one pass and Docker gets to do its part first.
func eventDelay(action string) time.Duration {
	switch action {
	case "destroy", "stop":
		return 0
	}
	return 300 * time.Millisecond
}

// watchEngine turns Docker events on an app's containers into passes; the
// queue dedupes bursts.
func (a *Agent) watchEngine(ctx context.Context) {
	for ctx.Err() == nil {
		err := a.engine.Watch(ctx, func(app, container, action string) {
			if _, known := a.apps[app]; known {
				a.queue.AddAfter(app, "docker-event", eventDelay(action))
			}
		})
		if ctx.Err() != nil {
			return
		}
		a.log.Warn("Docker event stream ended; resubscribing in 5s (the resync timer covers missed events)", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
}

// Apps returns a copy of every app's status, sorted by name.
func (a *Agent) Apps() []AppStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]AppStatus, 0, len(a.names))
	for _, name := range a.names {
		out = append(out, cloneStatus(a.apps[name].status))
	}
	return out
}

// App returns a copy of one app's status.
func (a *Agent) App(name string) (AppStatus, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.apps[name]
	if !ok {
		return AppStatus{}, false
	}
	return cloneStatus(st.status), true
}

// AppConfigs returns the apps' configs with runtime toggles applied.
func (a *Agent) AppConfigs() []AppConfig {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]AppConfig, 0, len(a.names))
	for _, name := range a.names {
		out = append(out, a.apps[name].cfg)
	}
	return out
}

// History returns entries newest first.
func (a *Agent) History(q HistoryQuery) ([]HistoryEntry, error) { return a.store.Query(q) }

// Entry returns one history entry.
func (a *Agent) Entry(id uint64) (HistoryEntry, bool) { return a.store.Entry(id) }

// Enqueue asks for a pass of app.
func (a *Agent) Enqueue(app, trigger string) error {
	if _, ok := a.apps[app]; !ok {
		return fmt.Errorf("%w %q", ErrUnknownApp, app)
	}
	a.queue.Add(app, trigger)
	return nil
}

// SetSuspended stops (or resumes) applying changes to app. The app is
// still fetched and observed, so its status stays current.
func (a *Agent) SetSuspended(app string, suspended bool) error {
	summary := "suspended: changes are shown but not applied"
	if !suspended {
		summary = "resumed: changes are applied again"
	}
	return a.setToggle(app, summary, func(p *persistedApp, st *appState) {
		p.Suspended = &suspended
		st.cfg.Suspend = suspended
		st.status.Suspended = suspended
	})
}

// SetSelfHeal turns repairing drift on or off.
func (a *Agent) SetSelfHeal(app string, on bool) error {
	summary := "self-heal turned on: changes made outside Git are repaired"
	if !on {
		summary = "self-heal turned off: changes made outside Git are shown, not repaired"
	}
	return a.setToggle(app, summary, func(p *persistedApp, st *appState) {
		p.SelfHeal = &on
		st.cfg.SelfHeal = on
		st.status.SelfHeal = on
	})
}

func (a *Agent) setToggle(app, summary string, change func(*persistedApp, *appState)) error {
	st, ok := a.apps[app]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownApp, app)
	}
	a.mu.Lock()
	before := st.cfg
	err := a.store.UpdateApp(app, func(p *persistedApp) { change(p, st) })
	unchanged := before.Suspend == st.cfg.Suspend && before.SelfHeal == st.cfg.SelfHeal
	a.mu.Unlock()
	if err != nil || unchanged {
		// Saying the same twice is not an event worth a history entry.
		return err
	}
	a.record(HistoryEntry{App: app, Kind: KindAction, Trigger: "api", Summary: summary})
	a.notify(app, "status")
	a.queue.Add(app, "api")
	return nil
}

// Pin rolls app back to an earlier revision: it is applied and enforced
// instead of the branch head until Unpin. The revision goes through the
// same validation as any other.
func (a *Agent) Pin(ctx context.Context, app, sha string) error {
	st, ok := a.apps[app]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownApp, app)
	}
	rev, err := st.source.Revision(ctx, sha)
	if err != nil {
		return fmt.Errorf("pin %s to %s: %w", app, sha, err)
	}
	a.mu.Lock()
	if st.pinned != nil && st.pinned.SHA == rev.SHA {
		// Pressing Roll back twice is one rollback.
		a.mu.Unlock()
		a.queue.Add(app, "api")
		return nil
	}
	err = a.store.UpdateApp(app, func(p *persistedApp) { p.Pinned = &rev })
	if err == nil {
		st.pinned = &rev
		st.status.Pinned = &rev
	}
	ref := st.cfg.refName()
	a.mu.Unlock()
	if err != nil {
		return err
	}
	a.record(HistoryEntry{App: app, Kind: KindRollback, Trigger: "api", Revision: &rev,
		Summary: fmt.Sprintf("pinned to %s “%s”; not following %s until unpinned", rev.Short(), rev.Subject, ref)})
	a.notify(app, "status")
	a.queue.Add(app, "api")
	return nil
}

// Unpin makes app follow its ref again.
func (a *Agent) Unpin(app string) error {
	st, ok := a.apps[app]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownApp, app)
	}
	a.mu.Lock()
	was := st.pinned
	err := a.store.UpdateApp(app, func(p *persistedApp) { p.Pinned = nil })
	if err == nil {
		st.pinned = nil
		st.status.Pinned = nil
	}
	ref := st.cfg.refName()
	a.mu.Unlock()
	if err != nil {
		return err
	}
	if was != nil {
		a.record(HistoryEntry{App: app, Kind: KindRollback, Trigger: "api", Revision: was,
			Summary: fmt.Sprintf("unpinned from %s; following %s again", was.Short(), ref)})
	}
	a.notify(app, "status")
	a.queue.Add(app, "api")
	return nil
}

// Subscribe returns a channel of change notifications and a function that
// ends the subscription. A subscriber that does not keep up loses events;
// it never slows the loop down.
func (a *Agent) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, 64)
	a.subsMu.Lock()
	id := a.nextSub
	a.nextSub++
	a.subs[id] = ch
	a.subsMu.Unlock()
	var once stdsync.Once
	return ch, func() {
		once.Do(func() {
			a.subsMu.Lock()
			delete(a.subs, id)
			a.subsMu.Unlock()
			close(ch)
		})
	}
}

func (a *Agent) notify(app, kind string) {
	a.subsMu.Lock()
	defer a.subsMu.Unlock()
	for _, ch := range a.subs {
		select {
		case ch <- Event{App: app, Kind: kind}:
		default:
		}
	}
}

// record stores history entries and tells subscribers.
func (a *Agent) record(entries ...HistoryEntry) {
	if len(entries) == 0 {
		return
	}
	for i := range entries {
		if entries[i].Time.IsZero() {
			entries[i].Time = a.now()
		}
	}
	if _, err := a.store.Append(entries...); err != nil {
		a.log.Error("history not written", "err", err)
		return
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if !seen[e.App] {
			seen[e.App] = true
			a.notify(e.App, "history")
		}
	}
}

// Ready is nil when the Docker engine answers and every app completed a
// pass recently: within three intervals, or two minutes if that is longer.
func (a *Agent) Ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := a.engine.Ping(ctx); err != nil {
		// deploy's Ping error already says the engine is unreachable, and where.
		if !strings.Contains(err.Error(), "unreachable") {
			err = fmt.Errorf("Docker engine unreachable: %w", err)
		}
		return err
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs []error
	for _, name := range a.names {
		st := a.apps[name]
		window := max(3*scheduleInterval(st.sched, now), 2*time.Minute)
		last := st.status.LastSuccess
		switch {
		case last.IsZero():
			errs = append(errs, fmt.Errorf("app %s: no successful pass yet: %s", name, st.status.Message))
		case now.Sub(last) > window:
			errs = append(errs, fmt.Errorf("app %s: no successful pass for %s: %s", name, now.Sub(last).Round(time.Second), st.status.Message))
		}
	}
	return errors.Join(errs...)
}

func cloneStatus(s AppStatus) AppStatus {
	s.Services = slices.Clone(s.Services)
	for i := range s.Services {
		s.Services[i].Containers = slices.Clone(s.Services[i].Containers)
	}
	s.Errors = slices.Clone(s.Errors)
	s.Flapping = slices.Clone(s.Flapping)
	if s.Drift != nil {
		p := clonePlan(*s.Drift)
		s.Drift = &p
	}
	if s.Refused != nil {
		r := *s.Refused
		r.Errors = slices.Clone(r.Errors)
		s.Refused = &r
	}
	s.Pinned = cloneRev(s.Pinned)
	s.Fetched = cloneRev(s.Fetched)
	s.Applied = cloneRev(s.Applied)
	return s
}

func cloneRev(r *gitsource.Revision) *gitsource.Revision {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

func clonePlan(p drift.Plan) drift.Plan {
	cloneChanges := func(cs []drift.Change) []drift.Change {
		cs = slices.Clone(cs)
		for i := range cs {
			cs[i].Fields = slices.Clone(cs[i].Fields)
		}
		return cs
	}
	p.Changes = cloneChanges(p.Changes)
	p.Deferred = cloneChanges(p.Deferred)
	p.Pruneable = cloneChanges(p.Pruneable)
	p.Conflicts = slices.Clone(p.Conflicts)
	return p
}

// The real implementations satisfy the loop's interfaces; the CLI passes
// them in unchanged.
var (
	_ Engine = (*deploy.Engine)(nil)
	_ Source = (*gitsource.Source)(nil)
)
