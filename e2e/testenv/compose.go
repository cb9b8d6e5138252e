package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/driftless-dev/driftless/web"
)

// ImageProfiles say what the real image a compose file names would do that
// a test can see, as environment baked into the stand-in image (the
// workload server, the driftless binary itself): the port it listens on,
// or that it is a job that runs and exits 0; an entry "VOLUME /path" is a
// volume the image declares, as its Dockerfile would. Images not listed
// listen on 8080, the workload's default.
var ImageProfiles = map[string][]string{
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
	"shop/mariadb":    {"WORKLOAD_LISTEN=:3306", "VOLUME /var/lib/mysql"},
	// The network stacks of issue 26: a DNS pair and a VPN side-car whose
	// client listens in the VPN container's namespace.
	"shop/pihole":      {"WORKLOAD_LISTEN=:80"},
	"shop/unbound":     {"WORKLOAD_LISTEN=:5335"},
	"shop/gluetun":     {"WORKLOAD_LISTEN=:8000"},
	"shop/qbittorrent": {"WORKLOAD_LISTEN=:8090"},
}

// EtcFiles are added to every stand-in image: user and group names that
// compose files use (`group_add: [audit]` needs the group in the image,
// as Docker resolves it there).
var EtcFiles = map[string]string{
	"etc/passwd": "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n",
	"etc/group":  "root:x:0:\naudit:x:10002:\nnogroup:x:65534:\n",
}

// ImageSet makes stand-in images under a namespace unique to the test,
// so that parallel tests on a shared engine never touch each other's
// tags, and removes every tag it made when the test ends.
type ImageSet struct {
	T    *testing.T
	Ns   string
	Base string

	Mu       sync.Mutex
	Profiles map[string]string // profile key -> image ID
	Tags     []string
}

// NewImageSet is an empty ImageSet in a namespace of its own; the tags it
// made are removed when the test ends.
func NewImageSet(t *testing.T) *ImageSet {
	t.Helper()
	s := &ImageSet{T: t, Ns: "e2e-" + RandHex(4), Base: WorkloadImage(t, "v1"), Profiles: map[string]string{}}
	t.Cleanup(func() {
		s.Mu.Lock()
		defer s.Mu.Unlock()
		if len(s.Tags) == 0 {
			return
		}
		// Removing every tag of a committed image removes the image.
		if out, err := DockerTry(append([]string{"rmi"}, s.Tags...)...); err != nil {
			t.Logf("cleanup of images %v: %v\n%s", s.Tags, err, out)
		}
	})
	return s
}

// Ref turns an image reference of a compose file (shop/web:1) into this
// set's name for it.
func (s *ImageSet) Ref(image string) string { return s.Ns + "/" + image }

// Repository strips the namespace and the tag: e2e-xx/shop/web:1 -> shop/web.
func (s *ImageSet) Repository(ref string) string {
	r := strings.TrimPrefix(ref, s.Ns+"/")
	if i := strings.LastIndex(r, ":"); i > strings.LastIndex(r, "/") {
		r = r[:i]
	}
	return r
}

// Ensure makes every reference exist, each as the stand-in for its
// repository's profile.
func (s *ImageSet) Ensure(refs ...string) {
	s.T.Helper()
	for _, ref := range refs {
		if !strings.HasPrefix(ref, s.Ns+"/") {
			s.T.Fatalf("image %s is not in this test's namespace %s: adapt the compose file", ref, s.Ns)
		}
		s.Mu.Lock()
		done := slices.Contains(s.Tags, ref)
		s.Mu.Unlock()
		if done {
			continue
		}
		id := s.Profile(s.Repository(ref))
		Docker(s.T, "tag", id, ref)
		s.Mu.Lock()
		s.Tags = append(s.Tags, ref)
		s.Mu.Unlock()
	}
}

// Profile commits, once, the base image plus /etc files plus the
// repository's environment, and returns the image ID.
func (s *ImageSet) Profile(repo string) string {
	s.T.Helper()
	env := ImageProfiles[repo]
	key := strings.Join(env, " ")
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if id, ok := s.Profiles[key]; ok {
		return id
	}
	ctr := Docker(s.T, "create", s.Base)
	defer DockerTry("rm", "-f", ctr)
	cp := exec.Command("docker", "cp", "-", ctr+":/")
	cp.Stdin = bytes.NewReader(TarOf(s.T, EtcFiles))
	if out, err := cp.CombinedOutput(); err != nil {
		s.T.Fatalf("docker cp /etc files: %v\n%s", err, out)
	}
	args := []string{"commit"}
	for _, e := range env {
		change := "ENV " + e
		if strings.HasPrefix(e, "VOLUME ") {
			change = e
		}
		args = append(args, "--change", change)
	}
	id := Docker(s.T, append(args, ctr)...)
	s.Profiles[key] = id
	return id
}

// TarOf is a tar archive of files (name → content), sorted, with fixed
// times so equal inputs give equal bytes.
func TarOf(t *testing.T, files map[string]string) []byte {
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

// RandHex is n random bytes in hex.
func RandHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// handedOut are the ports FreePorts gave out in this process, so that
// parallel tests never get the same ones.
var handedOut struct {
	mu    sync.Mutex
	ports map[int]bool
}

// FreePorts returns n consecutive ports that are free on every address
// for TCP and UDP and were not handed out before in this process.
func FreePorts(t *testing.T, n int) int {
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
			ok = !handedOut.ports[p] && PortFree(p)
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

// PortFree reports whether port p is free for TCP and UDP on every
// address.
func PortFree(p int) bool {
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

// RunDriftless runs the driftless binary in dir with only PATH, HOME,
// DOCKER_HOST (when set), DRIFTLESS_DATA and env: compose interpolation
// must not pick up whatever the developer's shell holds.
func RunDriftless(t *testing.T, ctx context.Context, dir string, env map[string]string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, DriftlessBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = CleanEnv(env)
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

// Inspect returns `docker inspect` of one object as generic JSON.
func Inspect(t *testing.T, kind, name string) map[string]any {
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

// Field walks a path of keys through generic JSON ("HostConfig.Memory").
// Keys may hold dots themselves ("Config.Labels.com.example.team"): at
// each level the whole rest of the path is tried as a key first.
func Field(v any, path string) any {
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

// FieldString renders a field compactly for comparisons and messages.
func FieldString(v any, path string) string {
	f := Field(v, path)
	if s, ok := f.(string); ok {
		return s
	}
	b, _ := json.Marshal(f)
	return string(b)
}

// ContainerFiles copies path out of a container (as `docker cp` does,
// without a shell or cat in the image) and returns every regular file
// under it by its path relative to path's parent, with its mode.
func ContainerFiles(t *testing.T, container, path string) map[string]string {
	t.Helper()
	out := CopyOut(t, nil, container, path)
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

// CopyOut is `docker cp CONTAINER:PATH -`, a tar of path, with the docker
// CLI's environment env (nil: this process's; a private engine's Env()).
func CopyOut(t testing.TB, env []string, container, path string) []byte {
	t.Helper()
	cmd := exec.Command("docker", "cp", container+":"+path, "-")
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker cp %s:%s: %v\n%s", container, path, err, stderr.String())
	}
	return out
}

// ContainerFile is the content of one file in a container.
func ContainerFile(t *testing.T, container, path string) string {
	t.Helper()
	files := ContainerFiles(t, container, path)
	body, ok := files[filepath.Base(path)]
	if !ok || len(files) != 1 {
		t.Fatalf("%s:%s is not one regular file: %v", container, path, slices.Collect(maps.Keys(files)))
	}
	return body
}

// ComposeAppConfig is one app entry of driftless.yaml.
type ComposeAppConfig struct {
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
	// Suspend starts the app suspended: nothing is applied until it is
	// resumed (Client.Resume).
	Suspend bool `json:"suspend,omitempty"`
	// AllowInsecureTransport is set by startConfigAgent: the test
	// servers speak git:// and http://.
	AllowInsecureTransport bool `json:"allowInsecureTransport"`
}

// StartConfigAgent writes driftless.yaml (JSON is YAML) and starts one
// agent for every app in it.
func StartConfigAgent(t *testing.T, apps []ComposeAppConfig, flags ...string) *Agent {
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
	return StartAgent(t, DataDir(t), append([]string{"run", "--config", cfg}, flags...)...)
}

// DataDir is a driftless data directory that the test's clean-up can
// remove: the repository files driftless materializes are read-only
// (files 0444, directories 0555), which only root could delete as they
// are. Registered before the agent, this runs after it stopped.
func DataDir(t *testing.T) string {
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

// AppStatus is one app's status from the agent's API.
func AppStatus(t *testing.T, a *Agent, app string) status.AppStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := a.Client().App(ctx, app)
	if err != nil {
		t.Fatalf("status of %s: %v", app, err)
	}
	return st
}

// WaitAppStatus polls one app's status until ok accepts it.
func WaitAppStatus(t *testing.T, a *Agent, app string, timeout time.Duration, what string, ok func(status.AppStatus) bool) status.AppStatus {
	t.Helper()
	return WaitApp(t, a, timeout, app+": "+what, func(ctx context.Context, c *web.Client) (status.AppStatus, error) {
		return c.App(ctx, app)
	}, ok)
}

// ConvergedServices accepts the status once sha is applied, the app is
// Synced and Healthy, and every service has exactly its desired replicas
// (a completed job counts: it is healthy). The status is written whole at
// the end of a pass, so it is a finished pass's verdict even while the
// next pass runs: with 17 apps polled every second on a slow machine a
// pass is nearly always under way, and waiting for none timed out.
func ConvergedServices(sha string, want map[string]int) func(status.AppStatus) bool {
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

// ServiceContainers maps each service of the app to its containers
// (name -> ID) as docker ps shows them.
func ServiceContainers(t *testing.T, app string) map[string]map[string]string {
	t.Helper()
	out := Docker(t, "ps", "-a", "--no-trunc", "--filter", "label="+drift.LabelApp+"="+app,
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

// ComposeCLIEnv is env for a docker-compose command: docker-compose gives
// up on an engine call after 60 s ("Read timed out"), which a loaded CI
// machine can exceed.
func ComposeCLIEnv(env []string) []string {
	return append(env, "COMPOSE_HTTP_TIMEOUT=300")
}

// CleanEnv is a child process's environment: PATH, HOME, DOCKER_HOST and
// env, nothing else from the developer's shell.
func CleanEnv(env map[string]string) []string {
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

// RemoveComposeContainers removes a docker-compose project's containers
// one at a time, before its `down` removes the rest. docker-compose stops
// them in parallel, and on Docker before 20.10.27 (the test machines'
// 20.10.24) two containers leaving one network at once can deadlock the
// engine for every later test (see deploy/internal/netleave).
func RemoveComposeContainers(t testing.TB, project string) {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=com.docker.compose.project="+project).Output()
	if err != nil {
		t.Logf("list containers of compose project %s: %v", project, err)
		return
	}
	for _, id := range strings.Fields(string(out)) {
		if out, err := exec.Command("docker", "rm", "-f", "-v", id).CombinedOutput(); err != nil {
			t.Logf("docker rm -f %s: %v\n%s", id, err, out)
		}
	}
}
