package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/previews"
	"github.com/driftless-dev/driftless/sync/refusal"
	"github.com/driftless-dev/driftless/sync/sources"
	"github.com/driftless-dev/driftless/sync/status"
)

// Sources: repositories whose trees say which apps exist (sources: in
// driftless.yaml). A source's discovery is a pass of its own, queued
// under sourceKey(name) beside the apps' passes, so webhooks, polls and
// backoff work the same way:
//
//	fetch → verify (if the source verifies) → read the tree → Discover
//	→ expand each app from the source's template → apply the set
//
// Applying the set adds the new apps (their first pass is queued at
// once), updates the changed ones through their own next pass, and for
// apps no longer declared either queues their removal (prune: true;
// containers and networks go, volumes stay) or marks them "no longer in
// Git" and leaves them untouched. A revision whose set cannot be read is
// refused as a whole: the last accepted set keeps running. The accepted
// set is kept in the store, so a restart brings every generated app back
// even while the source's repository is unreachable.

// sourceKeyPrefix marks a source's discovery in the queue; it cannot
// start an app name.
const sourceKeyPrefix = "source:"

func sourceKey(name string) string { return sourceKeyPrefix + name }

func isSourceKey(key string) bool { return strings.HasPrefix(key, sourceKeyPrefix) }

// TriggerSource: a source added, changed or dropped the app.
const TriggerSource = "source"

// AppRemover removes what an app runs. *deploy.Engine satisfies it.
type AppRemover interface {
	// RemoveAppObjects removes the app's containers and networks, and
	// its volumes unless keepVolumes.
	RemoveAppObjects(ctx context.Context, app string, keepVolumes bool) error
}

// sourceState is one source. cfg and repo are fixed; accepted is owned
// by the worker running the source's discovery; status by Agent.mu.
type sourceState struct {
	cfg      config.SourceConfig
	repo     Source
	accepted keptSource
	status   status.SourceSet
}

// keptSource is what the store keeps of a source: its last accepted
// revision and the apps it declared.
type keptSource struct {
	Revision gitsource.Revision `json:"revision"`
	Apps     []sources.App      `json:"apps"`
	// Previews are a source of previews' branches, by branch.
	Previews map[string]previews.Preview `json:"previews,omitempty"`
}

// branchLister is a Source that lists the remote's branches
// (*gitsource.Source).
type branchLister interface {
	Branches(ctx context.Context) ([]gitsource.Branch, error)
}

// removal is why a generated app is being removed, and whether its
// volumes go too (a preview's do).
type removal struct {
	source, at  string
	keepVolumes bool
}

// addSource prepares a source at New: its clone and its poll.
func (a *Agent) addSource(sc config.SourceConfig) error {
	if _, dup := a.sources[sc.Name]; dup {
		return fmt.Errorf("source %q is configured twice", sc.Name)
	}
	repoCfg := sc.App
	repoCfg.Name, repoCfg.Path = "source-"+sc.Name, ""
	repo, err := a.opts.NewSource(repoCfg)
	if err != nil {
		return fmt.Errorf("source %s: %w", sc.Name, err)
	}
	interval := sc.App.Interval
	if interval == "" {
		interval = config.DefaultInterval
	}
	sched, err := config.ParseSchedule(interval)
	if err != nil {
		return fmt.Errorf("source %s: interval: %w", sc.Name, err)
	}
	ss := &sourceState{cfg: sc, repo: repo, status: status.SourceSet{
		Name: sc.Name, Generator: sc.Describe(), Prune: sc.Prune,
		Source: status.SourceStatus{URL: config.RedactURL(sc.App.Repo), Ref: sc.App.RefName()},
	}}
	a.sources[sc.Name] = ss
	key := sourceKey(sc.Name)
	a.cron.Schedule(sched, cron.FuncJob(func() { a.queue.Add(key, TriggerPoll) }))
	return nil
}

func (a *Agent) sourceNames() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.sources))
	for name := range a.sources {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// isSource reports whether key is a source's queue key.
func (a *Agent) isSource(key string) bool {
	if !isSourceKey(key) {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.sources[strings.TrimPrefix(key, sourceKeyPrefix)]
	return ok
}

// Sources returns every source as last read, sorted by name.
func (a *Agent) Sources() []status.SourceSet {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]status.SourceSet, 0, len(a.sources))
	for _, ss := range a.sources {
		s := ss.status
		s.Apps, s.LeftGit = slices.Clone(s.Apps), slices.Clone(s.LeftGit)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// restoreSourceApps brings back, at New, the apps each source declared
// at its last accepted revision.
func (a *Agent) restoreSourceApps() {
	for _, name := range a.sourceNames() {
		ss := a.sources[name]
		data, err := a.store.LoadSource(name)
		if err != nil || data == nil {
			if err != nil {
				a.log.Warn("the apps of a source were not restored; they return with its first discovery", "source", name, "err", err)
			}
			continue
		}
		var kept keptSource
		if err := json.Unmarshal(data, &kept); err != nil {
			a.log.Warn("the apps of a source were not restored; they return with its first discovery", "source", name, "err", err)
			continue
		}
		cfgs, err := ss.cfg.AppsFor(kept.Apps)
		if ss.cfg.Branches != nil {
			cfgs, err = previews.Apps(ss.cfg, kept.Previews)
		}
		if err != nil {
			a.log.Warn("the apps of a source were not restored; they return with its first discovery", "source", name, "err", err)
			continue
		}
		ss.accepted = kept
		a.applyAppSet(ss, kept.Revision, cfgs, false, nil)
	}
}

// discover is one pass of a source.
func (a *Agent) discover(ctx context.Context, name string) error {
	a.mu.Lock()
	ss, ok := a.sources[name]
	a.mu.Unlock()
	if !ok {
		return nil
	}
	if ss.cfg.Branches != nil {
		return a.discoverPreviews(ctx, ss)
	}
	res, err := ss.repo.Fetch(ctx)
	now := a.now()
	if err != nil {
		a.mu.Lock()
		if ss.status.Source.Error == "" {
			ss.status.Source.ErrorSince = now
		}
		ss.status.Source.Error = err.Error()
		a.mu.Unlock()
		return fmt.Errorf("source %s: %w", name, err)
	}
	rev := res.Revision
	a.mu.Lock()
	ss.status.Source.LastFetch, ss.status.Source.Error, ss.status.Source.ErrorSince = now, "", time.Time{}
	refusedSame := ss.status.Refused != nil && ss.status.Refused.Revision.SHA == rev.SHA
	a.mu.Unlock()
	if rev.SHA == ss.accepted.Revision.SHA || refusedSame {
		return nil // nothing new
	}
	apps, cfgs, refusal, err := a.readAppSet(ctx, ss, rev)
	if err != nil {
		return fmt.Errorf("source %s: %w", name, err)
	}
	if refusal == nil {
		refusal = a.conflicts(ss, cfgs, rev)
	}
	if refusal != nil {
		// History first: whoever sees the refusal in the status finds it
		// in the history too.
		a.recordLogged(status.HistoryEntry{App: sourceKey(name), Kind: status.KindRefused, Trigger: TriggerSource,
			Revision: &rev, Result: "refused", Summary: "set of apps refused: " + refusal.Reason, Errors: refusal.Errors})
		a.mu.Lock()
		ss.status.Refused = refusal
		a.mu.Unlock()
		a.log.Warn("source revision refused; the last accepted set of apps keeps running", "source", name, "revision", rev.Short(), "reason", refusal.Reason)
		return nil
	}
	ss.accepted = keptSource{Revision: rev, Apps: apps}
	if data, err := json.Marshal(ss.accepted); err == nil {
		if err := a.store.SaveSource(name, data); err != nil {
			a.log.Warn("the apps of a source were not saved; a restart waits for its first discovery", "source", name, "err", err)
		}
	}
	a.mu.Lock()
	ss.status.Refused = nil
	a.mu.Unlock()
	a.applyAppSet(ss, rev, cfgs, true, nil)
	return nil
}

// readAppSet reads the apps rev declares; a refusal when the commit or its
// set is not acceptable, an error when the repository could not be read.
func (a *Agent) readAppSet(ctx context.Context, ss *sourceState, rev gitsource.Revision) ([]sources.App, []config.AppConfig, *status.Refusal, error) {
	if _, refusal, err := refusal.Verify(ctx, ss.repo, ss.cfg.App, rev); err != nil || refusal != nil {
		return nil, nil, refusal, err
	}
	fsys, err := ss.repo.Files(ctx, rev.SHA)
	if err != nil {
		return nil, nil, nil, err
	}
	apps, err := sources.Discover(fsys, ss.cfg.Generator, ss.cfg.MaxApps)
	if err == nil {
		var cfgs []config.AppConfig
		if cfgs, err = ss.cfg.AppsFor(apps); err == nil {
			return apps, cfgs, nil, nil
		}
	}
	r := &status.Refusal{Revision: rev, Reason: "the set of apps cannot be read; fix it in a new commit (the last accepted set keeps running)"}
	for _, line := range strings.Split(err.Error(), "\n") {
		if line != "" {
			r.Errors = append(r.Errors, line)
		}
	}
	return nil, nil, r, nil
}

// conflicts refuses a set that names an app configured elsewhere.
func (a *Agent) conflicts(ss *sourceState, cfgs []config.AppConfig, rev gitsource.Revision) *status.Refusal {
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs []string
	for _, c := range cfgs {
		st, ok := a.apps[c.Name]
		if !ok || st.cfg.Source == ss.cfg.Name {
			continue
		}
		where := "under apps: in driftless.yaml"
		if st.cfg.Source != "" {
			where = "by source " + st.cfg.Source
		}
		errs = append(errs, fmt.Sprintf("app %s (%s) is already declared %s: rename its directory or entry", c.Name, c.Path, where))
	}
	if len(errs) == 0 {
		return nil
	}
	return &status.Refusal{Revision: rev, Reason: "app names collide; fix them in a new commit (the last accepted set keeps running)", Errors: errs}
}

// applyAppSet makes the source's apps those of cfgs. record: write the
// changes to history (not at a restart's restore). notKept says, by
// branch, why a source of previews keeps no preview of a branch it still
// has (its ttl ran out, no room): a removal says so.
func (a *Agent) applyAppSet(ss *sourceState, rev gitsource.Revision, cfgs []config.AppConfig, record bool, notKept map[string]string) {
	name := ss.cfg.Name
	// at says where the set was read: a commit, or a source of previews'
	// branches (rev has no SHA then).
	ch := &appSetChange{a: a, source: name, at: "in its branches", record: record}
	if rev.SHA != "" {
		ch.at, ch.rev = "at "+rev.Short(), &rev
	}
	want := map[string]bool{}
	for _, c := range cfgs {
		want[c.Name] = true
		ch.declared(c)
	}
	var left []string
	for _, app := range a.appNames() {
		st, _ := a.app(app)
		if st == nil || want[app] {
			continue
		}
		a.mu.Lock()
		mine, preview := st.cfg.Source == name, st.cfg.Preview
		a.mu.Unlock()
		if !mine {
			continue
		}
		if (ss.cfg.Prune || preview != nil) && a.opts.Remover != nil {
			at := ch.at
			if preview != nil && notKept[preview.Branch] != "" {
				at += ": " + notKept[preview.Branch]
			}
			ch.remove(app, st, preview != nil, at)
			continue
		}
		left = append(left, app)
		ch.leave(app, st, rev.SHA)
	}
	a.mu.Lock()
	ss.status.Revision = ch.rev
	ss.status.Apps = slices.Sorted(maps.Keys(want))
	ss.status.LeftGit = left
	a.mu.Unlock()
	a.recordLogged(ch.entries...)
	for _, app := range ch.queue {
		a.queue.Add(app, TriggerSource)
	}
	a.notify(sourceKey(name), "status")
}

// appSetChange is one application of a source's set of apps: the history
// it writes and the apps it queues.
type appSetChange struct {
	a       *Agent
	source  string
	at      string              // "at 1a2b3c4" or "in its branches"
	rev     *gitsource.Revision // nil for a source of previews
	record  bool
	entries []status.HistoryEntry
	queue   []string
}

func (c *appSetChange) note(app, summary string) {
	if c.record {
		c.entries = append(c.entries, status.HistoryEntry{App: app, Kind: status.KindApps, Trigger: TriggerSource, Revision: c.rev, Result: "ok", Summary: summary})
	}
}

// declared adds an app the set declares, or hands its changed
// configuration to its next pass, or brings it back into Git.
func (c *appSetChange) declared(cfg config.AppConfig) {
	a := c.a
	st, ok := a.app(cfg.Name)
	if !ok {
		if err := a.addRuntimeApp(cfg); err != nil {
			a.log.Warn("a generated app was not added", "source", c.source, "app", cfg.Name, "err", err)
			return
		}
		c.note(cfg.Name, fmt.Sprintf("added: source %s declares it %s (%s)", c.source, c.at, describeGenerated(cfg)))
		c.queue = append(c.queue, cfg.Name)
		return
	}
	a.mu.Lock()
	back := st.leftGit != nil || st.removing != nil
	changed := !st.cfg.SameGenerated(cfg)
	st.leftGit, st.removing, st.status.LeftGit = nil, nil, nil
	if changed {
		next := cfg
		next.Suspend, next.SecretKey = st.cfg.Suspend, a.secretKey
		st.nextCfg = &next
	}
	a.mu.Unlock()
	switch {
	case back:
		c.note(cfg.Name, fmt.Sprintf("back in Git: source %s declares it again %s", c.source, c.at))
	case changed:
		c.note(cfg.Name, fmt.Sprintf("changed: source %s %s", c.source, c.at))
	}
	if back || changed {
		c.queue = append(c.queue, cfg.Name)
	}
}

// remove queues the removal of an app the set no longer declares (a
// preview's volumes go with it).
func (c *appSetChange) remove(app string, st *appState, preview bool, at string) {
	a := c.a
	a.mu.Lock()
	fresh := st.removing == nil
	st.removing = &removal{source: c.source, at: at, keepVolumes: !preview}
	a.mu.Unlock()
	if fresh {
		a.preempt(app)
		c.queue = append(c.queue, app)
	}
}

// leave marks an app the set no longer declares, with prune off: shown,
// never touched.
func (c *appSetChange) leave(app string, st *appState, sha string) {
	a := c.a
	a.mu.Lock()
	fresh := st.leftGit == nil
	if fresh {
		st.leftGit = &status.LeftGit{Source: c.source, Revision: sha, Since: a.now()}
		st.status.LeftGit = st.leftGit
		st.status.Message = fmt.Sprintf("no longer in Git: source %s does not declare it %s; what it runs is left untouched (prune: true on the source removes it)", c.source, c.at)
	}
	a.mu.Unlock()
	if fresh {
		a.preempt(app)
		c.note(app, fmt.Sprintf("no longer in Git: source %s does not declare it %s; left running, untouched (the source does not prune)", c.source, c.at))
		a.notify(app, "status")
	}
}

// addRuntimeApp adds an app while the agent runs.
func (a *Agent) addRuntimeApp(cfg config.AppConfig) error {
	st, err := a.newApp(cfg)
	if err != nil {
		return err
	}
	if a.store != nil {
		if p, err := a.store.LoadApp(cfg.Name); err == nil {
			st.restore(p)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, dup := a.apps[cfg.Name]; dup {
		return fmt.Errorf("app %q exists", cfg.Name)
	}
	if other, taken := a.nameTaken(cfg); taken {
		return fmt.Errorf("app %q: engine %s already runs an app called %s (%s)", cfg.Name, cfg.EngineName(), cfg.NameOnEngine(), other)
	}
	a.insertApp(st)
	return nil
}

// decommission removes what a generated app runs and then the app.
func (a *Agent) decommission(ctx context.Context, name string, r removal) error {
	_, remover := a.placed(name)
	err := remover.RemoveAppObjects(ctx, a.nameOnEngine(name), r.keepVolumes)
	if err != nil {
		a.mu.Lock()
		if st, ok := a.apps[name]; ok {
			st.status.Message = "removing (no longer in Git): " + err.Error()
		}
		a.mu.Unlock()
		a.notify(name, "status")
		return fmt.Errorf("remove app %s: %w", name, err)
	}
	a.mu.Lock()
	st, ok := a.apps[name]
	if ok && st.removing != nil {
		delete(a.apps, name)
		a.names = slices.DeleteFunc(a.names, func(n string) bool { return n == name })
		a.cron.Remove(st.cronID)
	}
	a.mu.Unlock()
	if !ok || st.removing == nil {
		return nil // declared again meanwhile
	}
	a.queue.Forget(name)
	a.jobs.forget(name)
	a.metrics.Forget(name)
	a.recordLogged(status.HistoryEntry{App: name, Kind: status.KindApps, Trigger: TriggerSource, Result: "ok",
		Summary: fmt.Sprintf("removed: source %s no longer declares it %s; %s", r.source, r.at, removedWhat(r.keepVolumes))})
	a.log.Info("removed an app its source no longer declares", "app", name, "source", r.source)
	a.notify(name, "removed")
	return nil
}

// previewStatus shows what makes an app a preview; nil for other apps.
func previewStatus(cfg config.AppConfig) *status.Preview {
	p := cfg.Preview
	if p == nil {
		return nil
	}
	s := &status.Preview{Branch: p.Branch, URL: p.URL}
	if p.Ports.Size > 0 {
		s.Ports = fmt.Sprintf("%d-%d", p.Ports.Base, p.Ports.Base+p.Ports.Size-1)
	}
	return s
}

func removedWhat(keepVolumes bool) string {
	if keepVolumes {
		return "its containers and networks are removed, its volumes kept"
	}
	return "its containers, networks and volumes are removed"
}

// describeGenerated says where a generated app comes from, for history.
func describeGenerated(c config.AppConfig) string {
	if c.Preview != nil {
		return "preview of branch " + c.Preview.Branch
	}
	return c.Path
}

// takeNextConfig applies a configuration its source changed, at the start
// of the app's own pass (the worker owns the source and the schedule then).
func (a *Agent) takeNextConfig(st *appState) {
	a.mu.Lock()
	next := st.nextCfg
	st.nextCfg = nil
	a.mu.Unlock()
	if next == nil {
		return
	}
	var src Source
	if next.Repo != st.cfg.Repo || next.RefName() != st.cfg.RefName() || next.Path != st.cfg.Path {
		s, err := a.opts.NewSource(*next)
		if err != nil {
			a.log.Warn("a changed generated app keeps its previous source", "app", next.Name, "err", err)
			return
		}
		src = s
	}
	sched, err := config.ParseSchedule(next.Interval)
	a.mu.Lock()
	defer a.mu.Unlock()
	if src != nil {
		st.source = src
	}
	// Parsed revisions depend on the configuration (a preview's ports, the
	// path): the head is parsed again with it, even at the same commit.
	st.revisions = newRevisionCache()
	st.mem.accepted, st.mem.restoreSHA = nil, ""
	if err == nil && next.Interval != st.cfg.Interval {
		a.cron.Remove(st.cronID)
		name := next.Name
		st.sched = sched
		st.cronID = a.cron.Schedule(sched, cron.FuncJob(func() { a.trigger(a.baseCtx(), name, TriggerPoll) }))
	}
	st.cfg = *next
	st.status.Source = status.SourceStatus{URL: config.RedactURL(next.Repo), Ref: next.RefName(), Path: next.Path}
}

// discoverPreviews is one pass of a source of previews: list the remote's
// branches (one round trip), keep a preview per matching branch — the
// same block of host ports as before, the oldest first within
// maxPreviews, none whose branch has not moved for preview.ttl — and
// apply that set.
func (a *Agent) discoverPreviews(ctx context.Context, ss *sourceState) error {
	name := ss.cfg.Name
	lister, ok := ss.repo.(branchLister)
	if !ok {
		return fmt.Errorf("source %s: its repository cannot list branches", name)
	}
	branches, err := lister.Branches(ctx)
	now := a.now()
	a.mu.Lock()
	if err != nil {
		if ss.status.Source.Error == "" {
			ss.status.Source.ErrorSince = now
		}
		ss.status.Source.Error = err.Error()
	} else {
		ss.status.Source.LastFetch, ss.status.Source.Error, ss.status.Source.ErrorSince = now, "", time.Time{}
	}
	a.mu.Unlock()
	if err != nil {
		return fmt.Errorf("source %s: %w", name, err)
	}
	next, dropped := previews.Next(ss.cfg, ss.accepted.Previews, branches, now)
	notKept := map[string]string{}
	for _, d := range dropped {
		a.log.Info("preview not kept", "source", name, "branch", d.String())
		notKept[d.Branch] = d.Reason
	}
	cfgs, err := previews.Apps(ss.cfg, next)
	if err != nil {
		return fmt.Errorf("source %s: %w", name, err)
	}
	if refusal := a.conflicts(ss, cfgs, gitsource.Revision{}); refusal != nil {
		a.mu.Lock()
		ss.status.Refused = refusal
		a.mu.Unlock()
		return nil
	}
	ss.accepted = keptSource{Previews: next}
	if data, err := json.Marshal(ss.accepted); err == nil {
		if err := a.store.SaveSource(name, data); err != nil {
			a.log.Warn("the previews of a source were not saved; a restart waits for its first discovery", "source", name, "err", err)
		}
	}
	a.mu.Lock()
	ss.status.Refused = nil
	a.mu.Unlock()
	a.applyAppSet(ss, gitsource.Revision{}, cfgs, true, notKept)
	return nil
}
