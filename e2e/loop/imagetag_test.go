package loop

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestMovedTagIsRolledOutAtOnce: a service runs a local tag; moving the
// tag onto another image by hand (docker tag, as a local build or pull
// moves it) gets the service replicas of the image the tag now names at
// once. The image's tag event starts the pass: the agent polls Git every
// 10 minutes here and looks at every app again only every 5.
func TestMovedTagIsRolledOutAtOnce(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	ns := testenv.RandHex(6)
	tag := "driftless-e2e-moved-" + ns + "/web:live"
	other := "driftless-e2e-moved-" + ns + "/web:other"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := testenv.RequireDocker(t).ImportImage(ctx, testenv.DriftlessBinary(t), other, []string{"/driftless", "workload"}, []string{"VARIANT=other"}); err != nil {
		t.Fatalf("import a second image: %v", err)
	}
	testenv.Docker(t, "tag", v1, tag)
	t.Cleanup(func() { testenv.DockerQuiet(t, "rmi", tag, other) })
	imageID := func(ref string) string { return testenv.FieldString(testenv.Inspect(t, "image", ref), "Id") }
	first, second := imageID(v1), imageID(other)
	if first == second {
		t.Fatalf("the two images have one ID %s: the test needs two", first)
	}

	r := testenv.StartRigWith(t, func(app string) string { return testenv.ServiceManifest(tag, 1, nil) }, "--interval", "10m")
	r.WaitConverged("first deploy", r.Repo.Head(), 1, tag)
	c := r.App + "-web-1"
	if got := testenv.FieldString(testenv.Inspect(t, "container", c), "Image"); got != first {
		t.Fatalf("%s runs %s, want %s (what %s names)", c, got, first, tag)
	}

	moved := time.Now()
	testenv.Docker(t, "tag", other, tag)
	deadline := moved.Add(60 * time.Second)
	for {
		// Absent for a moment while it is replaced.
		out, _ := exec.Command("docker", "inspect", "--format", "{{.Image}} {{.State.Running}}", c).Output()
		if strings.TrimSpace(string(out)) == second+" true" {
			t.Logf("%s runs the moved tag's image after %s", c, time.Since(moved).Round(100*time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s runs %q 60 s after the tag moved, want %s (what %s names now); repairs: %q", c, out, second, tag, r.Repairs())
		}
		time.Sleep(250 * time.Millisecond)
	}
	// Recorded as a repair, with what changed.
	r.WaitRepair("image", 30*time.Second)
}
