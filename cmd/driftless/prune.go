package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/manifest"
)

// pruneImagesCmd is `driftless prune-images APP`: it removes the images
// driftless built or pulled for the app that no container uses (pulled
// ones only when no app still wants them). It is a dry run unless --yes
// is given.
func pruneImagesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prune-images APP [--dry-run] [--yes] [--data DIR] [--output text|json]",
		Short: "remove images driftless built for an app that no container uses",
		Long:  "Remove the images driftless built for APP from its build: sections, and those it pulled for APP\n(recorded under DIR/pulled), that no container uses, running or stopped. A pulled image is also\nkept while APP's desired state names it, while another app pulled or wants it, and while it has\nnames driftless did not pull. Other images are never touched.\nWithout --yes (or with --dry-run) it only prints what it would remove.\nExit 0 when done, 1 when an image could not be removed or the engine failed, 2 on usage errors.",
	}
	fs := cmd.Flags()
	dryRun := fs.Bool("dry-run", false, "print what would be removed and remove nothing (the default without --yes)")
	yes := fs.Bool("yes", false, "remove the images")
	output := fs.StringP("output", "o", "text", "output format: text or json")
	data := fs.String("data", defaultDataDir(), "the agent's data directory, which records the images pulled for each app (env DRIFTLESS_DATA)")
	cmd.RunE = runs(func(ctx context.Context, pos []string, stdout, stderr io.Writer) int {
		if len(pos) != 1 || !manifest.ValidName(pos[0]) || (*output != "text" && *output != "json") {
			fmt.Fprint(stderr, cmd.UsageString())
			return exitError
		}
		eng, err := connectEngine(ctx, deploy.Options{FilesDir: filepath.Join(*data, "files")})
		if err != nil {
			fmt.Fprintln(stderr, "driftless prune-images:", err)
			return 1
		}
		defer eng.Close()
		rep, err := eng.PruneImages(ctx, pos[0], *dryRun || !*yes)
		if err != nil {
			fmt.Fprintln(stderr, "driftless prune-images:", err)
			return 1
		}
		if *output == "json" {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			_ = enc.Encode(rep)
		} else {
			fmt.Fprint(stdout, renderPrune(rep))
		}
		for _, p := range rep.Images {
			if p.Err != "" {
				return 1
			}
		}
		return exitOK
	})
	return cmd
}

// renderPrune prints a prune report, one image per line and a summary.
func renderPrune(rep deploy.PruneReport) string {
	var b strings.Builder
	if len(rep.Images) == 0 {
		fmt.Fprintf(&b, "No images built or pulled for app %s.\n", rep.App)
		return b.String()
	}
	verb := "removed"
	if rep.DryRun {
		verb = "would remove"
	}
	n := 0
	for _, p := range rep.Images {
		name := strings.Join(p.Tags, ", ")
		if name == "" {
			name = p.ID
		}
		what := p.Origin + ", " + humanBytes(p.Size)
		switch {
		case len(p.InUse) > 0:
			fmt.Fprintf(&b, "  keep          %s  (%s, used by %s)\n", name, what, strings.Join(p.InUse, ", "))
		case p.Kept != "":
			fmt.Fprintf(&b, "  keep          %s  (%s: %s)\n", name, what, p.Kept)
		case p.Err != "":
			fmt.Fprintf(&b, "  failed        %s  (%s): %s\n", name, what, p.Err)
		default:
			n++
			fmt.Fprintf(&b, "  %-13s %s  (%s)\n", verb, name, what)
		}
	}
	fmt.Fprintf(&b, "\n%s %d image(s) built or pulled for app %s, %s freed", strings.ToUpper(verb[:1])+verb[1:], n, rep.App, humanBytes(rep.Freed))
	if rep.DryRun {
		b.WriteString(" (dry run: run again with --yes to remove them)")
	}
	b.WriteString(".\n")
	return b.String()
}

// humanBytes prints a size as docker does (decimal units).
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
