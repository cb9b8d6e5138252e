package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// build builds the images the app declares with build: that are missing,
// printing the builder's output as it arrives. A failed build ends the
// apply before anything is changed.
func (a *applyRun) build(ctx context.Context, desired *manifest.App) error {
	if len(desired.Builds) == 0 {
		return nil
	}
	started := false
	err := a.eng.EnsureImages(ctx, desired, func(ev drift.BuildEvent) {
		if !started && ev.Phase != drift.BuildCached {
			fmt.Fprintln(a.stdout, "\nBuilding:")
			started = true
		}
		if line := buildLine(ev); line != "" {
			fmt.Fprintln(a.stdout, line)
		}
	})
	var be *drift.BuildError
	if errors.As(err, &be) {
		if len(be.Tail) > 0 {
			fmt.Fprintf(a.stdout, "\nLast lines of the build:\n    %s\n", strings.Join(be.Tail, "\n    "))
		}
		if be.Hint != "" {
			return fmt.Errorf("%w; %s; nothing was changed", be, be.Hint)
		}
		return fmt.Errorf("%w; nothing was changed", be)
	}
	return err
}

// buildLine renders one build event: "  build  driftless/shop-web:tree-…  Step 1/2 : FROM scratch".
func buildLine(ev drift.BuildEvent) string {
	switch ev.Phase {
	case drift.BuildStart:
		return fmt.Sprintf("  build  %s  for %s", ev.Image, strings.Join(ev.Services, ", "))
	case drift.BuildLog:
		return fmt.Sprintf("  build  %s  %s", ev.Image, ev.Line)
	case drift.BuildPush:
		return fmt.Sprintf("  push   %s  %s", ev.Image, ev.Line)
	case drift.BuildDone:
		return fmt.Sprintf("  build  %s  built in %s", ev.Image, ev.Elapsed.Round(10*time.Millisecond))
	}
	return ""
}
