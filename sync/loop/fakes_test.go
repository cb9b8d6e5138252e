package loop

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/policy"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/pipeline"
	"github.com/driftless-dev/driftless/sync/status"
)

// fakeSource is a Git repository in memory: commits with their files, and
// a head.
type fakeSource struct {
	mu       sync.Mutex
	commits  map[string]fakeCommit
	head     string
	fetchErr error
	n        int
	// signatures: sha → signer of the commits signed with a trusted key
	// (see VerifyCommit in verify_test.go).
	signatures map[string]gitsource.Signer
}

type fakeCommit struct {
	rev    gitsource.Revision
	files  map[string]string
	parent string // the head it was committed on; "" for the first
}

func newFakeSource() *fakeSource { return &fakeSource{commits: map[string]fakeCommit{}} }

// commit adds a commit and makes it the head. It returns the SHA.
func (s *fakeSource) commit(subject string, files map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	sha := fmt.Sprintf("%07d%033x", s.n, s.n)
	s.commits[sha] = fakeCommit{rev: gitsource.Revision{SHA: sha, Subject: subject, Author: "dev"}, files: files, parent: s.head}
	s.head = sha
	return sha
}

// rewrite force-pushes: a commit on top of base (not the head) becomes
// the head.
func (s *fakeSource) rewrite(base, subject string, files map[string]string) string {
	s.mu.Lock()
	s.head = base
	s.mu.Unlock()
	return s.commit(subject, files)
}

// forget drops a commit, as a clone made after a force-push would not
// hold it.
func (s *fakeSource) forget(sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.commits, sha)
}

func (s *fakeSource) IsAncestor(ctx context.Context, ancestor, descendant string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.commits[ancestor]; !ok {
		return false, fmt.Errorf("commit %s: %w", ancestor, gitsource.ErrCommitNotFound)
	}
	for sha := descendant; sha != ""; sha = s.commits[sha].parent {
		if sha == ancestor {
			return true, nil
		}
	}
	return false, nil
}

func (s *fakeSource) revert(of string, files map[string]string) string {
	sha := s.commit("Revert \"something\"", files)
	s.mu.Lock()
	c := s.commits[sha]
	c.rev.Revert, c.rev.Reverts = true, of
	s.commits[sha] = c
	s.mu.Unlock()
	return sha
}

func (s *fakeSource) setFetchErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetchErr = err
}

func (s *fakeSource) Fetch(ctx context.Context) (gitsource.FetchResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fetchErr != nil {
		return gitsource.FetchResult{}, s.fetchErr
	}
	if s.head == "" {
		return gitsource.FetchResult{}, gitsource.ErrRefNotFound
	}
	return gitsource.FetchResult{Revision: s.commits[s.head].rev, Changed: true}, nil
}

func (s *fakeSource) Files(ctx context.Context, sha string) (fs.FS, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.commits[sha]
	if !ok {
		return nil, gitsource.ErrCommitNotFound
	}
	m := fstest.MapFS{}
	for name, content := range c.files {
		m[name] = &fstest.MapFile{Data: []byte(content)}
	}
	return m, nil
}

func (s *fakeSource) Revision(ctx context.Context, sha string) (gitsource.Revision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.commits[sha]
	if !ok {
		return gitsource.Revision{}, gitsource.ErrCommitNotFound
	}
	return c.rev, nil
}

// fakeEngine is a Docker engine in memory that carries out plans the way
// deploy does, as far as the differ can tell.
type fakeEngine struct {
	pipeline.NoBuilds // buildingEngine adds builds
	mu                sync.Mutex
	containers        []drift.Container
	networks          []drift.Network
	volumes           []drift.Volume
	foreign           []drift.Container // containers driftless does not own
	// duringApply, if set, runs when Apply starts, as if the rollout took
	// a while and someone looked at the status meanwhile.
	duringApply func()
	// badImage never becomes ready: a rollout to it stops at the first
	// replica and leaves the old one serving, as deploy does.
	badImage string
	down     error
	nextID   int
	applies  int
	// interfere makes the next change of the named container fail as if
	// someone removed it during the rollout.
	interfere map[string]drift.Failure
}

func (e *fakeEngine) Ping(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.down
}

func (e *fakeEngine) setDown(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.down = err
}

func (e *fakeEngine) Observe(ctx context.Context, app string, withForeign bool) (drift.Actual, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down != nil {
		return drift.Actual{}, e.down
	}
	var a drift.Actual
	for _, c := range e.containers {
		if c.App == app {
			a.Containers = append(a.Containers, c)
		}
	}
	for _, n := range e.networks {
		if n.App == app {
			a.Networks = append(a.Networks, n)
		}
	}
	for _, v := range e.volumes {
		if v.App == app {
			a.Volumes = append(a.Volumes, v)
		}
	}
	if withForeign {
		a.ForeignContainers = append(a.ForeignContainers, e.foreign...)
		// Every network and volume, as deploy lists them: the external
		// ones the app uses, and their owners' labels.
		for _, n := range e.networks {
			if n.App != app {
				a.ForeignNetworks = append(a.ForeignNetworks, n)
			}
		}
		for _, v := range e.volumes {
			if v.App != app {
				a.ForeignVolumes = append(a.ForeignVolumes, v)
			}
		}
	}
	return a, nil
}

func (e *fakeEngine) Watch(ctx context.Context, onEvent func(drift.EngineEvent)) error {
	<-ctx.Done()
	return ctx.Err()
}

func (e *fakeEngine) Apply(ctx context.Context, desired *manifest.App, plan drift.Plan, opts drift.ApplyOptions) drift.ApplyResult {
	if e.duringApply != nil {
		e.duringApply()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.applies++
	var res drift.ApplyResult
	stopped := map[string]bool{}
	for _, c := range plan.Changes {
		select {
		case <-opts.Stop:
			// Asked to stop at a safe point: what is not begun is skipped.
			res.Outcomes = append(res.Outcomes, drift.Outcome{Change: c, Result: drift.ResultSkipped, Error: "stopped",
				Failure: &drift.Failure{Cause: drift.FailureStopped, Summary: "stopped"}})
			res.Err = fmt.Errorf("stopped")
			continue
		default:
		}
		if f, ok := e.interfere[c.Name]; ok {
			// Someone removes the replica while it is being rolled out.
			delete(e.interfere, c.Name)
			res.Outcomes = append(res.Outcomes, drift.Outcome{Change: c, Result: drift.ResultFailed, Error: f.Summary, Failure: &f})
			res.Err = fmt.Errorf("1 of %d changes did not complete", len(plan.Changes))
			continue
		}
		if svc := desired.Service(c.Service); svc != nil && c.Kind == drift.KindContainer && c.Action != drift.ActionRemove && svc.Spec.Image == e.badImage {
			if stopped[c.Service] {
				res.Outcomes = append(res.Outcomes, drift.Outcome{Change: c, Result: drift.ResultSkipped, Error: "rollout stopped",
					Failure: &drift.Failure{Cause: drift.FailureRollout, Summary: "rollout stopped"}})
				continue
			}
			stopped[c.Service] = true
			f := &drift.Failure{Cause: drift.FailureRollout, Summary: "new replica exited with code 1 (restarted 3 times)", ExitCode: 1, Restarts: 3}
			res.Outcomes = append(res.Outcomes, drift.Outcome{Change: c, Result: drift.ResultFailed, Error: f.Summary, Failure: f})
			if res.Degraded == nil {
				res.Degraded = map[string]*drift.Failure{}
			}
			res.Degraded[c.Service] = f
			res.Err = fmt.Errorf("rollout of %s stopped", c.Service)
			continue
		}
		e.applyChange(desired, plan.Revision, c)
		res.Outcomes = append(res.Outcomes, drift.Outcome{Change: c, Result: drift.ResultDone, Duration: time.Millisecond})
	}
	return res
}

func (e *fakeEngine) applyChange(desired *manifest.App, revision string, c drift.Change) {
	switch c.Kind {
	case drift.KindNetwork:
		e.networks = slices.DeleteFunc(e.networks, func(n drift.Network) bool {
			return n.Name == c.Name && (c.MergeInto == "" || n.ID == c.ID) // a merge removes the duplicate only
		})
		if c.Action != drift.ActionRemove {
			for _, n := range desired.Networks {
				if n.Name == c.Resource {
					e.networks = append(e.networks, drift.Network{ID: e.id(), Name: c.Name, App: desired.Name, Resource: n.Name, SpecHash: n.Hash, Driver: n.Spec.Driver})
				}
			}
		}
	case drift.KindVolume:
		e.volumes = slices.DeleteFunc(e.volumes, func(v drift.Volume) bool { return v.Name == c.Name })
		if c.Action != drift.ActionRemove {
			for _, v := range desired.Volumes {
				if v.Name == c.Resource {
					e.volumes = append(e.volumes, drift.Volume{Name: c.Name, App: desired.Name, Resource: v.Name, SpecHash: v.Hash, Driver: v.Spec.Driver})
				}
			}
		}
	case drift.KindContainer:
		switch c.Action {
		case drift.ActionStart:
			for i := range e.containers {
				if e.containers[i].ID == c.ID {
					e.containers[i].State, e.containers[i].Status, e.containers[i].Ready = drift.StateRunning, "Up 1 second", true
				}
			}
		case drift.ActionRemove:
			e.remove(c.Name)
		case drift.ActionCreate, drift.ActionReplace:
			e.remove(c.Name)
			svc := desired.Service(c.Service)
			spec := svc.Spec
			var nets []string
			for _, n := range spec.Networks {
				nets = append(nets, manifest.ObjectName(desired.Name, n))
			}
			e.containers = append(e.containers, drift.Container{
				ID: e.id(), Name: c.Name, App: desired.Name, Service: svc.Name, Slot: c.Slot,
				SpecHash: svc.Hash, Revision: revision, Spec: &spec, Image: spec.Image,
				State: drift.StateRunning, Status: "Up 1 second", Ready: true, Networks: nets,
				Created: time.Unix(1700000000, 0),
			})
		}
	}
}

func (e *fakeEngine) id() string {
	e.nextID++
	return fmt.Sprintf("id%04d", e.nextID)
}

func (e *fakeEngine) remove(name string) {
	e.containers = slices.DeleteFunc(e.containers, func(c drift.Container) bool { return c.Name == name })
}

// outside changes the engine the way a person with the docker CLI would.
func (e *fakeEngine) outside(f func(e *fakeEngine)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f(e)
}

func (e *fakeEngine) stop(name string) {
	e.outside(func(e *fakeEngine) {
		for i := range e.containers {
			if e.containers[i].Name == name {
				e.containers[i].State, e.containers[i].Status, e.containers[i].ExitCode, e.containers[i].Ready = drift.StateExited, "Exited (137) 1 second ago", 137, false
			}
		}
	})
}

func (e *fakeEngine) rm(name string) { e.outside(func(e *fakeEngine) { e.remove(name) }) }

// running lists "name@revision-prefix" of the app's running containers.
func (e *fakeEngine) running(app string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, c := range e.containers {
		if c.App == app && c.State == drift.StateRunning {
			out = append(out, c.Name+"@"+c.Revision[:7])
		}
	}
	slices.Sort(out)
	return out
}

func (e *fakeEngine) applyCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.applies
}

// fakeClock is the agent's Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// harness is one agent over a fake engine and fake sources.
type harness struct {
	t       testing.TB
	dir     string
	engine  *fakeEngine
	sources map[string]*fakeSource
	clock   *fakeClock
	apps    []config.AppConfig
	agent   *Agent
	// lastResult is how the last pass asked to be requeued.
	lastResult Result
	logs       lockedLog
	// host, when set before open, is the machine the agent judges host
	// paths on; zero: the real one.
	host policy.Host
	// jobs, when set before open, runs the apps' jobs.
	jobs JobRunner
	// engines, when set before open, are the named engines.
	engines map[string]NamedEngine
}

// lockedLog is the agent's Info log, for tests of what it says.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// lines returns the log lines holding s, and forgets the log.
func (l *lockedLog) take(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.buf.String(), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	l.buf.Reset()
	return out
}

func newHarness(t testing.TB, apps ...config.AppConfig) *harness {
	h := &harness{t: t, dir: t.TempDir(), engine: &fakeEngine{}, sources: map[string]*fakeSource{},
		clock: &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, apps: apps}
	for _, a := range apps {
		h.sources[a.Name] = newFakeSource()
	}
	h.open()
	return h
}

// open starts an agent on the harness's data dir (again, after close).
func (h *harness) open() {
	h.t.Helper()
	a, err := New(Options{
		DataDir: h.dir, Apps: h.apps, Engine: h.engine, Now: h.clock.Now,
		Logger:    slog.New(slog.NewTextHandler(&h.logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		NewSource: func(c config.AppConfig) (Source, error) { return h.sources[c.Name], nil },
		Host:      h.host,
		Jobs:      h.jobs,
		Engines:   h.engines,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.agent = a
	h.t.Cleanup(func() { a.Close() })
}

func (h *harness) restart() {
	h.agent.Close()
	h.open()
}

// pass runs one pass of app synchronously and returns its status.
func (h *harness) pass(app, trigger string) (status.AppStatus, error) {
	h.t.Helper()
	res, err := h.agent.reconcile(context.Background(), app, strings.Split(trigger, "+"))
	h.lastResult = res
	st, _ := h.agent.App(app)
	return st, err
}

func (h *harness) history(app string, kinds ...status.HistoryKind) []status.HistoryEntry {
	h.t.Helper()
	es, err := h.agent.History(status.HistoryQuery{App: app, Kinds: kinds, Limit: 500})
	if err != nil {
		h.t.Fatal(err)
	}
	return es
}

func appConfig(name string) config.AppConfig {
	return config.AppConfig{Name: name, Repo: "https://git.example.com/infra.git", Branch: "main", Interval: "30s",
		SelfHeal: true, MaxRemovalPercent: 50}
}

func service(name, image string, replicas int) string {
	return fmt.Sprintf("apiVersion: driftless.dev/v1\nkind: Service\nmetadata:\n  name: %s\nspec:\n  image: %s\n  replicas: %d\n", name, image, replicas)
}

var errUnreachable = fmt.Errorf("fetch branch main from https://git.example.com/infra.git: %w: dial tcp: connection refused", gitsource.ErrUnreachable)
