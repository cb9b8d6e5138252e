package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/drift/manifest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// notReadyError is a replica that did not become ready: the rollout of its
// service stops and the service is reported degraded.
type notReadyError struct {
	summary string // one line: what happened
	msg     string // summary plus the last log lines
}

func (e *notReadyError) Error() string { return e.msg }

// crashRestarts is how many restarts during a readiness wait count as a
// crash loop: fail fast instead of waiting for ReadyTimeout.
const crashRestarts = 3

// logLines is how many log lines a failure report carries.
const logLines = 10

type imageCheck struct {
	once sync.Once
	err  error
}

// ensureImage makes sure the image is present, pulling it once per Apply
// if not.
func (r *run) ensureImage(ctx context.Context, ref string) error {
	r.imagesMu.Lock()
	c, ok := r.images[ref]
	if !ok {
		c = &imageCheck{}
		r.images[ref] = c
	}
	r.imagesMu.Unlock()
	c.once.Do(func() {
		present, err := r.e.ImageExists(ctx, ref)
		if err != nil {
			c.err = err
			return
		}
		if present {
			return
		}
		if err := r.e.pullImage(ctx, ref); err != nil {
			c.err = fmt.Errorf("image %s is not present and could not be pulled: %v", ref, err)
		}
	})
	return c.err
}

// ownedContainer inspects a container before a destructive action and
// refuses it unless the container carries this app's label.
func (r *run) ownedContainer(ctx context.Context, id string) (container.InspectResponse, error) {
	res, err := r.e.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return container.InspectResponse{}, err
	}
	c := res.Container
	if c.Config == nil || c.Config.Labels[drift.LabelApp] != r.app {
		return c, fmt.Errorf("container %s (%s) is not owned by driftless app %s; leaving it alone",
			strings.TrimPrefix(c.Name, "/"), shortID(c.ID), r.app)
	}
	return c, nil
}

// createReplica creates, connects and starts one replica under its stable
// name and returns its ID.
func (r *run) createReplica(ctx context.Context, s *step, svc *manifest.Service, slot int) (string, error) {
	if err := r.ensureImage(ctx, svc.Spec.Image); err != nil {
		return "", err
	}
	app := r.desired
	if app.Name != r.app {
		named := *app
		named.Name = r.app
		app = &named
	}
	if err := r.e.materializeService(app, svc); err != nil {
		return "", err
	}
	rc, err := buildReplicaConfig(replicaInput{App: app, Service: svc, Slot: slot, Revision: r.revision, FilesDir: r.e.opts.FilesDir})
	if err != nil {
		return "", err
	}
	name := rc.Create.Name
	if err := r.acquire(ctx); err != nil {
		return "", err
	}
	defer r.release()
	created, err := r.e.api.ContainerCreate(ctx, rc.Create)
	if err != nil {
		if cerrdefs.IsConflict(err) {
			return "", r.nameConflict(ctx, name, err)
		}
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	r.emit(s, PhaseCreated, "", nil)
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
			EndpointConfig: &network.EndpointSettings{Aliases: n.Aliases},
		})
		if err != nil {
			return "", undo(fmt.Errorf("connect %s to network %s: %w", name, n.Name, err))
		}
	}
	if _, err := r.e.api.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return "", undo(fmt.Errorf("start %s: %w", name, err))
	}
	r.emit(s, PhaseStarted, "", nil)
	return created.ID, nil
}

// nameConflict explains a 409 on create.
func (r *run) nameConflict(ctx context.Context, name string, cause error) error {
	res, err := r.e.api.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		return fmt.Errorf("create %s: %w", name, cause)
	}
	if res.Container.Config == nil || res.Container.Config.Labels[drift.LabelApp] != r.app {
		return fmt.Errorf("name %s is held by a container driftless does not own; rename or remove it", name)
	}
	return fmt.Errorf("name %s is held by another container of app %s (%s); the next plan will sort it out: %w", name, r.app, shortID(res.Container.ID), cause)
}

func (r *run) createAndWait(ctx context.Context, s *step, svc *manifest.Service, slot int) (string, error) {
	id, err := r.createReplica(ctx, s, svc, slot)
	if err != nil {
		return "", err
	}
	return id, r.waitReady(ctx, s, id, 0)
}

func (r *run) startAndWait(ctx context.Context, s *step, svc *manifest.Service) error {
	c, err := r.ownedContainer(ctx, s.change.ID)
	if err != nil {
		return err
	}
	if _, err := r.e.api.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("start %s: %w", s.change.Name, err)
	}
	r.emit(s, PhaseStarted, "", nil)
	return r.waitReady(ctx, s, c.ID, c.RestartCount)
}

// waitReady polls a new or started replica until the prober says it is
// ready, it crash-loops, or ReadyTimeout passes. Polling inspect here is
// fine: it is not the steady state.
func (r *run) waitReady(ctx context.Context, s *step, id string, baseRestarts int) error {
	name := s.change.Name
	r.emit(s, PhaseWaiting, fmt.Sprintf("waiting up to %s for readiness", r.e.opts.ReadyTimeout), nil)
	started := time.Now()
	deadline := started.Add(r.e.opts.ReadyTimeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	lastReason := "not checked yet"
	for {
		info, _, err := r.e.prober.inspectInfo(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if cerrdefs.IsNotFound(err) {
				msg := name + " disappeared while waiting for it to become ready"
				return &notReadyError{summary: msg, msg: msg}
			}
			return fmt.Errorf("inspect %s: %w", name, err)
		}
		r.e.prober.update(info)
		ready, reason, _, _ := r.e.prober.result(id)
		if ready {
			r.emit(s, PhaseReady, fmt.Sprintf("ready in %s", time.Since(started).Round(100*time.Millisecond)), nil)
			return nil
		}
		lastReason = reason
		restarts := info.RestartCount - baseRestarts
		switch {
		case info.State == drift.StateExited || info.State == drift.StateDead:
			return r.notReady(ctx, id, fmt.Sprintf("%s exited with code %d%s", name, info.ExitCode, restartedWords(restarts)))
		case restarts >= crashRestarts:
			return r.notReady(ctx, id, fmt.Sprintf("%s exited with code %d%s", name, info.ExitCode, restartedWords(restarts)))
		}
		if time.Now().After(deadline) {
			return r.notReady(ctx, id, fmt.Sprintf("%s not ready after %s: %s", name, r.e.opts.ReadyTimeout, lastReason))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

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

// notReady builds the readiness failure with the replica's last log lines.
func (r *run) notReady(ctx context.Context, id, summary string) error {
	msg := summary
	logs, err := r.e.Logs(ctx, id, logLines)
	switch {
	case err != nil:
		msg += "; logs unavailable: " + err.Error()
	case strings.TrimSpace(logs) == "":
		msg += "; no log output"
	default:
		msg += "; last log lines:\n    " + strings.ReplaceAll(logs, "\n", "\n    ")
	}
	return &notReadyError{summary: summary, msg: msg}
}

// stopTimeout is the grace period of the spec the container was created
// with, from its recorded spec label; nil lets Docker use the container's
// own StopTimeout (which deploy set from the same spec).
func stopTimeout(c container.InspectResponse, spec *manifest.ServiceSpec) *int {
	if c.Config != nil {
		if recorded := parseSpecLabel(c.Config.Labels[drift.LabelSpec]); recorded != nil {
			t := recorded.StopGracePeriodSeconds
			return &t
		}
	}
	if spec != nil {
		t := spec.StopGracePeriodSeconds
		return &t
	}
	return nil
}

// removeContainer stops (with the grace period) and removes one of our
// containers with its anonymous volumes; named volumes are never removed
// with a container.
func (r *run) removeContainer(ctx context.Context, s *step, spec *manifest.ServiceSpec) error {
	c, err := r.ownedContainer(ctx, s.change.ID)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			r.emit(s, PhaseRemoved, "was already gone", nil)
			return nil
		}
		return err
	}
	if err := r.stopAndRemove(ctx, c, spec); err != nil {
		return err
	}
	r.emit(s, PhaseRemoved, "", nil)
	return nil
}

func (r *run) stopAndRemove(ctx context.Context, c container.InspectResponse, spec *manifest.ServiceSpec) error {
	name := strings.TrimPrefix(c.Name, "/")
	if c.State != nil && (c.State.Running || c.State.Restarting) {
		if _, err := r.e.api.ContainerStop(ctx, c.ID, client.ContainerStopOptions{Timeout: stopTimeout(c, spec)}); err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("stop %s: %w", name, err)
		}
	}
	if _, err := r.e.api.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{RemoveVolumes: true, Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	r.e.prober.remove(c.ID)
	return nil
}

// isNotFound reports a Docker 404 anywhere in err's chain.
func isNotFound(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if cerrdefs.IsNotFound(e) {
			return true
		}
	}
	return false
}
