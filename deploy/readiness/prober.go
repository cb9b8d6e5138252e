// Package readiness is driftless's own readiness prober, like a kubelet's:
// it keeps what inspects told of each container (state, start time,
// restarts, runtime settings, health) and probes the httpGet and tcpSocket
// readiness the specs declare, so that an observation reads every verdict
// from a cache instead of making a network round trip per container. The
// deploy engine holds one Prober and feeds it what lists and inspects say.
package readiness

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/deploy/readiness/probecheck"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/secrets"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Info is what the prober knows about one container at one moment,
// from a list summary or an inspect.
type Info struct {
	ID        string
	Name      string
	App       string
	Readiness *manifest.Readiness
	// MinReady is the service's minReady (nil: the prober's settle time
	// without a probe or healthcheck, nothing with one).
	MinReady *time.Duration
	IP       string
	// Network is the name of the network IP is on (inspect only).
	Network string
	State   drift.ContainerState
	Health  string
	// HealthOutput is the last healthcheck's output (inspect only).
	HealthOutput string
	ExitCode     int
	// StartedAt, FinishedAt, RestartCount and Config are only known from
	// an inspect.
	StartedAt    time.Time
	FinishedAt   time.Time
	RestartCount int
	Config       *drift.RuntimeConfig
	// Secrets are the container's secret values (inspect only): any text
	// the prober keeps about it is scrubbed of them before it leaves.
	Secrets []string
	// Inspected says the facts come from an inspect (or a proven memo of
	// one), not only from a list summary.
	Inspected bool
}

// entry is the prober's record of one container.
type entry struct {
	info Info
	// inspectedAt is when the last inspect was taken; dirty says an event
	// (docker update, rename, network connect or disconnect) made it stale.
	inspectedAt time.Time
	dirty       bool
	ready       bool
	reason      string
	successes   int
	failures    int
	probed      bool // an httpGet/tcpSocket probe has answered since the last start
	stopProbes  context.CancelFunc
	loopGen     int // identifies the current probe loop; older loops' results are dropped
}

// Prober is driftless's own readiness checker, like a kubelet's: it keeps
// probing known running containers that declare httpGet or tcpSocket
// readiness at their periodSeconds, and answers from its cache, so Observe
// needs no network round trip per container.
type Prober struct {
	api    Inspector
	settle time.Duration
	log    *slog.Logger
	http   *http.Client
	// Now is the prober's clock (tests fix it); Scrub are the agent's own
	// secrets (deploy's Options.Scrub); Remote, when set, runs the httpGet
	// and tcpSocket probes instead of the agent's host (an engine that may
	// be on another host). Set them before the first use.
	Now    func() time.Time
	Scrub  []string
	Remote Runner

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	entries map[string]*entry // by container ID
}

// Inspector is the one Docker call the prober makes; the Docker client
// satisfies it.
type Inspector interface {
	ContainerInspect(ctx context.Context, id string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
}

// New makes a prober; settle is how long a container without a readiness
// section or healthcheck must run without restarting to be ready. Stop
// ends its probe loops.
func New(api Inspector, settle time.Duration, log *slog.Logger) *Prober {
	ctx, cancel := context.WithCancel(context.Background())
	return &Prober{
		api:     api,
		settle:  settle,
		log:     log,
		http:    probecheck.NewClient(),
		Now:     time.Now,
		ctx:     ctx,
		cancel:  cancel,
		entries: map[string]*entry{},
	}
}

// Stop ends every probe loop and waits for them.
func (p *Prober) Stop() {
	p.cancel()
	p.wg.Wait()
}

// NeedsInspect reports whether the summary shows something the prober has
// not seen: a new container, a state change, or a restart (uptime shorter
// than the time since the start the prober knows of).
func (p *Prober) NeedsInspect(info Info, status string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.entries[info.ID]
	if !ok || !e.info.Inspected || e.info.State != info.State || e.dirty || p.Now().Sub(e.inspectedAt) > deepCheckInterval {
		return true
	}
	if info.State == drift.StateRunning {
		if up, ok := dockerspec.ParseUptime(status); ok && p.Now().Sub(e.info.StartedAt) > up+2*time.Second+uptimeSlack(up) {
			return true
		}
	}
	return false
}

// deepCheckInterval is how old an inspect may get before Observe takes a
// new one: it catches changes whose events were missed.
const deepCheckInterval = 5 * time.Minute

// MarkDirty makes the next Observe inspect the container again.
func (p *Prober) MarkDirty(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.entries[id]; ok {
		e.dirty = true
	}
}

// MarkAllDirty makes the next Observe inspect every known container again:
// events may have been missed.
func (p *Prober) MarkAllDirty() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.entries {
		e.dirty = true
	}
}

// Config is the container's runtime config from its last inspect, or nil.
func (p *Prober) Config(id string) *drift.RuntimeConfig {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.entries[id]; ok {
		return e.info.Config
	}
	return nil
}

// uptimeSlack is how coarse Docker's "Up ..." words are at that uptime.
func uptimeSlack(up time.Duration) time.Duration {
	switch {
	case up < time.Minute:
		return time.Second
	case up < time.Hour:
		return time.Minute
	default:
		return time.Hour
	}
}

// Inspect reads the runtime facts the list summary lacks.
func (p *Prober) Inspect(ctx context.Context, id string) (Info, container.InspectResponse, error) {
	res, err := p.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return Info{}, container.InspectResponse{}, err
	}
	return FromInspect(res.Container), res.Container, nil
}

// Known reports whether the prober has a record of the container.
func (p *Prober) Known(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.entries[id]
	return ok
}

// AwaitFirstProbes waits, at most until ctx ends, until each container in
// ids that runs an httpGet or tcpSocket probe loop has had its first answer.
// Observe uses it for containers seen for the first time, so a fresh process
// (the CLI, an agent after a restart) reports what the probe says rather
// than "not probed yet".
func (p *Prober) AwaitFirstProbes(ctx context.Context, ids []string) {
	for {
		pending := false
		p.mu.Lock()
		for _, id := range ids {
			if e, ok := p.entries[id]; ok && e.stopProbes != nil && !e.probed {
				pending = true
				break
			}
		}
		p.mu.Unlock()
		if !pending {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Update records fresh facts about a container and (re)starts or stops its
// probe loop as needed.
func (p *Prober) Update(info Info) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.entries[info.ID]
	if !ok {
		e = &entry{}
		p.entries[info.ID] = e
	}
	old := e.info
	if !info.Inspected && old.Inspected {
		// A summary refresh keeps what only an inspect knows.
		info.StartedAt, info.RestartCount, info.Config, info.Inspected = old.StartedAt, old.RestartCount, old.Config, true
		info.FinishedAt, info.Secrets = old.FinishedAt, old.Secrets
	}
	if info.Inspected && !old.Inspected || info.Config != old.Config {
		e.inspectedAt, e.dirty = p.Now(), false
	}
	keepFromBefore(&info, old)
	restarted := !ok || info.State != old.State || !info.StartedAt.Equal(old.StartedAt)
	e.info = info
	needsLoop := info.State == drift.StateRunning && info.Readiness != nil &&
		(info.Readiness.HTTPGet != nil || info.Readiness.TCPSocket != nil)
	if restarted || !needsLoop {
		if e.stopProbes != nil {
			e.stopProbes()
			e.stopProbes = nil
		}
		e.successes, e.failures, e.probed, e.ready = 0, 0, false, false
	}
	if needsLoop && e.stopProbes == nil {
		ctx, cancel := context.WithCancel(p.ctx)
		e.stopProbes = cancel
		e.loopGen++
		p.wg.Add(1)
		go p.probeLoop(ctx, info.ID, e.loopGen, *info.Readiness, info.StartedAt)
	}
	p.evaluate(e)
}

// keepFromBefore fills in what an update does not tell from the one
// before: the address a summary may lack and the network of an unchanged
// address (an inspect tells it), and the output of an unchanged
// healthcheck status (an inspect tells it).
func keepFromBefore(info *Info, old Info) {
	if info.IP == "" {
		info.IP = old.IP
	}
	if info.Network == "" && info.IP == old.IP {
		info.Network = old.Network
	}
	if info.HealthOutput == "" && info.Health == old.Health {
		info.HealthOutput = old.HealthOutput
	}
}

// evaluate derives ready and reason from the known facts; for httpGet and
// tcpSocket the probe loop's verdict stands once it has one. Callers hold
// p.mu.
func (p *Prober) evaluate(e *entry) {
	info := e.info
	if info.State != drift.StateRunning {
		e.ready = false
		e.reason = notRunningReason(info.State, info.ExitCode)
		return
	}
	r := info.Readiness
	switch {
	case r == nil && info.Health != "":
		// No readiness section, but a Docker healthcheck (declared or the
		// image's): Docker's verdict is the readiness.
		e.ready, e.reason = healthVerdict(info)
	case r == nil:
		e.ready, e.reason = p.settled(info)
	case r.Exec != nil:
		e.ready, e.reason = healthVerdict(info)
	default:
		// httpGet and tcpSocket: the probe loop sets ready and reason.
		if !e.probed {
			e.ready, e.reason = false, "waiting for the first readiness probe"
		}
	}
	if e.ready && info.MinReady != nil && *info.MinReady > 0 && (r != nil || info.Health != "") {
		// A probe's or healthcheck's pass counts once the replica has also
		// run minReady without restarting.
		e.ready, e.reason = p.settled(info)
	}
}

// settleOf is how long info's container must run without restarting to
// count as ready: its service's minReady, or else the prober's settle time
// (which only a replica without probe or healthcheck waits for).
func (p *Prober) settleOf(info Info) time.Duration {
	if info.MinReady != nil {
		return *info.MinReady
	}
	return p.settle
}

// settled is the verdict of a running container judged by how long it has
// run since its last start.
func (p *Prober) settled(info Info) (bool, string) {
	settle := p.settleOf(info)
	if settle <= 0 {
		return true, ""
	}
	if !info.Inspected {
		return false, "start time not yet known"
	}
	up := p.Now().Sub(info.StartedAt)
	if up >= settle {
		return true, ""
	}
	return false, fmt.Sprintf("running for %s; ready after %s without restarting", up.Round(100*time.Millisecond), settle)
}

// healthVerdict reads Docker's healthcheck status: ready when healthy,
// otherwise the status with the last check's output.
func healthVerdict(info Info) (bool, string) {
	switch info.Health {
	case "healthy":
		return true, ""
	case "":
		return false, "healthcheck has not run yet"
	}
	reason := "healthcheck " + info.Health
	if out := strings.TrimSpace(info.HealthOutput); out != "" {
		reason += ": " + out
	}
	return false, reason
}

func notRunningReason(state drift.ContainerState, exitCode int) string {
	switch state {
	case drift.StateExited:
		return fmt.Sprintf("exited with code %d", exitCode)
	case drift.StateRestarting:
		return fmt.Sprintf("restarting after exiting with code %d", exitCode)
	case "":
		return "container state unknown"
	default:
		return "container is " + string(state)
	}
}

// Result is the cached readiness of a container.
func (p *Prober) Result(id string) (ready bool, reason string, restarts int, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.entries[id]
	if !ok {
		return false, "", 0, false
	}
	p.evaluate(e)
	// Probe answers and healthcheck output are the container's own words:
	// they may echo its secrets.
	return e.ready, secrets.Scrub(secrets.Scrub(e.reason, e.info.Secrets...), p.Scrub...), e.info.RestartCount, true
}

// SettleLeft is how long a running container whose readiness is the
// settle time (no readiness section, no healthcheck) has still to run
// before it is ready; ok is false for any other container, whose verdict
// may change at any moment. Until then only an event (it exits, restarts,
// is removed) can change the verdict, so a readiness wait that is woken by
// events need not inspect it before.
func (p *Prober) SettleLeft(id string) (left time.Duration, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, found := p.entries[id]
	if !found {
		return 0, false
	}
	info := e.info
	if info.State != drift.StateRunning || info.Readiness != nil || info.Health != "" || !info.Inspected {
		return 0, false
	}
	return max(p.settleOf(info)-p.Now().Sub(info.StartedAt), 0), true
}

// Times is when the container last started and last stopped, as its last
// inspect said; zero when not known.
func (p *Prober) Times(id string) (startedAt, finishedAt time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.entries[id]; ok {
		return e.info.StartedAt, e.info.FinishedAt
	}
	return time.Time{}, time.Time{}
}

// ForgetIf drops the containers for which gone says so, stopping their
// probes.
func (p *Prober) ForgetIf(gone func(id string, info *Info) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, e := range p.entries {
		if !gone(id, &e.info) {
			continue
		}
		if e.stopProbes != nil {
			e.stopProbes()
		}
		delete(p.entries, id)
	}
}

// Remove forgets one container (deploy removed it).
func (p *Prober) Remove(id string) {
	p.ForgetIf(func(other string, _ *Info) bool { return other == id })
}

// probeLoop runs one container's httpGet or tcpSocket probe at its period
// until the container stops, restarts or is forgotten.
func (p *Prober) probeLoop(ctx context.Context, id string, gen int, r manifest.Readiness, startedAt time.Time) {
	defer p.wg.Done()
	period := dockerspec.SecondsOr(r.PeriodSeconds, 10)
	timeout := dockerspec.SecondsOr(r.TimeoutSeconds, 1)
	successThreshold := max(r.SuccessThreshold, 1)
	failureThreshold := max(r.FailureThreshold, 1)

	if delay := time.Until(startedAt.Add(time.Duration(r.InitialDelaySeconds) * time.Second)); delay > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		p.mu.Lock()
		e, ok := p.entries[id]
		t := Target{ID: id}
		if ok {
			t.IP, t.Network = e.info.IP, e.info.Network
		}
		p.mu.Unlock()
		if !ok {
			return // forgotten
		}
		err := p.probeOnce(ctx, t, r, timeout)
		if ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		if e, ok := p.entries[id]; ok && e.loopGen == gen && ctx.Err() == nil {
			e.probed = true
			if err == nil {
				e.successes++
				e.failures = 0
				if e.successes >= successThreshold {
					e.ready, e.reason = true, ""
				} else {
					e.reason = fmt.Sprintf("probe passed %d of %d times needed", e.successes, successThreshold)
				}
			} else {
				e.failures++
				e.successes = 0
				// A ready replica stays ready until failureThreshold
				// failures in a row.
				if e.failures >= failureThreshold || !e.ready {
					e.ready = false
					e.reason = "readiness probe failed: " + err.Error()
				}
			}
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// probeOnce runs one probe against the container's IP: from the agent's
// host, or through Remote when it is set.
func (p *Prober) probeOnce(ctx context.Context, t Target, r manifest.Readiness, timeout time.Duration) error {
	if t.IP == "" {
		return fmt.Errorf("container has no IP address on its networks")
	}
	if p.Remote != nil {
		return p.Remote.Probe(ctx, t, r, timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case r.HTTPGet != nil:
		return probecheck.HTTP(ctx, p.http, probecheck.HTTPURL(t.IP, r.HTTPGet.Port, r.HTTPGet.Path))
	case r.TCPSocket != nil:
		return probecheck.TCP(ctx, probecheck.TCPAddr(t.IP, r.TCPSocket.Port))
	}
	return nil
}

// Target is the container one probe is for: its address and the network
// that address is on ("" when only a list summary told the address).
type Target struct {
	ID, IP, Network string
}

// Runner runs httpGet and tcpSocket probes where the agent's host cannot:
// deploy sets one (deploy/remoteprobe) on the prober of an engine that
// may be on another host. Probe must answer within about timeout, with an
// error whose text is the reason, as probecheck's are.
type Runner interface {
	Probe(ctx context.Context, t Target, r manifest.Readiness, timeout time.Duration) error
}

// FromInspect is what an inspect tells the prober.
func FromInspect(c container.InspectResponse) Info {
	info := Info{ID: c.ID, Name: strings.TrimPrefix(c.Name, "/"), RestartCount: c.RestartCount, Inspected: true}
	if c.Config != nil {
		info.App = c.Config.Labels[drift.LabelApp]
		if spec := dockerspec.ParseSpecLabel(c.Config.Labels[drift.LabelSpec]); spec != nil {
			info.Readiness, info.MinReady = spec.Readiness, spec.MinReady
			info.Secrets = secretEnvValues(c.Config.Env, spec)
		}
	}
	if c.State != nil {
		info.State = drift.ContainerState(c.State.Status)
		info.ExitCode = c.State.ExitCode
		info.StartedAt, _ = time.Parse(time.RFC3339Nano, c.State.StartedAt)
		info.FinishedAt, _ = time.Parse(time.RFC3339Nano, c.State.FinishedAt)
		if c.State.Health != nil {
			info.Health = string(c.State.Health.Status)
			if info.Health == "none" {
				info.Health = ""
			}
			if n := len(c.State.Health.Log); n > 0 && c.State.Health.Log[n-1] != nil {
				info.HealthOutput = c.State.Health.Log[n-1].Output
			}
		}
	}
	if c.NetworkSettings != nil {
		info.Network, info.IP = dockerspec.FirstNetwork(c.NetworkSettings.Networks)
	}
	info.Config = runtimeConfig(c)
	return info
}

// runtimeConfig is what an inspect shows of the settings that can change
// on a running container.
func runtimeConfig(c container.InspectResponse) *drift.RuntimeConfig {
	cfg := &drift.RuntimeConfig{Aliases: map[string][]string{}}
	if h := c.HostConfig; h != nil {
		cfg.MemoryBytes, cfg.NanoCPUs, cfg.MemoryReservationBytes = h.Memory, h.NanoCPUs, h.MemoryReservation
		if h.PidsLimit != nil {
			cfg.PidsLimit = *h.PidsLimit
		}
		cfg.RestartPolicy, cfg.RestartMaxRetries = string(h.RestartPolicy.Name), h.RestartPolicy.MaximumRetryCount
		cfg.CPUShares, cfg.CPUSet, cfg.CPUPeriod, cfg.CPUQuota = h.CPUShares, h.CpusetCpus, h.CPUPeriod, h.CPUQuota
		cfg.MemorySwapBytes = h.MemorySwap
	}
	if c.NetworkSettings != nil {
		for name, ep := range c.NetworkSettings.Networks {
			if ep != nil {
				cfg.Aliases[name] = slices.Clone(ep.Aliases)
			}
		}
	}
	return cfg
}

// secretEnvValues are the values, in a container's env list, of the keys
// its recorded spec declares secret: the container itself is where the
// values are known once it runs.
func secretEnvValues(env []string, spec *manifest.ServiceSpec) []string {
	var out []string
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && spec.IsSecretEnv(k) {
			out = append(out, v)
		}
	}
	return out
}

// FromContainer is what a list summary tells the prober.
func FromContainer(c *drift.Container, ip string) Info {
	info := Info{ID: c.ID, Name: c.Name, App: c.App, State: c.State, Health: c.Health, ExitCode: c.ExitCode, IP: ip}
	if c.Spec != nil {
		info.Readiness, info.MinReady = c.Spec.Readiness, c.Spec.MinReady
	}
	return info
}

// Memoizable is what the prober knows of app's running containers from
// inspects (or proven memo entries) taken since from, sorted by ID: what
// deploy's inspect memo may carry to the next process. Only containers
// running with health none or healthy and no secret values qualify.
func (p *Prober) Memoizable(app string, from time.Time) []Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Info
	for _, e := range p.entries {
		info := e.info
		if info.App != app || !info.Inspected || e.dirty || e.inspectedAt.Before(from) ||
			info.State != drift.StateRunning || (info.Health != "" && info.Health != "healthy") || len(info.Secrets) > 0 {
			continue
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.ID, b.ID) })
	return out
}
