package compose

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/machinelock"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestComposeCorpus runs the compose apps the loader is golden-tested on
// (manifest/compose/testdata/compose/*) end to end: each in its own Git
// repository on a git daemon, all of them followed by one `driftless run
// --config driftless.yaml`, against the real engine. For every app:
// `driftless validate` accepts it; the agent deploys it (Synced and
// Healthy through the API, the containers `docker ps` and `docker
// inspect` show, with what the file declares); each committed change
// rolls exactly the services it concerns; `git revert` brings the
// previous containers back; a container removed with `docker rm -f` is
// recreated and recorded as a repair.
//
// The files are the corpus's, adapted only where this machine cannot run
// what they say; each adaptation is listed in the stack with its reason
// and logged. What every stack shares: images are stand-ins made from the
// driftless binary under a namespace unique to the run (no registry), and
// host ports are free ones (the apps run at once on a shared machine
// where 80, 443, 53 or 8080 may be taken).
func TestComposeCorpus(t *testing.T) {
	t.Parallel()
	machinelock.Heavy(t)
	stacks := corpusStacks()
	if only := os.Getenv("E2E_COMPOSE_STACKS"); only != "" {
		// For working on one stack: E2E_COMPOSE_STACKS=web-db-cache,override
		stacks = slices.DeleteFunc(stacks, func(s corpusStack) bool { return !slices.Contains(strings.Split(only, ","), s.dir) })
	}
	images := testenv.NewImageSet(t)
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	corpus := filepath.Join(testenv.RepoRoot(t), "manifest", "compose", "testdata", "compose")

	var configs []testenv.ComposeAppConfig
	runs := map[string]*stackRun{}
	for _, s := range stacks {
		app := testenv.UniqueApp(t)
		a := loadComposeApp(t, app, filepath.Join(corpus, s.dir))
		delete(a.Files, "want.txt")     // the loader's golden output
		delete(a.Files, "profiles.txt") // the golden test's profiles: in driftless.yaml here
		a.namespaceImages(images)
		// Polled every 3s, not every second: seventeen fetches a second
		// are a load of their own on a two-core machine.
		// Suspended until its turn (see corpusAtOnce).
		cfg := testenv.ComposeAppConfig{Name: app, Branch: "main", Path: ".", Interval: "3s", Suspend: true}
		r := &stackRun{stack: s, app: a, images: images}
		if s.setup != nil {
			s.setup(t, r, &cfg)
		}
		images.Ensure(a.Images(load.Options{Profiles: cfg.Profiles, Environment: cfg.Environment, Policy: policy.Policy{Allow: cfg.Allow}})...)
		r.repo = gitserver.Init(t, base, s.dir)
		a.Write(r.repo.Work)
		r.first = r.repo.Commit("deploy " + s.dir)
		cfg.Repo = r.repo.URL(server.URL)
		r.cfg = cfg
		configs = append(configs, cfg)
		runs[s.dir] = r
	}
	// Eight apps reconciled at once, not all of them: a pass that rolls a
	// stack waits mostly for the engine, but thirty-odd at once were a
	// storm of creates that slowed every other package's tests running
	// beside this one on a two-core CI machine (a 40-replica scale-up
	// there took over 3 minutes instead of 10 s).
	agent := testenv.StartConfigAgent(t, configs, "--workers", strconv.Itoa(min(len(configs), corpusWorkers)))

	// The stacks run corpusAtOnce at a time, each as a subtest. Not with
	// t.Parallel: that would run only -parallel (GOMAXPROCS) of them at a
	// time, and they mostly wait for the engine.
	var wg sync.WaitGroup
	turns := make(chan struct{}, corpusAtOnce)
	for _, s := range stacks {
		r := runs[s.dir]
		r.agent = agent
		wg.Go(func() {
			t.Run(s.dir, func(t *testing.T) {
				turns <- struct{}{}
				defer func() { <-turns }()
				start := time.Now()
				r.t = t
				defer r.tearDown()
				if err := r.agent.Client().Resume(t.Context(), r.app.Name); err != nil {
					t.Fatalf("resume %s: %v", r.app.Name, err)
				}
				r.runAll()
				t.Logf("%s (app %s): %s (%s)", s.dir, r.app.Name, time.Since(start).Round(100*time.Millisecond), strings.Join(r.phases, ", "))
			})
		})
	}
	wg.Wait()
}

// tearDown suspends the stack's app and removes its containers, networks
// and volumes, so the stacks that come after it have the machine.
func (r *stackRun) tearDown() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.agent.Client().Suspend(ctx, r.app.Name); err != nil {
		r.t.Logf("suspend %s: %v", r.app.Name, err)
		return
	}
	testenv.RemoveApp(r.t, r.app.Name)
}

// corpusWait bounds each wait for convergence or a repair. Several
// stacks deploy and roll at once, beside other test packages on a
// two-core CI machine, so the bound is generous: it only decides how long
// a real failure takes to report, with the last status in the message.
const corpusWait = 5 * time.Minute

// corpusAtOnce is how many stacks run at a time; each is removed when it
// is done. All forty at once kept a hundred-odd containers with their
// healthchecks on a two-core machine (load average 35-45): Docker's own
// one-second healthcheck timeouts expired, and the e2e/engines tests
// beside them timed out on their ssh engine.
const corpusAtOnce = 8

// corpusWorkers is the agent's --workers for the corpus.
const corpusWorkers = 8

// corpusStack is one app of the corpus and what to check about it.
type corpusStack struct {
	dir string
	// replicas are the services (driftless names) and their replicas.
	replicas map[string]int
	// setup adapts the files to this machine and sets the app's entry in
	// driftless.yaml (profiles, environment, allow, prune).
	setup func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig)
	// check looks at the first deployment as a user would.
	check func(t *testing.T, r *stackRun)
	// changes are committed in order; the last one is a change to the
	// compose file, and is reverted afterwards.
	changes []stackChange
	// heal is the service whose first replica is removed by hand.
	heal string
	// keeps, when set, runs before heal's removal to write what the
	// replica must keep (a file in its anonymous volume or its state
	// directory); the check it returns runs once the replica is back.
	keeps func(t *testing.T, r *stackRun) func(t *testing.T)
	// warnings are what `driftless validate` prints and the agent's
	// status shows as warnings, relative to the app directory.
	warnings []string
}

// stackChange is one commit and what it must do.
type stackChange struct {
	what  string
	edits []fileEdit
	// rolls are the services that get new containers; every other
	// service keeps its containers.
	rolls []string
	// replicas, when set, are the services after the change.
	replicas map[string]int
	// during starts watching at the commit, until done closes; it
	// returns a check to run once the change converged.
	during func(r *stackRun, done <-chan struct{}) func(t *testing.T)
	check  func(t *testing.T, r *stackRun)
}

// fileEdit replaces the first Old in File with New.
type fileEdit struct{ File, Old, New string }

// stackRun is one stack's app, repository and agent.
type stackRun struct {
	t      *testing.T
	stack  corpusStack
	app    *composeApp
	images *testenv.ImageSet
	repo   *gitserver.Repo
	cfg    testenv.ComposeAppConfig
	agent  *testenv.Agent
	first  string
	// phases are the stack's steps and how long each took, for the log.
	phases []string
	since  time.Time
}

// phase records how long the step that ends now took.
func (r *stackRun) phase(what string) {
	now := time.Now()
	if !r.since.IsZero() {
		r.phases = append(r.phases, fmt.Sprintf("%s %s", what, now.Sub(r.since).Round(100*time.Millisecond)))
	}
	r.since = now
}

// c is the Docker name of a replica.
func (r *stackRun) c(service string, slot int) string {
	return fmt.Sprintf("%s-%s-%d", r.app.Name, service, slot)
}

func (r *stackRun) runAll() {
	t, s := r.t, r.stack
	r.phase("")
	for _, ad := range r.app.Adapted {
		t.Logf("adapted %s: %q -> %q: %s", ad.File, ad.Old, ad.New, ad.Why)
	}

	// driftless validate, as a user runs it in a clone.
	args := []string{"validate", ".", "--app", r.app.Name}
	if len(r.cfg.Profiles) > 0 {
		args = append(args, "--profile", strings.Join(r.cfg.Profiles, ","))
	}
	if len(r.cfg.Allow) > 0 {
		args = append(args, "--allow", strings.Join(r.cfg.Allow, ","))
	}
	out, code := testenv.RunDriftless(t, t.Context(), r.repo.Work, r.cfg.Environment, args...)
	wantValid := fmt.Sprintf(".: valid: compose app %s with %d service(s)", r.app.Name, len(s.replicas))
	if code != 0 || !strings.Contains(out, wantValid) {
		t.Fatalf("driftless %s: exit %d, want 0 and %q:\n%s", strings.Join(args, " "), code, wantValid, out)
	}
	if got := strings.Count(out, "warning: "); got != len(s.warnings) {
		t.Errorf("driftless validate printed %d warning(s), want %d %q:\n%s", got, len(s.warnings), s.warnings, out)
	}
	for _, w := range s.warnings {
		if !strings.Contains(out, "warning: "+w+"\n") {
			t.Errorf("driftless validate does not warn %q:\n%s", w, out)
		}
	}
	r.phase("validate")

	// The agent deploys it.
	replicas := s.replicas
	st := r.waitConverged("the first deployment", r.first, replicas)
	r.phase("deploy")
	if st.Refused != nil || len(st.Errors) > 0 {
		t.Errorf("status after the first deployment: refused %+v, errors %+v", st.Refused, st.Errors)
	}
	if len(st.Warnings) != len(s.warnings) {
		t.Errorf("status warnings %q, want %q", st.Warnings, s.warnings)
	}
	for _, w := range s.warnings {
		if !slices.Contains(st.Warnings, w) {
			t.Errorf("status warnings %q lack %q", st.Warnings, w)
		}
	}
	r.checkContainers(replicas)
	if s.check != nil {
		s.check(t, r)
	}

	// Each change rolls exactly what it concerns.
	var last string
	var beforeLast map[string]string
	var replicasBeforeLast map[string]int
	for i, ch := range s.changes {
		before := testenv.ServiceContainers(t, r.app.Name)
		beforeHashes := specHashes(t, r.app.Name)
		for _, e := range ch.edits {
			body, err := readRepoFile(r.repo, e.File)
			if err != nil || !strings.Contains(body, e.Old) {
				t.Fatalf("change %q: %q not in %s (%v)", ch.what, e.Old, e.File, err)
			}
			r.repo.WriteFile(e.File, strings.Replace(body, e.Old, e.New, 1))
		}
		var finish func(*testing.T)
		done := make(chan struct{})
		stopWatching := sync.OnceFunc(func() { close(done) })
		defer stopWatching() // also when the wait below fails the test
		if ch.during != nil {
			finish = ch.during(r, done)
		}
		sha := r.repo.Commit(ch.what)
		r.syncNow()
		if i == len(s.changes)-1 {
			last, beforeLast, replicasBeforeLast = sha, beforeHashes, replicas
		}
		if ch.replicas != nil {
			replicas = ch.replicas
		}
		r.waitConverged(ch.what, sha, replicas)
		r.phase(fmt.Sprintf("change %d", i+1))
		stopWatching()
		if finish != nil {
			finish(t)
		}
		r.checkContainers(replicas)
		after := testenv.ServiceContainers(t, r.app.Name)
		for svc, names := range after {
			kept := maps.Equal(names, before[svc])
			switch rolls := slices.Contains(ch.rolls, svc); {
			case rolls && len(before[svc]) > 0 && kept:
				t.Errorf("%s: service %s should have rolled, its containers are unchanged: %v", ch.what, svc, names)
			case rolls:
				for name, id := range names {
					if before[svc][name] == id {
						t.Errorf("%s: %s of service %s was not replaced", ch.what, name, svc)
					}
				}
			case !kept && before[svc] != nil:
				t.Errorf("%s: service %s should not have been touched: containers %v, before %v", ch.what, svc, names, before[svc])
			}
		}
		if ch.check != nil {
			ch.check(t, r)
		}
	}

	// git revert brings the previous containers back.
	if last != "" {
		reverted := r.repo.Revert(last)
		r.syncNow()
		r.waitConverged("the revert of "+last[:7], reverted, replicasBeforeLast)
		r.phase("revert")
		replicas = replicasBeforeLast
		if got := specHashes(t, r.app.Name); !maps.Equal(got, beforeLast) {
			t.Errorf("after reverting %s the services run spec hashes %v, want the ones before it %v", last[:7], got, beforeLast)
		}
		syncs := testenv.History(t, r.agent.Client(), r.app.Name, string(status.KindSync))
		if len(syncs) == 0 || syncs[0].Revision == nil || syncs[0].Revision.SHA != reverted || !syncs[0].Revision.Revert {
			t.Errorf("the newest sync entry should be the revert %s, marked as one: %+v", reverted[:7], firstOf(syncs))
		}
	}

	// A container removed by hand is recreated and recorded as a repair.
	if s.heal != "" {
		victim := r.c(s.heal, 1)
		head := r.repo.Head()
		var kept func(*testing.T)
		if s.keeps != nil {
			kept = s.keeps(t, r)
		}
		testenv.Docker(t, "rm", "-f", victim)
		want := victim + " was removed outside Git; recreated"
		testenv.WaitAppStatus(t, r.agent, r.app.Name, corpusWait, "the repair of "+victim, func(st status.AppStatus) bool {
			return testenv.ConvergedServices(head, replicas)(st) && slices.ContainsFunc(testenv.History(t, r.agent.Client(), r.app.Name, string(status.KindRepair)),
				func(e status.HistoryEntry) bool { return e.Summary == want })
		})
		r.phase("heal")
		r.checkContainers(replicas)
		if kept != nil {
			kept(t)
		}
	}
}

func firstOf[T any](s []T) any {
	if len(s) == 0 {
		return nil
	}
	return s[0]
}

func readRepoFile(repo *gitserver.Repo, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(repo.Work, filepath.FromSlash(name)))
	return string(b), err
}

// syncNow asks the agent to sync the app at once, as a push webhook
// does: the stacks' changes are not left to the 3 s poll, which the
// poll tests cover.
func (r *stackRun) syncNow() {
	r.t.Helper()
	if err := r.agent.Client().Sync(r.t.Context(), r.app.Name); err != nil {
		r.t.Fatalf("sync %s: %v", r.app.Name, err)
	}
}

// waitConverged waits until sha runs with the replicas, Synced and Healthy.
func (r *stackRun) waitConverged(what, sha string, replicas map[string]int) status.AppStatus {
	r.t.Helper()
	return testenv.WaitAppStatus(r.t, r.agent, r.app.Name, corpusWait, what+" ("+sha[:7]+") to converge", testenv.ConvergedServices(sha, replicas))
}

// checkContainers compares docker ps with the replicas: every slot runs
// under its name, nothing else exists (a completed job has exited 0).
func (r *stackRun) checkContainers(replicas map[string]int) {
	r.t.Helper()
	var want []string
	for svc, n := range replicas {
		for slot := 1; slot <= n; slot++ {
			want = append(want, r.c(svc, slot))
		}
	}
	slices.Sort(want)
	got := testenv.DockerContainers(r.t, r.app.Name)
	var names []string
	for _, c := range got {
		names = append(names, c.Name)
		if c.State != "running" && !(c.State == "exited" && testenv.FieldString(testenv.Inspect(r.t, "container", c.Name), "State.ExitCode") == "0") {
			r.t.Errorf("%s is %s", c.Name, c.State)
		}
	}
	if !slices.Equal(names, want) {
		r.t.Errorf("docker ps shows %v, want %v", names, want)
	}
}

// --- Checks used by the stacks ----------------------------------------------

// containerEnv is a container's environment as a map.
func containerEnv(t *testing.T, name string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, kv := range testenv.Field(testenv.Inspect(t, "container", name), "Config.Env").([]any) {
		k, v, _ := strings.Cut(kv.(string), "=")
		env[k] = v
	}
	return env
}

// wantEnv checks some variables of a container's environment.
func wantEnv(t *testing.T, name string, want map[string]string) {
	t.Helper()
	env := containerEnv(t, name)
	for k, v := range want {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("%s: env %s = %q (set: %v), want %q", name, k, got, ok, v)
		}
	}
}

// wantInspect checks fields of `docker inspect`, rendered as JSON (strings
// bare).
func wantInspect(t *testing.T, name string, want map[string]string) {
	t.Helper()
	v := testenv.Inspect(t, "container", name)
	for _, path := range slices.Sorted(maps.Keys(want)) {
		if got := testenv.FieldString(v, path); got != want[path] {
			t.Errorf("%s: %s = %s, want %s", name, path, got, want[path])
		}
	}
}

// wantFile checks a file's content inside a container.
func wantFile(t *testing.T, container, path, want string) {
	t.Helper()
	if got := testenv.ContainerFile(t, container, path); got != want {
		t.Errorf("%s:%s = %q, want %q", container, path, got, want)
	}
}

// wantProbe checks that url answers from inside a container.
func wantProbe(t *testing.T, container, url string) {
	t.Helper()
	// Seconds on a quiet machine; a docker exec on a loaded two-core CI
	// machine can itself take several.
	deadline := time.Now().Add(time.Minute)
	for {
		err := probeFrom(container, url)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Error(err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// httpGet fetches a URL on a published port and returns the body.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	// A published port answers once docker-proxy and the replica behind it
	// do; on a loaded two-core machine that took more than 10 s (EOF).
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return string(body)
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			t.Errorf("GET %s: %v", url, err)
			return ""
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// mountOf returns the container's HostConfig.Mounts entry for a target.
func mountOf(t *testing.T, container, target string) map[string]any {
	t.Helper()
	mounts, _ := testenv.Field(testenv.Inspect(t, "container", container), "HostConfig.Mounts").([]any)
	for _, m := range mounts {
		if mm := m.(map[string]any); mm["Target"] == target {
			return mm
		}
	}
	t.Errorf("%s has no mount at %s: %v", container, target, mounts)
	return map[string]any{}
}

// startedAt is when Docker last started a container.
func startedAt(t *testing.T, name string) time.Time {
	t.Helper()
	return timeField(t, name, "State.StartedAt")
}

func timeField(t *testing.T, name, path string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, testenv.FieldString(testenv.Inspect(t, "container", name), path))
	if err != nil {
		t.Fatalf("%s %s: %v", name, path, err)
	}
	return at
}

// defaultBridgeWorks tells whether Docker's default bridge network can
// hold a container on this machine (its Linux bridge exists).
func defaultBridgeWorks(t *testing.T) bool {
	t.Helper()
	name, err := testenv.DockerTry("network", "inspect", "bridge", "--format", `{{index .Options "com.docker.network.bridge.name"}}`)
	if err != nil {
		return false
	}
	_, err = net.InterfaceByName(strings.TrimSpace(name))
	return err == nil
}

// externals creates external networks and volumes and removes them after
// the app's containers are gone.
func externals(t *testing.T, app string, networks, volumes []string) {
	t.Helper()
	for _, n := range networks {
		testenv.Docker(t, "network", "create", n)
	}
	for _, v := range volumes {
		testenv.Docker(t, "volume", "create", v)
	}
	t.Cleanup(func() {
		testenv.RemoveApp(t, app) // containers first: they hold the network and volumes
		for _, n := range networks {
			if out, err := testenv.DockerTry("network", "rm", n); err != nil {
				t.Logf("cleanup: %v %s", err, out)
			}
		}
		for _, v := range volumes {
			if out, err := testenv.DockerTry("volume", "rm", v); err != nil {
				t.Logf("cleanup: %v %s", err, out)
			}
		}
	})
}

// putInVolume writes a file into a volume through a created (never
// started) container.
func putInVolume(t *testing.T, image, volume, name, body string) {
	t.Helper()
	ctr := testenv.Docker(t, "create", "-v", volume+":/v", image)
	defer testenv.DockerTry("rm", "-f", ctr)
	cp := exec.Command("docker", "cp", "-", ctr+":/v")
	cp.Stdin = strings.NewReader(string(testenv.TarOf(t, map[string]string{name: body})))
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("docker cp into volume %s: %v\n%s", volume, err, out)
	}
}

// sampleRunning counts, until done, the running containers of a service
// at every moment it looks; it returns the minimum and maximum seen.
func sampleRunning(app, service string, done <-chan struct{}) func() (lo, hi int) {
	var mu sync.Mutex
	lo, hi := 1<<30, 0
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			out, err := testenv.DockerTry("ps", "-q", "--filter", "label=dev.driftless.app="+app,
				"--filter", "label=dev.driftless.service="+service, "--filter", "status=running")
			if err == nil {
				n := len(strings.Fields(out))
				mu.Lock()
				lo, hi = min(lo, n), max(hi, n)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() (int, int) {
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return lo, hi
	}
}

// corpusStacks are the 17 apps of manifest/compose/testdata/compose.
// corpusStacks are the corpus's stacks: the first round's here, each
// later group in its own file.
func corpusStacks() []corpusStack {
	return slices.Concat(firstRoundStacks(), roundTwoStacks(), swarmFileStacks(), appStoreStacks(), composeFileStacks())
}

func firstRoundStacks() []corpusStack {
	probe := func(url string) string {
		return `["CMD", "/driftless", "workload", "probe", "` + url + `"]`
	}
	const noProbeTools = "the stand-in image has no shell, wget, pg_isready, redis-cli or rabbitmq-diagnostics: the workload's own probe checks the same port"
	const freePort = "host ports: a free one (the apps run at once on a shared machine)"
	return []corpusStack{
		{
			dir:      "compose-names",
			replicas: map[string]int{"my-api": 1, "frontend": 1, "job-runner": 1},
			check: func(t *testing.T, r *stackRun) {
				// The names the file uses keep working as host names (the
				// shop/api image listens on 8000).
				fe := r.c("frontend", 1)
				for _, host := range []string{"my_api", "legacy_api", "my-api"} {
					wantProbe(t, fe, "http://"+host+":8000/healthz")
				}
				for _, host := range []string{"runner", "job.runner", "job-runner"} {
					wantProbe(t, fe, "http://"+host+":8080/healthz")
				}
				nets := testenv.Field(testenv.Inspect(t, "container", r.c("job-runner", 1)), "NetworkSettings.Networks").(map[string]any)
				if _, ok := nets[r.app.Name+"-front-net"]; !ok || len(nets) != 1 {
					t.Errorf("job-runner should be on %s-front-net only: %v", r.app.Name, slices.Collect(maps.Keys(nets)))
				}
			},
			changes: []stackChange{{
				what:  "my_api: PEER=frontend",
				edits: []fileEdit{{File: "compose.yaml", Old: "PEER: Frontend", New: "PEER: frontend"}},
				rolls: []string{"my-api"},
				check: func(t *testing.T, r *stackRun) {
					wantEnv(t, r.c("my-api", 1), map[string]string{"PEER": "frontend"})
				},
			}},
			heal: "job-runner",
		},
		{
			dir:      "env-interpolation",
			replicas: map[string]int{"api": 1, "worker": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				// The app's environment wins over .env: API_PORT=8001 there
				// becomes a free port, with no change to the files.
				cfg.Environment = map[string]string{"API_PORT": strconv.Itoa(r.app.Port("api", 1))}
			},
			check: func(t *testing.T, r *stackRun) {
				wantEnv(t, r.c("api", 1), map[string]string{
					"APP_ENV": "production-api", "DB_HOST": "db.internal", "TZ": "UTC", "LOG_LEVEL": "info",
					"PUBLIC_URL": "https://shop.example.com/api", "REGION": "eu-west-1",
				})
				wantEnv(t, r.c("worker", 1), map[string]string{"APP_ENV": "production", "TZ": "UTC", "QUEUE": "default", "CONCURRENCY": "4"})
				wantInspect(t, r.c("api", 1), map[string]string{"Config.Image": r.images.Ref("shop/api:3")})
				wantInspect(t, r.c("worker", 1), map[string]string{"Config.Image": r.images.Ref("shop/worker:1")})
				// The published port answers, and shows the variable from api.env.
				var page struct{ Env map[string]string }
				body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", r.app.Port("api", 1)))
				if err := json.Unmarshal([]byte(body), &page); err != nil || page.Env["APP_ENV"] != "production-api" {
					t.Errorf("GET / on the published port: %q (%v), want APP_ENV=production-api", body, err)
				}
			},
			changes: []stackChange{{
				what:  ".env: DOMAIN=shop.example.org",
				edits: []fileEdit{{File: ".env", Old: "DOMAIN=shop.example.com", New: "DOMAIN=shop.example.org"}},
				rolls: []string{"api"},
				check: func(t *testing.T, r *stackRun) {
					wantEnv(t, r.c("api", 1), map[string]string{"PUBLIC_URL": "https://shop.example.org/api"})
				},
			}, {
				what:  "worker: CONCURRENCY=8",
				edits: []fileEdit{{File: "compose.yaml", Old: "- CONCURRENCY=4", New: "- CONCURRENCY=8"}},
				rolls: []string{"worker"},
				check: func(t *testing.T, r *stackRun) {
					wantEnv(t, r.c("worker", 1), map[string]string{"CONCURRENCY": "8"})
				},
			}},
			heal: "api",
		},
		{
			dir:      "external-resources",
			replicas: map[string]int{"app": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				u := r.app.Name
				why := "external objects are created by the test, with names unique to the run on a shared engine"
				r.app.Replace("compose.yaml", "name: corp-shared", "name: corp-shared-"+u, why)
				r.app.Replace("compose.yaml", "name: ml-models-v3", "name: ml-models-v3-"+u, why)
				r.app.Replace("compose.yaml", "  uploads:\n    external: true\n", "  uploads:\n    external: true\n    name: uploads-"+u+"\n", why)
				externals(t, r.app.Name, []string{"corp-shared-" + u}, []string{"uploads-" + u, "ml-models-v3-" + u})
				putInVolume(t, r.images.Base, "ml-models-v3-"+u, "model.bin", "weights v3\n")
			},
			check: func(t *testing.T, r *stackRun) {
				c, u := r.c("app", 1), r.app.Name
				nets := testenv.Field(testenv.Inspect(t, "container", c), "NetworkSettings.Networks").(map[string]any)
				if got := slices.Sorted(maps.Keys(nets)); !slices.Equal(got, []string{"corp-shared-" + u, u + "-private"}) {
					t.Errorf("%s networks %v, want the external corp-shared-%s and %s-private", c, got, u, u)
				}
				if m := mountOf(t, c, "/srv/uploads"); m["Source"] != "uploads-"+u || m["ReadOnly"] == true {
					t.Errorf("/srv/uploads mount %v, want the external volume uploads-%s, writable", m, u)
				}
				if m := mountOf(t, c, "/models"); m["Source"] != "ml-models-v3-"+u || m["ReadOnly"] != true {
					t.Errorf("/models mount %v, want the external volume ml-models-v3-%s, read-only", m, u)
				}
				wantFile(t, c, "/models/model.bin", "weights v3\n")
			},
			changes: []stackChange{{
				what:  "app: APP_STAGE=two",
				edits: []fileEdit{{File: "compose.yaml", Old: "    networks:\n      - shared", New: "    environment: {APP_STAGE: two}\n    networks:\n      - shared"}},
				rolls: []string{"app"},
				check: func(t *testing.T, r *stackRun) {
					wantEnv(t, r.c("app", 1), map[string]string{"APP_STAGE": "two"})
					wantFile(t, r.c("app", 1), "/models/model.bin", "weights v3\n")
				},
			}},
			heal: "app",
		},
		{
			dir:      "hardened",
			replicas: map[string]int{"api": 1},
			check: func(t *testing.T, r *stackRun) {
				c := r.c("api", 1)
				wantInspect(t, c, map[string]string{
					"HostConfig.ReadonlyRootfs": "true",
					"Config.User":               "10001:10001",
					"Config.WorkingDir":         "/srv",
					"HostConfig.CapDrop":        `["ALL"]`,
					"HostConfig.SecurityOpt":    `["no-new-privileges:true"]`,
					"HostConfig.Sysctls":        `{"net.core.somaxconn":"1024"}`,
					"HostConfig.ShmSize":        "33554432",
					"HostConfig.GroupAdd":       `["audit"]`,
				})
				if got := testenv.FieldString(testenv.Inspect(t, "container", c), "HostConfig.CapAdd"); got != `["NET_BIND_SERVICE"]` && got != `["CAP_NET_BIND_SERVICE"]` {
					t.Errorf("%s: CapAdd %s, want NET_BIND_SERVICE", c, got)
				}
				ul := map[string]string{}
				for _, u := range testenv.Field(testenv.Inspect(t, "container", c), "HostConfig.Ulimits").([]any) {
					m := u.(map[string]any)
					ul[m["Name"].(string)] = fmt.Sprint(m["Soft"], "/", m["Hard"])
				}
				if !maps.Equal(ul, map[string]string{"nofile": "4096/8192", "core": "0/0"}) {
					t.Errorf("%s: ulimits %v", c, ul)
				}
				for target, want := range map[string]string{"/tmp": `{"Mode":1023,"SizeBytes":67108864}`, "/run": "null", "/var/cache/api": `{"SizeBytes":16777216}`} {
					m := mountOf(t, c, target)
					if got := testenv.FieldString(m, "TmpfsOptions"); m["Type"] != "tmpfs" || got != want {
						t.Errorf("%s: mount %s = %v, want tmpfs with %s", c, target, m, want)
					}
				}
			},
			changes: []stackChange{{
				what:  "api: also CHOWN",
				edits: []fileEdit{{File: "compose.yaml", Old: "cap_add: [net_bind_service]", New: "cap_add: [net_bind_service, chown]"}},
				rolls: []string{"api"},
				check: func(t *testing.T, r *stackRun) {
					if got := testenv.FieldString(testenv.Inspect(t, "container", r.c("api", 1)), "HostConfig.CapAdd"); !strings.Contains(got, "CHOWN") {
						t.Errorf("CapAdd %s lacks CHOWN", got)
					}
				},
			}},
			heal: "api",
		},
		{
			dir:      "host-settings",
			replicas: map[string]int{"app": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				if !defaultBridgeWorks(t) {
					r.app.Replace("compose.yaml", "    network_mode: bridge\n", "",
						"Docker's default bridge (docker0) does not exist on this machine, so no container can join it; the app's default network is used instead")
				}
			},
			check: func(t *testing.T, r *stackRun) {
				c := r.c("app", 1)
				wantInspect(t, c, map[string]string{
					"Config.Hostname":                  "app1",
					"Config.Domainname":                "shop.internal",
					"HostConfig.Dns":                   `["1.1.1.1","9.9.9.9"]`,
					"HostConfig.DnsSearch":             `["shop.internal"]`,
					"HostConfig.DnsOptions":            `["ndots:1"]`,
					"HostConfig.LogConfig":             `{"Config":{"max-file":"3","max-size":"10m"},"Type":"json-file"}`,
					"Config.Labels.com.example.team":   "storefront",
					"Config.Labels.com.example.oncall": "true",
					"Config.Tty":                       "true",
					"Config.OpenStdin":                 "true",
					"HostConfig.ExtraHosts":            `["host.docker.internal:host-gateway","payments.partner:203.0.113.10"]`,
				})
				wantNet := r.app.Name + "-default"
				if strings.Contains(r.app.Files["compose.yaml"], "network_mode: bridge") {
					wantNet = "bridge"
				}
				nets := testenv.Field(testenv.Inspect(t, "container", c), "NetworkSettings.Networks").(map[string]any)
				if got := slices.Sorted(maps.Keys(nets)); !slices.Equal(got, []string{wantNet}) {
					t.Errorf("%s is on %v, want %s", c, got, wantNet)
				}
				hosts := testenv.ContainerFile(t, c, "/etc/hosts")
				if !strings.Contains(hosts, "203.0.113.10\tpayments.partner") {
					t.Errorf("/etc/hosts lacks payments.partner:\n%s", hosts)
				}
				if got := strings.TrimSpace(testenv.ContainerFile(t, c, "/etc/hostname")); got != "app1" {
					t.Errorf("/etc/hostname = %q, want app1", got)
				}
			},
			changes: []stackChange{{
				what:  "app: oncall label false",
				edits: []fileEdit{{File: "compose.yaml", Old: `com.example.oncall: "true"`, New: `com.example.oncall: "false"`}},
				rolls: []string{"app"},
				check: func(t *testing.T, r *stackRun) {
					wantInspect(t, r.c("app", 1), map[string]string{"Config.Labels.com.example.oncall": "false"})
				},
			}},
			heal: "app",
		},
		{
			dir:      "legacy-docker-compose",
			replicas: map[string]int{"app": 1, "redis": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("docker-compose.yml", "- 5000:5000", fmt.Sprintf("- %d:5000", r.app.Port("app", 1)), freePort)
			},
			check: func(t *testing.T, r *stackRun) {
				wantInspect(t, r.c("app", 1), map[string]string{
					"HostConfig.Memory":            "536870912",
					"HostConfig.MemoryReservation": "134217728",
					"HostConfig.NanoCpus":          "750000000",
					"HostConfig.PidsLimit":         "100",
					// restart: always is Docker's unless-stopped (docs/manifests.md).
					"HostConfig.RestartPolicy.Name": "unless-stopped",
				})
				wantFile(t, r.c("app", 1), "/app/static/robots.txt", "legacy\n")
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("app", 1)))
			},
			changes: []stackChange{{
				what:  "app: mem_limit 256m",
				edits: []fileEdit{{File: "docker-compose.yml", Old: "mem_limit: 512m", New: "mem_limit: 256m"}},
				rolls: []string{"app"},
				check: func(t *testing.T, r *stackRun) {
					wantInspect(t, r.c("app", 1), map[string]string{"HostConfig.Memory": "268435456"})
					httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("app", 1)))
				},
			}},
			heal:     "redis",
			warnings: []string{"docker-compose.yml:1:10: version: is obsolete and ignored, as in docker compose"},
		},
		{
			dir:      "monitoring",
			replicas: map[string]int{"prometheus": 1, "grafana": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yaml", `"127.0.0.1:9090:9090"`, fmt.Sprintf(`"127.0.0.1:%d:9090"`, r.app.Port("prometheus", 1)), freePort)
				r.app.Replace("compose.yaml", `published: "3000"`, fmt.Sprintf(`published: "%d"`, r.app.Port("grafana", 1)), freePort)
			},
			check: func(t *testing.T, r *stackRun) {
				p, g := r.c("prometheus", 1), r.c("grafana", 1)
				wantInspect(t, p, map[string]string{"Config.Cmd": `["--config.file=/etc/prometheus/prometheus.yml","--storage.tsdb.retention.time=15d"]`})
				wantFile(t, p, "/etc/prometheus/prometheus.yml", r.app.Files["prometheus.yml"])
				wantFile(t, p, "/etc/prometheus/rules/up.yml", r.app.Files["rules/up.yml"])
				wantEnv(t, g, map[string]string{"GF_SECURITY_ADMIN_PASSWORD": "admin"})
				// The secret value is in the container, never in what
				// driftless shows.
				spec := testenv.FieldString(testenv.Inspect(t, "container", g), "Config.Labels.dev.driftless.spec")
				if strings.Contains(spec, `"admin"`) || !strings.Contains(spec, "sensitive hmac:") {
					t.Errorf("grafana's spec label shows the secret or no redaction: %s", spec)
				}
				if m := mountOf(t, p, "/prometheus"); m["Type"] != "volume" || m["Source"] != r.app.Name+"-prom-data" {
					t.Errorf("prometheus data mount %v", m)
				}
				if m := mountOf(t, g, "/var/lib/grafana"); m["Type"] != "volume" || m["Source"] != r.app.Name+"-grafana-data" {
					t.Errorf("grafana data mount %v", m)
				}
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("prometheus", 1)))
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("grafana", 1)))
			},
			changes: []stackChange{{
				what:  "prometheus.yml: scrape every 30s",
				edits: []fileEdit{{File: "prometheus.yml", Old: "scrape_interval: 15s", New: "scrape_interval: 30s"}},
				rolls: []string{"prometheus"},
				check: func(t *testing.T, r *stackRun) {
					body, _ := readRepoFile(r.repo, "prometheus.yml")
					wantFile(t, r.c("prometheus", 1), "/etc/prometheus/prometheus.yml", body)
				},
			}, {
				what:  "grafana: GF_LOG_LEVEL=warn",
				edits: []fileEdit{{File: "compose.yaml", Old: "      GF_SECURITY_ADMIN_PASSWORD:", New: "      GF_LOG_LEVEL: warn\n      GF_SECURITY_ADMIN_PASSWORD:"}},
				rolls: []string{"grafana"},
				check: func(t *testing.T, r *stackRun) {
					wantEnv(t, r.c("grafana", 1), map[string]string{"GF_LOG_LEVEL": "warn", "GF_SECURITY_ADMIN_PASSWORD": "admin"})
				},
			}},
			heal: "grafana",
		},
		{
			dir:      "multi-network",
			replicas: map[string]int{"gateway": 1, "orders": 1, "payments": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yaml", `"127.0.0.1:8443:8443"`, fmt.Sprintf(`"127.0.0.1:%d:8443"`, r.app.Port("gateway", 1)), freePort)
			},
			check: func(t *testing.T, r *stackRun) {
				back, front := testenv.Inspect(t, "network", r.app.Name+"-back"), testenv.Inspect(t, "network", r.app.Name+"-front")
				if testenv.FieldString(back, "Internal") != "true" || testenv.FieldString(back, "Options") != `{"com.docker.network.driver.mtu":"1400"}` {
					t.Errorf("back network: internal %s, options %s", testenv.FieldString(back, "Internal"), testenv.FieldString(back, "Options"))
				}
				if testenv.FieldString(front, "Labels.tier") != "public" || testenv.FieldString(front, "Internal") != "false" {
					t.Errorf("front network: labels %s, internal %s", testenv.FieldString(front, "Labels"), testenv.FieldString(front, "Internal"))
				}
				gw := r.c("gateway", 1)
				for _, url := range []string{"http://pay:8080/healthz", "http://payments:8080/healthz", "http://orders:8080/healthz"} {
					wantProbe(t, gw, url)
				}
				for _, url := range []string{"http://gw:8080/healthz", "http://api-gateway:8080/healthz"} {
					wantProbe(t, gw, url)
				}
				nets := testenv.Field(testenv.Inspect(t, "container", r.c("orders", 1)), "NetworkSettings.Networks").(map[string]any)
				if got := slices.Sorted(maps.Keys(nets)); !slices.Equal(got, []string{r.app.Name + "-back"}) {
					t.Errorf("orders is on %v, want the internal back network only", got)
				}
			},
			changes: []stackChange{{
				what:  "payments: alias billing",
				edits: []fileEdit{{File: "compose.yaml", Old: "aliases: [pay]", New: "aliases: [pay, billing]"}},
				rolls: []string{"payments"},
				check: func(t *testing.T, r *stackRun) {
					wantProbe(t, r.c("gateway", 1), "http://billing:8080/healthz")
				},
			}},
			heal: "orders",
		},
		{
			dir:      "override",
			replicas: map[string]int{"web": 1, "db": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yaml", `"8080:8080"`, fmt.Sprintf(`"%d:8080"`, r.app.Port("web", 1)), freePort)
			},
			check: func(t *testing.T, r *stackRun) {
				w := r.c("web", 1)
				wantInspect(t, w, map[string]string{"Config.Image": r.images.Ref("shop/web:2"), "Config.Labels.stage": "staging"})
				wantEnv(t, w, map[string]string{"MODE": "staging", "CACHE": "on"})
				wantInspect(t, r.c("db", 1), map[string]string{"HostConfig.Memory": "1073741824"})
				if m := mountOf(t, r.c("db", 1), "/var/lib/postgresql/data"); m["Source"] != r.app.Name+"-data" {
					t.Errorf("db data mount %v", m)
				}
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("web", 1)))
			},
			changes: []stackChange{{
				what:  "override: MODE=qa",
				edits: []fileEdit{{File: "compose.override.yaml", Old: "MODE: staging", New: "MODE: qa"}},
				rolls: []string{"web"},
				check: func(t *testing.T, r *stackRun) {
					wantEnv(t, r.c("web", 1), map[string]string{"MODE": "qa", "CACHE": "on"})
				},
			}},
			heal: "db",
		},
		{
			dir:      "ports-expose",
			replicas: map[string]int{"dns": 1, "media": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				dnsPort, admin, rng := r.app.Port("dns", 1), r.app.Port("dns-admin", 1), r.app.Port("media", 3)
				r.app.Replace("compose.yaml", `"53:53/udp"`, fmt.Sprintf(`"%d:53/udp"`, dnsPort), freePort)
				r.app.Replace("compose.yaml", `"53:53/tcp"`, fmt.Sprintf(`"%d:53/tcp"`, dnsPort), freePort)
				r.app.Replace("compose.yaml", `"127.0.0.1:8053:8053"`, fmt.Sprintf(`"127.0.0.1:%d:8053"`, admin), freePort)
				r.app.Replace("compose.yaml", `"40000-40002:40000-40002/udp"`, fmt.Sprintf(`"%d-%d:40000-40002/udp"`, rng, rng+2), freePort)
			},
			check: func(t *testing.T, r *stackRun) {
				dnsPort, admin, rng := r.app.Port("dns", 1), r.app.Port("dns-admin", 1), r.app.Port("media", 3)
				d := testenv.Inspect(t, "container", r.c("dns", 1))
				want := map[string]string{
					"53/udp":   fmt.Sprintf(`[{"HostIp":"0.0.0.0","HostPort":"%d"}]`, dnsPort),
					"53/tcp":   fmt.Sprintf(`[{"HostIp":"0.0.0.0","HostPort":"%d"}]`, dnsPort),
					"8053/tcp": fmt.Sprintf(`[{"HostIp":"127.0.0.1","HostPort":"%d"}]`, admin),
				}
				for port, w := range want {
					if got := testenv.FieldString(d, "HostConfig.PortBindings."+port); got != w && got != strings.ReplaceAll(w, `"0.0.0.0"`, `""`) {
						t.Errorf("dns %s bound to %s, want %s", port, got, w)
					}
				}
				m := testenv.Inspect(t, "container", r.c("media", 1))
				for i := range 3 {
					if got := testenv.FieldString(m, fmt.Sprintf("HostConfig.PortBindings.%d/udp", 40000+i)); !strings.Contains(got, fmt.Sprintf(`"HostPort":"%d"`, rng+i)) {
						t.Errorf("media %d/udp bound to %s, want host port %d", 40000+i, got, rng+i)
					}
				}
				exposed := slices.Sorted(maps.Keys(testenv.Field(m, "Config.ExposedPorts").(map[string]any)))
				if want := []string{"40000/udp", "40001/udp", "40002/udp", "7000/tcp", "7001/tcp", "9100/tcp"}; !slices.Equal(exposed, want) {
					t.Errorf("media exposes %v, want %v", exposed, want)
				}
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", dnsPort))
			},
			changes: []stackChange{{
				what:  "media: expose 9101",
				edits: []fileEdit{{File: "compose.yaml", Old: "- 9100", New: "- 9101"}},
				rolls: []string{"media"},
				check: func(t *testing.T, r *stackRun) {
					exposed := testenv.Field(testenv.Inspect(t, "container", r.c("media", 1)), "Config.ExposedPorts").(map[string]any)
					if _, ok := exposed["9101/tcp"]; !ok {
						t.Errorf("media does not expose 9101: %v", exposed)
					}
				},
			}},
			heal: "dns",
		},
		{
			dir:      "profiles",
			replicas: map[string]int{"web": 1, "adminer": 1, "mailcatcher": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				cfg.Profiles = []string{"debug"} // as the golden test's profiles.txt
				cfg.Prune = true                 // so a service leaving the active profiles is removed
				r.app.Replace("compose.yaml", `["8080:8080"]`, fmt.Sprintf(`["%d:8080"]`, r.app.Port("web", 1)), freePort)
				r.app.Replace("compose.yaml", `["8081:8080"]`, fmt.Sprintf(`["%d:8080"]`, r.app.Port("adminer", 1)), freePort)
			},
			check: func(t *testing.T, r *stackRun) {
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("web", 1)))
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("adminer", 1)))
			},
			changes: []stackChange{{
				what:     "mailcatcher: test profile only",
				edits:    []fileEdit{{File: "compose.yaml", Old: "profiles: [debug, test]", New: "profiles: [test]"}},
				replicas: map[string]int{"web": 1, "adminer": 1},
			}},
			heal: "adminer",
		},
		{
			dir:      "readiness",
			replicas: map[string]int{"web": 3, "db": 1},
			check: func(t *testing.T, r *stackRun) {
				st := testenv.AppStatus(t, r.agent, r.app.Name)
				for _, s := range st.Services {
					for _, c := range s.Containers {
						if !c.Ready {
							t.Errorf("%s is not ready: %s", c.Name, c.ReadyReason)
						}
					}
				}
				wantEnv(t, r.c("web", 1), map[string]string{"API_TOKEN": "dev-token", "LOG_LEVEL": "info"})
				if spec := testenv.FieldString(testenv.Inspect(t, "container", r.c("web", 1)), "Config.Labels.dev.driftless.spec"); strings.Contains(spec, "dev-token") {
					t.Errorf("the secret API_TOKEN shows in the spec label: %s", spec)
				}
			},
			changes: []stackChange{{
				what:  "web: LOG_LEVEL=debug",
				edits: []fileEdit{{File: "compose.yaml", Old: "LOG_LEVEL: info", New: "LOG_LEVEL: debug"}},
				rolls: []string{"web"},
				// maxSurge 1, maxUnavailable 1: never fewer than 2 running,
				// never more than 4.
				during: func(r *stackRun, done <-chan struct{}) func(*testing.T) {
					counts := sampleRunning(r.app.Name, "web", done)
					return func(t *testing.T) {
						if lo, hi := counts(); lo < 2 || hi > 4 {
							t.Errorf("during the rollout %d..%d web replicas ran, want 2..4 (maxSurge 1, maxUnavailable 1)", lo, hi)
						}
					}
				},
				check: func(t *testing.T, r *stackRun) {
					for slot := 1; slot <= 3; slot++ {
						wantEnv(t, r.c("web", slot), map[string]string{"LOG_LEVEL": "debug"})
					}
				},
			}},
			heal: "web",
		},
		{
			dir:      "replicas-update",
			replicas: map[string]int{"api": 4, "worker": 3, "singleton": 0},
			check: func(t *testing.T, r *stackRun) {
				for slot := 1; slot <= 4; slot++ {
					wantInspect(t, r.c("api", slot), map[string]string{
						"HostConfig.NanoCpus": "500000000", "HostConfig.Memory": "268435456", "HostConfig.MemoryReservation": "67108864",
					})
				}
			},
			changes: []stackChange{{
				what:  "api: APP_RELEASE=2",
				edits: []fileEdit{{File: "compose.yaml", Old: "  api:\n", New: "  api:\n    environment: {APP_RELEASE: \"2\"}\n"}},
				rolls: []string{"api"},
				// start-first, parallelism 2: never fewer than 4 running,
				// up to 6; two batches, 5s apart.
				during: func(r *stackRun, done <-chan struct{}) func(*testing.T) {
					counts := sampleRunning(r.app.Name, "api", done)
					return func(t *testing.T) {
						if lo, hi := counts(); lo < 4 || hi > 6 || hi < 5 {
							t.Errorf("during the rollout %d..%d api replicas ran, want 4..6 with a surge (start-first, parallelism 2)", lo, hi)
						}
					}
				},
				check: func(t *testing.T, r *stackRun) {
					var created []time.Time
					for slot := 1; slot <= 4; slot++ {
						wantEnv(t, r.c("api", slot), map[string]string{"APP_RELEASE": "2"})
						created = append(created, timeField(t, r.c("api", slot), "Created"))
					}
					slices.SortFunc(created, func(a, b time.Time) int { return a.Compare(b) })
					inBatch, between := created[1].Sub(created[0]), created[2].Sub(created[1])
					if between < 5*time.Second || inBatch >= between || created[3].Sub(created[2]) >= between {
						t.Errorf("new api replicas created at +0, +%s, +%s, +%s: want two batches of two, the second at least 5s (update_config.delay) after the first",
							inBatch, created[2].Sub(created[0]), created[3].Sub(created[0]))
					}
				},
			}},
			heal: "worker",
		},
		{
			dir:      "reverse-proxy",
			replicas: map[string]int{"proxy": 1, "app": 2},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yaml", `"80:80"`, fmt.Sprintf(`"%d:80"`, r.app.Port("http", 1)), freePort)
				r.app.Replace("compose.yaml", `"443:443"`, fmt.Sprintf(`"%d:443"`, r.app.Port("https", 1)), freePort)
			},
			check: func(t *testing.T, r *stackRun) {
				p := r.c("proxy", 1)
				wantFile(t, p, "/etc/nginx/nginx.conf", r.app.Files["nginx.conf"])
				html := testenv.ContainerFiles(t, p, "/usr/share/nginx/html")
				if want := map[string]string{"html/index.html": r.app.Files["html/index.html"], "html/site.css": r.app.Files["html/site.css"]}; !maps.Equal(html, want) {
					t.Errorf("/usr/share/nginx/html holds %v, want %v", html, want)
				}
				if m := mountOf(t, p, "/etc/nginx/nginx.conf"); m["ReadOnly"] != true {
					t.Errorf("nginx.conf is not mounted read-only: %v", m)
				}
				wantInspect(t, p, map[string]string{"HostConfig.RestartPolicy.Name": "unless-stopped"})
				wantProbe(t, p, "http://app:3000/healthz")
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("http", 1)))
			},
			changes: []stackChange{{
				what:  "nginx.conf: default_server",
				edits: []fileEdit{{File: "nginx.conf", Old: "listen 80;", New: "listen 80 default_server;"}},
				rolls: []string{"proxy"},
				check: func(t *testing.T, r *stackRun) {
					body, _ := readRepoFile(r.repo, "nginx.conf")
					wantFile(t, r.c("proxy", 1), "/etc/nginx/nginx.conf", body)
				},
			}, {
				what:  "html: new stylesheet",
				edits: []fileEdit{{File: "html/site.css", Old: "#333", New: "#111"}},
				rolls: []string{"proxy"},
				check: func(t *testing.T, r *stackRun) {
					wantFile(t, r.c("proxy", 1), "/usr/share/nginx/html/site.css", "body { color: #111; }\n")
				},
			}, {
				what:  "app: APP_COLOR=blue",
				edits: []fileEdit{{File: "compose.yaml", Old: "  app:\n", New: "  app:\n    environment: {APP_COLOR: blue}\n"}},
				rolls: []string{"app"},
				check: func(t *testing.T, r *stackRun) {
					wantEnv(t, r.c("app", 1), map[string]string{"APP_COLOR": "blue"})
					wantEnv(t, r.c("app", 2), map[string]string{"APP_COLOR": "blue"})
					wantProbe(t, r.c("proxy", 1), "http://app:3000/healthz")
				},
			}},
			heal: "app",
		},
		{
			dir:      "secrets-configs",
			replicas: map[string]int{"app": 1, "sidecar": 1},
			check: func(t *testing.T, r *stackRun) {
				c := r.c("app", 1)
				for path, file := range map[string]string{
					"/run/secrets/db_password": "secrets/db_password.txt",
					"/run/secrets/server.key":  "secrets/server.key",
					"/app_config":              "config/app.toml",
					"/etc/app/logging.yaml":    "config/logging.yaml",
				} {
					wantFile(t, c, path, r.app.Files[file])
					if m := mountOf(t, c, path); m["ReadOnly"] != true {
						t.Errorf("%s is not mounted read-only: %v", path, m)
					}
				}
				// The configs the compose file gives: content (interpolated
				// from .env) and environment (a variable of .env).
				wantFile(t, c, "/etc/app/banner.txt", "Welcome to the corpus shop.\n")
				wantFile(t, c, "/motd", "Deploys come from Git.")
				if m := mountOf(t, c, "/motd"); m["ReadOnly"] != true {
					t.Errorf("/motd is not mounted read-only: %v", m)
				}
				// volumes_from: ["app:ro"]: the sidecar sees what app mounts.
				wantFile(t, r.c("sidecar", 1), "/etc/app/banner.txt", "Welcome to the corpus shop.\n")
				wantFile(t, r.c("sidecar", 1), "/run/secrets/db_password", r.app.Files["secrets/db_password.txt"])
			},
			changes: []stackChange{{
				what:  ".env: another MOTD (a config from the environment)",
				edits: []fileEdit{{File: ".env", Old: "Deploys come from Git.", New: "git revert rolls back."}},
				rolls: []string{"app"},
				check: func(t *testing.T, r *stackRun) {
					wantFile(t, r.c("app", 1), "/motd", "git revert rolls back.")
				},
			}, {
				what:  "a new database password",
				edits: []fileEdit{{File: "secrets/db_password.txt", Old: "correct horse battery staple", New: "tr0ub4dor&3"}},
				rolls: []string{"app"},
				check: func(t *testing.T, r *stackRun) {
					wantFile(t, r.c("app", 1), "/run/secrets/db_password", "tr0ub4dor&3\n")
				},
			}, {
				what:  "logging config at /etc/app/log.yaml",
				edits: []fileEdit{{File: "compose.yaml", Old: "target: /etc/app/logging.yaml", New: "target: /etc/app/log.yaml"}},
				rolls: []string{"app"},
				check: func(t *testing.T, r *stackRun) {
					wantFile(t, r.c("app", 1), "/etc/app/log.yaml", r.app.Files["config/logging.yaml"])
				},
			}},
			heal: "app",
		},
		{
			dir:      "web-db-cache",
			replicas: map[string]int{"web": 1, "db": 1, "cache": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yaml", `"8080:8080"`, fmt.Sprintf(`"%d:8080"`, r.app.Port("web", 1)), freePort)
				r.app.Replace("compose.yaml", `["CMD", "wget", "-qO-", "http://localhost:8080/healthz"]`, probe("http://localhost:8080/healthz"), noProbeTools)
				r.app.Replace("compose.yaml", "test: pg_isready -U shop", "test: "+probe("tcp://localhost:5432"), noProbeTools)
				r.app.Replace("compose.yaml", `["CMD", "redis-cli", "ping"]`, probe("tcp://localhost:6379"), noProbeTools)
			},
			check: func(t *testing.T, r *stackRun) {
				web, db, cache := r.c("web", 1), r.c("db", 1), r.c("cache", 1)
				for _, c := range []string{web, db, cache} {
					wantInspect(t, c, map[string]string{"State.Health.Status": "healthy", "HostConfig.RestartPolicy.Name": "unless-stopped"})
				}
				// depends_on service_healthy: db and cache cannot be healthy
				// before their first check, 5s (interval) after they start.
				for _, dep := range []string{db, cache} {
					if gap := startedAt(t, web).Sub(startedAt(t, dep)); gap < 5*time.Second {
						t.Errorf("web started %s after %s, before it could be healthy (first check after 5s)", gap, dep)
					}
				}
				wantInspect(t, web, map[string]string{
					"Config.Healthcheck": `{"Interval":10000000000,"Retries":5,"StartPeriod":5000000000,"Test":["CMD","/driftless","workload","probe","http://localhost:8080/healthz"],"Timeout":2000000000}`,
				})
				wantInspect(t, cache, map[string]string{"Config.Cmd": `["redis-server","--appendonly","yes"]`})
				wantEnv(t, web, map[string]string{"DATABASE_URL": "postgres://shop@db:5432/shop", "REDIS_URL": "redis://cache:6379/0"})
				if m := mountOf(t, db, "/var/lib/postgresql/data"); m["Source"] != r.app.Name+"-db-data" {
					t.Errorf("db data mount %v", m)
				}
				wantProbe(t, web, "tcp://db:5432")
				wantProbe(t, web, "tcp://cache:6379")
				httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.app.Port("web", 1)))
			},
			changes: []stackChange{{
				what:  "web: REDIS_URL database 1",
				edits: []fileEdit{{File: "compose.yaml", Old: "redis://cache:6379/0", New: "redis://cache:6379/1"}},
				rolls: []string{"web"},
				check: func(t *testing.T, r *stackRun) {
					wantEnv(t, r.c("web", 1), map[string]string{"REDIS_URL": "redis://cache:6379/1"})
					wantInspect(t, r.c("web", 1), map[string]string{"State.Health.Status": "healthy"})
				},
			}},
			heal: "db",
		},
		{
			dir:      "worker-queue",
			replicas: map[string]int{"queue": 1, "worker": 2, "migrate": 1, "reporter": 1},
			setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
				r.app.Replace("compose.yaml", "entrypoint: /usr/local/bin/entry", "entrypoint: /driftless workload",
					"the stand-in image has no /usr/local/bin/entry; its program is /driftless workload")
				r.app.Replace("compose.yaml", `["CMD-SHELL", "rabbitmq-diagnostics -q ping"]`, probe("tcp://localhost:5672"), noProbeTools)
			},
			check: func(t *testing.T, r *stackRun) {
				q, w, m, rep := r.c("queue", 1), r.c("worker", 1), r.c("migrate", 1), r.c("reporter", 1)
				wantInspect(t, w, map[string]string{
					"Config.Entrypoint":        `["/driftless","workload"]`,
					"Config.Cmd":               `["worker","--queue","orders","--prefetch","10"]`,
					"HostConfig.Init":          "true",
					"HostConfig.RestartPolicy": `{"MaximumRetryCount":5,"Name":"on-failure"}`,
					"Config.StopSignal":        "SIGINT",
					"Config.StopTimeout":       "150",
					"HostConfig.NanoCpus":      "1250000000",
					"HostConfig.Memory":        "1073741824",
					"HostConfig.PidsLimit":     "256",
				})
				wantInspect(t, q, map[string]string{"Config.Hostname": "queue", "Config.StopTimeout": "45", "State.Health.Status": "healthy"})
				wantInspect(t, m, map[string]string{"State.Status": "exited", "State.ExitCode": "0", "HostConfig.RestartPolicy.Name": "no"})
				wantInspect(t, rep, map[string]string{"HostConfig.RestartPolicy": `{"MaximumRetryCount":2,"Name":"on-failure"}`})
				// service_healthy: the queue's first check runs 15s
				// (interval) after it starts, or 1s (start_interval) on
				// engines that know start_interval (API 1.44);
				// service_completed_successfully: the reporter starts after
				// migrate exited 0.
				firstCheck := 15 * time.Second
				if engineAPIAtLeast(t, "1.44") {
					firstCheck = time.Second
				}
				if gap := startedAt(t, w).Sub(startedAt(t, q)); gap < firstCheck {
					t.Errorf("worker started %s after the queue, before its first health check (%s)", gap, firstCheck)
				}
				if finished := timeField(t, m, "State.FinishedAt"); startedAt(t, rep).Before(finished) {
					t.Errorf("reporter started at %s, before migrate completed at %s", startedAt(t, rep), finished)
				}
				for _, s := range testenv.AppStatus(t, r.agent, r.app.Name).Services {
					if s.Name == "migrate" && !strings.Contains(s.Message, "completed with exit code 0") {
						t.Errorf("migrate's status message %q does not say it completed", s.Message)
					}
				}
			},
			changes: []stackChange{{
				what:  "worker: prefetch 20",
				edits: []fileEdit{{File: "compose.yaml", Old: "--prefetch 10", New: "--prefetch 20"}},
				rolls: []string{"worker"},
				check: func(t *testing.T, r *stackRun) {
					for slot := 1; slot <= 2; slot++ {
						wantInspect(t, r.c("worker", slot), map[string]string{"Config.Cmd": `["worker","--queue","orders","--prefetch","20"]`})
					}
				},
			}},
			heal: "worker",
		},
	}
}
