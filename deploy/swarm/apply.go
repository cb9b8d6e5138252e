package swarm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	swarmtypes "github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// Apply carries out the plan's changes in order: networks, then
// services, removals last, as drift ordered them. A service create,
// update or scale waits until Swarm says the rollout is done (every task
// running, which for a task with a healthcheck means healthy) or that it
// failed (paused, rolled back): a failed rollout is a failed change,
// never a success. Swarm rolls the tasks; driftless only hands it specs.
func (e *Engine) Apply(ctx context.Context, desired *manifest.App, plan drift.Plan, opts drift.ApplyOptions) drift.ApplyResult {
	var res drift.ApplyResult
	var failed []string
	for _, c := range plan.Changes {
		t0 := time.Now()
		if stopped(opts.Stop) {
			res.Outcomes = append(res.Outcomes, drift.Outcome{Change: c, Result: drift.ResultSkipped,
				Failure: &drift.Failure{Cause: drift.FailureStopped, Summary: "stopped for something newer"}})
			continue
		}
		progress(opts, c, drift.PhaseStart, "", t0, nil)
		err := e.applyChange(ctx, desired, plan.Revision, c, opts, t0)
		o := drift.Outcome{Change: c, Result: drift.ResultDone, Duration: time.Since(t0)}
		if err != nil {
			o.Result, o.Error = drift.ResultFailed, err.Error()
			f := &drift.Failure{}
			if !errors.As(err, &f) {
				f = &drift.Failure{Cause: drift.FailureOther, Summary: err.Error()}
				if errors.Is(err, drift.ErrEngineUnreachable) || ctx.Err() != nil {
					f.Cause = drift.FailureEngine
				}
			}
			o.Failure = f
			if f.Cause == drift.FailureRollout && c.Service != "" {
				if res.Degraded == nil {
					res.Degraded = map[string]*drift.Failure{}
				}
				res.Degraded[c.Service] = f
			}
			failed = append(failed, c.Name+": "+err.Error())
			progress(opts, c, drift.PhaseFailed, "", t0, err)
		} else {
			progress(opts, c, drift.PhaseDone, "", t0, nil)
		}
		res.Outcomes = append(res.Outcomes, o)
	}
	if len(failed) > 0 {
		res.Err = errors.New(strings.Join(failed, "; "))
	}
	return res
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

func progress(opts drift.ApplyOptions, c drift.Change, phase drift.Phase, msg string, t0 time.Time, err error) {
	if opts.Progress != nil {
		opts.Progress(drift.Event{Time: time.Now(), Change: c, Phase: phase, Message: msg, Elapsed: time.Since(t0), Err: err})
	}
}

func (e *Engine) applyChange(ctx context.Context, desired *manifest.App, revision string, c drift.Change, opts drift.ApplyOptions, t0 time.Time) error {
	switch c.Kind {
	case drift.KindNetwork:
		return e.applyNetwork(ctx, desired, c)
	case drift.KindConfig, drift.KindSecret:
		return e.applyObject(ctx, desired, c)
	case drift.KindService:
		return e.applyService(ctx, desired, revision, c, opts, t0)
	default:
		return fmt.Errorf("a Swarm app has no %s changes (the plan is not for target swarm)", c.Kind)
	}
}

// applyService creates, updates, scales or removes one service, and waits
// for Swarm's rollout.
func (e *Engine) applyService(ctx context.Context, desired *manifest.App, revision string, c drift.Change, opts drift.ApplyOptions, t0 time.Time) error {
	if c.Action == drift.ActionRemove {
		if _, err := e.api.ServiceRemove(ctx, c.ID, client.ServiceRemoveOptions{}); err != nil && !isNotFound(err) {
			return e.classify(err)
		}
		return nil
	}
	svc := desired.Service(c.Service)
	if svc == nil {
		return fmt.Errorf("service %s is not in the desired state", c.Service)
	}
	spec := ServiceSpec(desired, svc, revision)
	if err := e.resolveObjects(ctx, desired.Name, &spec); err != nil {
		return err
	}
	auth, err := e.registryAuth(ctx, desired.Name, spec.TaskTemplate.ContainerSpec.Image)
	if err != nil {
		return err
	}
	rolling := false
	switch c.Action {
	case drift.ActionCreate:
		if _, err := e.api.ServiceCreate(ctx, client.ServiceCreateOptions{Spec: spec, EncodedRegistryAuth: auth}); err != nil {
			return e.classify(err)
		}
	case drift.ActionUpdate, drift.ActionScale:
		cur, err := e.api.ServiceInspect(ctx, c.ID, client.ServiceInspectOptions{})
		if err != nil {
			return e.interfered(err, c)
		}
		if c.Action == drift.ActionScale {
			// Only the replica count: the rest of the spec stays as
			// it is, so Swarm starts or stops tasks and rolls nothing
			// (and keeps the credentials it has: an empty auth means
			// "from the current spec").
			n := uint64(svc.Spec.Replicas)
			spec = cur.Service.Spec
			spec.Mode.Replicated = &swarmtypes.ReplicatedService{Replicas: &n}
			auth = ""
		}
		v := cur.Service.Version
		rolling = c.Action == drift.ActionUpdate
		if _, err := e.api.ServiceUpdate(ctx, c.ID, client.ServiceUpdateOptions{Version: v, Spec: spec, EncodedRegistryAuth: auth}); err != nil {
			return e.interfered(err, c)
		}
	default:
		return fmt.Errorf("unknown action %s for a Swarm service", c.Action)
	}
	progress(opts, c, drift.PhaseWaiting, "Swarm is rolling the tasks", t0, nil)
	if err := e.waitRollout(ctx, spec.Name, rolling, opts.Stop); err != nil {
		return err
	}
	if c.Action != drift.ActionScale {
		e.learnQuirks(ctx, spec.Name, svc.Hash, DesiredFields(desired, svc))
	}
	return nil
}

// registryAuth is what the service's tasks pull image with. A lookup
// that fails (a credential helper that is missing or fails) refuses the
// change: without the credentials the tasks could not pull.
func (e *Engine) registryAuth(ctx context.Context, app, image string) (string, error) {
	if e.opts.Registries == nil {
		return "", nil
	}
	auth, err := e.opts.Registries.RegistryAuth(ctx, app, image)
	if err != nil {
		return "", fmt.Errorf("credentials for the service's image: %w", err)
	}
	return auth, nil
}

// classify marks errors of the engine as such; the rest are the request's.
func (e *Engine) classify(err error) error {
	var f *drift.Failure
	switch {
	case errors.As(err, &f):
		return err
	case cerrdefs.IsUnavailable(err) || cerrdefs.IsInternal(err) || client.IsErrConnectionFailed(err):
		return e.unreachable(err)
	}
	return err
}

// interfered: the service went away (or changed version) between the
// observation and the update; the next pass looks again.
func (e *Engine) interfered(err error, c drift.Change) error {
	if isNotFound(err) || strings.Contains(err.Error(), "update out of sequence") {
		return &drift.Failure{Cause: drift.FailureInterference, Summary: c.Name + " changed outside Git while driftless updated it: " + err.Error()}
	}
	return e.classify(err)
}

// stallWait is how long a service may lack tasks, with no update under
// way and no progress, before Apply nudges Swarm (see nudge).
const stallWait = 10 * time.Second

// nudge forces an update of the service's current spec (docker service
// update --force): Swarm replaces every task, which brings back a slot
// whose task an interrupted start-first update left half-made (created
// but never promoted to running), where a plain reconcile sees the slot
// as taken.
func (e *Engine) nudge(ctx context.Context, name string) error {
	cur, err := e.api.ServiceInspect(ctx, name, client.ServiceInspectOptions{})
	if err != nil {
		return e.classify(err)
	}
	spec := cur.Service.Spec
	spec.TaskTemplate.ForceUpdate++
	_, err = e.api.ServiceUpdate(ctx, cur.Service.ID, client.ServiceUpdateOptions{Version: cur.Service.Version, Spec: spec})
	if err != nil && !strings.Contains(err.Error(), "update out of sequence") {
		return e.classify(err)
	}
	return nil
}

// freshUpdateWait is how long an update waits for Swarm to start rolling
// the tasks. A spec change Swarm does not roll tasks for (only the update
// settings or labels changed) never starts one.
const freshUpdateWait = 5 * time.Second

// waitRollout polls the service until Swarm finished the rollout, or says
// it failed, or the timeout passes. rolling: the spec was updated, so an
// update state left from an earlier update does not count until Swarm
// started this one (or freshUpdateWait passed without one).
// Tasks Swarm cannot place (no suitable node) end the wait after
// stallWait: Swarm places them by itself once a node fits. A stop
// (something newer came: a commit, a shutdown) ends the wait; Swarm goes
// on rolling, and the next pass looks again.
func (e *Engine) waitRollout(ctx context.Context, name string, rolling bool, stop <-chan struct{}) error {
	t0 := time.Now()
	deadline := t0.Add(e.opts.RolloutTimeout)
	tick := time.NewTicker(e.opts.Poll)
	defer tick.Stop()
	var last string
	changed, nudged := t0, false
	var unplaced holding
	for {
		fresh := !rolling || time.Since(t0) > freshUpdateWait
		st, err := e.rolloutStateOf(ctx, name, fresh)
		if st.done || err != nil {
			return err
		}
		if st.why != last {
			e.log.Info("waiting for Swarm to roll the service", "service", name, "state", st.why)
			changed = time.Now()
		}
		last = st.why
		if unplaced.held(st.unplaced != "") > e.stallWait {
			// Swarm places the tasks by itself once a node fits; waiting
			// out the rollout timeout would only hold up the pass. The
			// service is Degraded with the same reason until then.
			return &drift.Failure{Cause: drift.FailureRollout, Summary: fmt.Sprintf("Swarm cannot place %s: %s; it places them once a node fits (a node made active, a constraint met, resources freed)", name, st.unplaced)}
		}
		if st.missing && !nudged && time.Since(changed) > e.stallWait {
			// Once: a forced update restarts every task, and one that did
			// not help points at something it cannot fix (no node can
			// take the task), which the timeout's error tells the user.
			nudged = true
			e.log.Warn("Swarm runs another number of tasks than the service asks for and no update is under way; forcing an update of the same spec so it replaces them", "service", name, "state", st.why)
			if err := e.nudge(ctx, name); err != nil {
				return fmt.Errorf("force an update of %s, whose tasks Swarm did not replace (%s): %w", name, st.why, err)
			}
		}
		if time.Now().After(deadline) {
			return e.timedOut(name, last, nudged)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return &drift.Failure{Cause: drift.FailureStopped, Summary: "stopped waiting for Swarm to roll " + name + " (" + last + "): something newer came"}
		case <-tick.C:
		}
	}
}

// timedOut is the failure of a rollout that did not finish in time.
func (e *Engine) timedOut(name, last string, nudged bool) error {
	msg := fmt.Sprintf("Swarm did not finish rolling %s within %s: %s", name, e.opts.RolloutTimeout, last)
	if nudged {
		msg += fmt.Sprintf("; a forced update did not help: see `docker service ps --no-trunc %s` for why its tasks do not run (placement constraints, resources, a node down). driftless tries again at the next change of the service", name)
	}
	return &drift.Failure{Cause: drift.FailureRollout, Summary: msg}
}

// holding measures how long a condition has held without a break.
type holding struct{ since time.Time }

// held records whether the condition holds now and returns for how long
// it has (0 when it does not).
func (h *holding) held(now bool) time.Duration {
	switch {
	case !now:
		h.since = time.Time{}
		return 0
	case h.since.IsZero():
		h.since = time.Now()
	}
	return time.Since(h.since)
}

// rolloutState is where a service's rollout stands.
type rolloutState struct {
	// done: the update completed (or there was none, after a create or
	// a scale) and every desired task runs.
	done bool
	// why it is not done yet.
	why string
	// missing: Swarm has another number of tasks than the service asks
	// for with no update under way (an orchestrator that lost a task
	// when updates raced creates it only at the next change).
	missing bool
	// unplaced is Swarm's reason it cannot place some of the tasks it
	// wants running ("2 tasks: no suitable node (…)"), "" if none.
	unplaced string
}

// rolloutStateOf says where the service's rollout stands; a Failure when
// Swarm paused or rolled back the update. fresh: any update state counts;
// else only one Swarm started after the service's last change.
func (e *Engine) rolloutStateOf(ctx context.Context, name string, fresh bool) (rolloutState, error) {
	cur, err := e.api.ServiceInspect(ctx, name, client.ServiceInspectOptions{})
	if err != nil {
		if isNotFound(err) {
			return rolloutState{}, &drift.Failure{Cause: drift.FailureInterference, Summary: name + " was removed outside Git during its rollout"}
		}
		return rolloutState{}, e.classify(err)
	}
	s := cur.Service
	state := ""
	if u := s.UpdateStatus; u != nil && (fresh || (u.StartedAt != nil && !u.StartedAt.Before(s.UpdatedAt.Add(-time.Second)))) {
		state = string(u.State)
	} else if !fresh {
		return rolloutState{why: "waiting for Swarm to start the update"}, nil
	}
	tasks, err := e.api.TaskList(ctx, client.TaskListOptions{Filters: make(client.Filters).Add("service", s.ID)})
	if err != nil {
		return rolloutState{}, e.classify(err)
	}
	c := countTasks(name, s, tasks.Items)
	switch state {
	case drift.SwarmUpdatePaused, drift.SwarmUpdateRollbackStarted, drift.SwarmUpdateRollbackPaused, drift.SwarmUpdateRollbackCompleted:
		msg := "Swarm " + strings.ReplaceAll(state, "_", " ") + ": " + s.UpdateStatus.Message
		if len(c.errs) > 0 {
			msg += "; task errors: " + strings.Join(c.errs[:min(3, len(c.errs))], "; ")
		}
		return rolloutState{}, &drift.Failure{Cause: drift.FailureRollout, Summary: msg}
	case drift.SwarmUpdateUpdating:
		return rolloutState{why: fmt.Sprintf("update in progress, %d/%d tasks running", c.running, c.want), unplaced: c.unplaced}, nil
	}
	return c.state(), nil
}

// state is where the rollout stands by the tasks alone, with no update
// under way.
func (c taskCount) state() rolloutState {
	if c.running >= c.want && c.existing <= c.want {
		return rolloutState{done: true}
	}
	why := fmt.Sprintf("%d/%d tasks running", c.running, c.want)
	if c.existing > c.want {
		why = fmt.Sprintf("%d tasks for %d replicas", c.existing, c.want)
	}
	if len(c.errs) > 0 {
		why += "; task errors: " + strings.Join(c.errs[:min(3, len(c.errs))], "; ")
	}
	return rolloutState{why: why, missing: c.existing != c.want, unplaced: c.unplaced}
}

// taskCount is what a service's tasks say about its rollout.
type taskCount struct {
	running, existing, want int
	// errs are the errors of tasks that failed since the service's last
	// change, sorted.
	errs []string
	// unplaced is why tasks Swarm wants running stay pending, with how
	// many ("1 task: no suitable node (…)"); "" if none.
	unplaced string
}

func countTasks(name string, s swarmtypes.Service, tasks []swarmtypes.Task) taskCount {
	var c taskCount
	pending := map[string]int{}
	for _, t := range tasks {
		switch {
		case t.DesiredState == swarmtypes.TaskStateRunning:
			c.existing++
			if t.Status.State == swarmtypes.TaskStateRunning {
				c.running++
			}
			if t.Status.State == swarmtypes.TaskStatePending && t.Status.Err != "" {
				pending[t.Status.Err]++
			}
		case t.Status.Err != "" && t.Status.Timestamp.After(s.UpdatedAt.Add(-time.Second)):
			c.errs = append(c.errs, taskName(name, t)+": "+t.Status.Err)
		}
	}
	c.want = c.existing
	if s.Spec.Mode.Replicated != nil && s.Spec.Mode.Replicated.Replicas != nil {
		c.want = int(*s.Spec.Mode.Replicated.Replicas)
	}
	slices.Sort(c.errs)
	c.errs = slices.Compact(c.errs)
	var reasons []string
	for why, n := range pending {
		task := "tasks"
		if n == 1 {
			task = "task"
		}
		reasons = append(reasons, fmt.Sprintf("%d %s: %s", n, task, why))
	}
	slices.Sort(reasons)
	c.unplaced = strings.Join(reasons, "; ")
	return c
}

// applyObject creates a version of a secret or config from the
// repository file, or removes an old one.
func (e *Engine) applyObject(ctx context.Context, desired *manifest.App, c drift.Change) error {
	if c.Action == drift.ActionRemove {
		var err error
		if c.Kind == drift.KindSecret {
			_, err = e.api.SecretRemove(ctx, c.ID, client.SecretRemoveOptions{})
		} else {
			_, err = e.api.ConfigRemove(ctx, c.ID, client.ConfigRemoveOptions{})
		}
		if err != nil && !isNotFound(err) {
			return e.classify(err)
		}
		return nil
	}
	data, hash, ok := objectData(desired, c.Name)
	if !ok {
		return fmt.Errorf("%s %s is not in the desired state", c.Kind, c.Name)
	}
	ann := swarmtypes.Annotations{Name: c.Name, Labels: map[string]string{drift.LabelApp: desired.Name, drift.LabelResource: c.Resource, drift.LabelSpecHash: hash}}
	var err error
	if c.Kind == drift.KindSecret {
		_, err = e.api.SecretCreate(ctx, client.SecretCreateOptions{Spec: swarmtypes.SecretSpec{Annotations: ann, Data: data}})
	} else {
		_, err = e.api.ConfigCreate(ctx, client.ConfigCreateOptions{Spec: swarmtypes.ConfigSpec{Annotations: ann, Data: data}})
	}
	return e.classify(err)
}

// objectData is the content of the versioned secret or config name.
func objectData(app *manifest.App, name string) ([]byte, string, bool) {
	for _, s := range app.Services {
		for _, b := range s.Spec.Binds {
			if b.Object == nil || drift.SwarmObjectName(app.Name, b.Object.Name, b.ContentHash) != name {
				continue
			}
			if t := app.Content[b.ContentHash]; t != nil && !t.Dir && len(t.Files) == 1 {
				return t.Files[0].Data, b.ContentHash, true
			}
		}
		for _, ref := range s.Spec.Secrets {
			if data, ok := app.SecretData[ref.Digest]; ok && drift.SwarmObjectName(app.Name, ref.Name, ref.Digest) == name {
				return data, ref.Digest, true
			}
		}
	}
	return nil, "", false
}

// resolveObjects fills in the IDs of the secrets and configs the spec
// refers to by name: Swarm takes both.
func (e *Engine) resolveObjects(ctx context.Context, app string, spec *swarmtypes.ServiceSpec) error {
	c := spec.TaskTemplate.ContainerSpec
	if len(c.Configs) == 0 && len(c.Secrets) == 0 {
		return nil
	}
	objs, err := e.observeObjects(ctx, app)
	if err != nil {
		return err
	}
	ids := map[string]string{}
	for _, o := range objs {
		ids[string(o.Kind)+" "+o.Name] = o.ID
	}
	for _, r := range c.Configs {
		if r.ConfigID = ids["config "+r.ConfigName]; r.ConfigID == "" {
			return fmt.Errorf("config %s does not exist (it is created before the service)", r.ConfigName)
		}
	}
	for _, r := range c.Secrets {
		if r.SecretID = ids["secret "+r.SecretName]; r.SecretID == "" {
			return fmt.Errorf("secret %s does not exist (it is created before the service)", r.SecretName)
		}
	}
	return nil
}

// applyNetwork creates (or, for a changed spec, replaces) an overlay
// network. Swarm refuses to remove a network services still use: the
// error says which.
func (e *Engine) applyNetwork(ctx context.Context, desired *manifest.App, c drift.Change) error {
	if c.Action == drift.ActionRemove || c.Action == drift.ActionReplace {
		if _, err := e.api.NetworkRemove(ctx, c.ID, client.NetworkRemoveOptions{}); err != nil && !isNotFound(err) {
			return fmt.Errorf("remove network %s (Swarm removes a network only when no service uses it): %w", c.Name, e.classify(err))
		}
		if c.Action == drift.ActionRemove {
			return nil
		}
	}
	n := desired.Network(c.Resource)
	if n == nil {
		return fmt.Errorf("network %s is not in the desired state", c.Resource)
	}
	driver := n.Spec.Driver
	if driver == "" || driver == "bridge" {
		driver = "overlay" // the app's networks span the nodes
	}
	_, err := e.api.NetworkCreate(ctx, c.Name, client.NetworkCreateOptions{
		Driver: driver, Scope: "swarm", Internal: n.Spec.Internal, Attachable: n.Spec.Attachable, Options: n.Spec.DriverOpts,
		Labels: map[string]string{drift.LabelApp: desired.Name, drift.LabelResource: n.Name, drift.LabelSpecHash: n.Hash},
	})
	return e.classify(err)
}
