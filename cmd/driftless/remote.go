package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// invokedAs is how to run this binary again in a hint: as the user typed
// it ("./driftless", "/opt/bin/driftless"), since it may not be on PATH.
func invokedAs() string {
	if len(os.Args) == 0 || os.Args[0] == "" {
		return "driftless"
	}
	return os.Args[0]
}

// remoteFlags are the flags of commands that talk to a running agent.
type remoteFlags struct {
	server    string
	tokenFile string
	output    string
}

func (r *remoteFlags) register(fs *pflag.FlagSet) {
	server := os.Getenv("DRIFTLESS_SERVER")
	if server == "" {
		server = "http://127.0.0.1:8080"
	}
	fs.StringVar(&r.server, "server", server, "URL of the running agent (env DRIFTLESS_SERVER)")
	fs.StringVar(&r.tokenFile, "api-token-file", "", "file holding the API token (or env DRIFTLESS_API_TOKEN)")
	fs.StringVarP(&r.output, "output", "o", "text", "output format: text or json")
}

func (r *remoteFlags) client() (*web.Client, error) {
	tok, err := readSecret(r.tokenFile, "DRIFTLESS_API_TOKEN")
	if err != nil {
		return nil, err
	}
	return &web.Client{BaseURL: strings.TrimRight(r.server, "/"), Token: tok, HTTP: &http.Client{Timeout: 15 * time.Second}}, nil
}

func ago(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd ago", int(d.Hours()/24))
	}
}

func revText(r *gitsource.Revision) string {
	if r == nil {
		return "-"
	}
	s := r.Short() + " " + r.Subject
	if r.Revert {
		s += " (revert)"
	}
	return s
}

func statusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [APP] [--server URL] [--output text|json]",
		Short: "show a running agent's apps and services",
		Long:  "Show the apps of a running agent (started with 'driftless run' or 'driftless demo').\nWith APP, show its services, containers, drift and errors.",
	}
	fs := cmd.Flags()
	var r remoteFlags
	r.register(fs)
	cmd.RunE = runs(func(ctx context.Context, pos []string, stdout, stderr io.Writer) int {
		cl, err := r.client()
		if err != nil {
			fmt.Fprintln(stderr, "driftless status:", err)
			return exitError
		}
		now := time.Now()
		if len(pos) == 0 {
			apps, err := cl.Apps(ctx)
			if err != nil {
				fmt.Fprintf(stderr, "driftless status: %v\nStart the agent with '%[2]s run' (or '%[2]s demo'), or point --server at it.\n", err, invokedAs())
				return 1
			}
			if r.output == "json" {
				_ = writeJSON(stdout, apps)
				return 0
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "APP\tSYNC\tHEALTH\tREADY\tREVISION\tLAST SUCCESS\tMESSAGE")
			for _, a := range apps {
				desired, ready := 0, 0
				for _, s := range a.Services {
					desired += s.Desired
					ready += s.Ready
				}
				name := a.Name
				if a.Engine != "" {
					name += " (engine " + a.Engine + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", name, a.Sync, a.Health, ready, desired,
					revText(a.Applied), ago(a.LastSuccess, now), a.Message)
			}
			tw.Flush()
			return 0
		}
		a, err := cl.App(ctx, pos[0])
		if err != nil {
			fmt.Fprintln(stderr, "driftless status:", err)
			return 1
		}
		if r.output == "json" {
			_ = writeJSON(stdout, a)
			return 0
		}
		printAppStatus(stdout, a, now)
		return 0
	})
	return cmd
}

func printAppStatus(w io.Writer, a status.AppStatus, now time.Time) {
	fmt.Fprintf(w, "App %s: %s, %s", a.Name, a.Sync, a.Health)
	if a.Message != "" {
		fmt.Fprintf(w, " — %s", a.Message)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  source:   %s %s path %s (fetched %s)\n", a.Source.URL, a.Source.Ref, a.Source.Path, ago(a.Source.LastFetch, now))
	if a.Engine != "" {
		fmt.Fprintf(w, "  engine:   %s\n", a.Engine)
	}
	if a.Source.Error != "" {
		fmt.Fprintf(w, "  source error (since %s): %s\n", ago(a.Source.ErrorSince, now), a.Source.Error)
	}
	fmt.Fprintf(w, "  running:  %s\n", revText(a.Applied))
	if a.Applied != nil && a.Applied.SignedBy.Key != "" {
		fmt.Fprintf(w, "  signed:   by %s\n", a.Applied.SignedBy)
	}
	fmt.Fprintf(w, "  head:     %s\n", revText(a.Fetched))
	if a.Pinned != nil {
		fmt.Fprintf(w, "  PINNED to %s: not following the branch until unpinned\n", revText(a.Pinned))
	}
	printRelease(w, a, now)
	if a.Suspended {
		fmt.Fprintln(w, "  SUSPENDED: nothing is applied until resumed")
	}
	if !a.SelfHeal {
		fmt.Fprintln(w, "  self-heal off: drift is shown, not repaired")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// Services have a health, containers a Docker state: one column each,
	// so neither is read as the other.
	fmt.Fprintln(tw, "SERVICE / CONTAINER\tREADY\tHEALTH\tSTATE\tIMAGE\tMESSAGE")
	for _, s := range a.Services {
		fmt.Fprintf(tw, "%s\t%d/%d\t%s\t\t%s\t%s\n", s.Name, s.Ready, s.Desired, s.Health, s.Image, s.Message)
		for _, c := range s.Containers {
			ready := "not ready"
			if c.Ready {
				ready = "ready"
			}
			fmt.Fprintf(tw, "  %s\t%s\t\t%s\t%s\t%s\n", c.Name, ready, c.State, c.Image, c.StateAt(now))
		}
	}
	tw.Flush()
	printJobs(w, a.Jobs, now)
	printAppData(w, a)
	if a.Refused != nil {
		fmt.Fprintf(w, "\nRefused revision %s: %s\n", revText(&a.Refused.Revision), a.Refused.Reason)
		for _, e := range a.Refused.Errors {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	for _, c := range a.Errors {
		fmt.Fprintf(w, "\n%s error (for %s): %s\n", c.Kind, now.Sub(c.Since).Round(time.Second), c.Message)
	}
	if a.Drift != nil && !a.Drift.Empty() {
		fmt.Fprintf(w, "\n%s", a.Drift.String())
	}
}

// printAppData lists where the app keeps data, as its page does: state
// directories with their host paths (what to back up), then volumes.
func printAppData(w io.Writer, a status.AppStatus) {
	if len(a.StateDirs) > 0 {
		fmt.Fprintln(w, "\nState directories (the app's data on the host, kept across revisions; back them up like volumes):")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  DIRECTORY\tHOST PATH\tMOUNTED BY")
		for _, d := range a.StateDirs {
			host := d.HostPath
			if host == "" {
				host = "unknown"
			}
			var by []string
			for _, m := range d.Mounts {
				at := m.Service + " at " + m.MountPath
				if m.ReadOnly {
					at += " (read-only)"
				}
				by = append(by, at)
			}
			fmt.Fprintf(tw, "  ./%s\t%s\t%s\n", d.Path, host, strings.Join(by, ", "))
		}
		tw.Flush()
	}
	if len(a.Volumes) > 0 {
		fmt.Fprintln(w, "\nVolumes (kept when containers are replaced; removed only by pruning):")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  VOLUME\tBELONGS TO\tMOUNTED AT\tDRIVER")
		for _, v := range a.Volumes {
			owner := "volume " + v.Resource
			if v.Target != "" {
				owner = fmt.Sprintf("anonymous volume of %s slot %d", v.Service, v.Slot)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", v.Name, owner, v.Target, v.Driver)
		}
		tw.Flush()
	}
}

func historyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history APP [--kind sync,repair,refused,...] [--limit N] [--before ID]",
		Short: "show a running agent's history of an app",
		Long:  "Show what a running agent did to an app, newest first: syncs, revert commits, drift repairs,\nrefused revisions, rollbacks, flapping warnings.",
	}
	fs := cmd.Flags()
	var r remoteFlags
	r.register(fs)
	kinds := fs.String("kind", "", "comma-separated kinds: sync, repair, refused, rollback, release, flapping, source, action, force-push, image, job")
	limit := fs.Int("limit", 20, "entries per page")
	before := fs.Uint64("before", 0, "show entries older than this ID (the 'next' cursor)")
	cmd.RunE = runs(func(ctx context.Context, pos []string, stdout, stderr io.Writer) int {
		if len(pos) != 1 {
			fmt.Fprintln(stderr, "driftless history: name one APP (see 'driftless status' for the list)")
			return exitError
		}
		cl, err := r.client()
		if err != nil {
			fmt.Fprintln(stderr, "driftless history:", err)
			return exitError
		}
		var ks []string
		if *kinds != "" {
			ks = strings.Split(*kinds, ",")
		}
		page, err := cl.History(ctx, pos[0], ks, *before, *limit)
		if err != nil {
			fmt.Fprintf(stderr, "driftless history: %v\n", err)
			return 1
		}
		if r.output == "json" {
			_ = writeJSON(stdout, page)
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTIME\tKIND\tTRIGGER\tREVISION\tRESULT\tSUMMARY")
		for _, e := range page.Entries {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Time.Local().Format("2006-01-02 15:04:05"), e.Kind,
				e.Trigger, revText(e.Revision), e.Result, e.Summary)
		}
		tw.Flush()
		if page.Next != 0 {
			fmt.Fprintf(stdout, "\nOlder entries: %s history %s --before %d\n", invokedAs(), pos[0], page.Next)
		}
		return 0
	})
	return cmd
}
