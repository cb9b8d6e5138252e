package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/driftless-dev/driftless/sync/status"
)

// printJobs lists the app's jobs and how each last ran, as its page does.
func printJobs(w io.Writer, jobs []status.JobStatus, now time.Time) {
	if len(jobs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nJobs:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  JOB\tTYPE\tSCHEDULE\tLAST RUN\tRESULT\tNEXT RUN")
	for _, j := range jobs {
		sched := "-"
		if j.Schedule != "" {
			sched = j.Schedule
			if j.TimeZone != "" {
				sched += " (" + j.TimeZone + ")"
			}
		}
		last, result := "never", "-"
		if r := j.LastRun; r != nil {
			last = ago(r.Started, now)
			result = r.Summary()
			if !r.Failed() {
				result = "ok: " + result
			} else {
				result = "FAILED: " + result
			}
		}
		if j.Running {
			result = "running"
		}
		next := "-"
		if !j.NextRun.IsZero() {
			next = "in " + j.NextRun.Sub(now).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", j.Name, j.Type, sched, last, result, next)
	}
	tw.Flush()
	for _, j := range jobs {
		if r := j.LastRun; r != nil && r.Failed() && len(r.LastLines) > 0 {
			fmt.Fprintf(w, "  last lines of %s (%s):\n", j.Name, r.Container)
			for _, l := range r.LastLines[max(0, len(r.LastLines)-5):] {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
	}
}
