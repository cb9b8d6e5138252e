package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	stdsync "sync"
	"time"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
)

func runApply(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("apply", "apply [PATH] [--app NAME] [--prune] [--dry-run]",
		"Converge the local Docker engine to the manifests under PATH once, like 'docker compose up -d':\nshow the plan, carry it out with live progress, wait until every replica is ready.\nExit 0 when the app converged and every replica is ready; 1 otherwise, with the reason; 2 on usage errors.", stderr)
	appFlag := fs.String("app", "", "app name (default: the directory name)")
	prune := fs.Bool("prune", false, "remove containers and networks no longer declared (volumes are always kept)")
	dryRun := fs.Bool("dry-run", false, "show the plan and change nothing")
	parallel := fs.Int("parallel", 4, "how many independent changes run at once")
	readyTimeout := fs.Duration("ready-timeout", 60*time.Second, "how long a new replica may take to become ready")
	var lf loadFlags
	lf.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return exitError
	}
	name, dir, err := localApp(pos, *appFlag)
	if err != nil {
		fmt.Fprintln(stderr, "driftless apply:", err)
		return exitError
	}
	opts, err := lf.options(processEnv())
	if err != nil {
		fmt.Fprintln(stderr, "driftless apply:", err)
		return exitError
	}
	adopt, err := lf.adoptCompose()
	if err != nil {
		fmt.Fprintln(stderr, "driftless apply:", err)
		return exitError
	}
	eng, err := connectEngine(ctx, deploy.Options{Parallelism: *parallel, ReadyTimeout: *readyTimeout, FilesDir: deploy.DefaultFilesDir()})
	if err != nil {
		fmt.Fprintln(stderr, "driftless apply:", err)
		return 1
	}
	defer eng.Close()

	desired, in, err := loadLocal(ctx, dir, name, opts, adopt, eng, *prune)
	if err != nil {
		fmt.Fprintln(stderr, "driftless apply:", err)
		return 1
	}
	plan := drift.Compute(in)
	// A person runs apply: like the agent's "Sync now", the whole plan is
	// applied, changes made outside Git included.
	decision := drift.Decide(in, plan, drift.Policy{SelfHeal: true, Manual: true, MaxRemovalPercent: 100, AllowEmpty: true})
	fmt.Fprint(stdout, plan.String())
	if *dryRun {
		fmt.Fprintln(stdout, "\nDry run: nothing was changed.")
		return exitOK
	}

	start := time.Now()
	var res drift.ApplyResult
	if !decision.Apply.Empty() {
		fmt.Fprintln(stdout, "\nApplying:")
		var mu stdsync.Mutex
		res = eng.Apply(ctx, desired, decision.Apply, drift.ApplyOptions{Progress: func(ev drift.Event) {
			mu.Lock()
			defer mu.Unlock()
			if line := progressLine(ev); line != "" {
				fmt.Fprintln(stdout, line)
			}
		}})
	}

	// Observe again: what counts is the state the engine is in now, not what
	// the applier believes it did. With an empty plan and every replica
	// already ready, nothing was done and nothing is awaited: the first
	// observation is the current state, and a no-op apply stays one round
	// of list calls.
	after := in
	if !plan.Empty() {
		if _, after, err = loadLocal(ctx, dir, name, opts, adopt, eng, *prune); err != nil {
			fmt.Fprintln(stderr, "driftless apply: observing after apply:", err)
			return 1
		}
	}
	rest := drift.Compute(after)
	health := drift.Assess(after, rest)
	// Replicas that exist but are not ready yet (still starting, or the
	// applier's timeout ran out elsewhere): wait for them like
	// `docker compose up --wait`, up to --ready-timeout.
	if res.Err == nil && rest.Empty() && !allReady(health) {
		fmt.Fprintln(stdout, "\nWaiting for every replica to become ready…")
		deadline := time.Now().Add(*readyTimeout)
		for !allReady(health) && time.Now().Before(deadline) && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
			if _, after, err = loadLocal(ctx, dir, name, opts, adopt, eng, *prune); err != nil {
				fmt.Fprintln(stderr, "driftless apply: observing:", err)
				return 1
			}
			rest = drift.Compute(after)
			health = drift.Assess(after, rest)
			if !rest.Empty() {
				break
			}
		}
	}
	fmt.Fprintln(stdout)
	for _, s := range health.Services {
		line := fmt.Sprintf("  %-20s %d/%d ready  %s", s.Service, s.Ready, s.Desired, s.Health)
		if s.Message != "" {
			line += ": " + s.Message
		}
		fmt.Fprintln(stdout, strings.TrimRight(line, " "))
	}
	converged := res.Err == nil && rest.Empty() && allReady(health)
	switch {
	case plan.Empty() && converged:
		// plan.String already said "No changes".
		return exitOK
	case converged:
		fmt.Fprintf(stdout, "\nApply complete in %s: app %s converged, every replica ready.\n", time.Since(start).Round(10*time.Millisecond), name)
		return exitOK
	default:
		fmt.Fprintf(stdout, "\nApply did not converge app %s:\n", name)
		if res.Err != nil {
			fmt.Fprintf(stdout, "  %v\n", res.Err)
		}
		for svc, why := range res.Degraded {
			fmt.Fprintf(stdout, "  service %s is Degraded: %v\n", svc, why)
		}
		if !rest.Empty() {
			fmt.Fprintf(stdout, "  still to do: %s\n", rest.Summary())
		}
		for _, c := range rest.Conflicts {
			fmt.Fprintf(stdout, "  conflict: %s %s: %s\n", c.Kind, c.Name, c.Reason)
		}
		return 1
	}
}

func allReady(h drift.AppHealth) bool {
	for _, s := range h.Services {
		if s.Ready < s.Desired {
			return false
		}
	}
	return true
}

// progressLine renders one live progress event, or "" for steps too small
// to show: "  +   shop-web-3    ready in 1.2s".
func progressLine(ev drift.Event) string {
	switch ev.Phase {
	case "start", "created", "started":
		return ""
	case "done":
		// A container's readiness line already said it is done.
		if ev.Change.Kind == drift.KindContainer {
			return ""
		}
	}
	what := ev.Message
	if what == "" {
		what = string(ev.Phase)
	}
	what = strings.TrimPrefix(what, ev.Change.Name+" ")
	line := fmt.Sprintf("  %-3s %-24s %s", ev.Change.Action.Symbol(), ev.Change.Name, what)
	if ev.Err != nil && !strings.Contains(what, ev.Err.Error()) {
		line += ": " + ev.Err.Error()
	}
	return line
}
