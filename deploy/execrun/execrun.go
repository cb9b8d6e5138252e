// Package execrun runs a command in a running container as docker exec
// does: create the exec, attach to it (no TTY: the stream is multiplexed,
// whatever media type an older engine announces), copy both output
// streams to one writer until the process ends, then wait for its exit
// code, which the engine may record a moment after the stream ends. The
// lifecycle hooks (deploy/hookrun) and the remote readiness probes
// (deploy/remoteprobe) run their commands through it.
package execrun

import (
	"context"
	"io"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// API is what running a command needs of the engine.
type API interface {
	ExecCreate(ctx context.Context, containerID string, options client.ExecCreateOptions) (client.ExecCreateResult, error)
	ExecAttach(ctx context.Context, execID string, options client.ExecAttachOptions) (client.ExecAttachResult, error)
	ExecInspect(ctx context.Context, execID string, options client.ExecInspectOptions) (client.ExecInspectResult, error)
}

// exitPoll is how often the exit code is asked for once the stream ended.
const exitPoll = 10 * time.Millisecond

// Run runs opts in container id, its output (stdout and stderr) to out,
// and returns its exit code. When ctx ends first the error is
// context.Cause(ctx): callers say what the deadline was.
func Run(ctx context.Context, api API, id string, opts client.ExecCreateOptions, out io.Writer) (int, error) {
	opts.AttachStdout, opts.AttachStderr = true, true
	cr, err := api.ExecCreate(ctx, id, opts)
	if err != nil {
		return 0, err
	}
	att, err := api.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{})
	if err != nil {
		return 0, err
	}
	stop := context.AfterFunc(ctx, att.Close)
	defer stop()
	defer att.Close()
	if _, err := stdcopy.StdCopy(out, out, att.Reader); err != nil && ctx.Err() != nil {
		return 0, context.Cause(ctx)
	}
	for {
		ins, err := api.ExecInspect(ctx, cr.ID, client.ExecInspectOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return 0, context.Cause(ctx)
			}
			return 0, err
		}
		if !ins.Running {
			return ins.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		case <-time.After(exitPoll):
		}
	}
}
