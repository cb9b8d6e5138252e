// Command driftless keeps a Docker engine converged to the manifests in a Git
// repository.
package main

import (
	"context"
	"fmt"
	"github.com/sirupsen/logrus"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"syscall"
	"time"

	"github.com/driftless-dev/driftless/internal/workload"
)

// command is one subcommand of the driftless binary.
type command struct {
	name    string
	summary string
	hidden  bool
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{name: "validate", summary: "check manifests and report every error with file:line:column", run: runValidate},
		{name: "diff", summary: "show what apply would change on the local Docker engine", run: runDiff},
		{name: "apply", summary: "converge the local Docker engine to the manifests once", run: runApply},
		{name: "run", summary: "run the agent: follow Git, heal drift, serve the dashboard", run: runRun},
		{name: "status", summary: "show a running agent's apps and services", run: runStatus},
		{name: "history", summary: "show a running agent's history of an app", run: runHistory},
		{name: "logs", summary: "print an app's container logs (-f to follow), secrets redacted", run: runLogs},
		{name: "prune-images", summary: "remove images driftless built for an app that no container uses", run: runPruneImages},
		{name: "demo", summary: "try driftless locally: demo image, Git repo, agent, dashboard", run: runDemo},
		{name: "version", summary: "print the version", run: runVersion},
		{name: "workload", hidden: true, summary: "run the demo/test workload server (used inside images)", run: runWorkload},
	}
}

func main() {
	// compose-go logs through logrus's standard logger; every warning it
	// has is also reported by the compose front end, with its position,
	// as App.Warnings. Its own copies would only be noise on stderr.
	logrus.SetOutput(io.Discard)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := cpuProfile(os.Getenv("DRIFTLESS_CPUPROFILE"), os.Stderr)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stopProfile()
	stop()
	os.Exit(code)
}

// cpuProfile writes a CPU profile of the command to file, when set: a
// debugging aid (DRIFTLESS_CPUPROFILE=file), read with `go tool pprof`.
func cpuProfile(file string, stderr io.Writer) (stop func()) {
	if file == "" {
		return func() {}
	}
	f, err := os.Create(file)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(stderr, "driftless: DRIFTLESS_CPUPROFILE:", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		return runVersion(ctx, nil, stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "driftless: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "driftless keeps a Docker engine converged to the manifests in a Git repository.")
	fmt.Fprintln(w, "\nUsage: driftless <command> [flags]\n\nCommands:")
	cmds := commands()
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	for _, c := range cmds {
		if !c.hidden {
			fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprintln(w, "\nRun 'driftless <command> --help' for a command's flags.")
}

func runWorkload(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "probe" {
		return runProbe(ctx, args[1:], stdout, stderr)
	}
	cfg, err := workload.ParseArgs(args, os.Getenv)
	if err != nil {
		return 2
	}
	return workload.Run(ctx, cfg, stdout)
}

// runProbe is `driftless workload probe URL`: a healthcheck test for
// workload images, which have no shell, curl or wget. Exit 0 when
// healthy, 1 when not, 2 on usage errors.
func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: driftless workload probe (http://HOST:PORT/PATH | tcp://HOST:PORT)")
		return 2
	}
	if err := workload.Probe(ctx, args[0], 5*time.Second); err != nil {
		fmt.Fprintln(stdout, err)
		return 1
	}
	fmt.Fprintln(stdout, "ok")
	return 0
}
