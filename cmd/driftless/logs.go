package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/spf13/cobra"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/deploy/hostfiles"
	"github.com/driftless-dev/driftless/deploy/logstream"
	"github.com/driftless-dev/driftless/deploy/swarm"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/web"
)

// logsCmd is `driftless logs APP [SERVICE|CONTAINER|TASK] [-f] [--tail N]`:
// the output of the app's own containers, read from the local engine, or
// for a Swarm app of its services' tasks, read through the manager, with
// secretEnv values redacted.
func logsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logs APP [SERVICE|CONTAINER|TASK] [--follow] [--tail N] [--target engine|swarm]",
		Short: "print an app's container logs (-f to follow), secrets redacted",
		Long: "Print the last lines of APP's containers (all of them, one service's replicas, or one container),\n" +
			"read from the local Docker engine; for an app with target swarm, of its services' tasks (all\n" +
			"services, one service, or one task such as shop-web.1), read through the Swarm manager like\n" +
			"docker service logs. Only containers and services labelled as APP's are shown; values of the\n" +
			"keys its manifests mark secretEnv are replaced by " + logstream.Redacted + ".\n" +
			"With several containers each line starts with the container's name; a Swarm task's line with\n" +
			"the task and its node (shop-web.1@node-1 | ...).\n" +
			"Exit 0 when done, 1 when the engine failed or no such container is APP's, 2 on usage errors.",
	}
	fs := cmd.Flags()
	follow := fs.BoolP("follow", "f", false, "keep printing new lines until interrupted (or the containers stop)")
	tail := fs.IntP("tail", "n", logstream.DefaultTail, fmt.Sprintf("lines to show from the end of each container's log (at most %d)", logstream.MaxTail))
	target := fs.String("target", "", "where the app runs: engine or swarm; default: the engine's containers, else the Swarm's services")
	var ef engineFlag
	ef.register(fs)
	cmd.RunE = runs(func(ctx context.Context, pos []string, stdout, stderr io.Writer) int {
		if len(pos) < 1 || len(pos) > 2 || !manifest.ValidName(pos[0]) || *tail < 1 || *tail > logstream.MaxTail ||
			(*target != "" && *target != manifest.TargetEngine && *target != manifest.TargetSwarm) {
			fmt.Fprint(stderr, cmd.UsageString())
			return exitError
		}
		app, name := pos[0], ""
		if len(pos) == 2 {
			name = pos[1]
		}
		opts := deploy.Options{FilesDir: hostfiles.DefaultFilesDir()}
		_, done, err := ef.options(&opts, *target)
		if err != nil {
			fmt.Fprintln(stderr, "driftless logs:", err)
			return exitError
		}
		defer done()
		src, targets, err := openLogs(ctx, app, name, *target, opts)
		if err != nil {
			fmt.Fprintln(stderr, "driftless logs:", err)
			return 1
		}
		defer src.Close()
		if err := printLogs(ctx, src, app, targets, logstream.Options{Tail: *tail, Follow: *follow}, stdout, stderr); err != nil {
			fmt.Fprintln(stderr, "driftless logs:", err)
			return 1
		}
		return exitOK
	})
	return cmd
}

// logSource is a back end that serves an app's logs: *deploy.Engine (its
// containers) or *swarm.Engine (its services' tasks).
type logSource interface {
	LogTargets(ctx context.Context, app, name string) ([]string, error)
	logStreamer
	Close() error
}

// openLogs finds where app's logs are: on the engine, and when it has
// none of app's containers (or target says swarm), on the Swarm whose
// manager the same DOCKER_HOST names. The engine's answer is the one
// reported when neither has the app.
func openLogs(ctx context.Context, app, name, target string, opts deploy.Options) (logSource, []string, error) {
	var engineErr error
	if target != manifest.TargetSwarm {
		eng, err := connectEngine(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		targets, err := eng.LogTargets(ctx, app, name)
		if err == nil {
			return eng, targets, nil
		}
		eng.Close()
		if target == manifest.TargetEngine || !errors.Is(err, logstream.ErrNotOwned) {
			return nil, nil, err
		}
		engineErr = err
	}
	sw, err := swarm.New(swarm.Options{})
	if err != nil {
		return nil, nil, cmp.Or(engineErr, err)
	}
	targets, err := sw.LogTargets(ctx, app, name)
	if err != nil {
		sw.Close()
		if engineErr != nil && !errors.Is(err, logstream.ErrNotOwned) {
			return nil, nil, engineErr // not a Swarm manager: the app is simply not here
		}
		return nil, nil, err
	}
	return sw, targets, nil
}

// logStreamer is what printLogs needs of the engine.
type logStreamer interface {
	StreamLogs(ctx context.Context, app, container string, opts logstream.Options, emit func(logstream.Line) error) error
}

// printLogs streams each target at once, one line at a time so lines of
// different containers never interleave mid-line. An interrupt ends a
// follow cleanly.
func printLogs(ctx context.Context, eng logStreamer, app string, targets []string, opts logstream.Options, stdout, stderr io.Writer) error {
	var mu sync.Mutex
	prefix := len(targets) > 1
	emit := func(l logstream.Line) error {
		mu.Lock()
		defer mu.Unlock()
		w := stdout
		if l.Stream == "stderr" {
			w = stderr
		}
		switch {
		case l.Node != "":
			// A Swarm task, named like docker service logs does.
			_, err := fmt.Fprintf(w, "%s@%s | %s\n", l.Container, l.Node, l.Text)
			return err
		case prefix:
			_, err := fmt.Fprintf(w, "%s | %s\n", l.Container, l.Text)
			return err
		}
		_, err := fmt.Fprintln(w, l.Text)
		return err
	}
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, c := range targets {
		wg.Go(func() { errs[i] = eng.StreamLogs(ctx, app, c, opts, emit) })
	}
	wg.Wait()
	err := errors.Join(errs...)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil // interrupted while following: the normal way to stop
	}
	return err
}

// appLogs serves the dashboard's and the API's logs of each app from the
// back end it runs on: the engine's containers, or a Swarm app's tasks
// through the manager. The web server sees one LogSource.
type appLogs struct {
	engine *deploy.Engine
	swarm  *swarm.Engine // nil without Swarm apps
	// named are the engines of engines:; configOf finds an app's config
	// (its target, its engine, its name there).
	named    namedEngines
	configOf func(app string) (config.AppConfig, bool)
}

// source is the back end the app runs on and the app's name there.
func (l appLogs) source(app string) (web.LogSource, string) {
	cfg, ok := l.configOf(app)
	if !ok {
		return l.engine, app
	}
	if l.swarm != nil && cfg.Target == manifest.TargetSwarm {
		return l.swarm, cfg.NameOnEngine()
	}
	if e := l.named[cfg.Engine]; e != nil {
		return e, cfg.NameOnEngine()
	}
	return l.engine, cfg.NameOnEngine()
}

func (l appLogs) LogTargets(ctx context.Context, app, name string) ([]string, error) {
	src, onEngine := l.source(app)
	return src.LogTargets(ctx, onEngine, name)
}

func (l appLogs) StreamLogs(ctx context.Context, app, container string, opts logstream.Options, emit func(logstream.Line) error) error {
	src, onEngine := l.source(app)
	return src.StreamLogs(ctx, onEngine, container, opts, emit)
}
