package swarm

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	swarmtypes "github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// stalledSwarm is a manager whose orchestrator lost a task when updates
// raced: the update completed, the service asks for more tasks than run,
// and only a forced update (a changed ForceUpdate counter) makes it
// replace them, if heals.
type stalledSwarm struct {
	api // the methods the tests do not reach panic

	mu      sync.Mutex
	svc     swarmtypes.Service
	running int // tasks running
	heals   bool
	// updates are the specs of every ServiceUpdate, forceErr the error
	// of one that forces.
	updates  []swarmtypes.ServiceSpec
	auths    []string // EncodedRegistryAuth of every ServiceUpdate
	forceErr error
	// pendingErr, if set, is why the tasks beyond running stay pending
	// (Swarm cannot place them).
	pendingErr string
	// fill, if set, is what this Swarm writes into every spec it stores.
	fill func(*swarmtypes.ServiceSpec)
}

func newStalledSwarm(app *manifest.App, replicas, running int, heals bool) *stalledSwarm {
	spec := ServiceSpec(app, app.Service("web"), "r1")
	n := uint64(replicas)
	spec.Mode.Replicated.Replicas = &n
	now := time.Now()
	return &stalledSwarm{running: running, heals: heals, svc: swarmtypes.Service{ID: "svc-1", Spec: spec,
		Meta:         swarmtypes.Meta{Version: swarmtypes.Version{Index: 7}, UpdatedAt: now},
		UpdateStatus: &swarmtypes.UpdateStatus{State: swarmtypes.UpdateStateCompleted, StartedAt: &now, CompletedAt: &now}}}
}

func (f *stalledSwarm) ServiceInspect(context.Context, string, client.ServiceInspectOptions) (client.ServiceInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return client.ServiceInspectResult{Service: f.svc}, nil
}

func (f *stalledSwarm) ServiceUpdate(_ context.Context, _ string, o client.ServiceUpdateOptions) (client.ServiceUpdateResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o.Version != f.svc.Version {
		return client.ServiceUpdateResult{}, errors.New("update out of sequence")
	}
	forced := o.Spec.TaskTemplate.ForceUpdate != f.svc.Spec.TaskTemplate.ForceUpdate
	f.updates = append(f.updates, o.Spec)
	f.auths = append(f.auths, o.EncodedRegistryAuth)
	if forced && f.forceErr != nil {
		return client.ServiceUpdateResult{}, f.forceErr
	}
	now := time.Now()
	if f.fill != nil {
		f.fill(&o.Spec)
	}
	f.svc.Spec, f.svc.UpdatedAt = o.Spec, now
	f.svc.Version.Index++
	f.svc.UpdateStatus = &swarmtypes.UpdateStatus{State: swarmtypes.UpdateStateCompleted, StartedAt: &now, CompletedAt: &now}
	if forced && f.heals {
		f.running = int(*o.Spec.Mode.Replicated.Replicas)
	}
	return client.ServiceUpdateResult{}, nil
}

func (f *stalledSwarm) TaskList(context.Context, client.TaskListOptions) (client.TaskListResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out client.TaskListResult
	for i := range f.running {
		out.Items = append(out.Items, swarmtypes.Task{ID: "task-" + string(rune('a'+i)), ServiceID: f.svc.ID, Slot: i + 1,
			DesiredState: swarmtypes.TaskStateRunning, Status: swarmtypes.TaskStatus{State: swarmtypes.TaskStateRunning}})
	}
	if f.pendingErr != "" {
		for i := f.running; i < int(*f.svc.Spec.Mode.Replicated.Replicas); i++ {
			out.Items = append(out.Items, swarmtypes.Task{ID: "task-" + string(rune('a'+i)), ServiceID: f.svc.ID, Slot: i + 1,
				DesiredState: swarmtypes.TaskStateRunning, Status: swarmtypes.TaskStatus{State: swarmtypes.TaskStatePending, Err: f.pendingErr}})
		}
	}
	return out, nil
}

func (f *stalledSwarm) NetworkList(context.Context, client.NetworkListOptions) (client.NetworkListResult, error) {
	return client.NetworkListResult{}, nil
}

func (f *stalledSwarm) forced() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for i, s := range f.updates {
		prev := uint64(0)
		if i > 0 {
			prev = f.updates[i-1].TaskTemplate.ForceUpdate
		}
		if s.TaskTemplate.ForceUpdate != prev {
			n++
		}
	}
	return n
}

// repairStalled applies a drift repair of web (2 replicas declared) to a
// Swarm that runs running tasks and stays stalled unless heals.
func repairStalled(t *testing.T, running int, heals bool, forceErr error) (*stalledSwarm, drift.ApplyResult, string) {
	t.Helper()
	app := loadApp(t, map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    deploy: {replicas: 2}\n"})
	f := newStalledSwarm(app, 2, running, heals)
	f.forceErr = forceErr
	var logs bytes.Buffer
	e := newEngine(f, Options{Poll: 5 * time.Millisecond, RolloutTimeout: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e.stallWait = 50 * time.Millisecond
	plan := drift.Plan{Revision: "r1", Changes: []drift.Change{{Action: drift.ActionUpdate, Kind: drift.KindService, Name: "shop-web", ID: "svc-1",
		Service: "web", Cause: drift.CauseDrift, Reason: "changed outside Git: env.X; reverted"}}}
	res := e.Apply(context.Background(), app, plan, drift.ApplyOptions{})
	return f, res, logs.String()
}

// TestApplyForcesAStalledUpdateOnce: Swarm says the update completed but
// runs fewer tasks than the service asks for. After stallWait without
// progress Apply forces one update of the same spec (docker service
// update --force), logged as a warning, and the rollout completes.
func TestApplyForcesAStalledUpdateOnce(t *testing.T) {
	f, res, logs := repairStalled(t, 1, true, nil)
	if res.Err != nil {
		t.Fatalf("apply: %v", res.Err)
	}
	if len(f.updates) != 2 || f.forced() != 1 {
		t.Fatalf("updates = %d, forced %d; want the repair, then one forced update", len(f.updates), f.forced())
	}
	repair, forced := f.updates[0], f.updates[1]
	forced.TaskTemplate.ForceUpdate = repair.TaskTemplate.ForceUpdate
	if d := drift.DiffSwarmSpec(Fields(forced, nil), Fields(repair, nil), nil); len(d) > 0 {
		t.Errorf("the forced update changed the spec: %v", d)
	}
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "forcing an update of the same spec") {
		t.Errorf("no warning about the forced update in the log:\n%s", logs)
	}
}

// TestApplyStalledAfterForcedUpdate: when the forced update does not help
// either (no node can take the task), Apply forces only once, then fails
// the change at the rollout timeout as a rollout failure (the service is
// Degraded, never a success) whose message says what to look at.
func TestApplyStalledAfterForcedUpdate(t *testing.T) {
	f, res, _ := repairStalled(t, 1, false, nil)
	if f.forced() != 1 {
		t.Errorf("forced updates = %d, want 1: a forced update restarts every task", f.forced())
	}
	if len(res.Outcomes) != 1 || res.Outcomes[0].Result != drift.ResultFailed {
		t.Fatalf("outcomes = %+v, want the change failed", res.Outcomes)
	}
	fl := res.Outcomes[0].Failure
	if fl == nil || fl.Cause != drift.FailureRollout || res.Degraded["web"] == nil {
		t.Fatalf("failure = %+v, degraded %v; want a rollout failure of web", fl, res.Degraded)
	}
	for _, want := range []string{"Swarm did not finish rolling shop-web within 2s: 1/2 tasks running", "a forced update did not help",
		"docker service ps --no-trunc shop-web", "tries again at the next change"} {
		if !strings.Contains(fl.Summary, want) {
			t.Errorf("failure %q does not say %q", fl.Summary, want)
		}
	}
}

// TestApplyForcedUpdateRefused: a forced update Swarm refuses is the
// change's error, naming the service and why it was forced; one that
// lost a race with another update (out of sequence) is not an error,
// the other update makes Swarm look at the tasks again.
func TestApplyForcedUpdateRefused(t *testing.T) {
	_, res, _ := repairStalled(t, 1, false, errors.New("rpc error: code = Unknown desc = boom"))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "force an update of shop-web, whose tasks Swarm did not replace (1/2 tasks running): rpc error") {
		t.Errorf("err = %v", res.Err)
	}
	f, res, _ := repairStalled(t, 1, false, errors.New("rpc error: update out of sequence"))
	if f.forced() != 1 || res.Err == nil || !strings.Contains(res.Err.Error(), "did not finish rolling") {
		t.Errorf("forced %d, err = %v; want the race ignored and the rollout timing out", f.forced(), res.Err)
	}
}

// TestUnknownSwarmDefaultIsNoDriftLoop: a Swarm (another Docker version)
// that writes a default Fields does not know into the spec would make
// every pass see drift and update the service forever. What Swarm
// returned right after driftless's own update is taken as sent for that
// spec hash, and warned about; a later hand edit of the same field, or of
// another, is still drift.
func TestUnknownSwarmDefaultIsNoDriftLoop(t *testing.T) {
	app := loadApp(t, map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    deploy: {replicas: 2}\n"})
	web := app.Service("web")
	f := newStalledSwarm(app, 2, 2, false)
	f.fill = func(s *swarmtypes.ServiceSpec) { s.TaskTemplate.ContainerSpec.StopSignal = "SIGTERM" }
	var logs bytes.Buffer
	e := newEngine(f, Options{Poll: 5 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	running := func() drift.SwarmSpec {
		f.mu.Lock()
		defer f.mu.Unlock()
		return e.withoutQuirks("shop-web", web.Hash, Fields(f.svc.Spec, nil))
	}
	if d := drift.DiffSwarmSpec(running(), DesiredFields(app, web), nil); len(d) != 0 {
		t.Fatalf("the fake's first spec differs already: %v", d)
	}
	plan := drift.Plan{Revision: "r1", Changes: []drift.Change{{Action: drift.ActionUpdate, Kind: drift.KindService, Name: "shop-web", ID: "svc-1", Service: "web"}}}
	if res := e.Apply(context.Background(), app, plan, drift.ApplyOptions{}); res.Err != nil {
		t.Fatalf("apply: %v", res.Err)
	}
	if d := drift.DiffSwarmSpec(Fields(f.svc.Spec, nil), DesiredFields(app, web), nil); len(d) != 1 || d[0].Path != "container.stopSignal" {
		t.Fatalf("the fake did not fill in its default: %v", d)
	}
	if d := drift.DiffSwarmSpec(running(), DesiredFields(app, web), nil); len(d) != 0 {
		t.Errorf("Swarm's own default after driftless's update is drift: %v", d)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "container.stopSignal") {
		t.Errorf("no warning naming the field:\n%s", logs.String())
	}
	f.mu.Lock()
	f.svc.Spec.TaskTemplate.ContainerSpec.StopSignal = "SIGKILL"
	f.svc.Spec.TaskTemplate.ContainerSpec.Env = append(f.svc.Spec.TaskTemplate.ContainerSpec.Env, "X=1")
	f.mu.Unlock()
	d := drift.DiffSwarmSpec(running(), DesiredFields(app, web), nil)
	if len(d) != 2 || d[0].Path != "container.stopSignal" || d[0].Before != "SIGKILL" || d[1].Path != "env.X" {
		t.Errorf("hand edits after the update = %v, want container.stopSignal and env.X", d)
	}
	if got := e.withoutQuirks("shop-web", "another-hash", Fields(f.svc.Spec, nil)); got["container.stopSignal"] != "SIGKILL" {
		t.Errorf("what was learned for one spec hash applies to another")
	}
}

// registries hands out a fixed auth per app and image, or fails.
type registries struct{ err error }

func (r registries) RegistryAuth(_ context.Context, app, image string) (string, error) {
	return "auth(" + app + "," + image + ")", r.err
}

// TestServiceUpdatesCarryRegistryAuth: an update sends the app's
// credentials for the service's image, so that every node can pull it
// (docker stack deploy --with-registry-auth); a scale sends none, which
// keeps what the service has; a failed lookup sends nothing at all.
func TestServiceUpdatesCarryRegistryAuth(t *testing.T) {
	app := loadApp(t, map[string]string{"compose.yaml": "services:\n  web:\n    image: 127.0.0.1:5000/shop/web:1\n    deploy: {replicas: 2}\n"})
	for _, tc := range []struct {
		action   drift.Action
		err      error
		wantAuth []string
		wantErr  string
	}{
		{action: drift.ActionUpdate, wantAuth: []string{"auth(" + app.Name + ",127.0.0.1:5000/shop/web:1)"}},
		{action: drift.ActionScale, wantAuth: []string{""}},
		{action: drift.ActionUpdate, err: errors.New("credential helper docker-credential-pass failed"), wantErr: "credentials for the service's image: credential helper docker-credential-pass failed"},
	} {
		f := newStalledSwarm(app, 2, 2, true)
		e := newEngine(f, Options{Poll: 5 * time.Millisecond, RolloutTimeout: 2 * time.Second, Registries: registries{err: tc.err}})
		plan := drift.Plan{Revision: "r1", Changes: []drift.Change{{Action: tc.action, Kind: drift.KindService, Name: "shop-web", ID: "svc-1", Service: "web"}}}
		res := e.Apply(context.Background(), app, plan, drift.ApplyOptions{})
		got := ""
		if res.Err != nil {
			got = res.Err.Error()
		}
		if !strings.Contains(got, tc.wantErr) || (tc.wantErr == "") != (got == "") {
			t.Errorf("%s: errors %q, want %q", tc.action, got, tc.wantErr)
		}
		if !slices.Equal(f.auths, tc.wantAuth) {
			t.Errorf("%s: updates sent registry auth %q, want %q", tc.action, f.auths, tc.wantAuth)
		}
	}
}

// TestApplyStopsWaitingForTasksSwarmCannotPlace: scaled up where no node
// can take the new tasks, Apply does not wait out the rollout timeout
// (the pass would hang for minutes) nor force an update (it cannot help):
// once the tasks stayed unplaced for stallWait it reports the rollout
// failed with Swarm's reason. Swarm places them when a node fits.
func TestApplyStopsWaitingForTasksSwarmCannotPlace(t *testing.T) {
	app := loadApp(t, map[string]string{"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    deploy: {replicas: 3}\n"})
	f := newStalledSwarm(app, 1, 1, false)
	f.pendingErr = "no suitable node (scheduling constraints not satisfied on 1 node)"
	e := newEngine(f, Options{Poll: 5 * time.Millisecond, RolloutTimeout: time.Minute})
	e.stallWait = 50 * time.Millisecond
	plan := drift.Plan{Revision: "r1", Changes: []drift.Change{{Action: drift.ActionScale, Kind: drift.KindService, Name: "shop-web", ID: "svc-1", Service: "web"}}}
	res := e.Apply(context.Background(), app, plan, drift.ApplyOptions{})
	want := "Swarm cannot place shop-web: 2 tasks: no suitable node (scheduling constraints not satisfied on 1 node); it places them once a node fits"
	if res.Err == nil || !strings.Contains(res.Err.Error(), want) {
		t.Fatalf("err = %v, want %q", res.Err, want)
	}
	if len(res.Outcomes) != 1 || res.Outcomes[0].Failure == nil || res.Outcomes[0].Failure.Cause != drift.FailureRollout {
		t.Errorf("outcomes = %+v, want one rollout failure", res.Outcomes)
	}
	if n := f.forced(); n != 0 {
		t.Errorf("forced %d updates, want none: a forced update cannot place a task", n)
	}
}
