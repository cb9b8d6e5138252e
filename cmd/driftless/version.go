package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version",
		Long:  "Print driftless's version and, when go build recorded it (-buildvcs), the commit it was built from.",
		RunE: runs(func(ctx context.Context, pos []string, stdout, stderr io.Writer) int {
			fmt.Fprint(stdout, versionText(version, buildInfo()))
			return exitOK
		}),
	}
}

// buildInfo is what go build recorded in this binary; nil without it.
func buildInfo() *debug.BuildInfo {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return info
}

// versionText is what `driftless version` and `driftless --version` print:
// the release set with -ldflags (else the module version go build stamped),
// then the commit, whether the work tree had changes, and the commit's time,
// as go build recorded them.
func versionText(release string, info *debug.BuildInfo) string {
	var b strings.Builder
	if release == "dev" && info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" {
		release = info.Main.Version
	}
	fmt.Fprintln(&b, "driftless", release)
	if info == nil {
		return b.String()
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, "  revision:  %s", rev[:min(12, len(rev))])
		if settings["vcs.modified"] == "true" {
			b.WriteString(" (modified)")
		}
		b.WriteString("\n")
	}
	if t := settings["vcs.time"]; t != "" {
		fmt.Fprintf(&b, "  committed: %s\n", t)
	}
	if info.GoVersion != "" {
		fmt.Fprintf(&b, "  go:        %s %s/%s\n", info.GoVersion, runtime.GOOS, runtime.GOARCH)
	}
	return b.String()
}
