package remoteprobe

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/readiness"
	"github.com/driftless-dev/driftless/manifest"
)

// TestCheckStatic: a static Go binary (CGO_ENABLED=0) can be the probe
// image; a dynamically linked executable and a file that is not ELF are
// refused with words that say why and what to do.
func TestCheckStatic(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	static := filepath.Join(dir, "static")
	cmd := exec.Command("go", "build", "-o", static, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if _, err := imageOf(static); err != nil {
		t.Errorf("a static binary: %v", err)
	}
	// /bin/sh is dynamically linked on any distribution the tests run on.
	if _, err := imageOf("/bin/sh"); err == nil || !strings.Contains(err.Error(), "dynamically linked") || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("/bin/sh: %v, want it refused as dynamically linked, with CGO_ENABLED=0 as the way out", err)
	}
	if _, err := imageOf(src); err == nil || !strings.Contains(err.Error(), "not a Linux (ELF) executable") {
		t.Errorf("a source file: %v, want it refused as not ELF", err)
	}
}

// TestImageTarAndRef: the image is the binary alone, as /driftless, mode
// 0755, named by its content.
func TestImageTarAndRef(t *testing.T) {
	bin := []byte("\x7fELF not really")
	b, err := imageTar(bin)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(b))
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	content, _ := io.ReadAll(tr)
	if h.Name != "driftless" || h.Mode != 0o755 || h.Typeflag != tar.TypeReg || !bytes.Equal(content, bin) || !h.ModTime.Equal(time.Unix(0, 0)) {
		t.Errorf("entry %q mode %o type %c time %v content %q", h.Name, h.Mode, h.Typeflag, h.ModTime, content)
	}
	if _, err := tr.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("more than one entry: %v", err)
	}
}

// TestCommand: the exec's command line for each kind of probe.
func TestCommand(t *testing.T) {
	cmd, ok := Command("10.1.0.2", manifest.Readiness{HTTPGet: &manifest.HTTPGetProbe{Path: "ready", Port: 8080}}, 2*time.Second)
	if got := strings.Join(cmd, " "); !ok || got != "/driftless probe --timeout 2s http http://10.1.0.2:8080/ready" {
		t.Errorf("httpGet: %q", got)
	}
	cmd, ok = Command("10.1.0.2", manifest.Readiness{TCPSocket: &manifest.TCPSocketProbe{Port: 5432}}, time.Second)
	if got := strings.Join(cmd, " "); !ok || got != "/driftless probe --timeout 1s tcp 10.1.0.2:5432" {
		t.Errorf("tcpSocket: %q", got)
	}
	if _, ok := Command("10.1.0.2", manifest.Readiness{Exec: &manifest.ExecProbe{Command: []string{"x"}}}, time.Second); ok {
		t.Error("an exec probe has no probe command")
	}
}

// TestProbeMakesTheContainerOnceAndConnectsNetworks: the first probe
// imports the image, creates and starts the probe container (restart
// unless-stopped, read-only, no capabilities, no app label) and connects
// it to the target's network; the next probe on that network costs only
// the exec. A failing check's output is the error; a container running
// another image is replaced, and that image removed; Detach disconnects it from a network.
func TestProbeMakesTheContainerOnceAndConnectsNetworks(t *testing.T) {
	exe := staticBinary(t)
	api := &fakeAPI{execCode: 0}
	r := New(api, nil)
	r.Executable = func() (string, error) { return exe, nil }
	ctx := context.Background()
	probe := manifest.Readiness{HTTPGet: &manifest.HTTPGetProbe{Path: "/healthz", Port: 8080}}
	target := readiness.Target{ID: "c1", IP: "10.1.0.2", Network: "shop_default"}
	if err := r.Probe(ctx, target, probe, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.Probe(ctx, target, probe, time.Second); err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	calls := strings.Join(api.calls, "\n")
	created := api.created
	api.mu.Unlock()
	want := strings.Join([]string{
		"inspect driftless-probe", "version", "image inspect", "image import", "create", "inspect driftless-probe", "start",
		"connect shop_default", "exec create", "exec attach", "exec inspect",
		"exec create", "exec attach", "exec inspect",
	}, "\n")
	if calls != want {
		t.Errorf("calls:\n%s\nwant:\n%s", calls, want)
	}
	h, c := created.HostConfig, created.Config
	if created.Name != ContainerName || h.RestartPolicy.Name != container.RestartPolicyUnlessStopped || !h.ReadonlyRootfs ||
		h.Memory != memoryLimit || len(h.CapDrop) != 1 || h.Privileged || c.Labels[Label] != "true" || len(c.Labels) != 1 ||
		!strings.HasPrefix(c.Image, "driftless-probe:") || strings.Join(c.Cmd, " ") != "/driftless probe-idle" {
		t.Errorf("created %+v %+v", c, h)
	}
	if got := strings.Join(api.lastExec, " "); got != "/driftless probe --timeout 1s http http://10.1.0.2:8080/healthz" {
		t.Errorf("exec'd %q", got)
	}

	// A failing check: its output is the reason.
	api.mu.Lock()
	api.execCode, api.execOut, api.calls = 1, "GET http://10.1.0.2:8080/healthz: 503 Service Unavailable: no\n", nil
	api.mu.Unlock()
	err := r.Probe(ctx, target, probe, time.Second)
	if err == nil || err.Error() != "GET http://10.1.0.2:8080/healthz: 503 Service Unavailable: no" {
		t.Errorf("failing probe: %v", err)
	}

	// Detach before a network is removed.
	r.Detach(ctx, "net-id")
	api.mu.Lock()
	if got := api.calls[len(api.calls)-1]; got != "disconnect net-id driftless-probe force" {
		t.Errorf("Detach called %q", got)
	}
	// Another agent binary made the container: it is replaced.
	api.probe.Config.Image = "driftless-probe:000000000000"
	api.execCode, api.calls = 0, nil
	api.mu.Unlock()
	if err := r.Probe(ctx, target, probe, time.Second); err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if got := strings.Join(api.calls, "\n"); !strings.HasPrefix(got, "inspect driftless-probe\nremove driftless-probe\nimage remove driftless-probe:000000000000\nimage inspect\ncreate\n") {
		t.Errorf("with another image, calls:\n%s\nwant the container and its old image removed and the container created again", got)
	}
	var nilRunner *Runner
	nilRunner.Detach(ctx, "x") // a local engine: nothing
}

// An engine of another CPU architecture cannot run the agent's binary:
// the probe says so and why, asks the engine once, and imports nothing.
func TestProbeOnAnotherArchitecture(t *testing.T) {
	api := &fakeAPI{platform: "linux/s390x"}
	if runtime.GOARCH == "s390x" {
		api.platform = "linux/riscv64"
	}
	r := New(api, nil)
	r.Executable = func() (string, error) { return staticBinary(t), nil }
	probe := manifest.Readiness{TCPSocket: &manifest.TCPSocketProbe{Port: 5432}}
	target := readiness.Target{ID: "c1", IP: "10.1.0.2", Network: "shop_default"}
	for range 2 {
		err := r.Probe(context.Background(), target, probe, time.Second)
		if err == nil || !strings.Contains(err.Error(), "the engine runs "+api.platform+" and the probe image is the agent's own binary, built for "+runtime.GOOS+"/"+runtime.GOARCH) {
			t.Fatalf("probe on %s: %v", api.platform, err)
		}
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if got := strings.Join(api.calls, ","); strings.Count(got, "version") != 1 || strings.Contains(got, "import") || strings.Contains(got, "create") {
		t.Errorf("calls %s: want the platform asked once, nothing imported or created", got)
	}
}

var (
	staticOnce sync.Once
	staticPath string
	staticErr  error
)

// staticBinary is a tiny static Linux executable, built once.
func staticBinary(t *testing.T) string {
	staticOnce.Do(func() {
		dir, err := os.MkdirTemp("", "remoteprobe")
		if err != nil {
			staticErr = err
			return
		}
		src := filepath.Join(dir, "main.go")
		if staticErr = os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); staticErr != nil {
			return
		}
		staticPath = filepath.Join(dir, "bin")
		cmd := exec.Command("go", "build", "-o", staticPath, src)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			staticErr = errors.New(string(out))
		}
	})
	if staticErr != nil {
		t.Fatal(staticErr)
	}
	return staticPath
}

// fakeAPI is an engine with at most the probe container, which records
// the calls it gets.
type fakeAPI struct {
	mu       sync.Mutex
	calls    []string
	probe    *container.InspectResponse
	image    bool
	created  client.ContainerCreateOptions
	execCode int
	execOut  string
	lastExec []string
	platform string // the engine's os/arch; "" is the agent's
}

func (f *fakeAPI) ServerVersion(context.Context, client.ServerVersionOptions) (client.ServerVersionResult, error) {
	f.call("version")
	f.mu.Lock()
	defer f.mu.Unlock()
	goos, arch, _ := strings.Cut(f.platform, "/")
	if f.platform == "" {
		goos, arch = runtime.GOOS, runtime.GOARCH
	}
	return client.ServerVersionResult{Os: goos, Arch: arch}, nil
}

func (f *fakeAPI) call(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeAPI) ContainerInspect(_ context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	f.call("inspect " + id)
	f.mu.Lock()
	defer f.mu.Unlock()
	if id != ContainerName || f.probe == nil {
		return client.ContainerInspectResult{}, cerrdefs.ErrNotFound
	}
	return client.ContainerInspectResult{Container: *f.probe}, nil
}

func (f *fakeAPI) ContainerCreate(_ context.Context, o client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	f.call("create")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = o
	cfg := *o.Config
	f.probe = &container.InspectResponse{ID: "probe1", Name: "/" + o.Name, Config: &cfg, State: &container.State{},
		NetworkSettings: &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{"bridge": {IPAddress: netip.MustParseAddr("172.17.0.2")}}}}
	return client.ContainerCreateResult{ID: "probe1"}, nil
}

func (f *fakeAPI) ContainerStart(_ context.Context, id string, _ client.ContainerStartOptions) (client.ContainerStartResult, error) {
	f.call("start")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probe.State.Running = true
	return client.ContainerStartResult{}, nil
}

func (f *fakeAPI) ContainerRemove(_ context.Context, id string, _ client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	f.call("remove " + strings.TrimPrefix(f.probe.Name, "/"))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probe = nil
	return client.ContainerRemoveResult{}, nil
}

func (f *fakeAPI) ImageInspect(context.Context, string, ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	f.call("image inspect")
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.image {
		return client.ImageInspectResult{}, cerrdefs.ErrNotFound
	}
	return client.ImageInspectResult{}, nil
}

func (f *fakeAPI) ImageImport(_ context.Context, src client.ImageImportSource, ref string, _ client.ImageImportOptions) (client.ImageImportResult, error) {
	f.call("image import")
	if _, err := io.Copy(io.Discard, src.Source); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.image = true
	return io.NopCloser(strings.NewReader(`{"status":"sha256:abc"}`)), nil
}

func (f *fakeAPI) ImageRemove(_ context.Context, ref string, _ client.ImageRemoveOptions) (client.ImageRemoveResult, error) {
	f.call("image remove " + ref)
	return client.ImageRemoveResult{}, nil
}

func (f *fakeAPI) NetworkConnect(_ context.Context, n string, _ client.NetworkConnectOptions) (client.NetworkConnectResult, error) {
	f.call("connect " + n)
	return client.NetworkConnectResult{}, nil
}

func (f *fakeAPI) NetworkDisconnect(_ context.Context, n string, o client.NetworkDisconnectOptions) (client.NetworkDisconnectResult, error) {
	force := ""
	if o.Force {
		force = " force"
	}
	f.call("disconnect " + n + " " + o.Container + force)
	return client.NetworkDisconnectResult{}, nil
}

func (f *fakeAPI) ExecCreate(_ context.Context, _ string, o client.ExecCreateOptions) (client.ExecCreateResult, error) {
	f.call("exec create")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastExec = o.Cmd
	return client.ExecCreateResult{ID: "exec1"}, nil
}

func (f *fakeAPI) ExecAttach(context.Context, string, client.ExecAttachOptions) (client.ExecAttachResult, error) {
	f.call("exec attach")
	f.mu.Lock()
	out := f.execOut
	f.mu.Unlock()
	server, conn := net.Pipe()
	go func() {
		// One stdout frame of the multiplexed stream.
		hdr := []byte{byte(stdcopy.Stdout), 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(hdr[4:], uint32(len(out)))
		_, _ = server.Write(append(hdr, out...))
		server.Close()
	}()
	return client.ExecAttachResult{HijackedResponse: client.NewHijackedResponse(conn, "")}, nil
}

func (f *fakeAPI) ExecInspect(context.Context, string, client.ExecInspectOptions) (client.ExecInspectResult, error) {
	f.call("exec inspect")
	f.mu.Lock()
	defer f.mu.Unlock()
	return client.ExecInspectResult{ExitCode: f.execCode}, nil
}
