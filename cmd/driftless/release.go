package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/status"
)

// printRelease shows the release lifecycle of an app with a watch window:
// the window under way, the last good release, the quarantined commits.
func printRelease(w io.Writer, a status.AppStatus, now time.Time) {
	r := a.Release
	if r == nil {
		return
	}
	if wt := r.Watching; wt != nil {
		fmt.Fprintf(w, "  release:  %s watching (%s left; %v)\n", drift.ShortRevision(wt.Revision), max(wt.Until.Sub(now), 0).Round(time.Second), wt.Services)
	}
	if r.LastGood != "" {
		fmt.Fprintf(w, "  last good: %s (passed its watch window; what a regression rolls back to)\n", drift.ShortRevision(r.LastGood))
	}
	for _, q := range r.Quarantined {
		fmt.Fprintf(w, "  QUARANTINED %s (%s): %s; retry with '%s sync --force %s'\n", q.Revision.Short(), ago(q.At, now), q.Reason, invokedAs(), a.Name)
	}
}

func syncCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sync APP [--force]",
		Short: "ask a running agent to sync an app now",
		Long: "Queue a pass of APP on a running agent, as the dashboard's Sync now does: it applies the whole plan, drift included.\n" +
			"With --force, the head of the branch is retried even when it is quarantined after a regression (release.watch).",
	}
	fs := cmd.Flags()
	var r remoteFlags
	r.register(fs)
	force := fs.Bool("force", false, "retry the head even if it is quarantined")
	cmd.RunE = runs(func(ctx context.Context, pos []string, stdout, stderr io.Writer) int {
		if len(pos) != 1 {
			fmt.Fprintln(stderr, "driftless sync: name one APP (see 'driftless status' for the list)")
			return exitError
		}
		cl, err := r.client()
		if err != nil {
			fmt.Fprintln(stderr, "driftless sync:", err)
			return exitError
		}
		app := pos[0]
		a, err := cl.App(ctx, app)
		if err != nil {
			fmt.Fprintln(stderr, "driftless sync:", err)
			return 1
		}
		if quarantinedHead(a) {
			if !*force {
				fmt.Fprintf(stderr, "driftless sync: the head %s of %s is quarantined after a regression; '%s sync --force %s' retries it on purpose\n",
					a.Fetched.Short(), app, invokedAs(), app)
				return 1
			}
			if err := cl.Unquarantine(ctx, app); err != nil {
				fmt.Fprintln(stderr, "driftless sync:", err)
				return 1
			}
			fmt.Fprintf(stdout, "quarantine of %s lifted: retrying it now\n", a.Fetched.Short())
			return 0
		}
		if err := cl.Sync(ctx, app); err != nil {
			fmt.Fprintln(stderr, "driftless sync:", err)
			return 1
		}
		fmt.Fprintf(stdout, "sync of %s queued\n", app)
		return 0
	})
	return cmd
}

func quarantinedHead(a status.AppStatus) bool {
	if a.Fetched == nil || a.Release == nil {
		return false
	}
	for _, q := range a.Release.Quarantined {
		if q.Revision.SHA == a.Fetched.SHA {
			return true
		}
	}
	return false
}
