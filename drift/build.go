package drift

import (
	"fmt"
	"strings"
	"time"
)

// LabelBuilt marks the images driftless built (with LabelApp naming the
// app), so that pruning finds them and nothing else.
const LabelBuilt = LabelPrefix + "built"

// LabelBuildTree is the Git tree hash of the context a built image was
// built from.
const LabelBuildTree = LabelPrefix + "build-tree"

// BuildEvent is one step of building an image from a revision, for live
// progress: a build starting, a line of its output, or its end.
type BuildEvent struct {
	Image    string   // the content-addressed reference being built
	Services []string // the services that run it
	Phase    BuildPhase
	Line     string        // PhaseLog: one line of the builder's output
	Elapsed  time.Duration // PhaseDone
}

// BuildPhase is what a BuildEvent reports.
type BuildPhase string

// Build phases.
const (
	BuildStart  BuildPhase = "build"  // a build starts (the image is missing)
	BuildLog    BuildPhase = "log"    // a line of output
	BuildDone   BuildPhase = "built"  // the image exists now
	BuildCached BuildPhase = "cached" // the image existed: nothing built
	// BuildPush: the image is being pushed to its registry so that the
	// other nodes of a Swarm can pull it; Line is the registry at the
	// start, then a layer's progress.
	BuildPush BuildPhase = "push"
)

// BuildError is a build that failed on its own: a step of the Dockerfile
// failed, or the build ran out of time. Retrying the same revision cannot
// fix it: the revision is refused and the next commit is tried. (An engine
// that cannot be reached is not a BuildError.)
type BuildError struct {
	Image    string
	Services []string
	// Step is the Dockerfile step that failed ("Step 2/3 : COPY missing /x"),
	// "" when unknown.
	Step string
	// Tail is the last lines of the build's output, oldest first.
	Tail    []string
	Err     error
	Timeout time.Duration // set when the build ran out of time
	// Hint says what the user should change when it is not the
	// Dockerfile or its context; "" for a failed build.
	Hint string
}

func (e *BuildError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "building %s for %s", e.Image, strings.Join(e.Services, ", "))
	if e.Timeout > 0 {
		fmt.Fprintf(&b, " took longer than %s", e.Timeout)
	} else {
		b.WriteString(" failed")
	}
	if e.Step != "" {
		fmt.Fprintf(&b, " at %q", e.Step)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *BuildError) Unwrap() error { return e.Err }
