// Package jobrun runs one job: one container created from the job's
// service spec, started, waited for to exit (or killed at its timeout),
// its exit code and last lines kept, and the older runs' containers
// removed (the last KeepRuns stay for docker logs). It decides nothing
// about when a job runs; the loop does.
package jobrun

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/deploy/internal/copyin"
	"github.com/driftless-dev/driftless/deploy/logstream"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// KeepRuns is how many runs' containers of a job are kept for docker logs.
const KeepRuns = 3

// LastLines is how many lines of a run's output are kept in history.
const LastLines = 20

// API is the part of the Docker client a run needs.
type API interface {
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerInspect(ctx context.Context, id string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerCreate(ctx context.Context, options client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerStart(ctx context.Context, id string, options client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerStop(ctx context.Context, id string, options client.ContainerStopOptions) (client.ContainerStopResult, error)
	ContainerRemove(ctx context.Context, id string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ContainerLogs(ctx context.Context, id string, options client.ContainerLogsOptions) (client.ContainerLogsResult, error)
	NetworkConnect(ctx context.Context, networkID string, options client.NetworkConnectOptions) (client.NetworkConnectResult, error)
	copyin.API
}

// Input is one run to make.
type Input struct {
	App      *manifest.App // the revision's app: Docker names, content, secrets
	Job      *manifest.Job
	Revision string
	// FilesDir, SecretsDir and StateDir are the engine's (see
	// dockerspec.ReplicaInput).
	FilesDir, SecretsDir, StateDir string
	// Remote: the engine may be on another host (dockerspec.ReplicaInput):
	// repository and secret files are copied into the created container
	// (deploy/internal/copyin), not bind-mounted; state directories are
	// volumes there.
	Remote bool
	// Poll is how often the container's state is read; 0 is 200 ms.
	Poll time.Duration
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// Run makes one run of the job, retried up to its backoffLimit, and
// returns the last attempt. It never returns an error: a run that could not
// be made says why in JobRun.Error.
func Run(ctx context.Context, api API, in Input) drift.JobRun {
	var run drift.JobRun
	for attempt := 1; attempt <= in.Job.BackoffLimit+1; attempt++ {
		run = runOnce(ctx, api, in)
		run.Attempts = attempt
		if !run.Failed() || ctx.Err() != nil {
			break
		}
	}
	prune(context.WithoutCancel(ctx), api, in.App.Name, in.Job.Name)
	return run
}

func (in Input) now() time.Time {
	if in.Now != nil {
		return in.Now()
	}
	return time.Now()
}

// runOnce creates, starts and waits for one container.
func runOnce(ctx context.Context, api API, in Input) drift.JobRun {
	j := in.Job
	start := in.now()
	run := drift.JobRun{Job: j.Name, Type: j.Type, Revision: in.Revision, JobHash: j.Hash, Started: start, ExitCode: -1}
	rc, err := createConfig(in, start)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	run.Container = rc.Create.Name
	created, err := api.ContainerCreate(ctx, rc.Create)
	if err != nil {
		run.Error = fmt.Sprintf("create %s: %v", rc.Create.Name, err)
		return run
	}
	for _, n := range rc.ExtraNetworks {
		if _, err := api.NetworkConnect(ctx, n.Name, client.NetworkConnectOptions{Container: created.ID, EndpointConfig: &network.EndpointSettings{Aliases: n.Aliases, Links: n.Links}}); err != nil {
			run.Error = fmt.Sprintf("connect %s to network %s: %v", rc.Create.Name, n.Name, err)
			return run
		}
	}
	if in.Remote {
		if err := copyin.Copy(ctx, api, created.ID, in.App, &in.Job.Service.Spec); err != nil {
			run.Error = fmt.Sprintf("%s: %v", rc.Create.Name, err)
			return run
		}
	}
	if _, err := api.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		run.Error = fmt.Sprintf("start %s: %v", rc.Create.Name, err)
		return run
	}
	state, timedOut, err := wait(ctx, api, created.ID, j.Timeout, in.Poll)
	run.TimedOut = timedOut
	if err != nil && !timedOut {
		run.Error = err.Error()
	}
	if state != nil {
		if !timedOut && !state.Running {
			run.ExitCode = state.ExitCode
		}
		run.Duration = duration(state, in.now().Sub(start))
	}
	run.LastLines = lastLines(context.WithoutCancel(ctx), api, created.ID, rc.Create.Config.Env, j.Service.Spec.SecretEnv)
	return run
}

// createConfig is the run's create call: the job's service spec as one
// replica, named and labelled as a job's run.
func createConfig(in Input, start time.Time) (dockerspec.ReplicaConfig, error) {
	svc := in.Job.Service
	svc.Name = in.Job.Name
	rc, err := dockerspec.BuildReplicaConfig(dockerspec.ReplicaInput{App: in.App, Service: &svc, Slot: 1, Revision: in.Revision, FilesDir: in.FilesDir, SecretsDir: in.SecretsDir, StateDir: in.StateDir, Remote: in.Remote})
	if err != nil {
		return rc, err
	}
	rc.Create.Name = manifest.JobContainerName(in.App.Name, in.Job.Name, start)
	labels := rc.Create.Config.Labels
	// Not a replica: no slot, service or spec the differ would read.
	for _, k := range []string{drift.LabelService, drift.LabelSlot, drift.LabelSpec} {
		delete(labels, k)
	}
	labels[drift.LabelJob] = in.Job.Name
	labels[drift.LabelJobType] = in.Job.Type
	labels[drift.LabelSpecHash] = in.Job.Hash
	rc.Create.HostConfig.RestartPolicy = container.RestartPolicy{Name: container.RestartPolicyDisabled}
	return rc, nil
}

// wait polls the container until it exits or the timeout passes; then it
// is stopped (SIGTERM, then SIGKILL after its grace period).
func wait(ctx context.Context, api API, id string, timeout, poll time.Duration) (*container.State, bool, error) {
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		res, err := api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil {
			return nil, false, fmt.Errorf("inspect the run: %w", err)
		}
		if st := res.Container.State; st != nil && !st.Running && st.Status != container.StateCreated {
			return st, false, nil
		}
		select {
		case <-ctx.Done():
			stop(api, id)
			return nil, false, ctx.Err()
		case <-deadline.C:
			stop(api, id)
			res, err := api.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
			if err != nil {
				return nil, true, err
			}
			return res.Container.State, true, nil
		case <-tick.C:
		}
	}
}

func stop(api API, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	grace := 5
	_, _ = api.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &grace})
}

// duration is how long the container ran, from the engine's times when it
// has them.
func duration(st *container.State, fallback time.Duration) time.Duration {
	started, err1 := time.Parse(time.RFC3339Nano, st.StartedAt)
	finished, err2 := time.Parse(time.RFC3339Nano, st.FinishedAt)
	if err1 != nil || err2 != nil || started.IsZero() || finished.Before(started) || finished.Year() < 2000 {
		return fallback
	}
	return finished.Sub(started)
}

// lastLines are the run's last lines of output, secret values redacted.
func lastLines(ctx context.Context, api API, id string, env, secretKeys []string) []string {
	rc, err := api.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: fmt.Sprint(LastLines)})
	if err != nil {
		return nil
	}
	defer rc.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, rc); err != nil && out.Len() == 0 {
		return nil
	}
	red := logstream.NewRedactor(env, secretKeys)
	var lines []string
	for l := range strings.SplitSeq(strings.TrimRight(out.String(), "\n"), "\n") {
		if l != "" {
			lines = append(lines, red.Line(l))
		}
	}
	return lines
}

// prune removes the job's finished runs but the newest KeepRuns.
func prune(ctx context.Context, api API, app, job string) {
	f := make(client.Filters).Add("label", drift.LabelApp+"="+app, drift.LabelJob+"="+job)
	res, err := api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return
	}
	runs := slices.Clone(res.Items)
	slices.SortFunc(runs, func(a, b container.Summary) int { return strings.Compare(runName(b), runName(a)) })
	kept := 0
	for _, c := range runs {
		if c.State == container.StateRunning {
			continue // a run of another pass (concurrency: allow)
		}
		if kept < KeepRuns {
			kept++
			continue
		}
		_, _ = api.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
	}
}

// runName orders runs: names end in the start time in milliseconds, all
// of the same width for centuries.
func runName(c container.Summary) string {
	if len(c.Names) == 0 {
		return ""
	}
	return c.Names[0]
}

// Remove removes every run of the app's jobs not in keep (by job name):
// the containers of jobs a revision no longer declares.
func Remove(ctx context.Context, api API, app string, keep func(job string) bool) {
	f := make(client.Filters).Add("label", drift.LabelApp+"="+app).Add("label", drift.LabelJob)
	res, err := api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return
	}
	for _, c := range res.Items {
		if !keep(c.Labels[drift.LabelJob]) && c.State != container.StateRunning {
			_, _ = api.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
		}
	}
}
