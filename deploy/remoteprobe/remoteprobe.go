// Package remoteprobe runs httpGet and tcpSocket readiness probes on an
// engine that may be on another host, where the agent cannot reach the
// containers' bridge addresses. The agent keeps one probe container on
// that engine, driftless-probe, made from its own static binary (imported
// as the image driftless-probe:<hash of the binary>) and idling; it
// connects it to each network of a probed container, and runs each probe
// as an exec of `driftless probe http URL` or `driftless probe tcp
// HOST:PORT` in it, all over the engine API: no port is opened. The check
// in the container is the agent's own (deploy/readiness/probecheck), so a
// reason reads the same as on the agent's host.
package remoteprobe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/execrun"
	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
	"github.com/driftless-dev/driftless/deploy/readiness"
	"github.com/driftless-dev/driftless/deploy/readiness/probecheck"
	"github.com/driftless-dev/driftless/manifest"
)

// ContainerName is the probe container's name on each remote engine.
const ContainerName = "driftless-probe"

// Label marks the probe container (and its image). It is not
// dev.driftless.app: no app, view or prune ever takes it for an app's
// container.
const Label = "dev.driftless.probe"

// memoryLimit bounds the probe container: an idle process and, during a
// probe, one more.
const memoryLimit = 64 << 20

// execSlack is how much longer than the probe's own timeout the agent
// waits for an exec's answer: the exec's create, start and inspect
// requests, and the process's start.
const execSlack = 10 * time.Second

// API is the part of the Docker client the probe container needs.
type API interface {
	ContainerInspect(ctx context.Context, id string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerCreate(ctx context.Context, options client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerStart(ctx context.Context, id string, options client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerRemove(ctx context.Context, id string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ImageImport(ctx context.Context, source client.ImageImportSource, ref string, options client.ImageImportOptions) (client.ImageImportResult, error)
	ImageRemove(ctx context.Context, ref string, options client.ImageRemoveOptions) (client.ImageRemoveResult, error)
	NetworkConnect(ctx context.Context, networkID string, options client.NetworkConnectOptions) (client.NetworkConnectResult, error)
	NetworkDisconnect(ctx context.Context, networkID string, options client.NetworkDisconnectOptions) (client.NetworkDisconnectResult, error)
	execrun.API
	ServerVersion(ctx context.Context, options client.ServerVersionOptions) (client.ServerVersionResult, error)
}

// Runner keeps the probe container of one engine and runs probes in it;
// it is a readiness.Runner. Its methods are safe for concurrent use.
type Runner struct {
	api API
	log *slog.Logger
	// Executable is the agent's binary, the probe image's content;
	// default os.Executable. Set it before the first probe.
	Executable func() (string, error)

	imageOnce sync.Once
	img       image
	imgErr    error

	mu sync.Mutex
	// id is the probe container's ID once it is known to run the current
	// image; networks are the networks it is on then.
	id       string
	networks map[string]bool
	// platformOK and platformErr are checkPlatform's answer, once known.
	platformOK  bool
	platformErr error
}

// New is a Runner on the engine api reaches; nothing is made on the engine
// before the first probe.
func New(api API, log *slog.Logger) *Runner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{api: api, log: log, Executable: os.Executable}
}

// Command is the probe command the exec runs in the probe container; ok is
// false when r declares no httpGet or tcpSocket probe.
func Command(ip string, r manifest.Readiness, timeout time.Duration) (cmd []string, ok bool) {
	cmd = []string{binaryPath, "probe", "--timeout", timeout.String()}
	switch {
	case r.HTTPGet != nil:
		return append(cmd, "http", probecheck.HTTPURL(ip, r.HTTPGet.Port, r.HTTPGet.Path)), true
	case r.TCPSocket != nil:
		return append(cmd, "tcp", probecheck.TCPAddr(ip, r.TCPSocket.Port)), true
	}
	return nil, false
}

// Probe runs one probe of the container t in the probe container, which
// it first makes, starts or connects to t's network as needed. The error
// is the check's own reason, or why the probe could not run.
func (p *Runner) Probe(ctx context.Context, t readiness.Target, r manifest.Readiness, timeout time.Duration) error {
	cmd, ok := Command(t.IP, r, timeout)
	if !ok {
		return nil
	}
	for attempt := 0; ; attempt++ {
		id, err := p.prepare(ctx, t)
		if err != nil {
			return err
		}
		ectx, cancel := context.WithTimeout(ctx, timeout+execSlack)
		code, out, err := p.exec(ectx, id, cmd)
		cancel()
		if err != nil {
			// Removed or stopped behind the agent's back: make it again,
			// once.
			p.forget()
			if attempt == 0 && (cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err)) && ctx.Err() == nil {
				continue
			}
			return fmt.Errorf("probe in %s: %w", ContainerName, err)
		}
		if code == 0 {
			return nil
		}
		if out == "" {
			out = fmt.Sprintf("%s exited with code %d", strings.Join(cmd[1:], " "), code)
		}
		return errors.New(out)
	}
}

// prepare makes sure the probe container runs and is on t's network, and
// returns its ID.
func (p *Runner) prepare(ctx context.Context, t readiness.Target) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.id == "" {
		if err := p.ensure(ctx); err != nil {
			return "", err
		}
	}
	network := t.Network
	if network == "" {
		var err error
		if network, err = p.networkOf(ctx, t); err != nil {
			return "", err
		}
	}
	if !p.networks[network] {
		_, err := p.api.NetworkConnect(ctx, network, client.NetworkConnectOptions{Container: p.id})
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			return "", fmt.Errorf("connect %s to network %s: %w", ContainerName, network, err)
		}
		p.networks[network] = true
	}
	return p.id, nil
}

// networkOf finds, by an inspect, the network on which t has its address
// (the prober knew it from a list summary only).
func (p *Runner) networkOf(ctx context.Context, t readiness.Target) (string, error) {
	res, err := p.api.ContainerInspect(ctx, t.ID, client.ContainerInspectOptions{})
	if err != nil {
		return "", fmt.Errorf("find the network of %s: %w", t.IP, err)
	}
	if ns := res.Container.NetworkSettings; ns != nil {
		for name, ep := range ns.Networks {
			if ep != nil && ep.IPAddress.IsValid() && ep.IPAddress.String() == t.IP {
				return name, nil
			}
		}
	}
	return "", fmt.Errorf("the container has no network with address %s", t.IP)
}

// ensure makes the probe image and container as needed: the container is
// created when missing, replaced when it runs another image (another
// agent binary), started when stopped. Callers hold p.mu.
func (p *Runner) ensure(ctx context.Context) error {
	p.imageOnce.Do(func() {
		path, err := p.Executable()
		if err != nil {
			p.imgErr = fmt.Errorf("find the agent's binary: %w", err)
			return
		}
		p.img, p.imgErr = imageOf(path)
	})
	if p.imgErr != nil {
		return fmt.Errorf("no probe container: %w", p.imgErr)
	}
	res, err := p.api.ContainerInspect(ctx, ContainerName, client.ContainerInspectOptions{})
	switch {
	case err != nil && !cerrdefs.IsNotFound(err):
		return fmt.Errorf("inspect %s: %w", ContainerName, err)
	case err == nil && (res.Container.Config == nil || res.Container.Config.Image != p.img.ref):
		p.log.Info("replacing the probe container: another agent binary", "container", ContainerName)
		if _, err := p.api.ContainerRemove(ctx, res.Container.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("remove the old %s: %w", ContainerName, err)
		}
		p.removeOldImage(ctx, res.Container.Config)
		err = cerrdefs.ErrNotFound
	}
	if err != nil {
		if res, err = p.create(ctx); err != nil {
			return err
		}
	}
	c := res.Container
	if c.State == nil || !c.State.Running {
		if _, err := p.api.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
			return fmt.Errorf("start %s: %w", ContainerName, err)
		}
	}
	p.id, p.networks = c.ID, map[string]bool{}
	if c.NetworkSettings != nil {
		for name := range c.NetworkSettings.Networks {
			p.networks[name] = true
		}
	}
	return nil
}

// checkPlatform refuses an engine that cannot run the agent's binary (its
// OS or CPU architecture differ): the probe image is that binary. The
// answer is kept, since an engine does not change platform under a name.
func (p *Runner) checkPlatform(ctx context.Context) error {
	if p.platformErr != nil || p.platformOK {
		return p.platformErr
	}
	v, err := p.api.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return fmt.Errorf("ask the engine its platform: %w", err)
	}
	p.platformOK = true
	if want := runtime.GOOS + "/" + runtime.GOARCH; v.Os+"/"+v.Arch != want {
		p.platformErr = fmt.Errorf("the engine runs %s/%s and the probe image is the agent's own binary, built for %s: run the agent built for %s/%s, or use an exec probe or a healthcheck", v.Os, v.Arch, want, v.Os, v.Arch)
	}
	return p.platformErr
}

// create imports the image if the engine lacks it and creates the
// container, returning its inspect.
func (p *Runner) create(ctx context.Context) (client.ContainerInspectResult, error) {
	if err := p.checkPlatform(ctx); err != nil {
		return client.ContainerInspectResult{}, err
	}
	if err := p.importImage(ctx); err != nil {
		return client.ContainerInspectResult{}, err
	}
	pids := int64(64)
	_, err := p.api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: ContainerName,
		Config: &container.Config{
			Image:  p.img.ref,
			Cmd:    []string{binaryPath, "probe-idle"},
			User:   "65534:65534",
			Labels: map[string]string{Label: "true"},
		},
		HostConfig: &container.HostConfig{
			RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyUnlessStopped},
			ReadonlyRootfs: true,
			CapDrop:        []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges"},
			Resources:      container.Resources{Memory: memoryLimit, PidsLimit: &pids},
		},
	})
	if err != nil && !cerrdefs.IsConflict(err) { // a conflict: made meanwhile
		return client.ContainerInspectResult{}, fmt.Errorf("create %s: %w", ContainerName, err)
	}
	p.log.Info("created the probe container", "container", ContainerName, "image", p.img.ref)
	res, err := p.api.ContainerInspect(ctx, ContainerName, client.ContainerInspectOptions{})
	if err != nil {
		return res, fmt.Errorf("inspect %s: %w", ContainerName, err)
	}
	return res, nil
}

// removeOldImage removes the image of a replaced probe container, when it
// is an earlier agent binary's probe image: each upgrade would otherwise
// leave one on the engine. A failure is only logged.
func (p *Runner) removeOldImage(ctx context.Context, cfg *container.Config) {
	if cfg == nil || !strings.HasPrefix(cfg.Image, imageRepo+":") || cfg.Image == p.img.ref {
		return
	}
	if _, err := p.api.ImageRemove(ctx, cfg.Image, client.ImageRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		p.log.Warn("old probe image not removed", "image", cfg.Image, "err", err)
	}
}

// importImage imports the probe image unless the engine has it.
func (p *Runner) importImage(ctx context.Context) error {
	if _, err := p.api.ImageInspect(ctx, p.img.ref); err == nil {
		return nil
	} else if !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("inspect image %s: %w", p.img.ref, err)
	}
	bin, err := os.ReadFile(p.img.path)
	if err != nil {
		return fmt.Errorf("read the agent's binary: %w", err)
	}
	tarball, err := imageTar(bin)
	if err != nil {
		return fmt.Errorf("import image %s: %w", p.img.ref, err)
	}
	rc, err := p.api.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(tarball), SourceName: "-"}, p.img.ref,
		client.ImageImportOptions{Changes: []string{`LABEL ` + Label + `=true`}})
	if err != nil {
		return fmt.Errorf("import image %s: %w", p.img.ref, err)
	}
	defer rc.Close()
	if err := engineerr.FromJSONStream(rc); err != nil {
		return fmt.Errorf("import image %s: %w", p.img.ref, err)
	}
	p.log.Info("imported the probe image", "image", p.img.ref, "bytes", len(bin))
	return nil
}

// exec runs cmd in the probe container and returns its exit code and its
// output (both streams), bounded.
func (p *Runner) exec(ctx context.Context, id string, cmd []string) (int, string, error) {
	out := &bounded{max: probecheck.BodyLimit + 256}
	code, err := execrun.Run(ctx, p.api, id, client.ExecCreateOptions{Cmd: cmd}, out)
	if err != nil && ctx.Err() != nil {
		return 0, "", fmt.Errorf("no answer within the probe's timeout and %s: %w", execSlack, err)
	}
	if err != nil {
		return 0, "", err
	}
	return code, strings.TrimSpace(out.String()), nil
}

// forget drops what the runner knows of the probe container: the next
// probe inspects it again.
func (p *Runner) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.id, p.networks = "", nil
}

// Detach disconnects the probe container from a network deploy is about to
// remove (a network with a container attached cannot be removed). A nil
// Runner (a local engine) does nothing; so does a probe container that is
// not there or not on that network.
func (p *Runner) Detach(ctx context.Context, network string) {
	if p == nil {
		return
	}
	_, err := p.api.NetworkDisconnect(ctx, network, client.NetworkDisconnectOptions{Container: ContainerName, Force: true})
	if err != nil {
		p.log.Debug("probe container not disconnected", "network", network, "err", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.id != "" {
		// Known by name, the network is given here by name or ID: look
		// again at the next probe.
		p.id, p.networks = "", nil
	}
}

// bounded keeps the first max bytes written to it and drops the rest.
type bounded struct {
	bytes.Buffer
	max int
}

func (b *bounded) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
