package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/deploy/hostfiles"
	"github.com/driftless-dev/driftless/deploy/registry"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/internal/loadcache"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/sync/pipeline"
)

// localFlags are the flags every local command (validate, diff, apply)
// shares after its own.
type localFlags struct {
	app  string
	data *string
	lf   loadFlags
}

// localTarget is what a local command works on.
type localTarget struct {
	name, dir string
	opts      manifestLoad
	cache     *loadcache.Cache
}

// manifestLoad is how a local app's files are read, and what they may
// reach of other apps.
type manifestLoad struct {
	opts   load.Options
	adopt  bool
	shared drift.Shared
}

// settings are the pipeline's settings of the app name the flags describe,
// which the agent reads from driftless.yaml instead (pipeline.FromConfig).
// A person's one-shot command reverts changes made outside Git, as
// cliPolicy does.
func (ml manifestLoad) settings(name string, prune bool) pipeline.Settings {
	return pipeline.Settings{App: name, Prune: prune, SelfHeal: true, Adopt: ml.adopt, Target: ml.opts.Target, Shared: ml.shared}
}

// resolve turns the positional PATH and the flags into the target.
func (l *localFlags) resolve(ctx context.Context, pos []string, stderr io.Writer) (localTarget, error) {
	name, dir, err := localApp(pos, l.app)
	if err != nil {
		return localTarget{}, err
	}
	if l.app == "" {
		if name, err = defaultAppName(ctx, dir, name, *l.data, stderr); err != nil {
			return localTarget{}, err
		}
	}
	ml, err := l.lf.manifestLoad(cliEnv(namedComposeFile(pos)))
	if err != nil {
		return localTarget{}, err
	}
	if ml.opts.SecretKey, err = cliSecretKey(*l.data, stderr); err != nil {
		return localTarget{}, err
	}
	return localTarget{name: name, dir: dir, opts: ml, cache: loadCache(*l.data)}, nil
}

// applyRun is one `driftless apply`.
type applyRun struct {
	target       localTarget
	prune        bool
	readyTimeout time.Duration
	// eng builds images too: the engine, or for target swarm the
	// manager's engine (pushing where the image names a registry).
	eng    cliEngine
	stdout io.Writer
}

func (a *applyRun) load(ctx context.Context) (*manifest.App, drift.Input, error) {
	return loadLocal(ctx, a.target.cache, a.target.dir, a.target.name, a.target.opts, a.eng, a.prune)
}

func applyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "apply [PATH] [--app NAME] [--prune] [--dry-run]",
		Short: "converge the local Docker engine to the manifests once",
		Long:  "Converge the local Docker engine to the manifests under PATH once, like 'docker compose up -d':\nshow the plan, carry it out with live progress, wait until every replica is ready.\nExit 0 when the app converged and every replica is ready; 1 otherwise, with the reason; 2 on usage errors.",
	}
	fs := cmd.Flags()
	var lfl localFlags
	fs.StringVar(&lfl.app, "app", "", "app name (default: the directory name)")
	prune := fs.Bool("prune", false, "remove containers and networks no longer declared (volumes are always kept)")
	dryRun := fs.Bool("dry-run", false, "show the plan and change nothing")
	parallel := fs.Int("parallel", 4, "how many independent changes run at once")
	readyTimeout := fs.Duration("ready-timeout", 60*time.Second, "how long a new replica may take to become ready")
	buildTimeout := fs.Duration("build-timeout", deploy.DefaultBuildTimeout, "how long one image build from build: may take")
	requestTimeout := fs.Duration("request-timeout", deploy.DefaultRequestTimeout, "how long the engine may take to answer one request (create, start, inspect, remove…; a stop gets its grace period on top)")
	lfl.data = dataFlag(fs)
	lfl.lf.register(fs)
	var ef engineFlag
	ef.register(fs)
	cmd.RunE = runs(func(ctx context.Context, pos []string, stdout, stderr io.Writer) int {
		target, err := lfl.resolve(ctx, pos, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "driftless apply:", err)
			return exitError
		}
		// Like docker compose, apply pulls with the credentials of Docker's
		// config.json ($DOCKER_CONFIG or ~/.docker).
		creds := &registry.Logins{Docker: &registry.DockerConfig{Dir: registry.DockerConfigDir(os.Getenv)}}
		dopts := deploy.Options{Parallelism: *parallel, ReadyTimeout: *readyTimeout, RequestTimeout: *requestTimeout, BuildTimeout: *buildTimeout, FilesDir: hostfiles.DefaultFilesDir(), Credentials: creds}
		remote, done, err := ef.options(&dopts, target.opts.opts.Target)
		if err != nil {
			fmt.Fprintln(stderr, "driftless apply:", err)
			return exitError
		}
		defer done()
		target.opts.opts.RemoteEngine = remote
		eng, err := connectTarget(ctx, target.opts.opts.Target, dopts)
		if err != nil {
			fmt.Fprintln(stderr, "driftless apply:", err)
			return 1
		}
		defer eng.Close()
		a := &applyRun{target: target, prune: *prune, readyTimeout: *readyTimeout, eng: eng, stdout: stdout}
		memo := openInspectMemo(eng, *lfl.data, target.name, target.cache)
		code, err := a.run(ctx, *dryRun)
		memo.save(target.name)
		if err != nil {
			fmt.Fprintln(stderr, "driftless apply:", err)
		}
		return code
	})
	return cmd
}

// run plans, applies, waits for readiness and reports.
func (a *applyRun) run(ctx context.Context, dryRun bool) (int, error) {
	desired, in, err := a.load(ctx)
	if err != nil {
		return 1, err
	}
	for _, w := range desired.Warnings {
		fmt.Fprintln(a.stdout, "warning:", w.Error())
	}
	plan := drift.Compute(in)
	decision := drift.Decide(in, plan, cliPolicy())
	fmt.Fprint(a.stdout, plan.String())
	if decision.Refusal != "" {
		fmt.Fprintln(a.stdout, "\nNothing was changed.")
		return 1, fmt.Errorf("revision refused: %s", decision.Refusal)
	}
	if dryRun {
		fmt.Fprintln(a.stdout, "\nDry run: nothing was changed.")
		return exitOK, nil
	}
	start := time.Now()
	var res drift.ApplyResult
	if !decision.Apply.Empty() {
		if err := a.build(ctx, desired); err != nil {
			return 1, err
		}
		fmt.Fprintln(a.stdout, "\nApplying:")
		var mu sync.Mutex
		res = a.eng.Apply(ctx, desired, decision.Apply, drift.ApplyOptions{Progress: func(ev drift.Event) {
			mu.Lock()
			defer mu.Unlock()
			if line := progressLine(ev); line != "" {
				fmt.Fprintln(a.stdout, line)
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
		if _, after, err = a.load(ctx); err != nil {
			return 1, fmt.Errorf("observing after apply: %w", err)
		}
	}
	rest, health, err := a.awaitReady(ctx, after, res.Err == nil)
	if err != nil {
		return 1, err
	}
	return a.report(plan, res, rest, health, start), nil
}

// cliPolicy judges a person's one-shot diff and apply. Like the agent's
// "Sync now", the whole plan is applied, changes made outside Git
// included, and nothing is held for its size: the person sees the plan.
// Like a new revision at the agent (Guard), one that reaches another
// app's objects is refused.
func cliPolicy() drift.Policy {
	return drift.Policy{SelfHeal: true, Manual: true, Guard: true, MaxRemovalPercent: 100, AllowEmpty: true}
}

// awaitReady waits, like `docker compose up --wait` and up to
// --ready-timeout, for replicas that exist but are not ready yet.
func (a *applyRun) awaitReady(ctx context.Context, after drift.Input, applied bool) (drift.Plan, drift.AppHealth, error) {
	rest := drift.Compute(after)
	health := drift.Assess(after, rest)
	if !applied || !rest.Empty() || len(rest.Conflicts) > 0 || len(rest.Deferred) > 0 || allReady(health) {
		// Nothing to wait for, or waiting cannot help: a conflict or a
		// held-back change is not going to resolve itself.
		return rest, health, nil
	}
	fmt.Fprintln(a.stdout, "\nWaiting for every replica to become ready…")
	deadline := time.Now().Add(a.readyTimeout)
	for !allReady(health) && time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
		var err error
		if _, after, err = a.load(ctx); err != nil {
			return rest, health, fmt.Errorf("observing: %w", err)
		}
		rest = drift.Compute(after)
		health = drift.Assess(after, rest)
		if !rest.Empty() {
			break
		}
	}
	return rest, health, nil
}

// report prints the readiness summary and the verdict; it returns the
// exit code.
func (a *applyRun) report(plan drift.Plan, res drift.ApplyResult, rest drift.Plan, health drift.AppHealth, start time.Time) int {
	fmt.Fprintln(a.stdout)
	for _, s := range health.Services {
		line := fmt.Sprintf("  %-20s %d/%d ready  %s", s.Service, s.Ready, s.Desired, s.Health)
		if s.Message != "" {
			line += ": " + s.Message
		}
		fmt.Fprintln(a.stdout, strings.TrimRight(line, " "))
	}
	converged := res.Err == nil && rest.Empty() && allReady(health)
	switch {
	case plan.Empty() && converged:
		// plan.String already said "No changes".
		return exitOK
	case converged:
		fmt.Fprintf(a.stdout, "\nApply complete in %s: app %s converged, every replica ready.\n", time.Since(start).Round(10*time.Millisecond), a.target.name)
		return exitOK
	}
	fmt.Fprintf(a.stdout, "\nApply did not converge app %s:\n", a.target.name)
	if res.Err != nil {
		fmt.Fprintf(a.stdout, "  %v\n", res.Err)
	}
	for svc, why := range res.Degraded {
		fmt.Fprintf(a.stdout, "  service %s is Degraded: %v\n", svc, why)
	}
	if !rest.Empty() {
		fmt.Fprintf(a.stdout, "  still to do: %s\n", rest.Summary())
	}
	for _, c := range rest.Conflicts {
		fmt.Fprintf(a.stdout, "  conflict: %s %s: %s\n", c.Kind, c.Name, c.Reason)
	}
	return 1
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
