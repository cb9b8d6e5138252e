// Command driftless keeps a Docker engine converged to the manifests in a Git
// repository.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/driftless-dev/driftless/internal/workload"
)

// commands are driftless's subcommands; cobra adds help and completion.
func commands() []*cobra.Command {
	return []*cobra.Command{
		validateCmd(),
		diffCmd(),
		applyCmd(),
		runCmd(),
		statusCmd(),
		syncCmd(),
		historyCmd(),
		logsCmd(),
		pruneImagesCmd(),
		demoCmd(),
		versionCmd(),
		workloadCmd(),
		probeCmd(),
		probeIdleCmd(),
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

// exitCode is a command's exit status other than 0, carried out of
// cobra's RunE to dispatch.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// body is a command's work once cobra has parsed its flags: the positional
// arguments in, the exit code out.
type body func(ctx context.Context, pos []string, stdout, stderr io.Writer) int

// runs adapts a body to cobra.
func runs(b body) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, pos []string) error {
		if code := b(cmd.Context(), pos, cmd.OutOrStdout(), cmd.ErrOrStderr()); code != exitOK {
			return exitCode(code)
		}
		return nil
	}
}

// newRoot is the driftless command with its subcommands, cobra's help and
// completion commands, and --version. Output goes where dispatch says.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:     "driftless",
		Short:   "driftless keeps a Docker engine converged to the manifests in a Git repository.",
		Version: versionText(version, buildInfo()),
		// dispatch reports errors itself, to exit with the right code.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("{{.Version}}")
	root.AddCommand(commands()...)
	return root
}

// dispatch runs the command args name and returns its exit code: the
// command's own, or 2 with the usage on stderr when the command line is
// wrong (an unknown command or flag, a flag's bad value).
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	// Never nil: cobra would read os.Args instead.
	root.SetArgs(append([]string{}, args...))
	root.SetOut(stdout)
	root.SetErr(stderr)
	if cmd, _, err := root.Find(args); err == nil {
		if arg, name := singleDashLong(cmd, args); name != "" {
			return usageError(cmd, fmt.Errorf("%s: long flags take two dashes: --%s", arg, name), stderr)
		}
	}
	cmd, err := root.ExecuteContextC(ctx)
	var code exitCode
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &code):
		return int(code)
	}
	return usageError(cmd, err, stderr)
}

func usageError(cmd *cobra.Command, err error, stderr io.Writer) int {
	fmt.Fprintf(stderr, "%s: %v\n\n%s", cmd.CommandPath(), err, cmd.UsageString())
	return exitError
}

// singleDashLong finds a long flag of cmd written with one dash (-follow,
// -output=json), as driftless took them before its flags were GNU-style.
// pflag would read it as short flags: -output=json as -o "utput=json".
func singleDashLong(cmd *cobra.Command, args []string) (arg, name string) {
	if cmd.DisableFlagParsing {
		return "", ""
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(a, "=")
		if len(name) > 2 && name[0] == '-' && name[1] != '-' && cmd.Flags().Lookup(name[1:]) != nil {
			return a, name[1:]
		}
	}
	return "", ""
}

// workloadCmd is the demo/test workload server inside the binary, the
// entrypoint of workload images (`driftless workload ...`). Its arguments
// are its own, parsed by package workload exactly as given.
func workloadCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "workload",
		Short:              "run the demo/test workload server (used inside images)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE:               runs(runWorkload),
	}
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
