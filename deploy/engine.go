// Package deploy observes and changes a Docker engine: it turns the objects
// labelled by driftless into drift.Actual, and carries out a drift.Plan.
//
// deploy executes; it decides nothing the differ decides. A Change's Reason
// is for people and is never branched on.
package deploy

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftless-dev/driftless/deploy/dialclient"
	"github.com/driftless-dev/driftless/deploy/hostfiles"
	"github.com/driftless-dev/driftless/deploy/internal/engineapi"
	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
	"github.com/driftless-dev/driftless/deploy/internal/liveness"
	"github.com/driftless-dev/driftless/deploy/internal/netleave"
	"github.com/driftless-dev/driftless/deploy/internal/requestcount"
	"github.com/driftless-dev/driftless/deploy/pullrecord"
	"github.com/driftless-dev/driftless/deploy/readiness"
	"github.com/driftless-dev/driftless/deploy/registry"
	"github.com/driftless-dev/driftless/deploy/remoteprobe"
	"github.com/driftless-dev/driftless/deploy/view"
	"github.com/driftless-dev/driftless/drift"
)

// dockerAPI is the part of the Docker client deploy uses (see
// engineapi.API); *client.Client satisfies it.
type dockerAPI = engineapi.API

// Options configure an Engine.
type Options struct {
	Host string // "" = DOCKER_HOST / default socket
	// TLS, for a named engine (engines: in driftless.yaml), verifies the
	// engine and authenticates the agent with these files instead of
	// DOCKER_CERT_PATH; nil: the environment's settings, if any.
	TLS          *TLSFiles
	Parallelism  int           // bounded concurrency for independent creates/removes; default 4
	ReadyTimeout time.Duration // how long a new replica may take to become ready before the rollout stops; default 60s
	SettleTime   time.Duration // no readiness section and no Docker healthcheck: running this long without restarting = ready; default 2s
	// FilesDir is where repository files of bind mounts are materialized,
	// one read-only directory per content hash (the agent passes
	// <data>/files); default hostfiles.DefaultFilesDir(). It must be a path the
	// Docker daemon sees as the same host path.
	FilesDir string
	// SecretsDir is where secret files are written, on a tmpfs, one
	// root-only directory per app and service; default
	// hostfiles.DefaultSecretsDir(). Like FilesDir, the Docker daemon must see it
	// as the same host path.
	SecretsDir string
	// StateDir holds the apps' state directories, <StateDir>/<app>/<path>
	// (the agent passes <data>/state); default "state" beside FilesDir.
	// Like FilesDir, the Docker daemon must see it as the same host path.
	StateDir string
	Logger   *slog.Logger
	// BuildTimeout bounds one image build; default DefaultBuildTimeout.
	BuildTimeout time.Duration
	// Credentials give pulls and tag resolutions their registry
	// credentials; nil pulls anonymously.
	Credentials registry.Credentials
	// RegistryCertsDir is where a registry's CA and client certificate
	// are found for tag checks, HOST[:PORT]/ca.crt as for the engine;
	// default registry.DefaultCertsDir.
	RegistryCertsDir string
	// Scrub are values the agent holds (Git credentials) that are removed,
	// like each container's own secrets, from the log lines and probe
	// output a failure or readiness reason carries.
	Scrub []string

	// ViewResync is how often Watch checks its view of the engine against
	// a fresh list; default 5m.
	ViewResync time.Duration
	// LivenessInterval is how long a successful ping vouches for the
	// engine: passes that read the view within it send none of their own,
	// so pings grow with time, not with apps. Default 5s. While the engine
	// is known down, it is also how often a background ping looks again.
	LivenessInterval time.Duration
	// PingTimeout bounds every ping: an engine that accepts connections
	// and never answers is down after this long. Default 5s.
	PingTimeout time.Duration
	// RequestTimeout bounds each request the engine answers at once
	// (lists, inspects, creates, starts, removes; a stop gets its grace
	// period on top): one left unanswered fails the pass as the engine
	// not answering, and the loop retries soon. Streams (events, logs,
	// pulls, builds) are not bounded. Default DefaultRequestTimeout.
	RequestTimeout time.Duration

	// AddressPool is where the subnets of new app bridge networks come
	// from; nil: drift.DefaultAddressPool(); a zero pool: Docker's own
	// default pools.
	AddressPool *drift.AddressPool
	// RoutesFile is the host's IPv4 routing table, whose destinations a
	// new subnet must not overlap; default /proc/net/route.
	RoutesFile string

	// Dial, when set, is how the Docker client reaches the engine (e.g. a
	// dockerssh.Dialer's DialContext, over SSH): every connection comes
	// from it, HTTP requests name a placeholder host, and Host only names
	// the engine in messages. DOCKER_HOST and the TLS variables are not
	// read then.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Remote: the engine may be on another host, where FilesDir and
	// SecretsDir are not: repository and secret files are copied into each
	// created container (deploy/internal/copyin), not bind-mounted.
	Remote bool
}

// TLSFiles are the PEM files of a TLS connection to an engine: the CA
// that signed the engine's certificate, and the agent's certificate and
// key.
type TLSFiles struct {
	CAFile, CertFile, KeyFile string
}

func (o Options) withDefaults() Options {
	if o.Parallelism <= 0 {
		o.Parallelism = 4
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 60 * time.Second
	}
	if o.SettleTime <= 0 {
		o.SettleTime = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ViewResync <= 0 {
		o.ViewResync = 5 * time.Minute
	}
	if o.LivenessInterval <= 0 {
		o.LivenessInterval = 5 * time.Second
	}
	if o.PingTimeout <= 0 {
		o.PingTimeout = 5 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.FilesDir == "" {
		o.FilesDir = hostfiles.DefaultFilesDir()
	}
	if o.AddressPool == nil {
		pool := drift.DefaultAddressPool()
		o.AddressPool = &pool
	}
	if o.RoutesFile == "" {
		o.RoutesFile = "/proc/net/route"
	}
	if o.RegistryCertsDir == "" {
		o.RegistryCertsDir = registry.DefaultCertsDir
	}
	if abs, err := filepath.Abs(o.FilesDir); err == nil {
		o.FilesDir = abs
	}
	if o.StateDir == "" {
		o.StateDir = hostfiles.StateRoot(filepath.Dir(o.FilesDir))
	}
	if abs, err := filepath.Abs(o.StateDir); err == nil {
		o.StateDir = abs
	}
	if o.SecretsDir == "" {
		o.SecretsDir = hostfiles.DefaultSecretsDir()
	}
	if abs, err := filepath.Abs(o.SecretsDir); err == nil {
		o.SecretsDir = abs
	}
	return o
}

// Engine is a connection to one Docker engine plus the readiness prober
// that watches the containers driftless owns on it.
type Engine struct {
	// api bounds each request that answers at once (engineapi.Bounded); raw is
	// the client itself, on which the optional interfaces (build, push,
	// image list, engine info) are found.
	api    dockerAPI
	raw    dockerAPI
	opts   Options
	log    *slog.Logger
	prober *readiness.Prober
	// probe runs the prober's httpGet/tcpSocket probes on a remote engine
	// (Options.Remote); nil on a local one.
	probe *remoteprobe.Runner
	// leave serialises, per network, the stops and removals by which
	// containers leave it, on engines where two at once can deadlock the
	// engine (Docker before 20.10.27); nil for an API without a version.
	leave *netleave.Guard
	// watchBackoff is the first wait before reconnecting the event stream.
	watchBackoff time.Duration
	// files writes and removes the repository trees and secret files
	// replicas bind-mount.
	files *hostfiles.Store

	// wakers are readiness waits to wake early when the event stream says
	// something happened to their container (it died, was removed, turned
	// healthy), by container ID.
	wakeMu sync.Mutex
	wakers map[string][]chan struct{}

	// digests caches each image ID's RepoDigests: an ID names fixed
	// content, so observing does one inspect per new image, not per pass.
	digestMu sync.Mutex
	digests  map[string][]string

	// pulls records the images pulled for each app and the images each
	// app's desired state names, for prune-images.
	pulls *pullrecord.Store

	// reg asks registries for tag digests directly (one HEAD); the
	// engine's insecure registries are read once for it.
	reg           *registry.Client
	insecureOnce  sync.Once
	insecureCIDRs []netip.Prefix
	insecureNames map[string]bool

	// view is the event-fed picture of the engine Observe reads while
	// Watch runs.
	view *view.View
	// requests counts Docker API requests by operation; nil without a
	// real client.
	requests *prometheus.CounterVec

	// live says whether the engine answers (deploy/internal/liveness):
	// bounded pings, one per interval shared by every pass, and a known
	// down engine answered at once.
	live *liveness.Tracker

	// subnetMu makes choosing a subnet and creating its network one step
	// for all of this engine's apps.
	subnetMu sync.Mutex

	// memo is the one-shot CLI's inspect memo (UseInspectMemo); nil in
	// the agent, which has its view.
	memo *memoState
}

// waker returns a channel that is signalled when an event concerns the
// container, and a function that stops it.
func (e *Engine) waker(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	e.wakeMu.Lock()
	if e.wakers == nil {
		e.wakers = map[string][]chan struct{}{}
	}
	e.wakers[id] = append(e.wakers[id], ch)
	e.wakeMu.Unlock()
	return ch, func() {
		e.wakeMu.Lock()
		defer e.wakeMu.Unlock()
		chs := e.wakers[id]
		for i, c := range chs {
			if c == ch {
				e.wakers[id] = append(chs[:i], chs[i+1:]...)
				break
			}
		}
		if len(e.wakers[id]) == 0 {
			delete(e.wakers, id)
		}
	}
}

// wake signals the readiness waits of a container.
func (e *Engine) wake(id string) {
	e.wakeMu.Lock()
	defer e.wakeMu.Unlock()
	for _, ch := range e.wakers[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// New connects to the Docker engine. It does not fail when the engine is
// down; call Ping to find out.
func New(ctx context.Context, opts Options) (*Engine, error) {
	opts = opts.withDefaults()
	host := opts.Host
	if host == "" {
		host = os.Getenv(client.EnvOverrideHost)
	}
	if host == "" {
		host = client.DefaultDockerHost
	}
	// Every request on a connection of its own (over a local socket that
	// costs microseconds). A daemon that is shutting down has closed its
	// listener but still answers on connections already open, and stops
	// every container as it goes: a start sent over a kept-alive
	// connection would "repair" containers the engine is about to stop
	// anyway. A new connection is refused, and the loop sees the engine
	// as down. This holds over TLS and SSH too, where a new connection
	// costs a handshake or an SSH session: with kept-alive connections, a
	// TLS engine restarted under the e2e tests was left with a replica it
	// could not start. Over SSH, reads reuse connections (dialclient).
	requests := requestcount.NewCounter()
	if opts.Dial != nil {
		dc, err := dialclient.New(opts.Dial, opts.Host, requestcount.Hook(requests))
		if err != nil {
			return nil, fmt.Errorf("configure Docker client: %w", err)
		}
		return engineWith(dc, opts, requests), nil
	}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, CheckRedirect: client.CheckRedirect}
	clientOpts := []client.Opt{client.WithHTTPClient(fresh), client.FromEnv, client.WithHost(host), client.WithHTTPRequestHook(requestcount.Hook(requests))}
	if t := opts.TLS; t != nil {
		// A named engine's own files, not the environment's.
		clientOpts = []client.Opt{client.WithHTTPClient(fresh), client.WithAPIVersionFromEnv(), client.WithHost(host), client.WithHTTPRequestHook(requestcount.Hook(requests)),
			client.WithTLSClientConfig(t.CAFile, t.CertFile, t.KeyFile)}
	} else if os.Getenv("DOCKER_CERT_PATH") == "" && os.Getenv("DOCKER_TLS_VERIFY") == "" {
		// Cloning a transport gives it a TLS config (for HTTP/2), which
		// the client would take for TLS: say plainly there is none.
		clientOpts = append(clientOpts, client.WithScheme("http"))
	}
	cli, err := client.New(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("configure Docker client: %w", err)
	}
	return engineWith(cli, opts, requests), nil
}

// engineWith is the Engine over api, counting its requests in requests.
func engineWith(api dockerAPI, opts Options, requests *prometheus.CounterVec) *Engine {
	e := newEngine(api, opts)
	e.requests = requests
	return e
}

type serverVersioner interface {
	ServerVersion(ctx context.Context, options client.ServerVersionOptions) (client.ServerVersionResult, error)
}

func newEngine(api dockerAPI, opts Options) *Engine {
	opts = opts.withDefaults()
	bapi := engineapi.Bound(api, opts.RequestTimeout)
	e := &Engine{api: bapi, raw: api, opts: opts, log: opts.Logger, watchBackoff: time.Second, view: view.New(bapi, opts.Logger)}
	e.live = liveness.New(opts.LivenessInterval, opts.Logger, e.ping, engineErr)
	e.reg = registry.NewClient(opts.RegistryCertsDir, e.engineInsecure)
	e.files = &hostfiles.Store{FilesDir: opts.FilesDir, SecretsDir: opts.SecretsDir, StateDir: opts.StateDir, Log: opts.Logger, Mounts: e.driftlessMounts, Remote: opts.Remote}
	e.prober = readiness.New(bapi, opts.SettleTime, opts.Logger)
	e.pulls = pullrecord.New(pullrecord.Dir(opts.FilesDir), opts.Logger)
	e.prober.Scrub = opts.Scrub
	if v, ok := api.(serverVersioner); ok {
		e.leave = netleave.New(func(ctx context.Context) (string, error) {
			res, err := v.ServerVersion(ctx, client.ServerVersionOptions{})
			return res.Version, err
		})
	}
	if ra, ok := api.(remoteprobe.API); ok && opts.Remote {
		e.probe = remoteprobe.New(ra, opts.Logger)
		e.prober.Remote = e.probe
	}
	return e
}

// Close stops the prober and the background re-ping, and closes the
// connection.
func (e *Engine) Close() error {
	e.prober.Stop()
	e.live.Close()
	return e.api.Close()
}

// Ping checks that the engine answers within Options.PingTimeout, and
// records the answer for the passes (deploy/internal/liveness): an engine
// found down at the agent's start is known down to its apps' first passes.
func (e *Engine) Ping(ctx context.Context) error { return e.live.Ping(ctx) }

// pingRecent is nil when a ping succeeded within the liveness interval,
// the last ping's error at once while the engine is known down, and
// otherwise a ping shared with the other passes waiting for one.
func (e *Engine) pingRecent(ctx context.Context) error { return e.live.Recent(ctx) }

// ping is Ping without recording the answer.
func (e *Engine) ping(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, e.opts.PingTimeout)
	defer cancel()
	if _, err := e.api.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		if ctx.Err() == nil && pctx.Err() != nil {
			return fmt.Errorf("%w at %s: no answer to a ping within %s", drift.ErrEngineUnreachable, e.api.DaemonHost(), e.opts.PingTimeout)
		}
		return fmt.Errorf("%w at %s: %w", drift.ErrEngineUnreachable, e.api.DaemonHost(), err)
	}
	return nil
}

// ImportImage builds an image from a single static binary without any
// registry: a tar holding the binary as /<name> (mode 0755) is imported with
// ENTRYPOINT and CMD set through the import's changes. When entrypoint is
// empty it defaults to ["/<name>"].
func (e *Engine) ImportImage(ctx context.Context, binaryPath, ref string, entrypoint []string, cmd []string) error {
	bin, err := os.ReadFile(binaryPath)
	if err != nil {
		return fmt.Errorf("import image %s: %w", ref, err)
	}
	name := path.Base(binaryPath)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(bin)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
		return fmt.Errorf("import image %s: %w", ref, err)
	}
	if _, err := tw.Write(bin); err != nil {
		return fmt.Errorf("import image %s: %w", ref, err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("import image %s: %w", ref, err)
	}
	if len(entrypoint) == 0 {
		entrypoint = []string{"/" + name}
	}
	changes, err := importChanges(entrypoint, cmd)
	if err != nil {
		return fmt.Errorf("import image %s: %w", ref, err)
	}
	rc, err := e.api.ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, ref, client.ImageImportOptions{Changes: changes})
	if err != nil {
		return fmt.Errorf("import image %s: %w", ref, err)
	}
	defer rc.Close()
	if err := engineerr.FromJSONStream(rc); err != nil {
		return fmt.Errorf("import image %s: %w", ref, err)
	}
	return nil
}

// importChanges renders Dockerfile instructions in their JSON (exec) form.
func importChanges(entrypoint, cmd []string) ([]string, error) {
	ep, err := json.Marshal(entrypoint)
	if err != nil {
		return nil, err
	}
	changes := []string{"ENTRYPOINT " + string(ep)}
	if len(cmd) > 0 {
		c, err := json.Marshal(cmd)
		if err != nil {
			return nil, err
		}
		changes = append(changes, "CMD "+string(c))
	}
	return changes, nil
}

// ImageExists reports whether the image is present locally.
func (e *Engine) ImageExists(ctx context.Context, ref string) (bool, error) {
	_, err := e.api.ImageInspect(ctx, ref)
	if err == nil {
		return true, nil
	}
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return false, fmt.Errorf("inspect image %s: %w", ref, err)
}

// Logs returns the last lines of a container's stdout and stderr.
func (e *Engine) Logs(ctx context.Context, containerID string, lines int) (string, error) {
	tail := "all"
	if lines > 0 {
		tail = fmt.Sprint(lines)
	}
	rc, err := e.api.ContainerLogs(ctx, containerID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: tail})
	if err != nil {
		return "", fmt.Errorf("logs of %s: %w", shortID(containerID), err)
	}
	defer rc.Close()
	var out bytes.Buffer
	// Containers without a TTY (all of ours) multiplex stdout and stderr.
	if _, err := stdcopy.StdCopy(&out, &out, rc); err != nil {
		return "", fmt.Errorf("logs of %s: %w", shortID(containerID), err)
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
