// Package loop is the agent's control loop: a deduplicating work queue
// keyed by app, and the passes that fetch, validate, observe, diff and
// apply, ending in one status write (nextStatus). The config it runs
// comes from sync/config; what it leaves behind is sync/status, kept in
// sync/store.
package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/internal/hostpath"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/policy"
	"github.com/driftless-dev/driftless/secrets"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/loopmetrics"
	"github.com/driftless-dev/driftless/sync/pipeline"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/sync/store"
	"github.com/driftless-dev/driftless/sync/workqueue"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"
)

// Engine is the Docker side of a pass. *deploy.Engine satisfies it.
type Engine interface {
	// EnsureImages builds what a revision declares with build: (an
	// engine that cannot embeds pipeline.NoBuilds).
	pipeline.Builder
	// Ping and Observe errors that mean the engine is unreachable wrap
	// drift.ErrEngineUnreachable.
	Ping(ctx context.Context) error
	Observe(ctx context.Context, app string, withForeign bool) (drift.Actual, error)
	Apply(ctx context.Context, desired *manifest.App, plan drift.Plan, opts drift.ApplyOptions) drift.ApplyResult
	// Watch calls onEvent for Docker events that may concern driftless
	// until ctx ends, reconnecting when the stream breaks; every
	// connection is reported as drift.EventConnected.
	Watch(ctx context.Context, onEvent func(drift.EngineEvent)) error
}

// Target is an engine as the pipeline drives it for an app
// (pipeline.Backend): a Swarm manager (deploy/swarm) renders the specs of
// the services it runs; the agent's own engine is one with
// pipeline.NoRender (see engineFor).
type Target interface {
	Engine
	pipeline.Renderer
}

var _ pipeline.Backend = Target(nil)

// NamedEngine is an engine apps are placed on by name, with what the
// agent asks of it besides passes. *deploy.Engine satisfies it.
type NamedEngine interface {
	Engine
	JobRunner
	AppRemover
	FileCollector
}

// oneEngine is the agent's engine as a Target: containers are compared by
// their spec hash, there is no Swarm spec to render.
type oneEngine struct {
	Engine
	pipeline.NoRender
}

// Triggers say why a pass runs; history records them.
const (
	TriggerStartup     = "startup"
	TriggerPoll        = "poll"
	TriggerResync      = "resync"
	TriggerDockerEvent = "docker-event"
	TriggerWebhook     = "webhook"
	TriggerAPI         = "api"
	// TriggerManual is a person's "Sync now": it applies the whole plan,
	// drift included, even with self-heal off.
	TriggerManual = "manual"
	TriggerRetry  = "retry"
	// TriggerBackoff: a backoff ended.
	TriggerBackoff = "backoff"
	// TriggerRepair: the previous pass stopped early (someone interfered,
	// or something newer came) and plans again at once.
	TriggerRepair = "repair"
	// TriggerPreempted: the previous pass stopped for something newer (a
	// commit, suspend, pin) and the source must be read again.
	TriggerPreempted = "preempted"
	// TriggerEngine: the engine's event stream came back after a break.
	TriggerEngine = "engine-reconnected"
	// TriggerWatch: a release under watch is looked at again (no fetch).
	TriggerWatch = "watch"
)

// engineRetryMax caps the backoff of passes that failed because the engine
// was unreachable: when it comes back, the app converges within seconds.
const engineRetryMax = 5 * time.Second

// shutdownGrace is how long a pass under way may take to reach its next
// safe point after the agent is told to stop.
const shutdownGrace = 30 * time.Second

// Source is one app's Git source. *gitsource.Source satisfies it.
type Source interface {
	Fetch(ctx context.Context) (gitsource.FetchResult, error)
	// Files returns the app's manifests directory at sha.
	Files(ctx context.Context, sha string) (fs.FS, error)
	Revision(ctx context.Context, sha string) (gitsource.Revision, error)
	// IsAncestor reports whether moving from ancestor to descendant is a
	// fast-forward; an error wrapping gitsource.ErrCommitNotFound when
	// the source no longer holds one of them.
	IsAncestor(ctx context.Context, ancestor, descendant string) (bool, error)
}

// ErrUnknownApp is returned for an app name not in the config.
var ErrUnknownApp = errors.New("unknown app")

// Options configure an Agent.
type Options struct {
	DataDir string
	Apps    []config.AppConfig
	Engine  Engine
	// Swarm is the engine of apps with target swarm: a Swarm manager
	// (deploy/swarm). Required when an app has that target.
	Swarm Target
	// Engines are the engines of engines: by name, for the apps placed on
	// them (AppConfig.Engine); Engine is config.LocalEngine's. Each also
	// runs its apps' jobs, removes them and collects its files.
	Engines map[string]NamedEngine
	// Sources are repositories whose trees say which further apps exist
	// (sources.go).
	Sources []config.SourceConfig
	// Remover removes what an app runs once its source no longer declares
	// it and prunes (deploy.Engine); nil: such apps are kept, as with
	// prune off.
	Remover AppRemover
	// Jobs runs the apps' jobs (deploy.Engine); nil: every job run
	// fails, saying so.
	Jobs      JobRunner
	NewSource func(config.AppConfig) (Source, error)
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
	// Observer, if set, is told after every pass and every pin or unpin
	// (notifications, commit statuses).
	Observer Observer
	// Host is where every pass judges the apps' host paths (symlinks
	// followed, the engine's sockets); default: this machine
	// (internal/hostpath with the process's environment).
	Host policy.Host
	// Tags resolves followed image tags (imageUpdate) to digests; nil: no
	// tag is followed, services run the tag as written.
	Tags TagResolver
	// Files drops repository files of bind mounts that no container uses
	// any more; nil: nothing is collected.
	Files FileCollector
	// StateDir is where the engine keeps the apps' state directories
	// (hostfiles.StateRoot of the data directory): status shows their
	// host paths, and every pass checks that they stay inside it (Host's
	// StateDir, unless Host sets one). "": status shows no host path.
	StateDir string
}

// Agent keeps every configured app converged to its Git revision.
type Agent struct {
	jobs    *jobRegistry
	opts    Options
	log     *slog.Logger
	now     func() time.Time
	engine  Engine
	swarm   Target // nil: no app has target swarm
	store   *store.Store
	series  *store.Series
	queue   *workqueue.Queue
	metrics *loopmetrics.Metrics
	// cron polls every app and source on its schedule; entries come and
	// go with the apps sources generate.
	cron *cron.Cron

	mu      sync.Mutex // guards names, apps, sources, runCtx and the public part of every appState
	names   []string   // sorted
	apps    map[string]*appState
	sources map[string]*sourceState
	// runCtx is Run's context, for passes that triggers started by the
	// schedule start; nil before Run.
	runCtx context.Context
	// enginePasses counts the passes under way on each named engine
	// (takeEngineSlot).
	enginePasses map[string]int

	subsMu  sync.Mutex
	subs    map[int]chan status.Event
	nextSub int

	secretKey manifest.SecretKey // never logged or shown

	closeOnce sync.Once
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
	opts = opts.withDefaults()
	a := &Agent{
		jobs:         newJobRegistry(),
		opts:         opts,
		log:          opts.Logger,
		now:          opts.Now,
		engine:       opts.Engine,
		swarm:        opts.Swarm,
		queue:        workqueue.New(opts.RetryBase, opts.RetryMax),
		apps:         map[string]*appState{},
		sources:      map[string]*sourceState{},
		cron:         cron.New(),
		enginePasses: map[string]int{},
		subs:         map[int]chan status.Event{},
	}
	// A poll or resync usually finds nothing new: it must not delay a
	// webhook, a Docker event or a repair of another app.
	a.queue.SetBackground(TriggerPoll, TriggerResync, TriggerImageUpdate)
	if err := a.loadSecretKey(); err != nil {
		return nil, err
	}
	for _, cfg := range opts.Apps {
		if cfg.Target == manifest.TargetSwarm && opts.Swarm == nil {
			return nil, fmt.Errorf("app %s: target: swarm needs a Swarm engine (loop.Options.Swarm)", cfg.Name)
		}
		if _, ok := opts.Engines[cfg.Engine]; !ok && cfg.Engine != "" {
			return nil, fmt.Errorf("app %s: engine %q is not in loop.Options.Engines", cfg.Name, cfg.Engine)
		}
		if err := a.addApp(cfg); err != nil {
			return nil, err
		}
	}
	sort.Strings(a.names)
	for _, sc := range opts.Sources {
		if err := a.addSource(sc); err != nil {
			return nil, err
		}
	}

	st, err := a.openState()
	if err != nil {
		return nil, err
	}
	// The apps each source gave before the restart run again at once,
	// even if its repository cannot be reached now.
	a.restoreSourceApps()
	m, err := loopmetrics.New(opts.Registerer, a.queue.Len)
	if err != nil {
		st.Close()
		return nil, err
	}
	a.metrics = m
	return a, nil
}

// loadSecretKey reads (or creates) the key that digests secret values in
// hashes and displays; the CLI reads the same file (see secrets.KeyPath).
func (a *Agent) loadSecretKey() error {
	if a.opts.DataDir == "" {
		return nil
	}
	key, created, err := secrets.LoadOrCreateKey(a.opts.DataDir)
	if err != nil {
		return fmt.Errorf("%w; the agent needs it to hash secrets the same way across restarts", err)
	}
	if created {
		a.log.Info("created the secret key; driftless apply and diff use it with the same --data directory", "path", secrets.KeyPath(a.opts.DataDir))
	}
	a.secretKey = key
	return nil
}

// openState opens the history store and restores what it keeps: the
// replica series for the timeline and each app's toggles and memory.
func (a *Agent) openState() (*store.Store, error) {
	st, err := store.Open(a.opts.DataDir, a.opts.HistoryRetention)
	if err != nil {
		return nil, err
	}
	a.store = st
	a.series = store.NewSeries()
	if err := a.series.Prune(st, a.now()); err != nil {
		a.log.Warn("replica series not pruned; the timeline may show old points", "err", err)
	}
	if err := a.series.Load(st, a.now()); err != nil {
		a.log.Warn("replica series not loaded; the timeline starts empty", "err", err)
	}
	for _, name := range a.names {
		p, err := st.LoadApp(name)
		if err != nil {
			st.Close()
			return nil, err
		}
		a.apps[name].restore(p)
	}
	if st.Recovered != "" {
		a.log.Error("history store was unreadable; starting a new one", "detail", st.Recovered)
		for _, name := range a.names {
			a.recordLogged(status.HistoryEntry{App: name, Kind: status.KindAction, Trigger: TriggerStartup, Result: "failed", Summary: st.Recovered})
		}
	}
	return st, nil
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.ResyncInterval <= 0 {
		o.ResyncInterval = 5 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RetryBase <= 0 {
		o.RetryBase = time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 5 * time.Minute
	}
	if o.Host.Resolve == nil {
		o.Host = hostpath.Host(os.Getenv)
	}
	if o.Host.StateDir == "" {
		o.Host.StateDir = o.StateDir
	}
	return o
}

// addApp checks one app's config and prepares its state and source.
func (a *Agent) addApp(cfg config.AppConfig) error {
	if _, dup := a.apps[cfg.Name]; dup {
		return fmt.Errorf("app %q is configured twice", cfg.Name)
	}
	if other, taken := a.nameTaken(cfg); taken {
		return fmt.Errorf("app %q: engine %s already runs an app called %s (%s)", cfg.Name, cfg.EngineName(), cfg.NameOnEngine(), other)
	}
	st, err := a.newApp(cfg)
	if err != nil {
		return err
	}
	a.insertApp(st)
	return nil
}

// newApp checks an app's config and prepares its state and source.
func (a *Agent) newApp(cfg config.AppConfig) (*appState, error) {
	if !manifest.ValidName(cfg.NameOnEngine()) || (cfg.InstanceOf != "" && cfg.Name != config.InstanceName(cfg.InstanceOf, cfg.EngineName())) {
		return nil, fmt.Errorf("app %q: invalid name", cfg.Name)
	}
	if cfg.Interval == "" {
		cfg.Interval = config.DefaultInterval
	}
	sched, err := config.ParseSchedule(cfg.Interval)
	if err != nil {
		return nil, fmt.Errorf("app %s: interval: %w", cfg.Name, err)
	}
	cfg.SecretKey = a.secretKey
	src, err := a.opts.NewSource(cfg)
	if err != nil {
		return nil, fmt.Errorf("app %s: source: %w", cfg.Name, err)
	}
	return newAppState(cfg, sched, src), nil
}

// insertApp makes st known and polled; the caller holds a.mu (or is New).
func (a *Agent) insertApp(st *appState) {
	name := st.cfg.Name
	st.cronID = a.cron.Schedule(st.sched, cron.FuncJob(func() { a.trigger(a.baseCtx(), name, TriggerPoll) }))
	a.apps[name] = st
	i, _ := slices.BinarySearch(a.names, name)
	a.names = slices.Insert(a.names, i, name)
}

// appNames is a copy of the app names, sorted.
func (a *Agent) appNames() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.names)
}

// app is the state of a known app.
func (a *Agent) app(name string) (*appState, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.apps[name]
	return st, ok
}

// baseCtx is Run's context once it runs.
func (a *Agent) baseCtx() context.Context {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.runCtx == nil {
		return context.Background()
	}
	return a.runCtx
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
	// Passes run on their own context: on shutdown they are first asked
	// to stop at a safe point (a replace completes), and only cancelled
	// if that takes longer than shutdownGrace.
	passCtx, cancelPasses := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelPasses()
	var workers sync.WaitGroup
	for range a.opts.Workers {
		workers.Go(func() { a.worker(passCtx) })
	}
	a.mu.Lock()
	a.runCtx = ctx
	a.mu.Unlock()
	for _, name := range a.appNames() {
		a.queue.Add(name, TriggerStartup)
	}
	for _, name := range a.sourceNames() {
		a.queue.Add(sourceKey(name), TriggerStartup)
	}
	var wg sync.WaitGroup
	sched := a.cron
	sched.Start()

	wg.Go(func() { a.watchEngine(ctx, config.LocalEngine, a.engine) })
	if a.swarm != nil {
		wg.Go(func() { a.watchEngine(ctx, config.LocalEngine, a.swarm) })
	}
	for name, e := range a.opts.Engines {
		wg.Go(func() { a.watchEngine(ctx, name, e) })
	}
	wg.Go(func() { a.recordSeries(ctx) })
	wg.Go(func() { a.runSchedules(ctx) })
	wg.Go(func() {
		t := time.NewTicker(a.opts.ResyncInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, name := range a.appNames() {
					a.queue.Add(name, TriggerResync)
				}
				a.collectFiles(ctx)
			}
		}
	})

	<-ctx.Done()
	<-sched.Stop().Done()
	a.queue.ShutDown()
	a.stopAll()
	done := make(chan struct{})
	go func() { workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(shutdownGrace):
		a.log.Warn("a pass did not reach a safe point in time; cancelling it", "grace", shutdownGrace)
		cancelPasses()
		<-done
	}
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
		release, ok := a.takeEngineSlot(name)
		if !ok {
			// Its engine holds every pass it may: try again shortly,
			// leaving this worker to apps on other engines.
			a.queue.Done(name)
			for _, t := range triggers {
				a.queue.AddAfter(name, t, engineBusyRetry)
			}
			continue
		}
		res, err := a.reconcile(ctx, name, triggers)
		release()
		a.queue.Done(name)
		if ctx.Err() != nil {
			continue
		}
		a.requeue(name, res, err)
	}
}

// engineBusyRetry is how soon an app whose engine was busy is tried again.
const engineBusyRetry = 200 * time.Millisecond

// takeEngineSlot lets a pass of the app start unless its named engine
// already holds all the workers but one: an engine that is slow, or
// stalls in the middle of a pass, then delays only its own apps, and the
// agent's own engine and the other engines keep a worker. The agent's
// own engine and Swarm apps are not limited, nor is an engine that every
// app runs on. release ends the pass.
func (a *Agent) takeEngineSlot(app string) (release func(), ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, known := a.apps[app]
	if !known || st.cfg.Engine == "" || st.cfg.Target == manifest.TargetSwarm {
		return func() {}, true
	}
	engine := st.cfg.Engine
	limited := false
	for _, other := range a.apps {
		limited = limited || other.cfg.Engine != engine
	}
	if limited && a.enginePasses[engine] >= max(1, a.opts.Workers-1) {
		return nil, false
	}
	a.enginePasses[engine]++
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.enginePasses[engine]--
	}, true
}

// requeue schedules the app's next pass from how this one ended.
func (a *Agent) requeue(name string, res Result, err error) {
	var stalled *stalledError
	switch {
	case err == nil:
		a.queue.Forget(name)
	case errors.As(err, &stalled):
		// Retrying cannot fix it; the next poll or commit will.
		a.queue.Forget(name)
		a.log.Warn("pass stalled", "app", name, "err", err)
	case errors.Is(err, drift.ErrEngineUnreachable):
		// The engine's fault, not the app's: retry soon, so the app
		// converges as soon as the engine is back.
		d := a.queue.AddRateLimitedMax(name, TriggerRetry, engineRetryMax)
		a.log.Warn("pass failed: engine unreachable", "app", name, "err", err, "retryIn", d.Round(time.Millisecond))
	default:
		// Source errors and failed applies retry with per-app exponential
		// backoff (1s doubling to 5m); the schedule and Docker events
		// still enqueue the app meanwhile.
		d := a.queue.AddRateLimited(name, TriggerRetry)
		a.log.Warn("pass failed", "app", name, "err", err, "retryIn", d.Round(time.Millisecond))
	}
	switch {
	case res.Preempted:
		a.queue.Add(name, TriggerPreempted)
	case res.Requeue:
		a.queue.Add(name, TriggerRepair)
	}
	if res.RequeueAfter > 0 {
		a.queue.AddAfter(name, TriggerBackoff, res.RequeueAfter)
	}
	if res.ImageCheckAfter > 0 {
		a.queue.AddAfter(name, TriggerImageUpdate, res.ImageCheckAfter)
	}
	if res.WatchAfter > 0 {
		a.queue.AddAfter(name, TriggerWatch, res.WatchAfter)
	}
}

// eventDelay is how long a Docker event waits before it starts a pass. A
// removed or stopped container is final: repair at once, since heal latency
// is what users feel. Other events (a process dying that Docker's restart
// policy is about to restart, health changes) wait a moment so a burst
// collapses into one pass and Docker gets to do its part first.
func eventDelay(action string) time.Duration {
	switch action {
	case "destroy", "stop", "update", "rename", "disconnect", "connect":
		return 0
	}
	return 300 * time.Millisecond
}

// engineFor is the engine an app runs on: the Swarm manager for target
// swarm, its named engine, else the agent's engine.
func (a *Agent) engineFor(cfg config.AppConfig) Target {
	if cfg.Target == manifest.TargetSwarm && a.swarm != nil {
		return a.swarm
	}
	if e, ok := a.opts.Engines[cfg.Engine]; ok {
		return oneEngine{Engine: e}
	}
	return oneEngine{Engine: a.engine}
}

// watchEngine turns the Docker events of the engine called name into
// passes of the apps placed on it; the queue dedupes bursts.
func (a *Agent) watchEngine(ctx context.Context, name string, engine Engine) {
	for ctx.Err() == nil {
		err := engine.Watch(ctx, func(ev drift.EngineEvent) { a.onEngineEvent(name, ev) })
		if ctx.Err() != nil {
			return
		}
		a.log.Warn("Docker event stream ended; resubscribing in 5s (the resync timer covers missed events)", "engine", name, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
}

// onEngineEvent queues the apps placed on the engine called engine that
// the event concerns: an app on another engine never hears of it.
func (a *Agent) onEngineEvent(engine string, ev drift.EngineEvent) {
	switch {
	case ev.Action == drift.EventConnected || ev.Action == drift.EventDisconnected:
		// The engine may be going away or back from a restart, and events
		// may have been missed: look at its apps again, so status says
		// so at once rather than at the next poll.
		for _, name := range a.appsConcernedBy(engine, nil) {
			a.queue.Add(name, TriggerEngine)
		}
	case ev.App != "":
		if name, known := a.appOn(engine, ev.App); known {
			a.queue.AddAfter(name, TriggerDockerEvent, eventDelay(ev.Action))
		}
	default:
		// An event without our label: a network change of one of our
		// containers, or a foreign object going away that may have held a
		// name or port an app waits for.
		for _, name := range a.appsConcernedBy(engine, &ev) {
			a.queue.AddAfter(name, TriggerDockerEvent, eventDelay(ev.Action))
		}
	}
}

// appOn is the app whose objects on engine carry the label app (its
// NameOnEngine): the app of that name, or an instance APP@ENGINE.
func (a *Agent) appOn(engine, app string) (string, bool) {
	for _, name := range []string{app, config.InstanceName(app, engine)} {
		if st, known := a.app(name); known && st.cfg.EngineName() == engine && st.cfg.NameOnEngine() == app {
			return name, true
		}
	}
	return "", false
}

// nameTaken reports the app, if any, that already runs under cfg's
// NameOnEngine on cfg's engine: their containers would be one app's. The
// caller holds a.mu (or is New).
func (a *Agent) nameTaken(cfg config.AppConfig) (string, bool) {
	for name, st := range a.apps {
		if st.cfg.EngineName() == cfg.EngineName() && st.cfg.NameOnEngine() == cfg.NameOnEngine() {
			return name, true
		}
	}
	return "", false
}

// appsConcernedBy finds the apps on the engine an unlabelled event matters
// to: the app whose container it names, apps with a conflict on that
// name, or apps with a service that runs the image tag it moved; every
// app on the engine when ev is nil.
func (a *Agent) appsConcernedBy(engine string, ev *drift.EngineEvent) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, name := range a.names {
		st := a.apps[name].status
		if a.apps[name].cfg.EngineName() != engine {
			continue
		}
		concerned := ev == nil // then ev is never read below
		for _, svc := range st.Services {
			concerned = concerned || (ev.Image != "" && manifest.TaggedAs(svc.Image, ev.Image))
			for _, c := range svc.Containers {
				concerned = concerned || (ev.ID != "" && c.ID == ev.ID) || (ev.Container != "" && c.Name == ev.Container)
			}
		}
		if st.Drift != nil {
			for _, c := range st.Drift.Conflicts {
				concerned = concerned || c.Name == ev.Container || (ev.Network != "" && c.Name == ev.Network)
			}
		}
		if concerned {
			out = append(out, name)
		}
	}
	return out
}

// placed is the job runner and remover of the app's engine: its named
// engine, else Options.Jobs and Options.Remover (either may be nil).
func (a *Agent) placed(app string) (JobRunner, AppRemover) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st, ok := a.apps[app]; ok {
		if e, ok := a.opts.Engines[st.cfg.Engine]; ok {
			return e, e
		}
	}
	return a.opts.Jobs, a.opts.Remover
}

// nameOnEngine is the label of the app's objects on its engine
// (config.AppConfig.NameOnEngine); app itself when it is not known.
func (a *Agent) nameOnEngine(app string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st, ok := a.apps[app]; ok {
		return st.cfg.NameOnEngine()
	}
	return app
}

// FileCollector is an engine that keeps repository files for bind mounts
// and can drop those no container uses any more.
type FileCollector interface {
	RemoveUnusedFiles(ctx context.Context, minAge time.Duration) ([]string, error)
}

// unusedFilesAge keeps a materialized tree this long after its last user
// went: a rollout under way may be about to mount it again.
const unusedFilesAge = 10 * time.Minute

// collectFiles removes repository files that no container mounts, on
// each engine.
func (a *Agent) collectFiles(ctx context.Context) {
	for _, e := range a.opts.Engines {
		a.collectFilesOf(ctx, e)
	}
	if a.opts.Files != nil {
		a.collectFilesOf(ctx, a.opts.Files)
	}
}

func (a *Agent) collectFilesOf(ctx context.Context, files FileCollector) {
	removed, err := files.RemoveUnusedFiles(ctx, unusedFilesAge)
	if err != nil {
		a.log.Warn("removing unused repository files", "err", err)
		return
	}
	if len(removed) > 0 {
		a.log.Info("removed repository files no container mounts", "count", len(removed))
	}
}

// trigger enqueues a pass of the app and, when a pass is already applying
// an older revision, checks whether the source moved on; if so the pass is
// asked to stop at its next safe point, so a new commit never waits behind
// a long rollout.
func (a *Agent) trigger(ctx context.Context, name, trigger string) {
	if isSourceKey(name) {
		a.queue.Add(name, trigger)
		return
	}
	st, ok := a.app(name)
	if !ok {
		return // removed meanwhile
	}
	a.queue.Add(name, trigger)
	a.mu.Lock()
	r := st.running
	if r == nil || r.stopped || r.checking || r.target == "" || st.pinned != nil {
		a.mu.Unlock()
		return
	}
	r.checking = true
	target := r.target
	a.mu.Unlock()
	go func() {
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, err := st.source.Fetch(fctx)
		a.mu.Lock()
		defer a.mu.Unlock()
		r.checking = false
		// A head that was refused already changes nothing: the pass
		// under way enforces the last good revision on purpose.
		refused := st.status.Refused != nil && st.status.Refused.Revision.SHA == res.Revision.SHA
		// So does a quarantined head: the pass may be rolling back from it.
		quarantined := st.status.Release != nil && slices.ContainsFunc(st.status.Release.Quarantined,
			func(q status.Quarantine) bool { return q.Revision.SHA == res.Revision.SHA })
		if err == nil && res.Revision.SHA != target && !refused && !quarantined && st.running == r {
			a.log.Info("a newer revision arrived during a rollout; stopping it at the next safe point", "app", name,
				"applying", shortSHA(target), "head", res.Revision.Short())
			r.stopNow()
		}
	}()
}

// preempt asks a pass under way to stop at its next safe point, because a
// person changed what it should do (suspend, pin, unpin).
func (a *Agent) preempt(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st, ok := a.apps[name]; ok && st.running != nil {
		st.running.stopNow()
	}
}

// stopAll asks every pass under way to stop at its next safe point.
func (a *Agent) stopAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, st := range a.apps {
		if st.running != nil {
			st.running.stopNow()
		}
	}
}

// setTarget records which revision the pass under way enforces.
func (a *Agent) setTarget(name, sha string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st, ok := a.apps[name]; ok && st.running != nil {
		st.running.target = sha
	}
}

func shortSHA(sha string) string { return drift.ShortRevision(sha) }

// reconcile runs one pass of the app and writes its status once.
func (a *Agent) reconcile(ctx context.Context, name string, triggers []string) (Result, error) {
	if isSourceKey(name) {
		return Result{}, a.discover(ctx, strings.TrimPrefix(name, sourceKeyPrefix))
	}
	st, ok := a.app(name)
	if !ok {
		return Result{}, nil // removed while queued
	}
	a.mu.Lock()
	removing, left := st.removing, st.leftGit
	a.mu.Unlock()
	switch {
	case removing != nil:
		return Result{}, a.decommission(ctx, name, *removing)
	case left != nil:
		return Result{}, nil // no longer in Git: shown, never touched
	}
	a.takeNextConfig(st)
	stop := make(chan struct{})
	a.mu.Lock()
	in := passInput{cfg: st.cfg, pinned: cloneRev(st.pinned), triggers: triggers, start: a.now(), mem: st.mem, stop: stop}
	st.running = &runningPass{stop: stop}
	st.status.Reconciling = true // status exception: a pass under way shows at once; nextStatus clears it
	a.mu.Unlock()
	a.notify(name, "status")
	p := &pass{a: a, st: st, in: in}
	return a.finishPass(name, st, in, p.run(ctx))
}

// finishPass is the thin caller around nextStatus: it stores what changed,
// records history, updates metrics and tells subscribers.
func (a *Agent) finishPass(name string, st *appState, in passInput, o passOutcome) (Result, error) {
	t0 := time.Now()
	now := a.now()
	a.mu.Lock()
	sin := statusInput{prev: cloneStatus(st.status), mem: st.mem, cfg: st.cfg, pinned: cloneRev(st.pinned), trigger: in.trigger(), now: now, out: o, stateDir: a.opts.StateDir}
	a.mu.Unlock()
	u := nextStatus(sin)
	var storeErr error
	if u.persist != nil {
		storeErr = a.store.UpdateApp(name, u.persist)
	}
	stored, err := a.recordStored(u.history...)
	if err != nil {
		storeErr = errors.Join(storeErr, err)
	}
	if storeErr != nil {
		a.log.Error("app state or history not saved; enforcement goes on", "app", name, "err", storeErr)
	}
	if u.persist != nil || len(u.history) > 0 {
		// Only a write says whether the store works again; a pass that
		// wrote nothing keeps the history condition as it was. Status
		// exception: the write comes after nextStatus, so only here is its
		// error known (withStorageError is pure too).
		u.status = withStorageError(u.status, &u.mem, storeErr, now)
	}
	for _, kind := range u.errors {
		a.metrics.Errors.WithLabelValues(name, kind).Inc()
	}
	a.metrics.Repairs.WithLabelValues(name).Add(float64(u.repairs))
	a.metrics.ObservePhase(loopmetrics.PhaseStatus, t0)

	// Info is for what a person would want to read later: transitions and
	// history entries. A status that changes on every poll while an app
	// stays Degraded (restart counts, backoff) is Debug; whether it
	// changed is asked only when Debug lines are written, since the
	// comparison costs more than the rest of an idle pass's bookkeeping.
	a.setJobs(name, u.mem.accepted)
	u.status.Jobs = a.jobStatuses(name, u.status.Refused)
	u.status.Errors = withJobErrors(u.status.Errors, u.status.Jobs)
	level := slog.LevelDebug
	a.mu.Lock()
	if st.status.Sync != u.status.Sync || st.status.Health != u.status.Health || len(u.history) > 0 {
		level = slog.LevelInfo
	}
	logPass := level == slog.LevelInfo || (a.log.Enabled(context.Background(), level) && statusChanged(st.status, u.status))
	if st.leftGit != nil {
		// Its source stopped declaring it while this pass ran: keep the
		// "no longer in Git" that applyAppSet showed meanwhile.
		u.status.LeftGit, u.status.Message = st.leftGit, st.status.Message
	}
	st.status, st.mem, st.running = u.status, u.mem, nil // the pass's one status write
	snapshot := cloneStatus(st.status)
	a.mu.Unlock()

	if !o.cancelled && o.gap != nil {
		a.series.Observe(name, now, o.before)
		counts := store.CountsOf(snapshot)
		a.series.Observe(name, now, counts)
		a.series.Forget(name, counts)
	}
	a.metrics.Observe(snapshot, name, now, in.start)
	a.observe(Report{App: name, Prev: sin.prev, Next: snapshot, Entries: stored}) // snapshot is this pass's own copy
	if logPass {
		a.log.Log(context.Background(), level, "pass", "app", name, "trigger", sin.trigger, "sync", snapshot.Sync, "health", snapshot.Health, "message", snapshot.Message)
	}
	a.notify(name, "status")
	res, err := passResult(o, now)
	res.Requeue = res.Requeue || u.requeue
	if w := u.mem.watch; w != nil {
		res.WatchAfter = min(watchPoll, w.Remaining(now)+10*time.Millisecond)
	}
	return res, err
}

// announceApply shows, before a rollout that may take a while, that the app
// is out of sync and progressing towards the plan, so nobody reads the
// previous "Synced" as the new revision being done. The pass's status
// write replaces it.
func (a *Agent) announceApply(name string, desired *revisionState, plan drift.Plan) {
	planCopy := clonePlan(plan)
	a.mu.Lock()
	st, ok := a.apps[name]
	if !ok {
		a.mu.Unlock()
		return
	}
	s := &st.status // status exception: progress during a pass, replaced by its write
	prev := cloneStatus(*s)
	s.Sync = drift.SyncOutOfSync
	if s.Health != drift.HealthDegraded {
		s.Health = drift.HealthProgressing
	}
	s.Drift = &planCopy
	s.Message = fmt.Sprintf("applying %s: %s", desired.rev.Short(), strings.TrimPrefix(plan.Summary(), "Plan: "))
	next := cloneStatus(*s)
	a.mu.Unlock()
	a.notify(name, "status")
	rev := desired.rev
	a.observe(Report{App: name, Prev: prev, Next: next, Applying: &rev})
}

// Apps returns a copy of every app's status, sorted by name.
func (a *Agent) Apps() []status.AppStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]status.AppStatus, 0, len(a.names))
	for _, name := range a.names {
		out = append(out, cloneStatus(a.apps[name].status))
	}
	return out
}

// App returns a copy of one app's status.
func (a *Agent) App(name string) (status.AppStatus, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.apps[name]
	if !ok {
		return status.AppStatus{}, false
	}
	return cloneStatus(st.status), true
}

// AppConfigs returns the apps' configs with runtime toggles applied.
func (a *Agent) AppConfigs() []config.AppConfig {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]config.AppConfig, 0, len(a.names))
	for _, name := range a.names {
		out = append(out, a.apps[name].cfg)
	}
	return out
}

// Series returns app's ready/desired replica series from since on, one
// per service, oldest point first (the point before since included: it
// still holds at since).
func (a *Agent) Series(app string, since time.Time) []status.ServiceSeries {
	return a.series.Since(app, since)
}

// seriesTick is how often every service's latest count is carried into
// the current minute; less than a minute, so no minute is skipped.
const seriesTick = 20 * time.Second

// recordSeries keeps the replica series: a point per service every
// minute, written to the store once a minute and at shutdown.
func (a *Agent) recordSeries(ctx context.Context) {
	t := time.NewTicker(seriesTick)
	defer t.Stop()
	lastFlush := a.now()
	for {
		select {
		case <-ctx.Done():
			if err := a.series.Flush(a.store, a.now()); err != nil {
				a.log.Warn("replica series not saved at shutdown", "err", err)
			}
			return
		case <-t.C:
			now := a.now()
			a.series.Tick(now, a.appNames())
			if now.Sub(lastFlush) >= time.Minute {
				lastFlush = now
				if err := a.series.Flush(a.store, now); err != nil {
					a.log.Warn("replica series not saved; retrying in a minute", "err", err)
				}
			}
		}
	}
}

// History returns entries newest first.
func (a *Agent) History(q status.HistoryQuery) ([]status.HistoryEntry, error) {
	return a.store.Query(q)
}

// Entry returns one history entry.
func (a *Agent) Entry(id uint64) (status.HistoryEntry, bool) { return a.store.Entry(id) }

// Unquarantine retries the app's quarantined head on purpose: it queues a
// person's pass ("Sync now"), which lifts the quarantine of the commit it
// targets. An error when the head is not quarantined.
func (a *Agent) Unquarantine(app string) error {
	st, ok := a.app(app)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownApp, app)
	}
	a.mu.Lock()
	s := st.status
	quarantined := s.Fetched != nil && s.Release != nil && slices.ContainsFunc(s.Release.Quarantined, func(q status.Quarantine) bool { return q.Revision.SHA == s.Fetched.SHA })
	a.mu.Unlock()
	if !quarantined {
		return fmt.Errorf("%s: the head of its branch is not quarantined; nothing to lift", app)
	}
	a.trigger(context.Background(), app, TriggerManual)
	return nil
}

// Enqueue asks for a pass of app. A webhook or manual trigger also lets
// a rollout under way notice a newer revision.
func (a *Agent) Enqueue(app, trigger string) error {
	_, isApp := a.app(app)
	if !isApp && !a.isSource(app) {
		return fmt.Errorf("%w %q", ErrUnknownApp, app)
	}
	a.trigger(context.Background(), app, trigger)
	return nil
}

// SetSuspended stops (or resumes) applying changes to app. The app is
// still fetched and observed, so its status stays current.
func (a *Agent) SetSuspended(app string, suspended bool) error {
	summary := "suspended: changes are shown but not applied"
	if !suspended {
		summary = "resumed: changes are applied again"
	}
	err := a.setToggle(app, summary, func(p *store.App, st *appState) {
		p.Suspended = &suspended
		st.cfg.Suspend = suspended
		st.status.Suspended = suspended // status exception: a person's toggle shows at once; the pass it enqueues writes the same
	})
	if err == nil && suspended {
		a.preempt(app)
	}
	return err
}

// SetSelfHeal turns repairing drift on or off.
func (a *Agent) SetSelfHeal(app string, on bool) error {
	summary := "self-heal turned on: changes made outside Git are repaired"
	if !on {
		summary = "self-heal turned off: changes made outside Git are shown, not repaired"
	}
	return a.setToggle(app, summary, func(p *store.App, st *appState) {
		p.SelfHeal = &on
		st.cfg.SelfHeal = on
		st.status.SelfHeal = on // status exception: a person's toggle shows at once; the pass it enqueues writes the same
	})
}

func (a *Agent) setToggle(app, summary string, change func(*store.App, *appState)) error {
	st, ok := a.app(app)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownApp, app)
	}
	a.mu.Lock()
	before := st.cfg
	err := a.store.UpdateApp(app, func(p *store.App) { change(p, st) })
	unchanged := before.Suspend == st.cfg.Suspend && before.SelfHeal == st.cfg.SelfHeal
	a.mu.Unlock()
	if err != nil || unchanged {
		// Saying the same twice is not an event worth a history entry.
		return err
	}
	a.recordLogged(status.HistoryEntry{App: app, Kind: status.KindAction, Trigger: TriggerAPI, Summary: summary})
	a.notify(app, "status")
	a.queue.Add(app, TriggerAPI)
	return nil
}

// Pin rolls app back to an earlier revision: it is applied and enforced
// instead of the branch head until Unpin. The revision goes through the
// same validation as any other.
func (a *Agent) Pin(ctx context.Context, app, sha string) error {
	st, ok := a.app(app)
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
		a.queue.Add(app, TriggerAPI)
		return nil
	}
	err = a.store.UpdateApp(app, func(p *store.App) { p.Pinned = &rev })
	if err == nil {
		st.pinned = &rev
		st.status.Pinned = &rev // status exception: a person's pin shows at once; the pass it enqueues writes the same
	}
	ref := st.cfg.RefName()
	a.mu.Unlock()
	if err != nil {
		return err
	}
	a.recordLogged(status.HistoryEntry{App: app, Kind: status.KindRollback, Trigger: TriggerAPI, Revision: &rev,
		Summary: fmt.Sprintf("pinned to %s “%s”; not following %s until unpinned", rev.Short(), rev.Subject, ref)})
	a.notify(app, "status")
	a.preempt(app)
	a.queue.Add(app, TriggerAPI)
	return nil
}

// Unpin makes app follow its ref again.
func (a *Agent) Unpin(app string) error {
	st, ok := a.app(app)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownApp, app)
	}
	a.mu.Lock()
	was := st.pinned
	err := a.store.UpdateApp(app, func(p *store.App) { p.Pinned = nil })
	if err == nil {
		st.pinned = nil
		st.status.Pinned = nil // status exception: a person's unpin shows at once; the pass it enqueues writes the same
	}
	ref := st.cfg.RefName()
	a.mu.Unlock()
	if err != nil {
		return err
	}
	if was != nil {
		a.recordLogged(status.HistoryEntry{App: app, Kind: status.KindRollback, Trigger: TriggerAPI, Revision: was,
			Summary: fmt.Sprintf("unpinned from %s; following %s again", was.Short(), ref)})
		a.preempt(app)
	}
	a.notify(app, "status")
	a.queue.Add(app, TriggerAPI)
	return nil
}

// Subscribe returns a channel of change notifications and a function that
// ends the subscription. A subscriber that does not keep up loses events;
// it never slows the loop down.
func (a *Agent) Subscribe() (<-chan status.Event, func()) {
	ch := make(chan status.Event, 64)
	a.subsMu.Lock()
	id := a.nextSub
	a.nextSub++
	a.subs[id] = ch
	a.subsMu.Unlock()
	var once sync.Once
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
		case ch <- status.Event{App: app, Kind: kind}:
		default:
		}
	}
}

// recordLogged records entries outside a pass; a failure is logged (the
// next pass shows it in status).
func (a *Agent) recordLogged(entries ...status.HistoryEntry) {
	stored, err := a.recordStored(entries...)
	if err != nil {
		a.log.Error("history not written", "err", err)
		return
	}
	if len(stored) > 0 {
		cur, _ := a.App(stored[0].App)
		a.observe(Report{App: stored[0].App, Prev: cur, Next: cur, Entries: stored})
	}
}

// recordStored stores history entries, tells subscribers and returns the
// entries as stored, with their IDs.
func (a *Agent) recordStored(entries ...status.HistoryEntry) ([]status.HistoryEntry, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	for i := range entries {
		if entries[i].Time.IsZero() {
			entries[i].Time = a.now()
		}
	}
	stored, err := a.store.Append(entries...)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if !seen[e.App] {
			seen[e.App] = true
			a.notify(e.App, "history")
		}
	}
	return stored, nil
}

// Ready is nil when the agent's own Docker engine answers and every app
// completed a pass recently: within three intervals, or two minutes if that is longer.
func (a *Agent) Ready() error {
	if err := pingBounded(a.engine); err != nil {
		return err
	}
	if a.swarm != nil {
		if err := pingBounded(a.swarm); err != nil {
			return err
		}
	}
	// A named engine that does not answer is its apps' problem, shown in
	// their status: the agent still does its work for the others, and a
	// supervisor restarting it would not bring that engine back.
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs []error
	for _, name := range a.names {
		st := a.apps[name]
		if st.leftGit != nil || st.removing != nil {
			continue // not run any more; shown as such
		}
		window := max(3*config.ScheduleInterval(st.sched, now), 2*time.Minute)
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

// ErrUnknownEngine: EngineReady was asked about an engine the agent does
// not have.
var ErrUnknownEngine = errors.New("no such engine")

// EngineReady reports whether the engine called name (config.LocalEngine
// for the agent's own) answers, for a per-engine health check; a named
// engine known to be down answers at once.
func (a *Agent) EngineReady(name string) error {
	eng := Engine(a.engine)
	if name != config.LocalEngine {
		named, ok := a.opts.Engines[name]
		if !ok {
			return fmt.Errorf("%w %q", ErrUnknownEngine, name)
		}
		eng = named
	}
	return pingBounded(eng)
}

// pingBounded pings an engine for a health check, which must answer
// within seconds whatever the engine does.
func pingBounded(e Engine) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := e.Ping(ctx); err != nil {
		return engineError(err)
	}
	return nil
}

// statusChanged ignores the fields every pass touches, and Docker's status
// words ("Up 3 minutes"), which change with the clock alone.
func statusChanged(a, b status.AppStatus) bool {
	a, b = cloneStatus(a), cloneStatus(b)
	a.LastPass, a.LastSuccess, a.Reconciling, a.Source.LastFetch = b.LastPass, b.LastSuccess, b.Reconciling, b.Source.LastFetch
	for _, s := range []*status.AppStatus{&a, &b} {
		for i := range s.Services {
			for j := range s.Services[i].Containers {
				s.Services[i].Containers[j].Status = ""
			}
		}
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA != nil || errB != nil || !bytes.Equal(ja, jb)
}

func cloneStatus(s status.AppStatus) status.AppStatus {
	s.Services = slices.Clone(s.Services)
	for i := range s.Services {
		s.Services[i].Containers = slices.Clone(s.Services[i].Containers)
	}
	s.Volumes = slices.Clone(s.Volumes)
	s.Errors = slices.Clone(s.Errors)
	s.Flapping = slices.Clone(s.Flapping)
	s.Held = slices.Clone(s.Held)
	s.Warnings = slices.Clone(s.Warnings)
	s.StateDirs = slices.Clone(s.StateDirs)
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
	s.ForcePush = cloneForcePush(s.ForcePush)
	return s
}

func cloneForcePush(f *status.ForcePush) *status.ForcePush {
	if f == nil {
		return nil
	}
	c := *f
	return &c
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

// The real source satisfies the loop's interface (deploy.Engine's check
// is in the CLI, which wires both: sync does not import deploy).
var _ Source = (*gitsource.Source)(nil)
