package testenv

import (
	"context"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// Docker runs the docker CLI and returns its trimmed output; a failure
// fails the test.
func Docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// DockerNames lists the app's container names, sorted.
func DockerNames(t *testing.T, app string) []string {
	t.Helper()
	out := Docker(t, "ps", "-a", "--filter", "label=dev.driftless.app="+app, "--format", "{{.Names}}")
	if out == "" {
		return nil
	}
	names := strings.Fields(out)
	sort.Strings(names)
	return names
}

// DockerStdout runs the docker CLI and returns its trimmed stdout (without
// the warnings cli_test.go's docker mixes in), failing the test with its
// stderr.
func DockerStdout(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// DockerQuiet is dockerStdout for clean-up: failures are logged, not fatal.
func DockerQuiet(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput(); err != nil {
		t.Logf("clean-up: docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// History returns the app's newest history entries of one kind ("" = all).
func History(t *testing.T, api *web.Client, app, kind string) []status.HistoryEntry {
	t.Helper()
	var kinds []string
	if kind != "" {
		kinds = []string{kind}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	page, err := api.History(ctx, app, kinds, 0, 500)
	if err != nil {
		t.Fatalf("history of %s: %v", app, err)
	}
	return page.Entries
}

// BuiltImages lists the images driftless built for app, as "name:tag".
func BuiltImages(t *testing.T, app string) []string {
	t.Helper()
	out := DockerStdout(t, "images", "--format", "{{.Repository}}:{{.Tag}}",
		"--filter", "label="+drift.LabelBuilt+"=true", "--filter", "label="+drift.LabelApp+"="+app)
	refs := strings.Fields(out)
	slices.Sort(refs)
	return refs
}

// RemoveBuiltImages removes the images built for app, and only those.
func RemoveBuiltImages(t *testing.T, app string) {
	t.Helper()
	if app == "" {
		return
	}
	for _, ref := range BuiltImages(t, app) {
		DockerQuiet(t, "image", "rm", ref)
	}
}

// ObserveWith observes through a fresh engine (an empty readiness cache,
// as a new CLI process has) at host ("" = the default).
func ObserveWith(ctx context.Context, host string, observe func(*deploy.Engine) (drift.Actual, error)) (drift.Actual, error) {
	eng, err := deploy.New(ctx, deploy.Options{Host: host})
	if err != nil {
		return drift.Actual{}, err
	}
	defer eng.Close()
	return observe(eng)
}
