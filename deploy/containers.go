package deploy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/deploy/hookrun"
	"github.com/driftless-dev/driftless/deploy/internal/copyin"
	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
	"github.com/driftless-dev/driftless/deploy/readiness"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/secrets"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// crashRestarts is how many restarts during a readiness wait count as a
// crash loop: fail fast instead of waiting for ReadyTimeout.
const crashRestarts = 3

// logLines is how many log lines a failure report carries.
const logLines = 10

type imageCheck struct {
	once sync.Once
	err  error
	// volumes are the image's declared volume targets, read once.
	volumesOnce sync.Once
	volumes     []string
	volumesErr  error
}

// ownedContainer inspects a container before a destructive action and
// refuses it unless the container carries this app's label.
func (r *run) ownedContainer(ctx context.Context, id string) (container.InspectResponse, error) {
	return r.changeableContainer(ctx, drift.Change{ID: id})
}

// changeableContainer inspects the container a change acts on and refuses
// it unless it carries this app's label — or the change adopts a docker
// compose project and the container belongs to that project.
func (r *run) changeableContainer(ctx context.Context, ch drift.Change) (container.InspectResponse, error) {
	res, err := r.e.api.ContainerInspect(ctx, ch.ID, client.ContainerInspectOptions{})
	if err != nil {
		return container.InspectResponse{}, err
	}
	c := res.Container
	var labels map[string]string
	if c.Config != nil {
		labels = c.Config.Labels
	}
	switch {
	case labels[drift.LabelApp] == r.app:
		return c, nil
	case ch.Adopt != "" && labels[drift.LabelApp] == "" && labels[drift.LabelComposeProject] == ch.Adopt:
		return c, nil
	}
	return c, fmt.Errorf("container %s (%s) is not owned by driftless app %s; leaving it alone",
		strings.TrimPrefix(c.Name, "/"), shortID(c.ID), r.app)
}

// named is the desired app under the name this apply runs for.
func (r *run) named() *manifest.App {
	if r.desired.Name == r.app {
		return r.desired
	}
	named := *r.desired
	named.Name = r.app
	return &named
}

// createReplica creates, connects and starts one replica under its stable
// name and returns its ID.
func (r *run) createReplica(ctx context.Context, s *step, svc *manifest.Service, slot int) (string, error) {
	r.followEvents(ctx)
	if err := r.ensureImage(ctx, s, svc); err != nil {
		return "", err
	}
	app := r.named()
	if err := r.e.files.MaterializeService(app, svc); err != nil {
		return "", err
	}
	imageVolumes, err := r.imageVolumes(ctx, svc.Spec.Image)
	if err != nil {
		return "", err
	}
	rc, err := dockerspec.BuildReplicaConfig(dockerspec.ReplicaInput{App: app, Service: svc, Slot: slot, Revision: r.revision, FilesDir: r.e.opts.FilesDir, SecretsDir: r.e.opts.SecretsDir, StateDir: r.e.opts.StateDir, ImageVolumes: imageVolumes, Remote: r.e.opts.Remote})
	if err != nil {
		return "", err
	}
	name := rc.Create.Name
	if err := r.acquire(ctx); err != nil {
		return "", err
	}
	defer r.release()
	if r.stopped() {
		return "", errStopped
	}
	created, err := r.e.api.ContainerCreate(ctx, rc.Create)
	if err != nil {
		if cerrdefs.IsConflict(err) {
			return "", r.nameConflict(ctx, name, err)
		}
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	r.emit(s, drift.PhaseCreated, "", nil)
	// The engine creates what it cannot fully honour with a warning (a
	// kernel without IO weight discards blkio weights): said, not dropped.
	if len(created.Warnings) > 0 {
		r.warned(s, created.Warnings)
	}
	undo := func(cause error) error {
		// A replica that cannot start is removed again, so the next plan
		// starts from a clean slot instead of a half-made container.
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if _, err := r.e.api.ContainerRemove(cleanup, created.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			r.e.log.Warn("removing a replica that failed to start", "container", name, "err", err)
		}
		return cause
	}
	for _, n := range rc.ExtraNetworks {
		_, err := r.e.api.NetworkConnect(ctx, n.Name, client.NetworkConnectOptions{
			Container:      created.ID,
			EndpointConfig: &network.EndpointSettings{Aliases: n.Aliases, Links: n.Links, IPAMConfig: n.IPAM},
		})
		if err != nil {
			return "", undo(fmt.Errorf("connect %s to network %s: %w", name, n.Name, err))
		}
	}
	if r.e.opts.Remote {
		if err := copyin.Copy(ctx, r.e.api, created.ID, app, &svc.Spec); err != nil {
			return "", undo(fmt.Errorf("%s: %w", name, err))
		}
	}
	if _, err := r.e.api.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return "", undo(fmt.Errorf("start %s: %w", name, err))
	}
	r.emit(s, drift.PhaseStarted, "", nil)
	if err := r.runHooks(ctx, created.ID, name, "post_start", &svc.Spec, svc.Spec.PostStart); err != nil {
		return "", undo(err)
	}
	return created.ID, nil
}

// runHooks runs a replica's lifecycle hooks. One that fails is the
// replica's failure, as a replica that never gets ready (its output
// scrubbed of the service's secrets); an engine error stays the engine's.
func (r *run) runHooks(ctx context.Context, id, name, kind string, spec *manifest.ServiceSpec, hooks []manifest.Hook) error {
	err := hookrun.Run(ctx, r.e.api, id, kind, hooks)
	var failed *hookrun.Failed
	if !errors.As(err, &failed) {
		return err
	}
	scrub := slices.Clone(r.e.opts.Scrub)
	for _, k := range spec.SecretEnv {
		scrub = append(scrub, spec.Env[k])
	}
	return &drift.Failure{Cause: drift.FailureRollout, Summary: name + ": " + secrets.Scrub(failed.Msg, scrub...)}
}

// nameConflict explains a 409 on create.
func (r *run) nameConflict(ctx context.Context, name string, cause error) error {
	res, err := r.e.api.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		return fmt.Errorf("create %s: %w", name, cause)
	}
	if res.Container.Config == nil || res.Container.Config.Labels[drift.LabelApp] != r.app {
		return &drift.Failure{Cause: drift.FailureConflict, Summary: fmt.Sprintf("name %s is held by a container driftless does not own; rename or remove it", name)}
	}
	return fmt.Errorf("name %s is held by another container of app %s (%s); the next plan will sort it out: %w", name, r.app, shortID(res.Container.ID), cause)
}

func (r *run) createAndWait(ctx context.Context, s *step, svc *manifest.Service, slot int) (string, error) {
	id, err := r.createReplica(ctx, s, svc, slot)
	if err != nil {
		return "", err
	}
	return id, r.waitReady(ctx, s, id, &svc.Spec, 0, true)
}

// bringUp carries out a create or a start and waits for the replica to be
// ready; started is called once the replica was started (or could not be).
func (r *run) bringUp(ctx context.Context, s *step, svc *manifest.Service, started func()) error {
	var id string
	var restarts int
	var err error
	if s.change.Action == drift.ActionCreate {
		id, err = r.createReplica(ctx, s, svc, s.change.Slot)
	} else {
		id, restarts, err = r.startReplica(ctx, s, svc)
	}
	started()
	if err != nil {
		return err
	}
	return r.waitReady(ctx, s, id, &svc.Spec, restarts, true)
}

// startReplica starts an existing stopped replica; it returns its ID and
// restart count before the start.
func (r *run) startReplica(ctx context.Context, s *step, svc *manifest.Service) (string, int, error) {
	c, err := r.ownedContainer(ctx, s.change.ID)
	if err != nil {
		return "", 0, err
	}
	// After a reboot the tmpfs is empty: the secrets the replica mounts
	// are written again before it starts.
	if err := r.e.files.WriteSecrets(r.named(), svc); err != nil {
		return "", 0, err
	}
	r.followEvents(ctx)
	if _, err := r.e.api.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		return "", 0, fmt.Errorf("start %s: %w", s.change.Name, err)
	}
	r.emit(s, drift.PhaseStarted, "", nil)
	return c.ID, c.RestartCount, r.runHooks(ctx, c.ID, s.change.Name, "post_start", &svc.Spec, svc.Spec.PostStart)
}

// waitReady looks at a new or started replica until the prober says it is
// ready, it fails on its own, someone else removes or stops it, or
// ReadyTimeout passes: on its events, and on a poll where nothing but a
// poll can tell (nextLook). stoppable: the wait may end early when the
// apply is asked to stop (a new replica that exists is safe to leave to the
// next pass; a replace is not, so it waits on).
func (r *run) waitReady(ctx context.Context, s *step, id string, spec *manifest.ServiceSpec, baseRestarts int, stoppable bool) error {
	name := s.change.Name
	timeout := r.e.opts.ReadyTimeout
	if spec != nil && spec.MinReady != nil {
		timeout += *spec.MinReady // the time to become ready, then the time to prove it
	}
	r.emit(s, drift.PhaseWaiting, fmt.Sprintf("waiting up to %s for readiness", timeout), nil)
	started := time.Now()
	deadline := started.Add(timeout)
	r.followEvents(ctx)
	// With an event stream running (the agent's Watch, or followEvents), a
	// removal or exit is noticed at once; the poll is the fallback.
	woken, stopWaking := r.e.waker(id)
	defer stopWaking()
	lastReason := "not checked yet"
	for {
		info, ins, err := r.e.prober.Inspect(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return cancelled(ctx)
			}
			if cerrdefs.IsNotFound(err) {
				return &drift.Failure{Cause: drift.FailureInterference,
					Summary: name + " was removed outside driftless while waiting for it to become ready"}
			}
			return fmt.Errorf("inspect %s: %w", name, err)
		}
		r.e.prober.Update(info)
		ready, reason, _, _ := r.e.prober.Result(id)
		if ready {
			r.emit(s, drift.PhaseReady, fmt.Sprintf("ready in %s", time.Since(started).Round(100*time.Millisecond)), nil)
			return nil
		}
		lastReason = reason
		if done, err := r.judgeExit(ctx, s, id, info, ins, spec, info.RestartCount-baseRestarts); done {
			return err
		}
		if time.Now().After(deadline) {
			return r.notReady(ctx, id, fmt.Sprintf("%s not ready after %s: %s", name, timeout, lastReason), info, info.RestartCount-baseRestarts)
		}
		look := time.NewTimer(min(r.nextLook(id), max(time.Until(deadline), minSettleWait)))
		select {
		case <-ctx.Done():
			look.Stop()
			return cancelled(ctx)
		case <-r.stopIf(stoppable):
			look.Stop()
			return errStopped
		case <-woken:
		case <-look.C:
		}
		look.Stop()
	}
}

// stopIf is the stop channel when the wait may stop early, else a channel
// that never fires.
func (r *run) stopIf(stoppable bool) <-chan struct{} {
	if stoppable {
		return r.stop
	}
	return nil
}

// judgeExit decides whether a replica that is not ready has ended its
// readiness wait: it completed (a job that exited 0 under a restart policy
// that leaves it so), someone stopped, killed or paused it (drift), or it
// failed on its own (exited, crash-looping).
func (r *run) judgeExit(ctx context.Context, s *step, id string, info readiness.Info, ins container.InspectResponse, spec *manifest.ServiceSpec, restarts int) (bool, error) {
	name := s.change.Name
	switch {
	case info.State == drift.StatePaused:
		return true, &drift.Failure{Cause: drift.FailureInterference, Summary: name + " was paused outside driftless while waiting for it to become ready"}
	case info.State == drift.StateExited && info.ExitCode == 0 && spec != nil &&
		(spec.Restart == manifest.RestartNever || spec.Restart == manifest.RestartOnFailure):
		r.emit(s, drift.PhaseReady, "completed with exit code 0", nil)
		return true, nil
	case (info.State == drift.StateExited || info.State == drift.StateDead) && stoppedFromOutside(info, ins):
		return true, &drift.Failure{Cause: drift.FailureInterference, ExitCode: info.ExitCode,
			Summary: fmt.Sprintf("%s was stopped outside driftless while waiting for it to become ready (exit code %d)", name, info.ExitCode)}
	case info.State == drift.StateExited || info.State == drift.StateDead, restarts >= crashRestarts:
		return true, r.notReady(ctx, id, fmt.Sprintf("%s exited with code %d%s", name, info.ExitCode, restartedWords(restarts)), info, restarts)
	}
	return false, nil
}

// stoppedFromOutside reports whether an exited replica was stopped by a
// signal from outside (docker stop, docker kill) rather than exiting on its
// own: killed by SIGTERM or SIGKILL, not by the kernel's OOM killer, and
// not restarted by its policy since (a crash loop restarts).
func stoppedFromOutside(info readiness.Info, ins container.InspectResponse) bool {
	if info.ExitCode != exitSIGKILL && info.ExitCode != exitSIGTERM {
		return false
	}
	if ins.State != nil && ins.State.OOMKilled {
		return false
	}
	return info.RestartCount == 0
}

// Exit codes of a process ended by a signal sent from outside.
const (
	exitSIGKILL = 137
	exitSIGTERM = 143
)

func restartedWords(n int) string {
	switch {
	case n <= 0:
		return ""
	case n == 1:
		return " (restarted once)"
	default:
		return fmt.Sprintf(" (restarted %d times)", n)
	}
}

// notReady builds the failure of a replica that failed on its own, with
// its last log lines. The log lines are scrubbed of the replica's secrets
// here, before the failure reaches status, history, the UI or the API.
func (r *run) notReady(ctx context.Context, id, summary string, info readiness.Info, restarts int) error {
	f := &drift.Failure{Cause: drift.FailureRollout, Summary: summary, ExitCode: info.ExitCode, Restarts: max(restarts, 0)}
	logs, err := r.e.Logs(ctx, id, logLines)
	logs = secrets.Scrub(secrets.Scrub(logs, info.Secrets...), r.e.opts.Scrub...)
	switch {
	case err != nil:
		f.Summary += "; logs unavailable: " + err.Error()
	case strings.TrimSpace(logs) == "":
		f.Summary += "; no log output"
	default:
		f.Logs = strings.Split(logs, "\n")
	}
	return f
}

// gracePeriod is the stop grace period of rec, the spec the container
// was created with (recordedSpec); nil lets Docker use the container's own
// StopTimeout (which deploy set from the same spec).
func gracePeriod(rec *manifest.ServiceSpec) *int {
	if rec == nil {
		return nil
	}
	t := rec.StopGracePeriodSeconds
	return &t
}

// recordedSpec is the spec the container was created with, from its spec
// label; else spec (which may be nil).
func recordedSpec(c container.InspectResponse, spec *manifest.ServiceSpec) *manifest.ServiceSpec {
	if c.Config != nil {
		if recorded := dockerspec.ParseSpecLabel(c.Config.Labels[drift.LabelSpec]); recorded != nil {
			return recorded
		}
	}
	return spec
}

// removeContainer stops (with the grace period) and removes one of our
// containers with its anonymous volumes; named volumes are never removed
// with a container.
func (r *run) removeContainer(ctx context.Context, s *step, spec *manifest.ServiceSpec) error {
	c, err := r.changeableContainer(ctx, s.change)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			r.emit(s, drift.PhaseRemoved, "was already gone", nil)
			return nil
		}
		return err
	}
	if err := r.stopAndRemove(ctx, c, spec); err != nil {
		return err
	}
	r.emit(s, drift.PhaseRemoved, "", nil)
	return nil
}

// preStop runs the pre_stop hooks of rec, the spec a running replica was
// created with (recordedSpec). As compose: one that fails keeps the
// replica running; a replica that stopped meanwhile is no failure.
func (r *run) preStop(ctx context.Context, c container.InspectResponse, rec, spec *manifest.ServiceSpec) error {
	if rec == nil || len(rec.PreStop) == 0 || c.State == nil || !c.State.Running || c.State.Restarting {
		return nil
	}
	err := r.runHooks(ctx, c.ID, strings.TrimPrefix(c.Name, "/"), "pre_stop", cmp.Or(spec, rec), rec.PreStop)
	if engineerr.AnyIs(err, cerrdefs.IsConflict) || engineerr.IsNotFound(err) {
		return nil
	}
	return err
}

func (r *run) stopAndRemove(ctx context.Context, c container.InspectResponse, spec *manifest.ServiceSpec) error {
	name := strings.TrimPrefix(c.Name, "/")
	rec := recordedSpec(c, spec)
	if err := r.preStop(ctx, c, rec, spec); err != nil {
		return err
	}
	release, err := r.e.holdNetworks(ctx, c.NetworkSettings)
	if err != nil {
		return fmt.Errorf("stop %s: %w", name, err)
	}
	defer release()
	if c.State != nil && (c.State.Running || c.State.Restarting) {
		if _, err := r.e.api.ContainerStop(ctx, c.ID, client.ContainerStopOptions{Timeout: gracePeriod(rec)}); err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("stop %s: %w", name, err)
		}
	}
	if _, err := r.e.api.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{RemoveVolumes: true, Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	r.e.prober.Remove(c.ID)
	return nil
}

// classify types an apply error by what the loop should do about it.
func classify(err error) *drift.Failure {
	var f *drift.Failure
	switch {
	case errors.As(err, &f):
		return f
	case errors.Is(err, drift.ErrEngineUnreachable):
		// A ping or a request left unanswered (engineapi.Bounded), not the
		// apply's own context.
		return &drift.Failure{Cause: drift.FailureEngine, Summary: engineerr.FirstLine(err.Error())}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return &drift.Failure{Cause: drift.FailureStopped, Summary: "apply cancelled: " + engineerr.FirstLine(err.Error())}
	case isEngineDown(err):
		return &drift.Failure{Cause: drift.FailureEngine, Summary: engineerr.FirstLine(err.Error())}
	case engineerr.IsNotFound(err):
		// A container or network that was there when the plan was made is
		// gone: someone removed it meanwhile.
		return &drift.Failure{Cause: drift.FailureInterference, Summary: engineerr.FirstLine(err.Error())}
	case engineerr.AnyIs(err, cerrdefs.IsConflict):
		return &drift.Failure{Cause: drift.FailureConflict, Summary: engineerr.FirstLine(err.Error())}
	}
	return &drift.Failure{Cause: drift.FailureOther, Summary: engineerr.FirstLine(err.Error())}
}

// isEngineDown reports an engine that cannot be reached or says it cannot
// serve (503). A 500 is not counted: the engine answered, about this
// container (a stale task, a bad mount), and retrying it at once in a loop
// would not help — it backs off like any failure of the change itself.
func isEngineDown(err error) bool {
	if client.IsErrConnectionFailed(err) {
		return true
	}
	return engineerr.AnyIs(err, func(e error) bool {
		return cerrdefs.IsUnavailable(e) || cerrdefs.IsUnknown(e) && strings.Contains(e.Error(), "connection")
	})
}
