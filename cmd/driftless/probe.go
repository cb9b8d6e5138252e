package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftless-dev/driftless/deploy/readiness/probecheck"
)

// probeCmd is `driftless probe [--timeout D] (http URL | tcp HOST:PORT)`:
// one httpGet or tcpSocket readiness check, which the agent execs inside
// its probe container on a remote engine (deploy/remoteprobe). It runs the
// agent's own check (deploy/readiness/probecheck): exit 0 when it passes,
// otherwise 1 with the reason on stdout; 2 on a usage error.
func probeCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:    "probe [--timeout D] (http URL | tcp HOST:PORT)",
		Short:  "run one readiness check (used inside the probe container of a remote engine)",
		Hidden: true,
		Args:   cobra.ExactArgs(2),
		RunE: runs(func(ctx context.Context, pos []string, stdout, _ io.Writer) int {
			return runReadinessCheck(ctx, pos[0], pos[1], timeout, stdout)
		}),
	}
	cmd.Flags().DurationVar(&timeout, "timeout", time.Second, "how long the check may take")
	return cmd
}

func runReadinessCheck(ctx context.Context, kind, target string, timeout time.Duration, stdout io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	switch kind {
	case "http":
		err = probecheck.HTTP(ctx, probecheck.NewClient(), target)
	case "tcp":
		err = probecheck.TCP(ctx, target)
	default:
		fmt.Fprintf(stdout, "unknown probe %q: want http or tcp\n", kind)
		return exitError
	}
	if err != nil {
		fmt.Fprintln(stdout, err)
		return 1
	}
	return exitOK
}

// probeIdleCmd is `driftless probe-idle`, the probe container's command:
// it does nothing until it is stopped, and the agent execs `driftless
// probe` beside it.
func probeIdleCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "probe-idle",
		Short:  "wait until stopped (the probe container's command)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: runs(func(ctx context.Context, _ []string, _, _ io.Writer) int {
			// main's context ends on SIGTERM or SIGINT: PID 1 in a
			// container has no default handlers, so this is what stops it.
			<-ctx.Done()
			return exitOK
		}),
	}
}
