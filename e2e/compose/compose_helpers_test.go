package compose

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/load"
)

// This file holds what the compose end-to-end tests share: images that
// stand in for the images compose files name, free host ports, the
// adaptation of a compose app to this machine (each change with its
// reason), the driftless binary run with a controlled environment, and
// ways to look into containers without a shell in them.

// --- Images ---------------------------------------------------------------

// --- Host ports -----------------------------------------------------------

// --- Adapting a compose app to this machine ---------------------------------

// adaptation is one change made to a compose app before it is committed,
// and why this machine needs it.
type adaptation struct {
	File, Old, New, Why string
}

// composeApp is an app directory's files, adapted to this machine.
type composeApp struct {
	t       *testing.T
	Name    string // the driftless app name
	Files   map[string]string
	Adapted []adaptation
	ports   map[string]int
}

// loadComposeApp reads every file under dir (hidden files included: .env).
func loadComposeApp(t *testing.T, name, dir string) *composeApp {
	t.Helper()
	a := &composeApp{t: t, Name: name, Files: map[string]string{}, ports: map[string]int{}}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		a.Files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Replace changes every occurrence of old in file, and records why. It
// fails the test when old is not there: the corpus changed and the
// adaptation must be looked at again.
func (a *composeApp) Replace(file, old, new, why string) {
	a.t.Helper()
	body, ok := a.Files[file]
	if !ok || !strings.Contains(body, old) {
		a.t.Fatalf("adapting %s: %q not found in %s; the corpus changed, review this adaptation (%s)", a.Name, old, file, why)
	}
	a.Files[file] = strings.ReplaceAll(body, old, new)
	a.Adapted = append(a.Adapted, adaptation{File: file, Old: old, New: new, Why: why})
}

// Port is a free host port (n consecutive ones for a range) for the
// published port named key; the same key gives the same port.
func (a *composeApp) Port(key string, n int) int {
	a.t.Helper()
	if p, ok := a.ports[key]; ok {
		return p
	}
	p := testenv.FreePorts(a.t, n)
	a.ports[key] = p
	return p
}

// Write puts the app's files into dir.
func (a *composeApp) Write(dir string) {
	a.t.Helper()
	for name, body := range a.Files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			a.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			a.t.Fatal(err)
		}
	}
}

// namespaceImages puts every `image: shop/...` of the app under the image
// set's namespace.
func (a *composeApp) namespaceImages(images *testenv.ImageSet) {
	a.t.Helper()
	for _, name := range slices.Sorted(maps.Keys(a.Files)) {
		body := a.Files[name]
		var out strings.Builder
		changed := false
		for line := range strings.Lines(body) {
			trimmed := strings.TrimLeft(line, " ")
			if strings.HasPrefix(trimmed, "image: shop/") {
				indent := line[:len(line)-len(trimmed)]
				line = indent + "image: " + images.Ref(strings.TrimPrefix(trimmed, "image: "))
				changed = true
			}
			out.WriteString(line)
		}
		if changed {
			a.Files[name] = out.String()
			a.Adapted = append(a.Adapted, adaptation{File: name, Old: "image: shop/...", New: "image: " + images.Ref("shop/..."),
				Why: "no registry: every image is a stand-in made from the driftless binary, under a namespace unique to this test run"})
		}
	}
}

// Images loads the adapted app as driftless does and returns the images
// its services use.
func (a *composeApp) Images(opts load.Options) []string {
	a.t.Helper()
	dir := filepath.Join(a.t.TempDir(), a.Name)
	a.Write(dir)
	app, err := appdir.LoadDirWith(dir, a.Name, opts)
	if err != nil {
		a.t.Fatalf("load %s: %v", a.Name, err)
	}
	var out []string
	for _, s := range app.Services {
		if !slices.Contains(out, s.Spec.Image) {
			out = append(out, s.Spec.Image)
		}
	}
	return out
}

// --- The binary with a controlled environment -----------------------------

// --- Looking into containers ------------------------------------------------

// probeFrom runs the workload's probe inside a container: the way to ask
// "does this name resolve and answer from there" without a shell.
func probeFrom(container, url string) error {
	out, err := exec.Command("docker", "exec", container, "/driftless", "workload", "probe", url).CombinedOutput()
	if err != nil {
		return fmt.Errorf("probe %s from %s: %v: %s", url, container, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// --- The agent ----------------------------------------------------------------

// specHashes maps each service of the app to the spec hash its containers
// carry (one per service once converged).
func specHashes(t *testing.T, app string) map[string]string {
	t.Helper()
	out := testenv.Docker(t, "ps", "-a", "--filter", "label="+drift.LabelApp+"="+app,
		"--format", `{{.Label "`+drift.LabelService+`"}}|{{.Label "`+drift.LabelSpecHash+`"}}`)
	m := map[string]string{}
	for line := range strings.Lines(out) {
		svc, hash, _ := strings.Cut(strings.TrimSpace(line), "|")
		if prev, ok := m[svc]; ok && prev != hash {
			t.Fatalf("service %s of %s runs two spec hashes (%s, %s) although converged", svc, app, prev, hash)
		}
		m[svc] = hash
	}
	return m
}

// engineAPIAtLeast tells whether the engine speaks API version v or later
// (healthcheck start_interval needs 1.44).
func engineAPIAtLeast(t *testing.T, v string) bool {
	t.Helper()
	have := strings.TrimSpace(testenv.Docker(t, "version", "--format", "{{.Server.APIVersion}}"))
	num := func(s string) (int, int) {
		maj, mnr, _ := strings.Cut(s, ".")
		a, _ := strconv.Atoi(maj)
		b, _ := strconv.Atoi(mnr)
		return a, b
	}
	ha, hb := num(have)
	wa, wb := num(v)
	return ha > wa || ha == wa && hb >= wb
}

// cliDir is a compose app directory that a test drives through the CLI,
// as a user does in a clone, with a data directory of its own.
type cliDir struct {
	t     *testing.T
	files *composeApp
	dir   string
	env   map[string]string // the CLI's environment: DRIFTLESS_DATA
}

// builtImage is a stand-in image of its own namespace, built if needed.
func builtImage(t *testing.T, name string) string {
	t.Helper()
	images := testenv.NewImageSet(t)
	ref := images.Ref(name)
	images.Ensure(ref)
	return ref
}

func newCLIDir(t *testing.T, app string, files map[string]string) *cliDir {
	t.Helper()
	c := &cliDir{t: t, files: &composeApp{t: t, Name: app, Files: files}, dir: filepath.Join(t.TempDir(), app),
		env: map[string]string{"DRIFTLESS_DATA": testenv.DataDir(t)}}
	c.files.Write(c.dir)
	return c
}

// run runs driftless in the directory with env (nil: c.env).
func (c *cliDir) run(env map[string]string, args ...string) (string, int) {
	c.t.Helper()
	if env == nil {
		env = c.env
	}
	return testenv.RunDriftless(c.t, c.t.Context(), c.dir, env, args...)
}

// write replaces a file of the directory.
func (c *cliDir) write(name, body string) {
	c.t.Helper()
	c.files.Files[name] = body
	c.files.Write(c.dir)
}
