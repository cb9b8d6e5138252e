// Package faults injects one kind of fault each into a running agent (its
// own death, the engine's, the git server's, a corrupt database, a full
// disk, a burst of work) and checks the agent came through and made
// nothing worse.
package faults

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// The fault tests (fault_*_test.go) inject one kind of fault each into a
// running agent — its own death, the engine's, the Git server's, a
// corrupt database, a full disk, a newer commit in the middle of a large
// rollout — and then check, as a user would with the API and docker, that
// the agent survived it and made nothing worse: exactly the declared
// replicas of the head revision run and are ready, no slot has two
// containers and no parked "-old-" replica is left, objects that are not
// the app's are untouched, and history names only commits that exist and
// claims no revision ran that never did.

// TestMain prints the fault suite's summary after every test ran. Two
// fault tests at a time at most: each starts private engines or kills the
// agent's, and more of those at once starve a 2-core machine.
func TestMain(m *testing.M) {
	code := testenv.Main(m, 2)
	printFaultSummary()
	os.Exit(code)
}

// faultRow is one line of the summary: a kind of fault, how many were
// injected, and whether the agent came through all of them.
type faultRow struct {
	Fault  string
	Count  int
	Result string
	Notes  []string
}

var faultSummary struct {
	mu   sync.Mutex
	rows []*faultRow
}

// recordFault adds a row to the summary; its result is the test's.
func recordFault(t *testing.T, fault string) *faultRow {
	row := &faultRow{Fault: fault}
	faultSummary.mu.Lock()
	faultSummary.rows = append(faultSummary.rows, row)
	faultSummary.mu.Unlock()
	t.Cleanup(func() {
		faultSummary.mu.Lock()
		defer faultSummary.mu.Unlock()
		switch {
		case t.Failed():
			row.Result = "FAIL"
		case t.Skipped():
			row.Result = "skipped"
		default:
			row.Result = "ok"
		}
	})
	return row
}

func (r *faultRow) add(n int) {
	faultSummary.mu.Lock()
	defer faultSummary.mu.Unlock()
	r.Count += n
}

func (r *faultRow) note(format string, args ...any) {
	faultSummary.mu.Lock()
	defer faultSummary.mu.Unlock()
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// printFaultSummary prints the table to stdout (go test -v shows it) and
// writes it to e2e/artifacts/fault-summary.txt for CI.
func printFaultSummary() {
	faultSummary.mu.Lock()
	defer faultSummary.mu.Unlock()
	if len(faultSummary.rows) == 0 {
		return
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "FAULT\tCOUNT\tRESULT\tNOTES")
	for _, r := range faultSummary.rows {
		result := r.Result
		if result == "" {
			result = "not finished"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", r.Fault, r.Count, result, strings.Join(r.Notes, "; "))
	}
	w.Flush()
	fmt.Printf("\nfault-injection summary:\n%s\n", b.String())
	if _, file, _, ok := runtime.Caller(0); ok {
		dir := filepath.Join(filepath.Dir(file), "..", "artifacts") // e2e/artifacts
		if os.MkdirAll(dir, 0o755) == nil {
			_ = os.WriteFile(filepath.Join(dir, "fault-summary.txt"), []byte(b.String()), 0o644)
		}
	}
}

// faultSeed is DRIFTLESS_FAULT_SEED, or the clock; the test logs it so a
// failing run can be repeated.
func faultSeed(t *testing.T, row *faultRow) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DRIFTLESS_FAULT_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("DRIFTLESS_FAULT_SEED=%q: %v", s, err)
		}
		seed = v
	}
	return seededRand(t, row, seed)
}

// seededRand is the random source of a fault run, with its seed logged.
func seededRand(t *testing.T, row *faultRow, seed uint64) *rand.Rand {
	t.Helper()
	t.Logf("fault seed: %d (repeat with DRIFTLESS_FAULT_SEED=%d)", seed, seed)
	fmt.Printf("%s: fault seed %d\n", t.Name(), seed)
	row.note("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// dockerCLI runs the docker CLI against one engine: the host's (env nil)
// or a private one.
type dockerCLI struct {
	env []string
}

func (d dockerCLI) try(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Env = d.env
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (d dockerCLI) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := d.try(args...)
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// faultContainer is one container labelled with the app, as docker ps
// shows it.
type faultContainer struct {
	Name, ID, State, Slot, SpecHash, Revision string
}

func (d dockerCLI) appContainers(t *testing.T, app string) []faultContainer {
	t.Helper()
	out := d.run(t, "ps", "-a", "--no-trunc", "--filter", "label="+drift.LabelApp+"="+app, "--format",
		`{{.Names}}|{{.ID}}|{{.State}}|{{.Label "`+drift.LabelSlot+`"}}|{{.Label "`+drift.LabelSpecHash+`"}}|{{.Label "`+drift.LabelRevision+`"}}`)
	var cs []faultContainer
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 6 {
			t.Fatalf("unexpected docker ps line %q", line)
		}
		cs = append(cs, faultContainer{Name: f[0], ID: f[1], State: f[2], Slot: f[3], SpecHash: f[4], Revision: f[5]})
	}
	slices.SortFunc(cs, func(a, b faultContainer) int { return strings.Compare(a.Name, b.Name) })
	return cs
}

func idsOf(cs []faultContainer) map[string]string {
	m := map[string]string{}
	for _, c := range cs {
		m[c.Name] = c.ID
	}
	return m
}

// svcState is what one commit declares for the app's only service.
type svcState struct {
	Image    string
	Replicas int
	Env      map[string]string
	// Plain: no readiness section, ready after the settle time.
	Plain bool
}

func (s svcState) manifest() string {
	if s.Plain {
		return testenv.PlainService("web", s.Image, s.Replicas)
	}
	return testenv.ServiceManifest(s.Image, s.Replicas, s.Env)
}

// variant is what needs a new container when it changes: all but the
// replica count.
func (s svcState) variant() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s plain=%v", s.Image, s.Plain)
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		fmt.Fprintf(&b, " %s=%s", k, s.Env[k])
	}
	return b.String()
}

func (s svcState) with(f func(*svcState)) svcState {
	s.Env = maps.Clone(s.Env)
	f(&s)
	return s
}

// rigOptions set up a faultRig.
type rigOptions struct {
	env   []string  // the agent's environment; nil: this process's
	dk    dockerCLI // the engine the agent drives
	flags []string  // after the source flags; default --interval 1s
	// serve starts a git server for baseDir and returns its URL; default
	// a git daemon.
	serve func(t *testing.T, baseDir string) string
	data  string // data directory; default a new temporary one
	// extraFiles are committed with the first manifest.
	extraFiles map[string]string
	noStart    bool
}

// faultRig is one app in a git repository, an agent following it, and the
// book-keeping the checks need: what every commit declares and when it
// was pushed.
type faultRig struct {
	t       *testing.T
	app     string
	path    string
	repo    *gitserver.Repo
	repoURL string
	data    string
	args    []string
	env     []string
	dk      dockerCLI
	agent   *testenv.Agent

	states   map[string]svcState
	reverts  map[string]bool
	pushedAt map[string]time.Time
	order    []string
	foreign  *foreignObjects
	// pastLogs is the output of the rig's earlier agent processes.
	pastLogs strings.Builder
}

func newFaultRig(t *testing.T, first svcState, o rigOptions) *faultRig {
	t.Helper()
	app := testenv.UniqueApp(t)
	base := t.TempDir()
	serve := o.serve
	if serve == nil {
		serve = func(t *testing.T, base string) string { return gitserver.RunDaemon(t, base).URL }
	}
	url := serve(t, base)
	if o.data == "" {
		o.data = t.TempDir()
	}
	if o.flags == nil {
		o.flags = []string{"--interval", "1s"}
	}
	r := &faultRig{t: t, app: app, path: "apps/" + app, data: o.data, env: o.env, dk: o.dk,
		states: map[string]svcState{}, reverts: map[string]bool{}, pushedAt: map[string]time.Time{}}
	r.repo = gitserver.Init(t, base, "infra")
	r.repoURL = r.repo.URL(url)
	for p, content := range o.extraFiles {
		r.repo.WriteFile(p, content)
	}
	r.commit("deploy web", first)
	r.args = append([]string{"run", "--repo", r.repoURL, "--branch", "main", "--path", r.path, "--app", app, "--allow-insecure-transport"}, o.flags...)
	if !o.noStart {
		r.start()
	}
	return r
}

func (r *faultRig) start() {
	r.t.Helper()
	if r.agent != nil {
		r.pastLogs.WriteString(r.agent.Logs())
	}
	r.agent = testenv.StartAgentEnv(r.t, r.env, r.data, r.args...)
}

// kill SIGKILLs the agent and starts a new one on the same data directory.
func (r *faultRig) killAndRestart() {
	r.t.Helper()
	r.agent.Kill(r.t)
	r.start()
}

func (r *faultRig) head() string { return r.order[len(r.order)-1] }

// commit pushes a manifest declaring s.
func (r *faultRig) commit(msg string, s svcState) string {
	r.t.Helper()
	r.repo.WriteFile(r.path+"/web.yaml", s.manifest())
	at := time.Now()
	sha := r.repo.Commit(msg)
	r.note(sha, s, at)
	return sha
}

// revertHead pushes `git revert HEAD`.
func (r *faultRig) revertHead() string {
	r.t.Helper()
	if len(r.order) < 2 {
		r.t.Fatal("nothing to revert")
	}
	prev := r.states[r.order[len(r.order)-2]]
	at := time.Now()
	sha := r.repo.Revert(r.head())
	r.note(sha, prev, at)
	r.reverts[sha] = true
	return sha
}

func (r *faultRig) note(sha string, s svcState, at time.Time) {
	r.states[sha] = s
	r.pushedAt[sha] = at
	r.order = append(r.order, sha)
}

func (r *faultRig) status() (status.AppStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return r.agent.Client().App(ctx, r.app)
}

func (r *faultRig) wait(timeout time.Duration, what string, ok func(status.AppStatus) bool) status.AppStatus {
	r.t.Helper()
	return testenv.WaitApp(r.t, r.agent, timeout, what, func(ctx context.Context, c *web.Client) (status.AppStatus, error) {
		return c.App(ctx, r.app)
	}, ok)
}

// waitHead waits until the head commit is applied, synced, healthy and
// every declared replica is ready, and returns how long that took.
func (r *faultRig) waitHead(timeout time.Duration, what string) time.Duration {
	r.t.Helper()
	t0 := time.Now()
	sha := r.head()
	s := r.states[sha]
	r.wait(timeout, what, testenv.ConvergedTo(sha, s.Replicas, s.Image))
	return time.Since(t0)
}

// readyz is the agent's /readyz status code.
func (r *faultRig) readyz() int {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(r.agent.URL + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// checkRunning checks what runs on the engine against the head commit:
// the API and docker agree, exactly replicas containers named
// <app>-web-1..N, one per slot, running, no parked old replica, all of the
// head's variant and one spec hash, and the app's only network.
func (r *faultRig) checkRunning(what string) {
	r.t.Helper()
	ct := &countingT{T: r.t}
	r.checkRunningT(ct, what)
	if ct.failed {
		r.t.FailNow()
	}
}

// countingT is a *testing.T that remembers whether Errorf was called
// through it, so a check can stop the test for its own failures only.
type countingT struct {
	*testing.T
	failed bool
}

func (c *countingT) Errorf(format string, args ...any) {
	c.T.Helper()
	c.failed = true
	c.T.Errorf(format, args...)
}

func (r *faultRig) checkRunningT(t *countingT, what string) {
	t.Helper()
	sha := r.head()
	want := r.states[sha]
	cs := r.dk.appContainers(r.t, r.app)
	var names []string
	hashes := map[string]bool{}
	for _, c := range cs {
		names = append(names, c.Name)
		hashes[c.SpecHash] = true
		if c.State != "running" {
			t.Errorf("%s: container %s is %s, want running", what, c.Name, c.State)
		}
		if c.Slot != strings.TrimPrefix(c.Name, r.app+"-web-") {
			t.Errorf("%s: container %s carries slot %q", what, c.Name, c.Slot)
		}
		got, known := r.states[c.Revision]
		switch {
		case !known:
			t.Errorf("%s: container %s carries revision %q, which is not one of the commits", what, c.Name, c.Revision)
		case got.variant() != want.variant():
			t.Errorf("%s: container %s was made by %s (%s), want the head's variant %s", what, c.Name, short(c.Revision), got.variant(), want.variant())
		}
	}
	var wantNames []string
	for i := 1; i <= want.Replicas; i++ {
		wantNames = append(wantNames, fmt.Sprintf("%s-web-%d", r.app, i))
	}
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Errorf("%s: the app's containers are %v, want exactly %v (no duplicate slot, no -old- leftover, no orphan)", what, names, wantNames)
	}
	if len(hashes) > 1 {
		t.Errorf("%s: containers have %d different spec hashes: %+v", what, len(hashes), cs)
	}
	st, err := r.status()
	if err != nil {
		r.t.Fatalf("%s: status: %v", what, err)
	}
	apiIDs := map[string]string{}
	for _, svc := range st.Services {
		for _, c := range svc.Containers {
			apiIDs[c.Name] = c.ID
			if !c.Ready {
				t.Errorf("%s: the API says %s is not ready: %s", what, c.Name, c.ReadyReason)
			}
		}
	}
	if !maps.Equal(apiIDs, idsOf(cs)) {
		t.Errorf("%s: the API's containers %v differ from docker's %v", what, apiIDs, idsOf(cs))
	}
	nets := r.dk.run(r.t, "network", "ls", "--filter", "label="+drift.LabelApp+"="+r.app, "--format", "{{.Name}}")
	if nets != r.app+"-default" {
		t.Errorf("%s: the app's networks are %q, want only %s-default", what, nets, r.app)
	}
	if r.foreign != nil {
		r.foreign.check(t, r.dk, what)
	}
}

// history is every history entry of the app, oldest first.
func (r *faultRig) history() []status.HistoryEntry {
	r.t.Helper()
	var all []status.HistoryEntry
	var before uint64
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		page, err := r.agent.Client().History(ctx, r.app, nil, before, 500)
		cancel()
		if err != nil {
			r.t.Fatalf("history: %v", err)
		}
		all = append(all, page.Entries...)
		if page.Next == 0 || len(page.Entries) == 0 {
			break
		}
		before = page.Next
	}
	slices.Reverse(all)
	return all
}

// checkHistory checks that history is consistent: entries in order, every
// revision named is one of the commits (revert commits marked as such),
// and, when ev is given, no sync that says it succeeded names a revision
// that did not run: between the push and the entry, the engine ran
// exactly that revision's replicas of that revision's variant at some
// moment.
func (r *faultRig) checkHistory(what string, ev *eventLog) []status.HistoryEntry {
	r.t.Helper()
	entries := r.history()
	var prev status.HistoryEntry
	for i, e := range entries {
		if i > 0 && (e.ID <= prev.ID || e.Time.Before(prev.Time)) {
			r.t.Errorf("%s: history out of order: #%d at %s after #%d at %s", what, e.ID, e.Time, prev.ID, prev.Time)
		}
		prev = e
		if e.Revision == nil {
			continue
		}
		s, known := r.states[e.Revision.SHA]
		if !known {
			r.t.Errorf("%s: history entry #%d (%s) names revision %s, which is not one of the commits", what, e.ID, e.Kind, e.Revision.SHA)
			continue
		}
		if r.reverts[e.Revision.SHA] && !e.Revision.Revert {
			r.t.Errorf("%s: history entry #%d names the revert %s without marking it a revert", what, e.ID, short(e.Revision.SHA))
		}
		if ev == nil || e.Kind != status.KindSync || e.Result != "succeeded" {
			continue
		}
		from, to := r.pushedAt[e.Revision.SHA], e.Time.Add(500*time.Millisecond)
		if !ev.ran(r, s, from, to) {
			r.t.Errorf("%s: history entry #%d at %s says %s (%d × %s) was synced, but the engine never ran exactly that between its push at %s and then",
				what, e.ID, e.Time.Format("15:04:05.000"), short(e.Revision.SHA), s.Replicas, s.variant(), from.Format("15:04:05.000"))
		}
	}
	return entries
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// foreignObjects are containers and networks that are not the app's but
// are named (and in one case labelled) as close to it as possible; no
// fault may touch them.
type foreignObjects struct {
	containers map[string]string // name → ID
	networks   map[string]string
}

// plantForeign creates the foreign objects and removes them when the test
// ends (before the app's own clean-up).
func plantForeign(t *testing.T, dk dockerCLI, app, image string) *foreignObjects {
	t.Helper()
	f := &foreignObjects{containers: map[string]string{}, networks: map[string]string{}}
	t.Cleanup(func() {
		for name := range f.containers {
			if out, err := dk.try("rm", "-f", name); err != nil {
				t.Logf("cleanup foreign container %s: %v %s", name, err, out)
			}
		}
		for name := range f.networks {
			if out, err := dk.try("network", "rm", name); err != nil {
				t.Logf("cleanup foreign network %s: %v %s", name, err, out)
			}
		}
	})
	for _, n := range []struct {
		name   string
		labels []string
	}{
		{app + "-defaults", nil},
		{app + "x-default", []string{drift.LabelApp + "=" + app + "x", drift.LabelResource + "=default"}},
	} {
		args := []string{"network", "create", "--internal"}
		for _, l := range n.labels {
			args = append(args, "--label", l)
		}
		f.networks[n.name] = dk.run(t, append(args, n.name)...)
	}
	for _, c := range []struct {
		name   string
		labels []string
	}{
		// A parked replica's name, without the labels.
		{app + "-web-1-old-0123456789ab", nil},
		// A slot the app never reaches (the tests stay below 100 replicas).
		{app + "-web-100", nil},
		// Another app whose name starts with this one's.
		{app + "x-web-1", []string{drift.LabelApp + "=" + app + "x", drift.LabelService + "=web", drift.LabelSlot + "=1"}},
	} {
		// unless-stopped: an engine restart does not stop them for good.
		args := []string{"run", "-d", "--name", c.name, "--network", "none", "--restart", "unless-stopped"}
		for _, l := range c.labels {
			args = append(args, "--label", l)
		}
		f.containers[c.name] = dk.run(t, append(args, image)...)
	}
	return f
}

// addSlowStopper adds a foreign container that ignores its stop signal,
// as many real programs do: stopping it (and so stopping the engine)
// takes its whole stop timeout before Docker kills it.
func (f *foreignObjects) addSlowStopper(t *testing.T, dk dockerCLI, name, image string, timeout time.Duration) {
	t.Helper()
	// Go ignores SIGWINCH unless asked to handle it.
	f.containers[name] = dk.run(t, "run", "-d", "--name", name, "--network", "none", "--restart", "unless-stopped",
		"--stop-signal", "SIGWINCH", "--stop-timeout", strconv.Itoa(int(timeout.Seconds())), image)
}

// check fails the test if a foreign object is gone, replaced, renamed or
// no longer running.
func (f *foreignObjects) check(t interface {
	Helper()
	Errorf(string, ...any)
}, dk dockerCLI, what string) {
	t.Helper()
	for name, id := range f.containers {
		out, err := dk.try("inspect", "-f", "{{.Id}} {{.State.Status}} {{.Name}}", id)
		if want := id + " running /" + name; err != nil || out != want {
			t.Errorf("%s: foreign container %s was touched: inspect says %q (%v), want %q", what, name, out, err, want)
		}
	}
	for name, id := range f.networks {
		out, err := dk.try("network", "inspect", "-f", "{{.Id}} {{.Name}}", id)
		if want := id + " " + name; err != nil || out != want {
			t.Errorf("%s: foreign network %s was touched: inspect says %q (%v), want %q", what, name, out, err, want)
		}
	}
}

// eventLog records the engine's container events of one app, so that
// what ran at any moment can be rebuilt without sampling gaps.
type eventLog struct {
	app string
	mu  sync.Mutex
	evs []events.Message
	err error
}

// startEventLog follows the engine's events of the app's containers from
// now until the test ends.
func startEventLog(t *testing.T, cli *client.Client, app string) *eventLog {
	t.Helper()
	l := &eventLog{app: app}
	ctx, cancel := context.WithCancel(context.Background())
	since := strconv.FormatInt(time.Now().Add(-time.Second).Unix(), 10)
	res := cli.Events(ctx, client.EventsListOptions{Since: since,
		Filters: make(client.Filters).Add("type", string(events.ContainerEventType)).Add("label", drift.LabelApp+"="+app)})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case m, ok := <-res.Messages:
				if !ok {
					return
				}
				l.mu.Lock()
				l.evs = append(l.evs, m)
				l.mu.Unlock()
			case err := <-res.Err:
				if ctx.Err() == nil {
					l.mu.Lock()
					l.err = err
					l.mu.Unlock()
				}
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

// ctrRun is a container as the event log rebuilds it.
type ctrRun struct {
	name, revision string
	running        bool
}

// ran reports whether, at some moment in [from, to], the app's running
// containers (parked ones aside) were exactly s.Replicas of s's variant.
func (l *eventLog) ran(r *faultRig, s svcState, from, to time.Time) bool {
	l.mu.Lock()
	evs := slices.Clone(l.evs)
	err := l.err
	l.mu.Unlock()
	if err != nil {
		r.t.Fatalf("the engine's event stream broke: %v", err)
	}
	slices.SortStableFunc(evs, func(a, b events.Message) int { return cmp.Compare(a.TimeNano, b.TimeNano) })
	state := map[string]*ctrRun{}
	matches := func() bool {
		n := 0
		for _, c := range state {
			if !c.running || strings.Contains(c.name, "-old-") {
				continue
			}
			cs, ok := r.states[c.revision]
			if !ok || cs.variant() != s.variant() {
				return false
			}
			n++
		}
		return n == s.Replicas
	}
	checked := false
	for _, m := range evs {
		at := time.Unix(0, m.TimeNano)
		if at.After(from) && !checked {
			checked = true
			if matches() {
				return true
			}
		}
		if at.After(to) {
			return false
		}
		id, attrs := m.Actor.ID, m.Actor.Attributes
		switch string(m.Action) {
		case "create":
			state[id] = &ctrRun{name: attrs["name"], revision: attrs[drift.LabelRevision]}
		case "start":
			if c := state[id]; c != nil {
				c.running = true
			}
		case "die":
			if c := state[id]; c != nil {
				c.running = false
			}
		case "rename":
			if c := state[id]; c != nil {
				c.name = attrs["name"]
			}
		case "destroy":
			delete(state, id)
		}
		if at.After(from) && matches() {
			return true
		}
	}
	return !checked && matches()
}

// counts returns, for the app, the number of containers created so far
// and the most that ran at once.
func (l *eventLog) counts() (created, maxRunning int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	running := map[string]bool{}
	for _, m := range l.evs {
		switch string(m.Action) {
		case "create":
			created++
		case "start":
			running[m.Actor.ID] = true
		case "die", "destroy":
			delete(running, m.Actor.ID)
		}
		maxRunning = max(maxRunning, len(running))
	}
	return created, maxRunning
}

// pollUntil polls cond every interval until it is true or timeout passes.
func pollUntil(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}
