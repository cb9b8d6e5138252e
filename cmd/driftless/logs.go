package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	gosync "sync"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift/manifest"
)

// runLogs is `driftless logs APP [SERVICE|CONTAINER] [-f] [--tail N]`: the
// output of the app's own containers, read from the local engine, with
// secretEnv values redacted.
func runLogs(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("logs", "logs APP [SERVICE|CONTAINER] [-f] [--tail N]",
		"Print the last lines of APP's containers (all of them, one service's replicas, or one container),\n"+
			"read from the local Docker engine. Only containers labelled as APP's are shown; values of the\n"+
			"keys its manifests mark secretEnv are replaced by "+deploy.LogRedacted+".\n"+
			"With several containers each line starts with the container's name.\n"+
			"Exit 0 when done, 1 when the engine failed or no such container is APP's, 2 on usage errors.", stderr)
	follow := fs.Bool("f", false, "follow: keep printing new lines until interrupted (or the containers stop)")
	fs.BoolVar(follow, "follow", false, "same as -f")
	tail := fs.Int("tail", deploy.DefaultLogTail, fmt.Sprintf("lines to show from the end of each container's log (at most %d)", deploy.MaxLogTail))
	pos, err := parseFlags(fs, args)
	if err != nil {
		return exitError
	}
	if len(pos) < 1 || len(pos) > 2 || !manifest.ValidName(pos[0]) || *tail < 1 || *tail > deploy.MaxLogTail {
		fs.Usage()
		return exitError
	}
	app, name := pos[0], ""
	if len(pos) == 2 {
		name = pos[1]
	}
	eng, err := connectEngine(ctx, deploy.Options{FilesDir: deploy.DefaultFilesDir()})
	if err != nil {
		fmt.Fprintln(stderr, "driftless logs:", err)
		return 1
	}
	defer eng.Close()
	targets, err := eng.LogTargets(ctx, app, name)
	if err != nil {
		fmt.Fprintln(stderr, "driftless logs:", err)
		return 1
	}
	if err := printLogs(ctx, eng, app, targets, deploy.LogOptions{Tail: *tail, Follow: *follow}, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "driftless logs:", err)
		return 1
	}
	return exitOK
}

// logStreamer is what printLogs needs of the engine.
type logStreamer interface {
	StreamLogs(ctx context.Context, app, container string, opts deploy.LogOptions, emit func(deploy.LogLine) error) error
}

// printLogs streams each target at once, one line at a time so lines of
// different containers never interleave mid-line. An interrupt ends a
// follow cleanly.
func printLogs(ctx context.Context, eng logStreamer, app string, targets []string, opts deploy.LogOptions, stdout, stderr io.Writer) error {
	var mu gosync.Mutex
	prefix := len(targets) > 1
	emit := func(l deploy.LogLine) error {
		mu.Lock()
		defer mu.Unlock()
		w := stdout
		if l.Stream == "stderr" {
			w = stderr
		}
		if prefix {
			_, err := fmt.Fprintf(w, "%s | %s\n", l.Container, l.Text)
			return err
		}
		_, err := fmt.Fprintln(w, l.Text)
		return err
	}
	errs := make([]error, len(targets))
	var wg gosync.WaitGroup
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
