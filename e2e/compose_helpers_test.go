package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// This file holds what the compose end-to-end tests share: images that
// stand in for the images compose files name, free host ports, the
// adaptation of a compose app to this machine (each change with its
// reason), the driftless binary run with a controlled environment, and
// ways to look into containers without a shell in them.

// --- Images ---------------------------------------------------------------

// imageProfiles say what the real image a compose file names would do that
// a test can see, as environment baked into the stand-in image (the
// workload server, the driftless binary itself): the port it listens on,
// or that it is a job that runs and exits 0. Images not listed listen on
// 8080, the workload's default.
var imageProfiles = map[string][]string{
	"shop/postgres":   {"WORKLOAD_LISTEN=:5432"},
	"shop/redis":      {"WORKLOAD_LISTEN=:6379"},
	"shop/rabbitmq":   {"WORKLOAD_LISTEN=:5672"},
	"shop/nginx":      {"WORKLOAD_LISTEN=:80"},
	"shop/app":        {"WORKLOAD_LISTEN=:3000"},
	"shop/api":        {"WORKLOAD_LISTEN=:8000"},
	"shop/legacy":     {"WORKLOAD_LISTEN=:5000"},
	"shop/grafana":    {"WORKLOAD_LISTEN=:3000"},
	"shop/prometheus": {"WORKLOAD_LISTEN=:9090"},
	"shop/dnsmasq":    {"WORKLOAD_LISTEN=:53"},
	"shop/migrate":    {"WORKLOAD_EXIT_AFTER=1s", "WORKLOAD_EXIT_CODE=0"},
}

// etcFiles are added to every stand-in image: user and group names that
// compose files use (`group_add: [audit]` needs the group in the image,
// as Docker resolves it there).
var etcFiles = map[string]string{
	"etc/passwd": "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n",
	"etc/group":  "root:x:0:\naudit:x:10002:\nnogroup:x:65534:\n",
}

// imageSet makes stand-in images under a namespace unique to the test,
// so that parallel tests on a shared engine never touch each other's
// tags, and removes every tag it made when the test ends.
type imageSet struct {
	t    *testing.T
	ns   string
	base string

	mu       sync.Mutex
	profiles map[string]string // profile key -> image ID
	tags     []string
}

func newImageSet(t *testing.T) *imageSet {
	t.Helper()
	s := &imageSet{t: t, ns: "e2e-" + randHex(4), base: testenv.WorkloadImage(t, "v1"), profiles: map[string]string{}}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.tags) == 0 {
			return
		}
		// Removing every tag of a committed image removes the image.
		if out, err := dockerTry(append([]string{"rmi"}, s.tags...)...); err != nil {
			t.Logf("cleanup of images %v: %v\n%s", s.tags, err, out)
		}
	})
	return s
}

// Ref turns an image reference of a compose file (shop/web:1) into this
// set's name for it.
func (s *imageSet) Ref(image string) string { return s.ns + "/" + image }

// repository strips the namespace and the tag: e2e-xx/shop/web:1 -> shop/web.
func (s *imageSet) repository(ref string) string {
	r := strings.TrimPrefix(ref, s.ns+"/")
	if i := strings.LastIndex(r, ":"); i > strings.LastIndex(r, "/") {
		r = r[:i]
	}
	return r
}

// Ensure makes every reference exist, each as the stand-in for its
// repository's profile.
func (s *imageSet) Ensure(refs ...string) {
	s.t.Helper()
	for _, ref := range refs {
		if !strings.HasPrefix(ref, s.ns+"/") {
			s.t.Fatalf("image %s is not in this test's namespace %s: adapt the compose file", ref, s.ns)
		}
		s.mu.Lock()
		done := slices.Contains(s.tags, ref)
		s.mu.Unlock()
		if done {
			continue
		}
		id := s.profile(s.repository(ref))
		docker(s.t, "tag", id, ref)
		s.mu.Lock()
		s.tags = append(s.tags, ref)
		s.mu.Unlock()
	}
}

// profile commits, once, the base image plus /etc files plus the
// repository's environment, and returns the image ID.
func (s *imageSet) profile(repo string) string {
	s.t.Helper()
	env := imageProfiles[repo]
	key := strings.Join(env, " ")
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.profiles[key]; ok {
		return id
	}
	ctr := docker(s.t, "create", s.base)
	defer dockerTry("rm", "-f", ctr)
	cp := exec.Command("docker", "cp", "-", ctr+":/")
	cp.Stdin = bytes.NewReader(tarOf(s.t, etcFiles))
	if out, err := cp.CombinedOutput(); err != nil {
		s.t.Fatalf("docker cp /etc files: %v\n%s", err, out)
	}
	args := []string{"commit"}
	for _, e := range env {
		args = append(args, "--change", "ENV "+e)
	}
	id := docker(s.t, append(args, ctr)...)
	s.profiles[key] = id
	return id
}

func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// --- Host ports -----------------------------------------------------------

var handedOut struct {
	mu    sync.Mutex
	ports map[int]bool
}

// freePorts returns n consecutive ports that are free on every address
// for TCP and UDP and were not handed out before in this process.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	handedOut.mu.Lock()
	defer handedOut.mu.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for range 200 {
		b := make([]byte, 2)
		_, _ = rand.Read(b)
		base := 20000 + int(binary.BigEndian.Uint16(b))%12000 // below the usual ephemeral range (32768-60999)
		ok := true
		for p := base; p < base+n && ok; p++ {
			ok = !handedOut.ports[p] && portFree(p)
		}
		if ok {
			for p := base; p < base+n; p++ {
				handedOut.ports[p] = true
			}
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports found", n)
	return 0
}

func portFree(p int) bool {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
	if err != nil {
		return false
	}
	l.Close()
	u, err := net.ListenPacket("udp", ":"+strconv.Itoa(p))
	if err != nil {
		return false
	}
	u.Close()
	return true
}

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
	p := freePorts(a.t, n)
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
func (a *composeApp) namespaceImages(images *imageSet) {
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

// runDriftless runs the driftless binary in dir with only PATH, HOME,
// DOCKER_HOST (when set), DRIFTLESS_DATA and env: compose interpolation
// must not pick up whatever the developer's shell holds.
func runDriftless(t *testing.T, ctx context.Context, dir string, env map[string]string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, testenv.DriftlessBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = cleanEnv(env)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("driftless %s: %v\n%s", strings.Join(args, " "), err, out)
	return "", 0
}

// --- Looking into containers ------------------------------------------------

// inspect returns `docker inspect` of one object as generic JSON.
func inspect(t *testing.T, kind, name string) map[string]any {
	t.Helper()
	out, err := exec.Command("docker", kind, "inspect", name).Output()
	if err != nil {
		t.Fatalf("docker %s inspect %s: %v", kind, name, err)
	}
	var v []map[string]any
	if err := json.Unmarshal(out, &v); err != nil || len(v) != 1 {
		t.Fatalf("docker %s inspect %s: %v (%d objects)", kind, name, err, len(v))
	}
	return v[0]
}

// field walks a path of keys through generic JSON ("HostConfig.Memory").
// Keys may hold dots themselves ("Config.Labels.com.example.team"): at
// each level the whole rest of the path is tried as a key first.
func field(v any, path string) any {
	for path != "" {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		if whole, ok := m[path]; ok {
			return whole
		}
		k, rest, _ := strings.Cut(path, ".")
		v, path = m[k], rest
	}
	return v
}

// fieldString renders a field compactly for comparisons and messages.
func fieldString(v any, path string) string {
	f := field(v, path)
	if s, ok := f.(string); ok {
		return s
	}
	b, _ := json.Marshal(f)
	return string(b)
}

// containerFiles copies path out of a container (as `docker cp` does,
// without a shell or cat in the image) and returns every regular file
// under it by its path relative to path's parent, with its mode.
func containerFiles(t *testing.T, container, path string) map[string]string {
	t.Helper()
	cmd := exec.Command("docker", "cp", container+":"+path, "-")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker cp %s:%s: %v\n%s", container, path, err, stderr.String())
	}
	files := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = string(b)
	}
	return files
}

// containerFile is the content of one file in a container.
func containerFile(t *testing.T, container, path string) string {
	t.Helper()
	files := containerFiles(t, container, path)
	body, ok := files[filepath.Base(path)]
	if !ok || len(files) != 1 {
		t.Fatalf("%s:%s is not one regular file: %v", container, path, slices.Collect(maps.Keys(files)))
	}
	return body
}

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

// composeAppConfig is one app entry of driftless.yaml.
type composeAppConfig struct {
	Name        string            `json:"name"`
	Repo        string            `json:"repo"`
	Branch      string            `json:"branch"`
	Path        string            `json:"path"`
	Interval    string            `json:"interval"`
	Prune       bool              `json:"prune,omitempty"`
	Allow       []string          `json:"allow,omitempty"`
	HostPaths   []string          `json:"hostPaths,omitempty"`
	Profiles    []string          `json:"profiles,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
	// AllowInsecureTransport is set by startConfigAgent: the test
	// servers speak git:// and http://.
	AllowInsecureTransport bool `json:"allowInsecureTransport"`
}

// startConfigAgent writes driftless.yaml (JSON is YAML) and starts one
// agent for every app in it.
func startConfigAgent(t *testing.T, apps []composeAppConfig, flags ...string) *testenv.Agent {
	t.Helper()
	for i := range apps {
		apps[i].AllowInsecureTransport = true
	}
	body, err := json.MarshalIndent(map[string]any{"apps": apps}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "driftless.yaml")
	if err := os.WriteFile(cfg, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return testenv.StartAgent(t, dataDir(t), append([]string{"run", "--config", cfg}, flags...)...)
}

// dataDir is a driftless data directory that the test's clean-up can
// remove: the repository files driftless materializes are read-only
// (files 0444, directories 0555), which only root could delete as they
// are. Registered before the agent, this runs after it stopped.
func dataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	return dir
}

// appStatus is one app's status from the agent's API.
func appStatus(t *testing.T, a *testenv.Agent, app string) status.AppStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := a.Client().App(ctx, app)
	if err != nil {
		t.Fatalf("status of %s: %v", app, err)
	}
	return st
}

// waitAppStatus polls one app's status until ok accepts it.
func waitAppStatus(t *testing.T, a *testenv.Agent, app string, timeout time.Duration, what string, ok func(status.AppStatus) bool) status.AppStatus {
	t.Helper()
	return testenv.WaitApp(t, a, timeout, app+": "+what, func(ctx context.Context, c *web.Client) (status.AppStatus, error) {
		return c.App(ctx, app)
	}, ok)
}

// convergedServices accepts the status once sha is applied, the app is
// Synced and Healthy, and every service has exactly its desired replicas
// (a completed job counts: it is healthy). The status is written whole at
// the end of a pass, so it is a finished pass's verdict even while the
// next pass runs: with 17 apps polled every second on a slow machine a
// pass is nearly always under way, and waiting for none timed out.
func convergedServices(sha string, want map[string]int) func(status.AppStatus) bool {
	return func(st status.AppStatus) bool {
		if st.Applied == nil || st.Applied.SHA != sha || st.Sync != drift.SyncSynced || st.Health != drift.HealthHealthy {
			return false
		}
		if len(st.Services) != len(want) {
			return false
		}
		for _, s := range st.Services {
			n, ok := want[s.Name]
			if !ok || s.Desired != n || len(s.Containers) != n || s.Health != drift.HealthHealthy {
				return false
			}
		}
		return true
	}
}

// serviceContainers maps each service of the app to its containers
// (name -> ID) as docker ps shows them.
func serviceContainers(t *testing.T, app string) map[string]map[string]string {
	t.Helper()
	out := docker(t, "ps", "-a", "--no-trunc", "--filter", "label="+drift.LabelApp+"="+app,
		"--format", `{{.Names}}|{{.ID}}|{{.Label "`+drift.LabelService+`"}}`)
	m := map[string]map[string]string{}
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 3 {
			t.Fatalf("unexpected docker ps line %q", line)
		}
		if m[f[2]] == nil {
			m[f[2]] = map[string]string{}
		}
		m[f[2]][f[0]] = f[1]
	}
	return m
}

// specHashes maps each service of the app to the spec hash its containers
// carry (one per service once converged).
func specHashes(t *testing.T, app string) map[string]string {
	t.Helper()
	out := docker(t, "ps", "-a", "--filter", "label="+drift.LabelApp+"="+app,
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
	have := strings.TrimSpace(docker(t, "version", "--format", "{{.Server.APIVersion}}"))
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

// cleanEnv is a child process's environment: PATH, HOME, DOCKER_HOST and
// env, nothing else from the developer's shell.
func cleanEnv(env map[string]string) []string {
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for _, k := range []string{"DOCKER_HOST", "DRIFTLESS_SECRETS_DIR"} {
		if v := os.Getenv(k); v != "" {
			out = append(out, k+"="+v)
		}
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}
