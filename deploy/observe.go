package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/deploy/readiness"
	"github.com/driftless-dev/driftless/drift"
	"github.com/moby/moby/client"
)

// Observe lists the app's containers, networks and volumes: one list call
// each, filtered by the app label; no per-container inspect in the steady
// state. Readiness comes from the prober's cache. withForeign lists
// everything instead (still one call per kind), to also find foreign
// objects that may collide with the app's names or host ports, and the
// external networks and volumes the app uses: without it, those look
// missing to the differ.
//
// While the event stream is followed (Watch), Observe reads the engine
// view instead and makes no API call in the steady state. The one-shot
// CLI, which does not watch, uses ObserveForPlan.
func (e *Engine) Observe(ctx context.Context, app string, withForeign bool) (drift.Actual, error) {
	if e.view.isLive() {
		return e.observeFromView(ctx, app, withForeign)
	}
	return e.ObserveCold(ctx, app, withForeign)
}

// ObserveCold is Observe by listing the engine, whatever the view holds.
func (e *Engine) ObserveCold(ctx context.Context, app string, withForeign bool) (drift.Actual, error) {
	filters := make(client.Filters).Add("label", drift.LabelApp+"="+app)
	if withForeign {
		filters = nil
	}
	l, err := e.list(ctx, filters)
	if err != nil {
		return drift.Actual{}, engineErr(fmt.Errorf("observe app %s: %w", app, err))
	}
	actual := l.byApp()[app]
	if withForeign {
		l.foreign(app, &actual)
	}
	e.fillReadiness(ctx, actual.Containers, l.ips(), func(c *readiness.Info) bool { return c.App == app })
	e.fillDigests(ctx, actual.Containers)
	return actual, nil
}

// engineErr marks an error that means the engine could not be reached or
// failed, so the loop retries soon instead of judging the app.
func engineErr(err error) error {
	if isEngineDown(err) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", drift.ErrEngineUnreachable, err)
	}
	return err
}

// ObserveAll lists every driftless-owned object in one call per kind and
// splits them by app.
func (e *Engine) ObserveAll(ctx context.Context) (map[string]drift.Actual, error) {
	l, err := e.list(ctx, make(client.Filters).Add("label", drift.LabelApp))
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	all := l.byApp()
	var containers []drift.Container
	for _, a := range all {
		containers = append(containers, a.Containers...)
	}
	e.fillReadiness(ctx, containers, l.ips(), func(*readiness.Info) bool { return true })
	// fillReadiness worked on a copy; write the results back by ID.
	byID := map[string]drift.Container{}
	for _, c := range containers {
		byID[c.ID] = c
	}
	for app, a := range all {
		for i := range a.Containers {
			a.Containers[i] = byID[a.Containers[i].ID]
		}
		all[app] = a
	}
	return all, nil
}

// listing is one observation: the engine's answer to one list call per
// kind, already parsed.
type listing struct {
	containers   []drift.Container
	containerIPs map[string]string
	networks     []drift.Network
	volumes      []drift.Volume
}

// list makes the three list calls; nil filters list everything.
func (e *Engine) list(ctx context.Context, filters client.Filters) (listing, error) {
	// The three lists at once: the wait is the slowest, not the sum.
	var (
		containers                   client.ContainerListResult
		networks                     client.NetworkListResult
		volumes                      client.VolumeListResult
		containerErr, netErr, volErr error
		wg                           sync.WaitGroup
	)
	wg.Go(func() {
		containers, containerErr = e.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filters})
	})
	wg.Go(func() { networks, netErr = e.api.NetworkList(ctx, client.NetworkListOptions{Filters: filters}) })
	wg.Go(func() { volumes, volErr = e.api.VolumeList(ctx, client.VolumeListOptions{Filters: filters}) })
	wg.Wait()
	switch {
	case containerErr != nil:
		return listing{}, fmt.Errorf("list containers: %w", containerErr)
	case netErr != nil:
		return listing{}, fmt.Errorf("list networks: %w", netErr)
	case volErr != nil:
		return listing{}, fmt.Errorf("list volumes: %w", volErr)
	}
	l := listing{containerIPs: map[string]string{}}
	for _, s := range containers.Items {
		c := dockerspec.ContainerFromSummary(s)
		l.containers = append(l.containers, c)
		l.containerIPs[c.ID] = dockerspec.SummaryIP(s)
	}
	for _, s := range networks.Items {
		l.networks = append(l.networks, dockerspec.NetworkFromSummary(s))
	}
	for _, v := range volumes.Items {
		l.volumes = append(l.volumes, dockerspec.VolumeFromSummary(v))
	}
	return l, nil
}

func (l listing) ips() map[string]string { return l.containerIPs }

// byApp groups the owned objects by app, each list sorted by name.
func (l listing) byApp() map[string]drift.Actual {
	out := map[string]drift.Actual{}
	for _, c := range l.containers {
		if c.App == "" {
			continue
		}
		a := out[c.App]
		a.Containers = append(a.Containers, c)
		out[c.App] = a
	}
	for _, n := range l.networks {
		if n.App == "" {
			continue
		}
		a := out[n.App]
		a.Networks = append(a.Networks, n)
		out[n.App] = a
	}
	for _, v := range l.volumes {
		if v.App == "" {
			continue
		}
		a := out[v.App]
		a.Volumes = append(a.Volumes, v)
		out[v.App] = a
	}
	for app, a := range out {
		sortActual(&a)
		out[app] = a
	}
	return out
}

func sortActual(a *drift.Actual) {
	slices.SortFunc(a.Containers, func(x, y drift.Container) int { return strings.Compare(x.Name, y.Name) })
	slices.SortFunc(a.Networks, func(x, y drift.Network) int { return strings.Compare(x.Name, y.Name) })
	slices.SortFunc(a.Volumes, func(x, y drift.Volume) int { return strings.Compare(x.Name, y.Name) })
}

// foreign adds to actual what is not this app's: containers that hold one
// of its names ("<app>-...") or publish a host port, and every network and
// volume (they are few), which the differ needs both to find name
// collisions and to see whether the external ones the app uses exist.
func (l listing) foreign(app string, actual *drift.Actual) {
	prefix := app + "-"
	for _, c := range l.containers {
		// Compose's containers are listed whatever their names: the
		// app may run as a compose project today.
		if c.App != app && (strings.HasPrefix(c.Name, prefix) || len(c.HostPorts) > 0 || c.ComposeProject != "") {
			actual.ForeignContainers = append(actual.ForeignContainers, c)
		}
	}
	for _, n := range l.networks {
		if n.App != app {
			actual.ForeignNetworks = append(actual.ForeignNetworks, n)
		}
	}
	for _, v := range l.volumes {
		if v.App != app {
			actual.ForeignVolumes = append(actual.ForeignVolumes, v)
		}
	}
	sortedForeign(actual)
}

// firstProbeWait caps how long Observe waits for the first readiness
// answer of containers it has not seen before.
const firstProbeWait = 2 * time.Second

// fillReadiness brings the prober up to date with the listed containers
// (one inspect only for containers it has not seen or whose state changed),
// forgets vanished ones in scope, and copies the cached readiness in.
func (e *Engine) fillReadiness(ctx context.Context, containers []drift.Container, ips map[string]string, inScope func(*readiness.Info) bool) {
	e.fillReadinessFrom(ctx, containers, ips, inScope, true)
}

// fillReadinessFrom is fillReadiness; freshStatus says whether the
// containers' Status strings were just listed, so their uptime can reveal
// a restart whose events were missed.
func (e *Engine) fillReadinessFrom(ctx context.Context, containers []drift.Container, ips map[string]string, inScope func(*readiness.Info) bool, freshStatus bool) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, e.opts.Parallelism)
	keep := map[string]bool{}
	var firstSight []string
	for i := range containers {
		c := &containers[i]
		keep[c.ID] = true
		if !e.prober.Known(c.ID) {
			firstSight = append(firstSight, c.ID)
			e.seedFromMemo(c, ips[c.ID])
		}
		info := readiness.FromContainer(c, ips[c.ID])
		status := c.Status
		if !freshStatus {
			status = ""
		}
		if !e.prober.NeedsInspect(info, status) {
			e.prober.Update(info)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fresh, _, err := e.prober.Inspect(ctx, c.ID)
			if err != nil {
				// Gone between list and inspect, or the engine hiccupped:
				// the summary is still the best we know.
				e.log.Debug("inspect for readiness failed", "container", c.Name, "err", err)
				e.prober.Update(info)
				return
			}
			e.prober.Update(fresh)
		}()
	}
	wg.Wait()
	if len(firstSight) > 0 {
		// Bounded by the probes' own timeouts in practice; the cap keeps
		// a pass from stalling on a misconfigured probe.
		wctx, cancel := context.WithTimeout(ctx, firstProbeWait)
		e.prober.AwaitFirstProbes(wctx, firstSight)
		cancel()
	}
	e.prober.ForgetIf(func(id string, info *readiness.Info) bool { return !keep[id] && inScope(info) })
	for i := range containers {
		c := &containers[i]
		c.Ready, c.ReadyReason, c.RestartCount, _ = e.prober.Result(c.ID)
		c.Config = e.prober.Config(c.ID)
		c.StartedAt, c.FinishedAt = e.prober.Times(c.ID)
	}
}
